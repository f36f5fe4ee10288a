/*
 * output.c - the output thread: the code's stdout and stderr, the wall
 * clock, and signals to ward.
 *
 * It never calls ptrace (ptrace belongs to the main thread). It reads the
 * pipes as data comes, timestamps each chunk, records it, passes it through
 * live (once queued for the record: a chunk whose record failed is not
 * passed on, nor anything after it), keeps a copy for --json, enforces
 * the output cap, commits the audit batch every 200 ms (and, in a run's
 * first second, whenever the code has made no trapped call and printed
 * nothing for 5 ms: the record of an interpreter's start is then written
 * beside it, on this thread's CPU, not after the code's end, when ward's
 * exit waits for it), and
 * turns a wall timeout or SIGINT/TERM/HUP into a stop request (which
 * kills every tracee; the main thread then sees them go). It ends when
 * the main thread says the tracees are gone and both pipes are drained to
 * EOF.
 */
#include "tracer-int.h"

#include <errno.h>
#include <time.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "../common/json.h"
#include "../common/log.h"

enum {
	CHUNK = 65536,
	FLUSH_MS = 200,
	DRAIN_MS = 50,
	QUIET_MS = 5,	 /* a pause that commits what came before it */
	EARLY_MS = 1000, /* ... in the run's first second */
};

static void write_all(int fd, const char *p, size_t n, bool *ok)
{
	while (n > 0 && *ok) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			*ok = false; /* reader went away: stop passing through */
			return;
		}
		p += w;
		n -= (size_t)w;
	}
}

static void capture(struct tracer *t, int s, const char *p, size_t n)
{
	struct tracer_result *r = t->res;

	if (r->out_len[s] + n + 1 > t->cap[s]) {
		size_t want = t->cap[s] ? t->cap[s] : 65536;
		while (want < r->out_len[s] + n + 1)
			want *= 2;
		char *nb = realloc(r->out[s], want);
		if (!nb)
			return; /* the record still has it */
		r->out[s] = nb;
		t->cap[s] = want;
	}
	memcpy(r->out[s] + r->out_len[s], p, n);
	r->out_len[s] += n;
	r->out[s][r->out_len[s]] = '\0';
}

/* One chunk from stream s (1 stdout, 2 stderr), of the code or (cmd > 0)
 * of a session's command, whose output comes in frames on side_in: the
 * same limit, recorded with its id, never passed on as the code's. */
static void on_chunk(struct tracer *t, int s, long long cmd, const char *p,
		     size_t n, bool *pass_ok)
{
	struct tracer_result *r = t->res;
	long long cap = t->o->limits.output_bytes;
	size_t keep = n;

	r->out_bytes[s] += (long long)n;
	if (cap > 0) {
		size_t room = t->kept[s] >= (size_t)cap
				      ? 0
				      : (size_t)cap - t->kept[s];
		if (keep > room)
			keep = room;
	}
	bool past = t->o->passthrough && t->o->pass_past_limit;
	/* Once the record failed, nothing more is passed on (or kept): the
	 * code is being stopped, and what the user sees stays within what
	 * was queued for the record (docs/security.md, "The record"). */
	if (evq_record_failed(t))
		return;
	if (keep < n && !r->truncated[s]) {
		r->truncated[s] = true;
		if (t->o->passthrough && !cmd)
			fprintf(stderr,
				"\nward: %s passed the %soutput limit of %lld "
				"bytes; the rest is %s\n",
				s == 1 ? "stdout" : "stderr",
				past ? "run's " : "", cap,
				past ? "passed on and counted, not recorded"
				     : "counted, not kept");
	}
	if (keep > 0) {
		t->kept[s] += keep;
		if (!t->audit ||
		    audit_output_cmd(t->audit, tracer_now_ns(),
				     s == 1 ? AUDIT_STDOUT : AUDIT_STDERR, cmd,
				     p, keep) < 0) {
			evq_failed(t);
			return;
		}
		if (t->o->capture && !cmd)
			capture(t, s, p, keep);
	}
	if (t->o->passthrough && !cmd)
		write_all(s, p, past ? n : keep, pass_ok);
}

/* Reads what is there; returns false at EOF or error. */
static bool drain(struct tracer *t, int s, char *buf, bool *pass_ok)
{
	ssize_t n = read(t->out_fd[s], buf, CHUNK);

	if (n > 0) {
		on_chunk(t, s, 0, buf, (size_t)n, pass_ok);
		return true;
	}
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	return false;
}

/*
 * A session's result frame arrived on side_in (tracer.h): first pass on
 * every byte of stdout and stderr already written (the driver flushed
 * them before it wrote the frame), then the frame, so that the reader of
 * side_out has all of a cell's output when its result comes.
 */
#define SIDE_READY "{\"ward\":\"ready\"}\n"

/*
 * With opts.side_output, side_in is read as lines (the frames): each whole
 * line is recorded (when it is a command's output) before it is passed
 * on, so what the reader of side_out gets of a command is in the record
 * first. A line longer than opts.side_line_max, which its reader rejects
 * whole, is passed on as it comes, not looked at.
 */
struct side_lines {
	struct ward_strbuf line; /* the line begun, not passed on yet */
	bool skip; /* inside a line too long: passed on to its newline */
};

static void side_line(struct tracer *t, const char *p, size_t n, bool *pass_ok,
		      bool *ok)
{
	unsigned char *data = NULL;
	size_t len = 0;
	long long cmd = 0;
	int s = t->o->side_output(t->o->side_arg, p, n, &cmd, &data, &len);

	if (s == 1 || s == 2) {
		if (cmd > 0)
			on_chunk(t, s, cmd, (const char *)data, len, pass_ok);
		free(data);
	}
	if (evq_record_failed(t))
		return; /* no frame of output not recorded */
	write_all(t->o->side_out, p, n, ok);
}

static void side_lines(struct tracer *t, struct side_lines *l, const char *p,
		       size_t n, bool *pass_ok, bool *ok)
{
	while (n > 0) {
		const char *nl = memchr(p, '\n', n);
		size_t take = nl ? (size_t)(nl - p) + 1 : n;

		if (!l->skip && l->line.len + take > t->o->side_line_max) {
			l->skip = true;
			write_all(t->o->side_out, l->line.buf, l->line.len, ok);
			ward_strbuf_free(&l->line);
		}
		if (l->skip) {
			write_all(t->o->side_out, p, take, ok);
			l->skip = !nl;
		} else if (nl && l->line.len == 0) {
			side_line(t, p, take, pass_ok, ok); /* whole here */
		} else if (ward_strbuf_append(&l->line, p, take) < 0) {
			tracer_stop(t, STOP_AUDIT,
				    "out of memory in the output thread");
			return;
		} else if (nl) {
			side_line(t, l->line.buf, l->line.len, pass_ok, ok);
			ward_strbuf_free(&l->line);
		}
		p += take;
		n -= take;
	}
}

static bool copy_side(struct tracer *t, struct side_lines *l, char *buf,
		      bool *pass_ok)
{
	bool more = true, ok = true;

	while (more) {
		struct pollfd q[2];
		int nq = 0, which[2];

		more = false;
		for (int s = 1; s <= 2; s++)
			if (t->out_fd[s] >= 0) {
				which[nq] = s;
				q[nq++] = (struct pollfd){ t->out_fd[s], POLLIN,
							   0 };
			}
		if (nq == 0 || poll(q, (nfds_t)nq, 0) <= 0)
			break;
		for (int i = 0; i < nq; i++) {
			if (!q[i].revents)
				continue;
			if (!drain(t, which[i], buf, pass_ok)) {
				close(t->out_fd[which[i]]);
				t->out_fd[which[i]] = -1;
			}
			more = true;
		}
	}
	ssize_t n = read(t->o->side_in, buf, CHUNK);
	if (n <= 0)
		return n < 0 && errno == EINTR;
	char *p = buf;
	if (!t->side_seen) {
		/* The interpreter is up: a session is pinned for its start
		 * only, its cells get every CPU (tools/agent/session-worker.c).
		 * The driver's ready line (one write, less than PIPE_BUF:
		 * whole in the first read) is not a result: not passed on. */
		size_t rn = sizeof(SIDE_READY) - 1;
		t->side_seen = true;
		tracer_unpin(t, "the session's interpreter was up");
		if ((size_t)n >= rn && !memcmp(buf, SIDE_READY, rn)) {
			p += rn;
			n -= (ssize_t)rn;
			if (n == 0)
				return true;
		}
	}
	/* and the record before it: the reader of side_out finds the
	 * cell's events (would-be denials are queued, evq.c) committed */
	retbpf_drain(t); /* the cell's calls returned: their results */
	if (evq_drain(t) == 0 && t->audit && !evq_record_failed(t) &&
	    audit_flush(t->audit) < 0)
		evq_failed(t);
	if (evq_record_failed(t))
		return true; /* no result of a cell not recorded */
	if (t->o->side_output)
		side_lines(t, l, p, (size_t)n, pass_ok, &ok);
	else
		write_all(t->o->side_out, p, (size_t)n, &ok);
	return true;
}

static void read_setup_error(struct tracer *t)
{
	size_t have = strlen(t->res->setup_error);
	ssize_t n = read(t->err_fd, t->res->setup_error + have,
			 sizeof(t->res->setup_error) - 1 - have);

	if (n > 0) {
		t->res->setup_error[have + (size_t)n] = '\0';
		return;
	}
	close(t->err_fd);
	t->err_fd = -1;
}

static void on_signal(struct tracer *t)
{
	struct signalfd_siginfo si;
	char cause[96];

	if (read(t->sig_fd, &si, sizeof(si)) != sizeof(si))
		return;
	snprintf(cause, sizeof(cause), "ward received SIG%s",
		 sigabbrev_np((int)si.ssi_signo)
			 ? sigabbrev_np((int)si.ssi_signo)
			 : "a signal");
	t->res->ward_signal = (int)si.ssi_signo;
	tracer_stop(t, STOP_SIGNAL, cause);
}

static void on_timeout(struct tracer *t)
{
	uint64_t ticks;
	char cause[96];

	if (read(t->timer_fd, &ticks, sizeof(ticks)) != sizeof(ticks))
		return;
	snprintf(cause, sizeof(cause), "wall time limit of %lld ms reached",
		 t->wall_ms ? t->wall_ms : t->o->limits.wall_ms);
	tracer_stop(t, STOP_TIMEOUT, cause);
}

/* opts.wall_fd: the wall limit re-armed to end ms from now. False at its
 * end (or an error, or a short message: then the limit stays as it was). */
static bool on_wall(struct tracer *t)
{
	uint64_t ms;
	struct itimerspec its = { 0 };

	if (read(t->o->wall_fd, &ms, sizeof(ms)) != sizeof(ms) || !ms ||
	    ms > (uint64_t)INT32_MAX * 1000)
		return false;
	if (t->timer_fd < 0 &&
	    (t->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC)) < 0)
		return false;
	its.it_value.tv_sec = (time_t)(ms / 1000);
	its.it_value.tv_nsec = (long)(ms % 1000) * 1000000;
	if (timerfd_settime(t->timer_fd, 0, &its, NULL) < 0)
		return false;
	t->wall_ms = (long long)ms;
	return true;
}

static void *io_main(void *arg)
{
	struct tracer *t = arg;
	char *buf = malloc(CHUNK);
	bool pass_ok = true, finishing = false, dirty = false;
	struct side_lines lines = { 0 };
	int side = t->o->side_in > 0 ? t->o->side_in : -1;
	int wall = t->o->wall_fd > 0 ? t->o->wall_fd : -1;
	long long last_flush, last_pids, begun, last_news = 0;

	tracer_record_wait(t); /* nothing is written before the run's row */
	begun = last_flush = last_pids = tracer_now_ns();
	if (!buf) {
		tracer_stop(t, STOP_AUDIT,
			    "out of memory in the output thread");
		return NULL;
	}
	while (t->out_fd[1] >= 0 || t->out_fd[2] >= 0 || !finishing) {
		struct pollfd p[11];
		int np = 0, idx[11];

		for (int s = 1; s <= 2; s++)
			if (t->out_fd[s] >= 0) {
				idx[np] = s;
				p[np++] = (struct pollfd){ t->out_fd[s], POLLIN,
							   0 };
			}
		/* pids.events: on cgroup v2 the kernel signals POLLPRI when
		 * the pids cgroup refuses a fork (it always reads as ready);
		 * v1 does not, so it is also read every DRAIN_MS below */
		int fixed[8] = { t->err_fd,  finishing ? -1 : t->wake_fd,
				 t->sig_fd,  t->timer_fd,
				 t->kick_fd, t->cg_pids_events,
				 side,	     wall };
		for (int i = 0; i < 8; i++) {
			idx[np] = 10 + i;
			p[np++] = (struct pollfd){ fixed[i],
						   i == 5 ? POLLPRI : POLLIN,
						   0 };
		}
		bool early = tracer_now_ns() - begun < EARLY_MS * 1000000LL;
		int rc = poll(p, (nfds_t)np, early ? QUIET_MS : DRAIN_MS);
		if (rc < 0 && errno != EINTR)
			break;
		bool news = evq_len(t) > 0;
		for (int i = 0; i < np && rc > 0; i++) {
			if (!p[i].revents)
				continue;
			if (idx[i] == 1 || idx[i] == 2) {
				news = true;
				if (!drain(t, idx[i], buf, &pass_ok)) {
					close(t->out_fd[idx[i]]);
					t->out_fd[idx[i]] = -1;
				}
			} else if (idx[i] == 10) {
				read_setup_error(t);
			} else if (idx[i] == 11) {
				finishing = true;
			} else if (idx[i] == 12) {
				on_signal(t);
			} else if (idx[i] == 13) {
				on_timeout(t);
			} else if (idx[i] == 14) {
				uint64_t n;
				ssize_t r = read(t->kick_fd, &n, sizeof(n));
				(void)r;
			} else if (idx[i] == 15) {
				tracer_cgroup_check_pids(t); /* reads: rearms */
			} else if (idx[i] == 16) {
				if (!copy_side(t, &lines, buf, &pass_ok))
					side = -1; /* EOF: the code closed it */
			} else if (idx[i] == 17) {
				if (!on_wall(t))
					wall = -1;
			}
		}
		retbpf_drain(t); /* results of calls that returned */
		evq_drain(t);
		tracer_pin_watch(t);
		long long now = tracer_now_ns();
		if (now - last_pids > DRAIN_MS * 1000000LL) {
			tracer_cgroup_check_pids(t);
			last_pids = now;
		}
		if (news) {
			dirty = true;
			last_news = now;
		}
		/* At the run's end the main thread commits it all at once. */
		bool pause = early && dirty && !finishing &&
			     now - last_news >= QUIET_MS * 1000000LL;
		if (pause || now - last_flush > FLUSH_MS * 1000000LL) {
			if (t->audit && pause)
				debug("the record so far committed, while the "
				      "code runs");
			/* after a failure, only the run's end tries again */
			if (t->audit && !evq_record_failed(t) &&
			    audit_flush(t->audit) < 0)
				evq_failed(t);
			last_flush = now;
			dirty = false;
		}
	}
	ward_strbuf_free(&lines.line);
	free(buf);
	return NULL;
}

int tracer_io_start(struct tracer *t)
{
	int rc = tracer_thread_start(t, &t->io_thread, io_main);

	t->io_started = rc == 0;
	return rc;
}

void tracer_io_finish(struct tracer *t)
{
	uint64_t one = 1;

	if (!t->io_started)
		return;
	/* One write to a fresh eventfd cannot fail short of EBADF. */
	ssize_t w = write(t->wake_fd, &one, sizeof(one));
	(void)w;
	pthread_join(t->io_thread, NULL);
	t->io_started = false;
}
