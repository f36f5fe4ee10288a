/*
 * cmd_replay.c - `ward replay RUN`: the code's stdout and stderr written
 * again, byte for byte and with their original timing, optionally with
 * ward's decisions interleaved where they happened. Reads the record only.
 */
#include "tools/cmds.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"
#include "common/errnames.h"
#include "common/log.h"
#include "tools/review/view.h"

static void usage(FILE *f)
{
	fputs("usage: ward replay RUN [--db PATH] [--speed N | --instant]\n"
	      "                       [--max-pause SECONDS] [--stream stdout|stderr]\n"
	      "                       [--cell N] [--decisions | --denied]\n"
	      "                       [--decisions-to FILE] [--color WHEN] [--escape]\n"
	      "                       [--timeline] [-q]\n"
	      "\n"
	      "Write a recorded run's output again, as the code's user saw it: every\n"
	      "chunk of stdout to ward's stdout and every chunk of stderr to ward's\n"
	      "stderr, in the order the code wrote them, waiting between chunks as\n"
	      "long as the code did (from the run's start). Nothing is executed: the\n"
	      "bytes come from the audit database (table outputs), exactly as the code\n"
	      "wrote them - NULs, invalid UTF-8, escape sequences, no newline added -\n"
	      "so `ward replay RUN --instant > out` gives the code's stdout byte for\n"
	      "byte. RUN is a run id, any unique prefix of one, or `last`.\n"
	      "\n"
	      "options:\n"
	      "  --db PATH          audit database (default: $WARD_DB, else\n"
	      "                     $XDG_STATE_HOME/ward/audit.db, else\n"
	      "                     ~/.local/state/ward/audit.db); opened read-only\n"
	      "  --speed N          play N times as fast (0.5: half speed; default 1)\n"
	      "  --instant          no waiting at all\n"
	      "  --max-pause S      wait at most S seconds between two chunks (idle\n"
	      "                     time in a session, a long sleep)\n"
	      "  --stream S         only stdout, or only stderr\n"
	      "  --cell N           a session's cell N only (ward serve, ward mcp): the\n"
	      "                     output and decisions between its start and its end,\n"
	      "                     timed from its start\n"
	      "  --decisions        interleave ward's decisions (every recorded syscall\n"
	      "                     decision) where they happened, one line each\n"
	      "  --denied           the same, but only the denied and killed calls and\n"
	      "                     those audit mode would have denied\n"
	      "  --decisions-to F   write decision lines to file F (created or\n"
	      "                     truncated; /dev/fd/N works) instead of stderr, which\n"
	      "                     then holds only the code's stderr\n"
	      "  --color WHEN       colour decision lines: auto (when they go to a\n"
	      "                     terminal and NO_COLOR is not set), always, never\n"
	      "  --escape           print output with control characters, invalid UTF-8\n"
	      "                     and bidirectional overrides escaped (\\x1b, \\xff,\n"
	      "                     \\u{202e}) as `ward show` does, instead of as is\n"
	      "  --timeline         write nothing of the output; print the schedule\n"
	      "                     instead: one line per chunk, `OFFSET STREAM BYTES`,\n"
	      "                     and per decision `OFFSET decision DECISION SYSCALL\n"
	      "                     TARGET`, OFFSET being the seconds after the start\n"
	      "                     at which it would be written (after --speed and\n"
	      "                     --max-pause)\n"
	      "  -q, --quiet        no notes on stderr (truncated record, run without an\n"
	      "                     end)\n"
	      "  -h, --help         this text\n"
	      "\n"
	      "Decision lines (on stderr unless --decisions-to) read like\n"
	      "  ward +0.027187 [1] \xe2\x9c\x97 DENIED openat /etc/shadow -> EACCES (rule secret-shadow: read of ...)\n"
	      "  ward +0.001042 [1]   allow  openat /usr/lib/python3.11/os.py (rule python-stdlib)\n"
	      "  ward +0.310000 [2] \xe2\x9c\x97 KILLED ptrace (rule ...: ...)\n"
	      "  ward +0.120000 [1] ? would deny connect 10.0.0.1:80 (rule default: ...)\n"
	      "with the seconds since the run started (the cell, with --cell; as\n"
	      "recorded, not scaled by --speed), [N] the process serial of `ward show`, the decision, the\n"
	      "syscall, its target (the resolved path or address), the errno the code\n"
	      "got, the rule and the reason. `\xe2\x9c\x97 DENIED` and `\xe2\x9c\x97 KILLED` mark a stopped call\n"
	      "with or without colour (red when coloured; allowed calls dim, would-be\n"
	      "denials yellow); grep for DENIED. Text from the record is escaped as in\n"
	      "`ward show`. A decision line that would follow output without a newline\n"
	      "on the same terminal starts on a line of its own. In a session (ward\n"
	      "serve, ward mcp), decision lines also mark where each cell starts\n"
	      "(`ward +12.030000 >> cell 2: FIRST LINE OF ITS CODE`) and ends (`<< cell\n"
	      "2: STATUS`); --timeline lists them as `OFFSET cell N start` and `OFFSET\n"
	      "cell N end STATUS`.\n"
	      "\n"
	      "The output is written as it is: on a terminal, escape sequences the code\n"
	      "wrote take effect, as they did for the code's user (as with cat). Use\n"
	      "--escape, or `ward show`, to look at output you do not trust.\n"
	      "\n"
	      "When the record of a stream was truncated (ward run --max-output), the\n"
	      "replay stops where the record does and a note on stderr says how many\n"
	      "bytes were not kept; a run with no end recorded (still running, or its\n"
	      "ward died) gets a note too. -q leaves the notes out.\n"
	      "\n"
	      "exit status: 0, or 125 (bad arguments, missing or unusable database, no\n"
	      "such run, an ambiguous prefix, no such cell, a file that cannot be\n"
	      "written).\n",
	      f);
}

enum color { COLOR_AUTO, COLOR_ALWAYS, COLOR_NEVER };

struct replay_opts {
	const char *db, *run, *decisions_to;
	double speed;
	long long max_pause_ns; /* -1: no cap */
	bool instant, timeline, escape, quiet;
	unsigned streams; /* 1 << AUDIT_STDOUT | 1 << AUDIT_STDERR */
	unsigned events;  /* 0, AUDIT_REPLAY_EVENTS or AUDIT_REPLAY_DENIALS */
	long long cell;	  /* 0: the whole run */
	enum color color;
};

static int bad(const char *what, const char *arg)
{
	warn("replay: %s: '%s' %s (see ward replay --help)", what, arg,
	     !strcmp(what, "--stream")	? "is not stdout or stderr"
	     : !strcmp(what, "--color") ? "is not auto, always or never"
	     : !strcmp(what, "--cell")	? "is not a cell number (1, 2, ...)"
	     : !strcmp(what, "--speed") ? "is not a speed (a number > 0)"
					: "is not a number of seconds");
	return -1;
}

/* A positive finite number, at most max. */
static bool parse_pos(const char *s, double max, double *v)
{
	char *end;

	errno = 0;
	*v = strtod(s, &end);
	return !errno && end != s && !*end && isfinite(*v) && *v > 0 &&
	       *v <= max;
}

/* 0, 1 (--help printed) or -1 (error printed). */
static int parse_args(int argc, char **argv, struct replay_opts *o)
{
	enum {
		O_SPEED = 256,
		O_INSTANT,
		O_MAX_PAUSE,
		O_STREAM,
		O_CELL,
		O_DECISIONS,
		O_DENIED,
		O_DECISIONS_TO,
		O_COLOR,
		O_ESCAPE,
		O_TIMELINE,
	};
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'd' },
		{ "speed", required_argument, NULL, O_SPEED },
		{ "instant", no_argument, NULL, O_INSTANT },
		{ "max-pause", required_argument, NULL, O_MAX_PAUSE },
		{ "stream", required_argument, NULL, O_STREAM },
		{ "cell", required_argument, NULL, O_CELL },
		{ "decisions", no_argument, NULL, O_DECISIONS },
		{ "denied", no_argument, NULL, O_DENIED },
		{ "decisions-to", required_argument, NULL, O_DECISIONS_TO },
		{ "color", required_argument, NULL, O_COLOR },
		{ "colour", required_argument, NULL, O_COLOR },
		{ "escape", no_argument, NULL, O_ESCAPE },
		{ "timeline", no_argument, NULL, O_TIMELINE },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	bool speed_given = false;
	double v;
	char *end;
	int c;

	*o = (struct replay_opts){
		.speed = 1,
		.max_pause_ns = -1,
		.streams = 1u << AUDIT_STDOUT | 1u << AUDIT_STDERR,
	};
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":hq", opts, NULL)) != -1) {
		switch (c) {
		case 'd': o->db = optarg; break;
		case 'q': o->quiet = true; break;
		case 'h': usage(stdout); return 1;
		case O_INSTANT: o->instant = true; break;
		case O_ESCAPE: o->escape = true; break;
		case O_TIMELINE: o->timeline = true; break;
		case O_DECISIONS:
			if (!o->events)
				o->events = AUDIT_REPLAY_EVENTS;
			break;
		case O_DENIED: o->events = AUDIT_REPLAY_DENIALS; break;
		case O_DECISIONS_TO:
			if (!*optarg)
				return bad("--decisions-to", optarg);
			o->decisions_to = optarg;
			break;
		case O_SPEED:
			if (!parse_pos(optarg, 1e6, &o->speed))
				return bad("--speed", optarg);
			speed_given = true;
			break;
		case O_MAX_PAUSE:
			/* 0 is allowed: no pauses, the order kept */
			errno = 0;
			v = strtod(optarg, &end);
			if (errno || end == optarg || *end ||
			    !(v >= 0 && v <= 1e6))
				return bad("--max-pause", optarg);
			o->max_pause_ns = (long long)(v * 1e9);
			break;
		case O_STREAM:
			if (!strcmp(optarg, "stdout"))
				o->streams = 1u << AUDIT_STDOUT;
			else if (!strcmp(optarg, "stderr"))
				o->streams = 1u << AUDIT_STDERR;
			else
				return bad("--stream", optarg);
			break;
		case O_CELL:
			errno = 0;
			o->cell = strtoll(optarg, &end, 10);
			if (errno || end == optarg || *end || o->cell < 1)
				return bad("--cell", optarg);
			break;
		case O_COLOR:
			if (!strcmp(optarg, "auto"))
				o->color = COLOR_AUTO;
			else if (!strcmp(optarg, "always"))
				o->color = COLOR_ALWAYS;
			else if (!strcmp(optarg, "never"))
				o->color = COLOR_NEVER;
			else
				return bad("--color", optarg);
			break;
		case ':':
			warn("replay: %s needs a value (see ward replay --help)",
			     argv[optind - 1]);
			return -1;
		default:
			warn("replay: unknown option '%s' (see ward replay "
			     "--help)",
			     argv[optind - 1]);
			return -1;
		}
	}
	if (o->instant && speed_given) {
		warn("replay: --instant and --speed exclude each other");
		return -1;
	}
	if (o->decisions_to && !o->events) {
		warn("replay: --decisions-to needs --decisions or --denied");
		return -1;
	}
	if (optind >= argc) {
		warn("replay: which run? Give an id, a unique prefix of one, or "
		     "`last` (see ward replay --help)");
		return -1;
	}
	if (optind + 1 < argc) {
		warn("replay: unexpected argument '%s' (see ward replay --help)",
		     argv[optind + 1]);
		return -1;
	}
	o->run = argv[optind];
	return 0;
}

/* ------------------------------ the run ------------------------------ */

struct run_facts {
	long long started_ns;
	bool running;
	long long bytes[3]; /* written by the code, per stream; -1: unknown */
	int truncated[3];   /* 1 when not all was kept */
};

static int keep_facts(const struct audit_run *r, void *arg)
{
	struct run_facts *f = arg;

	f->started_ns = r->started_ns;
	f->running = !r->status || !strcmp(r->status, "running");
	f->bytes[AUDIT_STDOUT] = r->stdout_bytes;
	f->bytes[AUDIT_STDERR] = r->stderr_bytes;
	f->truncated[AUDIT_STDOUT] = r->stdout_truncated;
	f->truncated[AUDIT_STDERR] = r->stderr_truncated;
	return 0;
}

/* A session's cells (ward serve), for --cell and the decision lines. */
struct rcell {
	long long n, start, end;
	char *status, *first; /* owned; first: the code's first line */
	size_t first_len, code_len;
};

struct rcells {
	struct rcell *v;
	size_t n;
};

static int keep_cell(const struct audit_cell *c, void *arg)
{
	struct rcells *cs = arg;
	struct rcell *v = realloc(cs->v, (cs->n + 1) * sizeof(*v));
	const char *nl = c->code ? memchr(c->code, '\n', c->code_len) : NULL;
	size_t first = nl ? (size_t)(nl - c->code) : c->code_len;

	if (!v)
		return -ENOMEM;
	cs->v = v;
	v[cs->n] =
		(struct rcell){ .n = c->n,
				.start = c->started_ns,
				.end = c->ended_ns,
				.status = strdup(c->status ? c->status : "-"),
				.first = malloc(first + 1),
				.first_len = first,
				.code_len = c->code_len };
	if (!v[cs->n].status || !v[cs->n].first) {
		free(v[cs->n].status);
		free(v[cs->n].first);
		return -ENOMEM;
	}
	if (first)
		memcpy(v[cs->n].first, c->code, first);
	v[cs->n].first[first] = '\0';
	cs->n++;
	return 0;
}

static void free_cells(struct rcells *cs)
{
	for (size_t i = 0; i < cs->n; i++) {
		free(cs->v[i].status);
		free(cs->v[i].first);
	}
	free(cs->v);
	*cs = (struct rcells){ 0 };
}

/* ------------------------------ replaying ------------------------------ */

struct replay {
	const struct replay_opts *o;
	long long t0;	       /* recorded time the replay starts from */
	long long prev_ts;     /* recorded time of the last item */
	long long sched_ns;    /* its offset in the replay */
	struct timespec start; /* CLOCK_MONOTONIC at the replay's start */
	int dfd;	       /* decision lines go here */
	bool color;	       /* colour decision lines */
	bool tty[3];	       /* fds 1, 2 are terminals */
	int last_byte[3];      /* last byte written to fds 1, 2; -1: none */
	int last_tty_byte;     /* last byte written to a terminal; -1: none */
	long long kept[3];     /* bytes written per stream */
	bool mid_line_note;    /* notes need a newline first */
	int err;
	/* errno of a failed write */ /* cell boundaries for the decision lines: those to go, in order */
	const struct rcell *cells;
	size_t n_cells, next_start, next_end;
};

static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Writes to fd (1, 2 or the decisions fd) and remembers its last byte. */
static int emit(struct replay *rp, int fd, const void *data, size_t len)
{
	int r;

	if (!len)
		return 0;
	r = write_all(fd, data, len);
	if (r)
		return r;
	if (fd == 1 || fd == 2) {
		rp->last_byte[fd] = ((const unsigned char *)data)[len - 1];
		if (rp->tty[fd])
			rp->last_tty_byte = rp->last_byte[fd];
	}
	return 0;
}

/* Whether text written to fd now would continue someone's line. */
static bool mid_line(const struct replay *rp, int fd)
{
	if ((fd == 1 || fd == 2) && rp->tty[fd] && rp->last_tty_byte >= 0)
		return rp->last_tty_byte != '\n';
	if (fd == 1 || fd == 2)
		return rp->last_byte[fd] >= 0 && rp->last_byte[fd] != '\n';
	return false;
}

/* Waits until the item of recorded time ts is due; sets rp->sched_ns. */
static void wait_for(struct replay *rp, long long ts)
{
	long long delta = ts - rp->prev_ts;
	struct timespec due;

	if (delta < 0)
		delta = 0; /* a chunk stamped before the previous item */
	delta = (long long)((double)delta / rp->o->speed);
	if (rp->o->max_pause_ns >= 0 && delta > rp->o->max_pause_ns)
		delta = rp->o->max_pause_ns;
	rp->sched_ns += delta;
	rp->prev_ts = ts > rp->prev_ts ? ts : rp->prev_ts;
	if (rp->o->instant || rp->o->timeline)
		return;
	due.tv_sec = rp->start.tv_sec + rp->sched_ns / 1000000000LL;
	due.tv_nsec = rp->start.tv_nsec + rp->sched_ns % 1000000000LL;
	if (due.tv_nsec >= 1000000000L) {
		due.tv_sec++;
		due.tv_nsec -= 1000000000L;
	}
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, NULL) ==
	       EINTR)
		;
}

#define RED    "\033[1;31m"
#define YELLOW "\033[33m"
#define DIM    "\033[2m"
#define RESET  "\033[0m"

/* One decision line into f. */
static void decision_line(const struct replay *rp, FILE *f,
			  const struct audit_event_row *ev)
{
	const struct audit_event *e = &ev->e;
	bool allow = e->decision && !strcmp(e->decision, "allow");
	bool kill = e->decision && !strcmp(e->decision, "kill");
	const char *mark = kill		   ? "\xe2\x9c\x97 KILLED"
			   : !allow	   ? "\xe2\x9c\x97 DENIED"
			   : e->would_deny ? "? would deny"
					   : "  allow ";
	const char *col = !allow ? RED : e->would_deny ? YELLOW : DIM;

	fprintf(f, "%sward %+.6f ", rp->color ? col : "",
		(double)(e->ts_ns - rp->t0) / 1e9);
	if (e->proc_serial > 0)
		fprintf(f, "[%d] ", e->proc_serial);
	else
		fputs("[-] ", f);
	fprintf(f, "%s ", mark);
	view_str(f, e->syscall);
	if (e->target || e->raw) {
		fputc(' ', f);
		view_str(f, e->target ? e->target : e->raw);
	}
	if (e->err) {
		fprintf(f, " -> %s", ward_errno_name(e->err));
	} else if (e->has_result) {
		char rt[32];
		fprintf(f, " = %s",
			ward_result_text(e->result, rt, sizeof(rt)));
	}
	if (e->pid != e->tid)
		fprintf(f, ", tid %d", (int)e->tid);
	if (e->rule || e->reason) {
		fputs(" (rule ", f);
		view_str(f, e->rule);
		if ((!allow || e->would_deny) && e->reason) {
			fputs(": ", f);
			view_str(f, e->reason);
		}
		fputc(')', f);
	}
	fprintf(f, "%s\n", rp->color ? RESET : "");
}

static int put_decision(struct replay *rp, const struct audit_event_row *ev)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int r;

	if (!f)
		return -ENOMEM;
	if (mid_line(rp, rp->dfd))
		fputc('\n', f);
	decision_line(rp, f, ev);
	if (fclose(f) != 0) {
		free(buf);
		return -ENOMEM;
	}
	r = emit(rp, rp->dfd, buf, len);
	free(buf);
	return r;
}

/* A chunk of output, escaped (--escape). */
static int put_escaped(struct replay *rp, int fd, const void *data, size_t len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	int r;

	if (!f)
		return -ENOMEM;
	view_text(f, data, len, VIEW_RAW_NL | VIEW_RAW_TAB);
	if (fclose(f) != 0) {
		free(buf);
		return -ENOMEM;
	}
	r = emit(rp, fd, buf, n);
	free(buf);
	return r;
}

static int timeline_line(struct replay *rp, const struct audit_item *it)
{
	if (it->kind == AUDIT_ITEM_OUTPUT) {
		printf("%.6f %s %zu\n", (double)rp->sched_ns / 1e9,
		       it->output->stream == AUDIT_STDERR ? "stderr" : "stdout",
		       it->output->len);
	} else {
		const struct audit_event *e = &it->event->e;

		printf("%.6f decision ", (double)rp->sched_ns / 1e9);
		view_str(stdout, e->decision);
		fputc(' ', stdout);
		view_str(stdout, e->syscall);
		fputc(' ', stdout);
		view_str(stdout, e->target ? e->target : e->raw);
		fputc('\n', stdout);
	}
	return ferror(stdout) ? -EIO : 0;
}

/* One cell boundary: ">> cell N: first line" or "<< cell N: status". */
static int cell_line(struct replay *rp, const struct rcell *c, bool start)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int r;

	wait_for(rp, start ? c->start : c->end);
	if (rp->o->timeline) {
		printf("%.6f cell %lld %s", (double)rp->sched_ns / 1e9, c->n,
		       start ? "start" : "end ");
		if (!start)
			view_str(stdout, c->status);
		fputc('\n', stdout);
		return ferror(stdout) ? -EIO : 0;
	}
	f = open_memstream(&buf, &len);
	if (!f)
		return -ENOMEM;
	if (mid_line(rp, rp->dfd))
		fputc('\n', f);
	fprintf(f, "%sward %+.6f %s cell %lld: ", rp->color ? "\033[1m" : "",
		(double)((start ? c->start : c->end) - rp->t0) / 1e9,
		start ? ">>" : "<<", c->n);
	if (start) {
		view_text(f, c->first, c->first_len, 0);
		if (c->first_len < c->code_len)
			fputs(" ...", f);
	} else {
		view_str(f, c->status);
	}
	fprintf(f, "%s\n", rp->color ? RESET : "");
	if (fclose(f) != 0) {
		free(buf);
		return -ENOMEM;
	}
	r = emit(rp, rp->dfd, buf, len);
	free(buf);
	return r;
}

/* The cells' starts and ends up to ts, in time order (decision lines). */
static int cells_until(struct replay *rp, long long ts)
{
	int r = 0;

	while (!r) {
		const struct rcell *s = rp->next_start < rp->n_cells
						? &rp->cells[rp->next_start]
						: NULL;
		const struct rcell *e = rp->next_end < rp->next_start
						? &rp->cells[rp->next_end]
						: NULL;

		if (s && s->start <= ts && (!e || s->start <= e->end)) {
			r = cell_line(rp, s, true);
			rp->next_start++;
		} else if (e && e->end <= ts) {
			r = cell_line(rp, e, false);
			rp->next_end++;
		} else {
			break;
		}
	}
	return r;
}

static int replay_item(const struct audit_item *it, void *arg)
{
	struct replay *rp = arg;
	int r = 0;

	if (it->kind == AUDIT_ITEM_OUTPUT &&
	    !(rp->o->streams & (1u << it->output->stream)))
		return 0;
	r = cells_until(rp, it->ts_ns);
	if (r) {
		rp->err = -r;
		return r;
	}
	wait_for(rp, it->ts_ns);
	if (rp->o->timeline)
		return timeline_line(rp, it);
	if (it->kind == AUDIT_ITEM_EVENT) {
		r = put_decision(rp, it->event);
	} else {
		int fd = it->output->stream == AUDIT_STDERR ? 2 : 1;

		rp->kept[it->output->stream] += (long long)it->output->len;
		r = rp->o->escape
			    ? put_escaped(rp, fd, it->output->data,
					  it->output->len)
			    : emit(rp, fd, it->output->data, it->output->len);
	}
	if (r)
		rp->err = -r;
	return r;
}

/* ------------------------------- notes ------------------------------- */

static void note(struct replay *rp, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void note(struct replay *rp, const char *fmt, ...)
{
	va_list ap;

	if (rp->o->quiet)
		return;
	if (mid_line(rp, 2))
		fputc('\n', stderr);
	fputs("ward: replay: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	rp->last_byte[2] = rp->last_tty_byte = '\n';
}

static void notes(struct replay *rp, const struct run_facts *f, const char *id)
{
	static const char *const name[] = { "", "stdout", "stderr" };

	for (int s = AUDIT_STDOUT; s <= AUDIT_STDERR; s++) {
		if (!(rp->o->streams & (1u << s)) || f->truncated[s] <= 0)
			continue;
		if (rp->o->cell || f->bytes[s] < 0)
			note(rp,
			     "the record of %s was truncated (ward run "
			     "--max-output): the code wrote %lld bytes, not all "
			     "were kept; %s",
			     name[s], f->bytes[s],
			     rp->o->cell ? "this cell's output may be cut"
					 : "the replay stops where it does");
		else
			note(rp,
			     "the record of %s was truncated (ward run "
			     "--max-output): %lld of %lld bytes kept, %lld "
			     "bytes not kept",
			     name[s], rp->kept[s], f->bytes[s],
			     f->bytes[s] - rp->kept[s]);
	}
	if (f->running)
		note(rp,
		     "run %s has no end recorded (still running, or its ward "
		     "died): the output may be incomplete",
		     id);
}

/* ------------------------------- main ------------------------------- */

static int open_decisions(const struct replay_opts *o, struct replay *rp)
{
	const char *nc = getenv("NO_COLOR");

	rp->dfd = 2;
	if (o->decisions_to) {
		rp->dfd = open(o->decisions_to,
			       O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (rp->dfd < 0) {
			warn_errno("replay: --decisions-to: cannot write %s",
				   o->decisions_to);
			return -1;
		}
	}
	rp->color = o->color == COLOR_ALWAYS ||
		    (o->color == COLOR_AUTO && isatty(rp->dfd) && !(nc && *nc));
	return 0;
}

/* The replay's range: the whole run, or cell o->cell. 0, or -1 with a
 * message. */
static int range_of(struct audit *a, const struct replay_opts *o,
		    const char *id, struct rcells *cs, long long *from,
		    long long *to)
{
	const struct rcell *c = NULL;
	int r;

	*from = LLONG_MIN;
	*to = LLONG_MAX;
	if (!o->cell && !o->events)
		return 0;
	r = audit_cells_each(a, id, keep_cell, cs);
	if (r) {
		warn("replay: reading the cells of run %s: %s", id,
		     r == -ENOMEM ? "out of memory" : audit_errmsg(a));
		return -1;
	}
	if (!o->cell)
		return 0;
	if (!cs->n) {
		warn("replay: run %s has no cells: --cell is for the sessions "
		     "of ward serve and ward mcp; replay the run without it",
		     id);
		return -1;
	}
	for (size_t i = 0; i < cs->n; i++)
		if (cs->v[i].n == o->cell)
			c = &cs->v[i];
	if (!c) {
		warn("replay: run %s has no cell %lld (its cells are %lld to "
		     "%lld)",
		     id, o->cell, cs->v[0].n, cs->v[cs->n - 1].n);
		return -1;
	}
	*from = c->start;
	*to = c->end > c->start ? c->end : LLONG_MAX;
	return 0;
}

int ward_cmd_replay(int argc, char **argv)
{
	struct replay_opts o;
	struct run_facts facts = { 0 };
	struct replay rp = { .o = &o, .last_tty_byte = -1 };
	char path[4096], id[AUDIT_RUN_ID_LEN + 1];
	long long from, to;
	struct rcells cells = { 0 };
	struct audit *a;
	int r = parse_args(argc, argv, &o);

	if (r)
		return r > 0 ? 0 : WARD_EXIT_INTERNAL;
	a = view_open_db(o.db, path, sizeof(path));
	if (!a)
		return WARD_EXIT_INTERNAL;
	r = view_find_run(a, path, o.run, id);
	if (!r && audit_run_read(a, id, keep_facts, &facts)) {
		warn("replay: reading run %s from %s: %s", id, path,
		     audit_errmsg(a));
		r = -1;
	}
	if (!r)
		r = range_of(a, &o, id, &cells, &from, &to);
	if (!r && !o.timeline && o.events)
		r = open_decisions(&o, &rp);
	if (r) {
		free_cells(&cells);
		audit_close(a);
		return WARD_EXIT_INTERNAL;
	}
	for (size_t i = 0; o.events && i < cells.n; i++)
		if (!o.cell || cells.v[i].n == o.cell) {
			rp.cells = rp.cells ? rp.cells : &cells.v[i];
			rp.n_cells++;
		}
	for (int fd = 1; fd <= 2; fd++) {
		rp.tty[fd] = isatty(fd);
		rp.last_byte[fd] = -1;
	}
	rp.t0 = o.cell ? from : facts.started_ns;
	rp.prev_ts = rp.t0;
	clock_gettime(CLOCK_MONOTONIC, &rp.start);
	r = audit_replay_each(a, id, from, to, AUDIT_REPLAY_OUTPUTS | o.events,
			      replay_item, &rp);
	if (!r) {
		r = cells_until(&rp, LLONG_MAX);
		rp.err = -r;
	}
	if (r && rp.err)
		warn("replay: writing the output: %s", strerror(rp.err));
	else if (r)
		warn("replay: reading run %s from %s: %s", id, path,
		     audit_errmsg(a));
	if (!r && !o.timeline)
		notes(&rp, &facts, id);
	if (rp.dfd > 2)
		close(rp.dfd);
	free_cells(&cells);
	audit_close(a);
	if (fflush(stdout) != 0)
		r = -EIO;
	return r ? WARD_EXIT_INTERNAL : 0;
}
