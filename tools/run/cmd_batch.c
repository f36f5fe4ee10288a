/*
 * cmd_batch.c - `ward batch`: run many samples, each a `ward run` of its
 * own (a fresh sandbox, the same guarantees), --jobs at a time, recorded
 * in one database; a result line per sample, progress, a summary and an
 * HTML report; Ctrl-C, --resume and --shard.
 */
#include "tools/cmds.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "tools/run/batch.h"
#include "tools/agent/session.h"
#include "tools/run/runrec.h"

#define PASS_MAX 32 /* ward run options passed on */

struct batch_opts {
	const char *db, *out, *report;
	int jobs;
	unsigned shard_i, shard_n;
	bool resume;
	enum { PROG_AUTO, PROG_BAR, PROG_JSONL, PROG_NONE } progress;
	bool no_pin;
	char *pass[PASS_MAX]; /* options for every ward run (owned) */
	int n_pass;
	/* --pool N --preload MODULES (batch-pool.c); the pass options the
	 * pool gives its sandboxes too (others: every sample runs fresh) */
	int pool;
	const char *preload;
	bool pool_no_fork; /* --pool-fork off */
	const char *profile, *policy, *timeout;
	const char *not_pooled; /* a pass option the pool cannot give */
};

/* One `ward run` child. */
struct child {
	pid_t pid; /* 0: the slot is free */
	struct batch_sample *s;
	int out_fd, err_fd; /* -1 once at EOF */
	struct ward_strbuf out, err;
	bool exited, signalled;
	int wstatus;
	char tmp[64];		     /* the sample's files, or "" */
	int lock_fd;		     /* tmp's lock, or -1 */
	struct batch_pooled *pooled; /* run from the pool (batch-pool.c) */
};

struct batch {
	struct batch_opts o;
	struct batch_samples s;
	struct audit *a;
	char db[PATH_MAX];
	char exe[PATH_MAX];
	int out_fd;
	int *cpus, n_cpus;
	size_t done, total, ran, cancelled, failed;
	size_t resumed; /* done before this batch began (--resume) */
	json_t *counts; /* status -> samples */
	long long t0_ns;
	int last_bar_len;
	struct batch_pool *pool; /* --pool, or NULL */
	size_t pool_left;	 /* poolable samples not started yet */
};

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
	stop_signal = sig;
}

static void on_chld(int sig)
{
	(void)sig;
}

static long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ward batch [options] SAMPLES...\n"
		"\n"
		"Run many samples, each in a fresh sandbox exactly as `ward run` does,\n"
		"--jobs at a time, all recorded in one database.\n"
		"\n"
		"  SAMPLES           files to run (language from the extension, as in\n"
		"                    ward run) or .jsonl files, one sample a line:\n"
		"                    {\"id\", \"code\", \"language\"?, \"stdin\"?, \"args\"?,\n"
		"                    \"files\"? {name: text}, \"expect_stdout\"?,\n"
		"                    \"expect_exit\"?}; ids are unique\n"
		"\n"
		"options:\n"
		"  --db PATH         the audit database of every run (default as ward run)\n"
		"  --jobs N          samples at once (default: the CPUs ward may use)\n"
		"  --out FILE        one result line (JSON) per sample, appended and\n"
		"                    synced as each one ends (docs/batch.md)\n"
		"  --report FILE     an HTML page of the batch; each run's own report\n"
		"                    (ward report) beside it in FILE's name + -runs/\n"
		"  --progress MODE   bar (on a terminal, the default there), jsonl (one\n"
		"                    JSON line on stderr per sample ended), none\n"
		"  --resume          go on with the batch --out FILE records: samples\n"
		"                    with a result line (or an ended run tagged with\n"
		"                    their id in the database) are not run again\n"
		"  --shard I/N       only the I-th (1..N) of N slices, chosen by id\n"
		"  --no-pin          do not pin each run to a CPU of its own\n"
		"  --pool N          python samples run in sandboxes of a warm pool of N,\n"
		"                    each used once for one sample (docs/batch.md);\n"
		"                    node and sh samples in fresh ones\n"
		"  --preload MODULES with --pool: each pooled interpreter imports these\n"
		"                    first (e.g. pandas,numpy), recorded as ward's\n"
		"                    warm-up, cell 0 of the sample's run\n"
		"  --pool-fork on|off with --preload: the pooled sandboxes are forks of\n"
		"                    one template interpreter that imported the modules\n"
		"                    once, in a run of its own (on, the default, where\n"
		"                    the policy and the system allow it), or each\n"
		"                    imports them itself (off)\n"
		"\n"
		"passed on to every ward run: --policy FILE, --profile NAME, --timeout SEC,\n"
		"--cpu SEC, --memory SIZE, --max-procs N, --max-output SIZE, --max-events N,\n"
		"--max-disk SIZE, --interpreter P, --require LAYERS, --seal-log FILE,\n"
		"--add-host NAME:IP, --no-cgroup, --setup FILE, --setup-code CODE (see `ward run --help`;\n"
		"the setup runs in each sample's own sandbox, before its code)\n"
		"\n"
		"Ctrl-C (SIGINT) or SIGTERM: no new sample starts, the running ones are\n"
		"stopped and their result lines say \"cancelled\" (each run's record says\n"
		"aborted, and why); the summary is printed; exit status 130 (143).\n"
		"\n"
		"exit status: 0 when every sample ran and none failed its expectations,\n"
		"1 when one failed them or could not run, 130 when interrupted, 125 for\n"
		"ward's own errors (bad arguments, an unreadable sample, a bad JSONL line\n"
		"named by file:line).\n");
}

/* ---------------------------- arguments ---------------------------- */

static void parse_shard(struct batch_opts *o, const char *v)
{
	char *end, *end2;
	unsigned long i = strtoul(v, &end, 10), n;

	if (end == v || *end != '/')
		die("--shard: '%s' is not I/N (e.g. 2/4)", v);
	n = strtoul(end + 1, &end2, 10);
	if (end2 == end + 1 || *end2 || !n || n > 1000000 || !i || i > n)
		die("--shard: '%s' is not I/N with 1 <= I <= N (e.g. 2/4)", v);
	o->shard_i = (unsigned)i;
	o->shard_n = (unsigned)n;
}

static int cpu_count(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	return CPU_COUNT(&set) > 0 ? CPU_COUNT(&set) : 1;
}

/* A pass option the pool gives its sandboxes too, or the first one it
 * cannot (then every sample runs fresh: batch-pool.c). */
static void pool_option(struct batch_opts *o, const char *name, const char *v)
{
	if (!strcmp(name, "profile"))
		o->profile = v;
	else if (!strcmp(name, "policy"))
		o->policy = v;
	else if (!strcmp(name, "timeout"))
		o->timeout = v;
	else if (!o->not_pooled)
		o->not_pooled = name;
}

static int parse_args(int argc, char **argv, struct batch_opts *o)
{
	enum {
		O_DB = 256,
		O_JOBS,
		O_OUT,
		O_REPORT,
		O_PROGRESS,
		O_RESUME,
		O_SHARD,
		O_NOPIN,
		O_POOL,
		O_PRELOAD,
		O_POOL_FORK,
		O_PASS,
		O_PASS_FLAG
	};
	static const struct option opts[] = {
		{ "db", required_argument, 0, O_DB },
		{ "jobs", required_argument, 0, O_JOBS },
		{ "out", required_argument, 0, O_OUT },
		{ "report", required_argument, 0, O_REPORT },
		{ "progress", required_argument, 0, O_PROGRESS },
		{ "resume", no_argument, 0, O_RESUME },
		{ "shard", required_argument, 0, O_SHARD },
		{ "no-pin", no_argument, 0, O_NOPIN },
		{ "pool", required_argument, 0, O_POOL },
		{ "preload", required_argument, 0, O_PRELOAD },
		{ "pool-fork", required_argument, 0, O_POOL_FORK },
		{ "policy", required_argument, 0, O_PASS },
		{ "profile", required_argument, 0, O_PASS },
		{ "timeout", required_argument, 0, O_PASS },
		{ "cpu", required_argument, 0, O_PASS },
		{ "memory", required_argument, 0, O_PASS },
		{ "max-procs", required_argument, 0, O_PASS },
		{ "max-output", required_argument, 0, O_PASS },
		{ "max-events", required_argument, 0, O_PASS },
		{ "max-disk", required_argument, 0, O_PASS },
		{ "interpreter", required_argument, 0, O_PASS },
		{ "require", required_argument, 0, O_PASS },
		{ "seal-log", required_argument, 0, O_PASS },
		{ "setup", required_argument, 0, O_PASS },
		{ "setup-code", required_argument, 0, O_PASS },
		{ "add-host", required_argument, 0, O_PASS },
		{ "no-cgroup", no_argument, 0, O_PASS_FLAG },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	int c, idx;
	char *end;

	memset(o, 0, sizeof(*o));
	o->jobs = cpu_count();
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, &idx)) != -1) {
		switch (c) {
		case 'h': usage(stdout); exit(0);
		case O_DB: o->db = optarg; break;
		case O_OUT: o->out = optarg; break;
		case O_REPORT: o->report = optarg; break;
		case O_RESUME: o->resume = true; break;
		case O_SHARD: parse_shard(o, optarg); break;
		case O_NOPIN: o->no_pin = true; break;
		case O_POOL:
			o->pool = (int)strtol(optarg, &end, 10);
			if (end == optarg || *end || o->pool < 1 ||
			    o->pool > 64)
				die("--pool: '%s' is not a number 1..64",
				    optarg);
			break;
		case O_PRELOAD: o->preload = optarg; break;
		case O_POOL_FORK:
			o->pool_no_fork = !ws_pool_fork_arg(optarg);
			break;
		case O_JOBS:
			o->jobs = (int)strtol(optarg, &end, 10);
			if (end == optarg || *end || o->jobs < 1 ||
			    o->jobs > 1024)
				die("--jobs: '%s' is not a number 1..1024",
				    optarg);
			break;
		case O_PROGRESS:
			if (!strcmp(optarg, "bar"))
				o->progress = PROG_BAR;
			else if (!strcmp(optarg, "jsonl"))
				o->progress = PROG_JSONL;
			else if (!strcmp(optarg, "none"))
				o->progress = PROG_NONE;
			else
				die("--progress: '%s' is not bar, jsonl or "
				    "none",
				    optarg);
			break;
		case O_PASS:
		case O_PASS_FLAG:
			if (o->n_pass + 2 > PASS_MAX)
				die("batch: too many options for ward run");
			/* by its name: --opt=value is one word */
			if (asprintf(&o->pass[o->n_pass++], "--%s",
				     opts[idx].name) < 0)
				die("out of memory");
			/* a setup file by its full path: each run's */
			if (c == O_PASS && !strcmp(opts[idx].name, "setup")) {
				o->pass[o->n_pass] = realpath(optarg, NULL);
				if (!o->pass[o->n_pass++])
					die_errno("--setup %s", optarg);
			} else if (c == O_PASS &&
				   !(o->pass[o->n_pass++] = strdup(optarg)))
				die("out of memory");
			pool_option(o, opts[idx].name, optarg);
			break;
		case ':':
			die("batch: %s needs a value (see `ward batch --help`)",
			    argv[optind - 1]);
		default:
			die("batch: unknown option %s (see `ward batch --help`)",
			    argv[optind - 1]);
		}
	}
	if (optind >= argc)
		die("batch: no samples: give files or .jsonl files (see "
		    "`ward batch --help`)");
	if (o->preload && !o->pool)
		die("--preload needs --pool N (the pooled sandboxes are the "
		    "ones that import the modules ahead)");
	if (o->resume && !o->out)
		die("--resume needs --out FILE: the result lines of the "
		    "batch to go on with");
	return optind;
}

/* ---------------------------- a sample's child ---------------------------- */

struct argvb {
	char **v;
	size_t n, cap;
};

static void arg(struct argvb *b, const char *s)
{
	if (b->n + 2 > b->cap) {
		b->cap = b->cap ? 2 * b->cap : 32;
		b->v = realloc(b->v, b->cap * sizeof(char *));
		if (!b->v)
			die("out of memory");
	}
	b->v[b->n] = strdup(s);
	if (!b->v[b->n])
		die("out of memory");
	b->v[++b->n] = NULL;
}

static void argvb_free(struct argvb *b)
{
	for (size_t i = 0; i < b->n; i++)
		free(b->v[i]);
	free(b->v);
}

static int write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	const char *p = data;
	int rc = 0;

	if (fd < 0)
		return -errno;
	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			rc = -errno;
			break;
		}
		p += w;
		len -= (size_t)w;
	}
	if (close(fd) && !rc)
		rc = -errno;
	return rc;
}

/* The sample's files and stdin, written where its ward run copies them
 * from: a directory of its own, removed when the sample ends. */
static int stage_files(struct child *c, struct argvb *b)
{
	const struct batch_sample *s = c->s;
	char path[PATH_MAX];
	int rc;

	if (!s->n_files && !s->has_stdin)
		return 0;
	snprintf(c->tmp, sizeof(c->tmp), "/tmp/ward-batch-XXXXXX");
	if (!mkdtemp(c->tmp)) {
		c->tmp[0] = 0;
		return -errno;
	}
	/* claimed like a workdir: a batch killed outright leaves it to the
	 * next sweep (ward_sweep_workdirs) */
	c->lock_fd = ward_workdir_lock(c->tmp);
	if (c->lock_fd < 0)
		return c->lock_fd;
	for (size_t i = 0; i < s->n_files; i++) {
		snprintf(path, sizeof(path), "%s/%s", c->tmp, s->files[i].name);
		rc = write_file(path, s->files[i].data, s->files[i].len);
		if (rc)
			return rc;
		arg(b, "--input");
		arg(b, path);
	}
	if (s->has_stdin) {
		/* not in the workdir: a name of its own, beside the inputs */
		snprintf(path, sizeof(path), "%s/.stdin", c->tmp);
		rc = write_file(path, s->stdin_data, s->stdin_len);
		if (rc)
			return rc;
		arg(b, "--stdin");
		arg(b, path);
	}
	return 0;
}

/* The sample's files gone, its slot free. */
static void unstage(struct child *c)
{
	if (c->tmp[0])
		ward_rm_workdir(c->tmp);
	if (c->lock_fd >= 0)
		close(c->lock_fd);
	memset(c, 0, sizeof(*c));
	c->lock_fd = -1;
}

static void build_argv(struct batch *bt, struct child *c, int slot,
		       struct argvb *b)
{
	const struct batch_sample *s = c->s;
	char buf[64], *tag;

	arg(b, "ward");
	arg(b, "run");
	arg(b, "--db");
	arg(b, bt->db);
	arg(b, "--json");
	arg(b, "--quiet");
	arg(b, "--tag");
	if (asprintf(&tag, "%s%s:%s", BATCH_TAG_PREFIX, bt->s.batch_id, s->id) <
	    0)
		die("out of memory");
	arg(b, tag);
	free(tag);
	for (int i = 0; i < bt->o.n_pass; i++)
		arg(b, bt->o.pass[i]);
	/* runs side by side each get a CPU of their own (ward run pins to
	 * the CPU it starts on otherwise, the same for all) */
	if (bt->o.no_pin || bt->o.jobs == 1) {
		if (bt->o.no_pin)
			arg(b, "--no-pin");
	} else {
		snprintf(buf, sizeof(buf), "--pin-cpu=%d",
			 bt->cpus[slot % bt->n_cpus]);
		arg(b, buf);
	}
	if (s->lang) {
		arg(b, "--lang");
		arg(b, s->lang);
	}
}

/* A memfd holding the code, the child's stdin for `ward run -`. */
static int code_fd(const struct batch_sample *s)
{
	int fd = memfd_create("ward-batch-code", MFD_CLOEXEC);
	size_t at = 0;

	if (fd < 0)
		return -errno;
	while (at < s->code_len) {
		ssize_t w = write(fd, s->code + at, s->code_len - at);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			int e = -errno;

			close(fd);
			return e;
		}
		at += (size_t)w;
	}
	if (lseek(fd, 0, SEEK_SET) < 0) {
		close(fd);
		return -errno;
	}
	return fd;
}

static void child_exec(struct batch *bt, char **argv, int in, int out, int err,
		       pid_t parent)
{
	sigset_t none;

	/* its own process group: a terminal's Ctrl-C reaches the batch,
	 * which stops the runs itself; a batch killed outright still ends
	 * its runs (each records why) */
	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)
		_exit(125);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGCHLD, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		_exit(125);
	execv(bt->exe, argv);
	_exit(125);
}

/*
 * Starts the sample in a `ward run --json` child: c->pid and its pipes
 * set. 0, or -errno with the sample failed (c->s->error says why).
 */
static int batch_sample_start(struct batch *bt, struct child *c, int slot)
{
	struct batch_sample *s = c->s;
	struct argvb b = { 0 };
	int in = -1, po[2] = { -1, -1 }, pe[2] = { -1, -1 }, rc;
	pid_t parent = getpid();

	build_argv(bt, c, slot, &b);
	rc = stage_files(c, &b);
	if (!rc) {
		if (s->path) {
			char *p = NULL;

			/* a name ward run would take for an option */
			if (asprintf(&p, "%s%s", s->path[0] == '-' ? "./" : "",
				     s->path) < 0)
				die("out of memory");
			arg(&b, p);
			free(p);
			in = open("/dev/null", O_RDONLY | O_CLOEXEC);
		} else {
			arg(&b, "-");
			in = code_fd(s);
		}
		if (in < 0)
			rc = in == -1 ? -errno : in;
	}
	if (!rc && (s->n_args || s->path)) {
		arg(&b, "--");
		for (size_t i = 0; i < s->n_args; i++)
			arg(&b, s->args[i]);
	}
	if (!rc && (pipe2(po, O_CLOEXEC) || pipe2(pe, O_CLOEXEC)))
		rc = -errno;
	if (!rc) {
		c->pid = fork();
		if (c->pid == 0)
			child_exec(bt, b.v, in, po[1], pe[1], parent);
		if (c->pid < 0) {
			rc = -errno;
			c->pid = 0;
		}
	}
	if (in >= 0)
		close(in);
	if (po[1] >= 0)
		close(po[1]);
	if (pe[1] >= 0)
		close(pe[1]);
	argvb_free(&b);
	if (rc) {
		if (po[0] >= 0)
			close(po[0]);
		if (pe[0] >= 0)
			close(pe[0]);
		if (asprintf(&s->error, "cannot start ward run: %s",
			     strerror(-rc)) < 0)
			s->error = NULL;
		return rc;
	}
	c->out_fd = po[0];
	c->err_fd = pe[0];
	fcntl(c->out_fd, F_SETFL, O_NONBLOCK);
	fcntl(c->err_fd, F_SETFL, O_NONBLOCK);
	c->out = (struct ward_strbuf)WARD_STRBUF_INIT;
	c->err = (struct ward_strbuf)WARD_STRBUF_INIT;
	s->state = SAMPLE_RUNNING;
	return 0;
}

/* Reads what the pipe has; closes it at EOF. */
static void drain(int *fd, struct ward_strbuf *sb)
{
	char buf[65536];

	while (*fd >= 0) {
		ssize_t r = read(*fd, buf, sizeof(buf));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN)
			return;
		if (r <= 0) {
			close(*fd);
			*fd = -1;
			return;
		}
		/* ward run's JSON holds the output the record kept: keep it
		 * all (bounded by --max-output) to read the run id */
		ward_strbuf_append(sb, buf, (size_t)r);
	}
}

/* ward run's last line on stderr: why it failed. */
static char *last_line(const struct ward_strbuf *sb)
{
	const char *t = ward_strbuf_str(sb), *end = t + strlen(t), *p;

	while (end > t && end[-1] == '\n')
		end--;
	for (p = end; p > t && p[-1] != '\n'; p--)
		;
	return strndup(p, (size_t)(end - p));
}

/* The run id from ward run's JSON, else "". */
static void run_id_of(struct child *c)
{
	json_t *o = json_loads(ward_strbuf_str(&c->out), 0, NULL);
	const char *id = json_string_value(json_object_get(o, "run_id"));

	if (id && strlen(id) == AUDIT_RUN_ID_LEN)
		memcpy(c->s->run_id, id, AUDIT_RUN_ID_LEN + 1);
	json_decref(o);
}

/* ---------------------------- results ---------------------------- */

static void write_line(struct batch *bt, const struct batch_sample *s)
{
	char *line = batch_result_line(s, bt->s.batch_id);
	size_t len;

	if (!line)
		die("out of memory");
	if (bt->out_fd >= 0) {
		len = strlen(line);
		line[len] = '\n'; /* in place of the NUL: written, not read */
		/* one write per line, O_APPEND, synced: a crash leaves whole
		 * lines and at most one torn last line (--resume drops it) */
		if (write(bt->out_fd, line, len + 1) != (ssize_t)(len + 1) ||
		    fdatasync(bt->out_fd))
			die("--out %s: cannot write a result line: %s",
			    bt->o.out, strerror(errno));
	}
	free(line);
}

static void count(struct batch *bt, const struct batch_sample *s)
{
	const char *st = s->status ? s->status : "failed";
	json_t *n = json_object_get(bt->counts, st);

	json_object_set_new(bt->counts, st,
			    json_integer(json_integer_value(n) + 1));
	bt->done++;
}

static void progress(struct batch *bt, const struct batch_sample *last);

static void sample_end(struct batch *bt, struct child *c)
{
	struct batch_sample *s = c->s;
	int rc;

	drain(&c->out_fd, &c->out);
	drain(&c->err_fd, &c->err);
	if (c->out_fd >= 0)
		close(c->out_fd);
	if (c->err_fd >= 0)
		close(c->err_fd);
	if (c->pooled) {
		batch_pool_end(c->pooled, s); /* s->error when no run */
		c->pooled = NULL;
	} else {
		run_id_of(c);
	}
	if (s->run_id[0]) {
		rc = batch_outcome(bt->a, s);
		if (rc)
			die("batch: reading run %s of sample %s from %s: %s",
			    s->run_id, s->id, bt->db, audit_errmsg(bt->a));
		bt->ran++;
	}
	if (c->signalled && (!s->run_id[0] || !strcmp(s->status, "aborted"))) {
		free(s->status);
		s->status = strdup("cancelled");
		bt->cancelled++;
	} else if (!s->run_id[0]) {
		/* ward run refused before the run began (exit 125), or the
		 * pool could not give the sample a sandbox (s->error) */
		free(s->status);
		s->status = strdup("failed");
		if (!s->error)
			s->error = last_line(&c->err);
		bt->failed++;
	}
	s->state = SAMPLE_DONE;
	write_line(bt, s);
	count(bt, s);
	progress(bt, s);
	ward_strbuf_free(&c->out);
	ward_strbuf_free(&c->err);
	unstage(c);
}

/* ---------------------------- progress ---------------------------- */

static void counts_text(struct batch *bt, struct ward_strbuf *sb)
{
	const char *k;
	json_t *v;

	json_object_foreach(bt->counts, k, v) ward_strbuf_appendf(
		sb, " %s %lld", k, (long long)json_integer_value(v));
}

static void progress(struct batch *bt, const struct batch_sample *last)
{
	double secs = (double)(now_ns() - bt->t0_ns) / 1e9;
	/* samples done by an earlier batch (--resume) took no time here */
	double rate = secs > 0 ? (double)(bt->done - bt->resumed) / secs : 0;
	double eta = rate > 0 ? (double)(bt->total - bt->done) / rate : -1;

	if (bt->o.progress == PROG_JSONL && last) {
		json_t *o = json_pack("{sIsIsfsOss}", "done",
				      (json_int_t)bt->done, "total",
				      (json_int_t)bt->total, "rate", rate,
				      "counts", bt->counts, "id", last->id);
		char *t;

		json_object_set_new(o, "eta_s",
				    eta >= 0 ? json_real(eta) : json_null());
		json_object_set_new(o, "status",
				    json_string(last->status ?: "failed"));
		t = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII |
					  JSON_REAL_PRECISION(4));
		if (t)
			fprintf(stderr, "%s\n", t);
		free(t);
		json_decref(o);
	} else if (bt->o.progress == PROG_BAR) {
		struct ward_strbuf sb = WARD_STRBUF_INIT;
		int width = 24,
		    full = bt->total ? (int)(width * bt->done / bt->total)
				     : width;

		ward_strbuf_puts(&sb, "\r\033[K[");
		for (int i = 0; i < width; i++)
			ward_strbuf_puts(&sb, i < full ? "#" : "-");
		ward_strbuf_appendf(&sb, "] %zu/%zu %.1f/s", bt->done,
				    bt->total, rate);
		if (eta >= 0)
			ward_strbuf_appendf(&sb, " ETA %dm%02ds", (int)eta / 60,
					    (int)eta % 60);
		counts_text(bt, &sb);
		fputs(ward_strbuf_str(&sb), stderr);
		fflush(stderr);
		ward_strbuf_free(&sb);
		bt->last_bar_len = 1;
	}
}

static void summary(struct batch *bt)
{
	double secs = (double)(now_ns() - bt->t0_ns) / 1e9;
	size_t cats[CAT_N] = { 0 }, pass = 0, fail = 0;
	const char *k;
	json_t *v;

	if (bt->last_bar_len)
		fputc('\n', stderr);
	for (size_t i = 0; i < bt->s.n; i++) {
		const struct batch_sample *s = &bt->s.v[i];

		for (int j = 0; j < CAT_N; j++)
			cats[j] += !!(s->cats & 1u << j);
		pass += s->state == SAMPLE_DONE && s->pass == 1;
		fail += s->state == SAMPLE_DONE && s->pass == 0;
	}
	printf("ward batch: %zu samples: %zu ran in %.1fs (%.1f/s)", bt->total,
	       bt->ran, secs, secs > 0 ? (double)bt->ran / secs : 0);
	if (bt->resumed)
		printf(", %zu done before (--resume)", bt->resumed);
	if (bt->cancelled)
		printf(", %zu cancelled", bt->cancelled);
	if (bt->failed)
		printf(", %zu could not run", bt->failed);
	if (bt->total > bt->done)
		printf(", %zu not started", bt->total - bt->done);
	printf("\n\n  %-24s %8s\n", "outcome", "samples");
	json_object_foreach(bt->counts, k, v)
		printf("  %-24s %8lld\n", k, (long long)json_integer_value(v));
	printf("\n  %-24s %8s\n", "category", "samples");
	for (int j = 0; j < CAT_N; j++)
		printf("  %-24s %8zu\n", batch_cat_name[j], cats[j]);
	printf("\n  expectations: %zu pass, %zu fail\n", pass, fail);
	if (bt->o.out)
		printf("  results: %s\n", bt->o.out);
	if (bt->o.report)
		printf("  report: %s\n", bt->o.report);
	fflush(stdout);
}

/* ---------------------------- the loop ---------------------------- */

static bool busy(const struct child *c)
{
	return c->pid || c->pooled;
}

static void stop_children(struct child *ch, int n)
{
	for (int i = 0; i < n; i++)
		if (busy(&ch[i]) && !ch[i].exited && !ch[i].signalled) {
			/* ward run records the run aborted, "ward received
			 * SIGTERM", and ends the code's whole tree (a pooled
			 * run's worker gets the same SIGTERM) */
			if (ch[i].pooled)
				batch_pool_cancel(ch[i].pooled);
			else
				kill(ch[i].pid, SIGTERM);
			ch[i].signalled = true;
		}
}

/* Each child by its pid: the pool's workers are the pool's to reap. */
static void reap(struct batch *bt, struct child *ch, int n)
{
	int st, slot;

	for (int i = 0; i < n; i++)
		if (ch[i].pid && !ch[i].exited &&
		    waitpid(ch[i].pid, &st, WNOHANG) == ch[i].pid) {
			ch[i].exited = true;
			ch[i].wstatus = st;
		}
	while (bt->pool && read(batch_pool_fd(bt->pool), &slot, sizeof(slot)) ==
				   sizeof(slot))
		if (slot >= 0 && slot < n)
			ch[slot].exited = true;
}

/* The sample in c from the pool: 0, or -errno with s->error. */
static int pool_sample_start(struct batch *bt, struct child *c, int slot)
{
	int rc = batch_pool_start(bt->pool, c->s, slot, &c->pooled);

	if (rc) {
		if (asprintf(&c->s->error, "cannot start a pooled run: %s",
			     strerror(-rc)) < 0)
			c->s->error = NULL;
		return rc;
	}
	c->out_fd = c->err_fd = -1;
	c->s->state = SAMPLE_RUNNING;
	bt->pool_left--;
	batch_pool_want(bt->pool, bt->pool_left < (size_t)bt->o.pool
					  ? (int)bt->pool_left
					  : bt->o.pool);
	return 0;
}

static int next_pending(struct batch *bt, size_t *at)
{
	while (*at < bt->s.n && bt->s.v[*at].state != SAMPLE_PENDING)
		(*at)++;
	return *at < bt->s.n;
}

static void run_all(struct batch *bt)
{
	int n = bt->o.jobs, running = 0;
	struct child *ch = calloc((size_t)n, sizeof(*ch));
	struct pollfd *pf = calloc((size_t)n * 2 + 1, sizeof(*pf));
	sigset_t none;
	size_t at = 0;

	if (!ch || !pf)
		die("out of memory");
	for (int i = 0; i < n; i++)
		ch[i].lock_fd = -1;
	sigemptyset(&none);
	for (;;) {
		if (stop_signal)
			stop_children(ch, n);
		for (int i = 0; !stop_signal && i < n; i++) {
			if (busy(&ch[i]) || !next_pending(bt, &at))
				continue;
			ch[i].s = &bt->s.v[at++];
			if (bt->pool && batch_poolable(ch[i].s)
				    ? pool_sample_start(bt, &ch[i], i)
				    : batch_sample_start(bt, &ch[i], i)) {
				ch[i].s->status = strdup("failed");
				ch[i].s->state = SAMPLE_DONE;
				bt->failed++;
				write_line(bt, ch[i].s);
				count(bt, ch[i].s);
				progress(bt, ch[i].s);
				unstage(&ch[i]);
				continue;
			}
			running++;
		}
		if (!running)
			break;
		int k = 0;
		if (bt->pool)
			pf[k++] =
				(struct pollfd){ .fd = batch_pool_fd(bt->pool),
						 .events = POLLIN };
		for (int i = 0; i < n; i++) {
			if (!ch[i].pid)
				continue;
			pf[k++] = (struct pollfd){ .fd = ch[i].out_fd,
						   .events = POLLIN };
			pf[k++] = (struct pollfd){ .fd = ch[i].err_fd,
						   .events = POLLIN };
		}
		struct timespec tick = { .tv_sec = 1 };
		/* signals are blocked but here: none is missed */
		ppoll(pf, (nfds_t)k, &tick, &none);
		reap(bt, ch, n);
		for (int i = 0; i < n; i++) {
			if (!busy(&ch[i]))
				continue;
			drain(&ch[i].out_fd, &ch[i].out);
			drain(&ch[i].err_fd, &ch[i].err);
			if (ch[i].exited) {
				sample_end(bt, &ch[i]);
				running--;
			}
		}
		if (bt->o.progress == PROG_BAR)
			progress(bt, NULL);
	}
	free(ch);
	free(pf);
}

/* ---------------------------- --report ---------------------------- */

/* FILE.html -> FILE-runs: where each run's own report goes. */
static char *runs_dir_of(const char *report)
{
	const char *dot = strrchr(report, '.'), *slash = strrchr(report, '/');
	size_t stem = dot && (!slash || dot > slash) ? (size_t)(dot - report)
						     : strlen(report);
	char *d = malloc(stem + sizeof("-runs"));

	if (!d)
		die("out of memory");
	memcpy(d, report, stem);
	memcpy(d + stem, "-runs", sizeof("-runs"));
	return d;
}

/* `ward report RUN -o DIR/RUN.html`: each run's page is exactly the one
 * ward report makes. */
static int run_report(struct batch *bt, const char *dir, const char *run)
{
	char out[PATH_MAX];
	pid_t pid;
	int st;

	snprintf(out, sizeof(out), "%s/%s.html", dir, run);
	pid = fork();
	if (pid == 0) {
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execl(bt->exe, "ward", "report", "--db", bt->db, run, "-o", out,
		      (char *)NULL);
		_exit(125);
	}
	if (pid < 0)
		return -errno;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(st) && !WEXITSTATUS(st) ? 0 : -EIO;
}

static void batch_report(struct batch *bt)
{
	char *dir = runs_dir_of(bt->o.report);
	size_t base = strrchr(dir, '/') ? (size_t)(strrchr(dir, '/') - dir) + 1
					: 0;
	int rc;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		die("--report: cannot make %s: %s", dir, strerror(errno));
	for (size_t i = 0; i < bt->s.n; i++) {
		const struct batch_sample *s = &bt->s.v[i];

		if (s->state != SAMPLE_DONE || !s->run_id[0])
			continue;
		rc = run_report(bt, dir, s->run_id);
		if (rc)
			die("--report: ward report of run %s (sample %s) "
			    "failed",
			    s->run_id, s->id);
	}
	/* links are relative: the page and its folder move together */
	rc = batch_html(bt->o.report, dir + base, &bt->s, bt->db);
	if (rc)
		die("--report %s: cannot write it: %s", bt->o.report,
		    strerror(-rc));
	free(dir);
}

/* The python samples still to run, for the pool (bt->pool_left). */
static void pool_count(struct batch *bt)
{
	bt->pool_left = 0;
	for (size_t i = 0; i < bt->s.n; i++)
		bt->pool_left += bt->s.v[i].state == SAMPLE_PENDING &&
				 batch_poolable(&bt->s.v[i]);
}

/* --pool: the pool started for the python samples still to run, unless
 * an option asks for what pooled sandboxes cannot give. */
static void pool_setup(struct batch *bt)
{
	struct batch_pool_cfg c = {
		.db = bt->db,
		.profile = bt->o.profile,
		.policy = bt->o.policy,
		.timeout = bt->o.timeout,
		.preload = bt->o.preload,
		.no_fork = bt->o.pool_no_fork,
		.batch_id = bt->s.batch_id,
		.n = bt->o.pool,
	};
	char err[800];

	if (bt->o.not_pooled) {
		warn("--pool: --%s is not given to pooled sandboxes: every "
		     "sample runs in a fresh one",
		     bt->o.not_pooled);
		return;
	}
	pool_count(bt);
	if (!bt->pool_left)
		return;
	if (bt->pool_left < (size_t)c.n)
		c.n = (int)bt->pool_left;
	int rc = batch_pool_new(&c, &bt->pool, err, sizeof(err));
	if (rc == -ENOTSUP) {
		warn("%s", err);
		return;
	}
	if (rc)
		die("batch: %s", err);
	fcntl(batch_pool_fd(bt->pool), F_SETFL, O_NONBLOCK);
}

/* ---------------------------- main ---------------------------- */

static void setup(struct batch *bt)
{
	char err[512];
	ssize_t n;
	cpu_set_t set;
	int rc;

	rc = audit_default_path(bt->o.db, bt->db, sizeof(bt->db));
	if (rc)
		die("batch: no database path: %s (give --db PATH)",
		    strerror(-rc));
	if (bt->db[0] != '/') {
		char cwd[PATH_MAX], abs[PATH_MAX];

		if (!getcwd(cwd, sizeof(cwd)) ||
		    snprintf(abs, sizeof(abs), "%s/%s", cwd, bt->db) >=
			    (int)sizeof(abs))
			die("--db %s: cannot make the path absolute", bt->db);
		snprintf(bt->db, sizeof(bt->db), "%s", abs);
	}
	/* made (or migrated) once here, not by the first runs at once; with
	 * a pool, its handle (one open of the database per process) */
	if (bt->o.pool)
		pool_setup(bt);
	if (bt->pool)
		bt->a = batch_pool_audit(bt->pool);
	else if (audit_open(bt->db, false, &bt->a, err, sizeof(err)))
		die("batch: %s", err);
	n = readlink("/proc/self/exe", bt->exe, sizeof(bt->exe) - 1);
	if (n <= 0)
		die("batch: cannot find ward's own binary: %s",
		    strerror(errno));
	bt->exe[n] = 0;
	bt->cpus = calloc(CPU_SETSIZE, sizeof(int));
	if (!bt->cpus || sched_getaffinity(0, sizeof(set), &set))
		die("batch: cannot read the CPUs ward may use");
	for (int i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &set))
			bt->cpus[bt->n_cpus++] = i;
	if (!bt->n_cpus)
		bt->cpus[bt->n_cpus++] = 0;
	bt->counts = json_object();
	if (!bt->counts)
		die("out of memory");
}

/* --resume: the samples the results file says are done. */
static void resume_lines(struct batch *bt)
{
	char err[4400];
	int rc = batch_resume_lines(&bt->s, bt->o.out, err, sizeof(err));

	if (rc < 0)
		die("%s", err);
	for (size_t i = 0; i < bt->s.n; i++)
		if (bt->s.v[i].state == SAMPLE_DONE)
			count(bt, &bt->s.v[i]);
	bt->resumed = bt->done;
}

/* --resume: a run that ended but whose line was never written (the batch
 * was killed in between) is not run again: its line is written now, from
 * the record. */
static void resume_record(struct batch *bt)
{
	bool *was = calloc(bt->s.n + 1, sizeof(bool));
	size_t found = 0;

	if (!was)
		die("out of memory");
	for (size_t i = 0; i < bt->s.n; i++)
		was[i] = bt->s.v[i].state == SAMPLE_PENDING;
	if (batch_resume_record(bt->a, &bt->s, &found))
		die("--resume: reading %s: %s", bt->db, audit_errmsg(bt->a));
	for (size_t i = 0; found && i < bt->s.n; i++)
		if (was[i] && bt->s.v[i].state == SAMPLE_DONE) {
			write_line(bt, &bt->s.v[i]);
			count(bt, &bt->s.v[i]);
			bt->resumed++;
		}
	free(was);
}

static void signals(void)
{
	struct sigaction sa = { .sa_handler = on_stop };
	sigset_t block;

	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGCHLD);
	sigprocmask(SIG_BLOCK, &block, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_chld;
	sigaction(SIGCHLD, &sa, NULL);
}

int ward_cmd_batch(int argc, char **argv)
{
	struct batch bt = { .out_fd = -1 };
	char err[4400];
	int first = parse_args(argc, argv, &bt.o), status;
	size_t fail = 0;

	if (batch_load(&bt.s, argv + first, argc - first, err, sizeof(err)))
		die("batch: %s", err);
	if (bt.o.shard_n)
		batch_shard(&bt.s, bt.o.shard_i, bt.o.shard_n);
	if (bt.o.progress == PROG_AUTO)
		bt.o.progress = isatty(2) ? PROG_BAR : PROG_NONE;
	signals(); /* before the pool's threads: blocked in them too */
	setup(&bt);
	bt.t0_ns = now_ns();
	bt.total = bt.s.n;
	if ((bt.o.resume ? batch_id_read : batch_id_new)(&bt.s, bt.o.out, err,
							 sizeof(err)))
		die("%s", err);
	if (bt.o.resume)
		resume_lines(&bt);
	if (bt.o.out) {
		bt.out_fd = open(bt.o.out,
				 O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC |
					 (bt.o.resume ? 0 : O_TRUNC),
				 0644);
		if (bt.out_fd < 0)
			die("--out %s: %s", bt.o.out, strerror(errno));
	}
	if (bt.o.resume)
		resume_record(&bt);
	if (bt.pool) { /* what --resume left to run */
		pool_count(&bt);
		batch_pool_want(bt.pool, bt.pool_left < (size_t)bt.o.pool
						 ? (int)bt.pool_left
						 : bt.o.pool);
	}
	/* the sample files a batch killed outright left behind */
	ward_sweep_workdirs();
	run_all(&bt);
	if (bt.o.report)
		batch_report(&bt);
	summary(&bt);
	for (size_t i = 0; i < bt.s.n; i++)
		fail += bt.s.v[i].state == SAMPLE_DONE &&
			(bt.s.v[i].pass == 0 ||
			 !strcmp(bt.s.v[i].status, "failed"));
	status = stop_signal ? 128 + stop_signal : fail ? 1 : 0;
	if (bt.out_fd >= 0)
		close(bt.out_fd);
	if (bt.pool)
		batch_pool_free(bt.pool); /* its sandboxes never used:
					   * recorded so; bt.a with it */
	else
		audit_close(bt.a);
	batch_samples_free(&bt.s);
	json_decref(bt.counts);
	free(bt.cpus);
	for (int i = 0; i < bt.o.n_pass; i++)
		free(bt.o.pass[i]);
	return status;
}
