/*
 * session-worker.c - one session's supervisor process (session-int.h says
 * why it is a process and which fds it gets). It loads the policy, records
 * the run, and runs the language's driver (tools/agent/drivers/) under
 * tracer_run until the driver ends: the cell socket closed (the session
 * was closed), the code ended it, or a limit did (the session's lifetime
 * is the run's wall-time limit).
 */
#include "tools/agent/session-int.h"
#include "tools/agent/session-server.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"
#include "common/json.h"
#include "common/log.h"
#include "common/sha256.h"
#include "policy/policy.h"
#include "policy/profiles.h"
#include "tracer/tracer.h"
#include "tools/run/recguard.h"
#include "tools/run/runrec.h"

extern const struct ward_profile ward_drivers[];

/* The same defaults as ward run, except time: a session lives. Its wall
 * and CPU limits are its lifetime (a profile's limits are for one run;
 * each cell has its own timeout). */
static const struct ward_limits session_limits = {
	.memory_bytes = 4096LL << 20,
	.procs = 256,
	.fsize_bytes = 1024LL << 20,
	.nofile = 1024,
	.output_bytes = 16LL << 20,
	.events = 1000000,
	.disk_bytes = 1024LL << 20,
};

static long long realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* A line to the server (whole: the tracer's threads and the zygote's
 * write lines too). */
void ws_worker_reply(json_t *msg)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	char *s = json_dumps(msg, JSON_COMPACT);

	json_decref(msg);
	if (!s)
		return;
	size_t n = strlen(s);
	s[n] = '\n'; /* over the NUL: one line, sent without it */
	pthread_mutex_lock(&lock);
	if (send(WS_FD_CTL, s, n + 1, MSG_NOSIGNAL) < 0)
		warn_errno("session worker: control socket");
	pthread_mutex_unlock(&lock);
	free(s);
}

__attribute__((format(printf, 1, 2))) static int fail(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ws_worker_reply(json_pack("{s:s}", "error", msg));
	return WARD_EXIT_INTERNAL;
}

static json_t *read_config(void)
{
	static char buf[1 << 20];
	size_t n = 0;

	while (n < sizeof(buf) - 1) {
		ssize_t r = read(WS_FD_CTL, buf + n, sizeof(buf) - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return NULL;
		n += (size_t)r;
		if (memchr(buf, '\n', n))
			break;
	}
	buf[n] = '\0';
	return json_loads(buf, JSON_DISABLE_EOF_CHECK, NULL);
}

static const char *driver(const char *lang)
{
	const char *name = !strcmp(lang, "node") ? "node"
			   : !strcmp(lang, "sh") ? "sh"
						 : "python";

	for (const struct ward_profile *d = ward_drivers; d->name; d++)
		if (!strcmp(d->name, name))
			return d->text;
	return NULL;
}

/* "NAME=value" with suffix appended to the value, or NULL. */
static char *env_entry(const char *name, const char *value, const char *suffix)
{
	char *s;

	return asprintf(&s, "%s=%s%s", name, value, suffix) < 0 ? NULL : s;
}

static char **build_env(const char *workdir, json_t *extra)
{
	size_t n = 0, cap = 8 + json_object_size(extra);
	char **env = calloc(cap, sizeof(char *));
	const char *k;
	json_t *v;

	if (!env)
		return NULL;
	env[n++] = env_entry("HOME", workdir, "");
	env[n++] = env_entry("TMPDIR", workdir, "/tmp");
	env[n++] = strdup("PATH=/usr/local/bin:/usr/bin:/bin");
	env[n++] = strdup("LANG=C.UTF-8");
	env[n++] = strdup("MPLBACKEND=Agg");
	json_object_foreach(extra, k, v)
	{
		env[n++] = env_entry(k, json_string_value(v), "");
	}
	for (size_t i = 0; i < n; i++)
		if (!env[i]) {
			for (size_t j = 0; j < n; j++)
				free(env[j]);
			free(env);
			return NULL;
		}
	return env;
}

static char *json_layers(const struct tracer_result *r)
{
	json_t *arr = json_array();
	char *s;

	for (size_t i = 0; i < r->n_layers; i++)
		json_array_append_new(arr,
				      json_pack("{s:s, s:b, s:s}", "name",
						r->layers[i].name, "active",
						r->layers[i].active, "detail",
						r->layers[i].detail));
	s = json_dumps(arr, JSON_COMPACT);
	json_decref(arr);
	return s;
}

/* The session's run, recorded (tracer_opts.record, arg: a ward_record):
 * the database opened, the run row written, and its id sent to the
 * server. */
static int ws_begin_record(void *arg, struct audit **out, char *err, size_t n)
{
	struct ward_record *r = arg;

	if (ward_record_begin(r) < 0) {
		snprintf(err, n, "%s", r->err);
		return -EIO;
	}
	*out = r->au;
	ws_worker_reply(json_pack("{s:s}", "run_id", r->run_id));
	return 0;
}

/* The same, without telling the server: a session with a setup says its
 * run id when the setup is over (ws_setup_run). */
static int ws_begin_record_quiet(void *arg, struct audit **out, char *err,
				 size_t n)
{
	struct ward_record *r = arg;

	if (ward_record_begin(r) < 0) {
		snprintf(err, n, "%s", r->err);
		return -EIO;
	}
	*out = r->au;
	return 0;
}

/* The interpreter of lang under pol: the policy's, else the system's. */
static const char *interp_of(const struct policy *pol, const char *lang)
{
	const char *interp = policy_interpreter(pol, lang);

	if (interp)
		return interp;
	return !strcmp(lang, "node") ? "/usr/bin/node"
	       : !strcmp(lang, "sh") ? "/bin/sh"
				     : "/usr/bin/python3";
}

/*
 * tracer_opts.side_output: a frame of a command's output, as the hub
 * writes it ({"cmd": id, "nonce", "n", "s": 1|2, "d": base64},
 * drivers/python.py) and the server takes it (session-cell.c, cmd_frame):
 * its stream, bytes and n (the number of the command's cells row, its
 * execution_count), which the tracer records as the command's
 * (outputs.cmd = n).
 */
static int side_output(void *arg, const char *line, size_t n, long long *cmd,
		       unsigned char **data, size_t *len)
{
	json_t *j = json_loadb(line, n, 0, NULL);
	json_t *n_ = json_object_get(j, "n"), *d = json_object_get(j, "d");
	int s = 0;

	(void)arg;
	if (json_object_get(j, "cmd") && json_is_integer(n_) &&
	    json_integer_value(n_) > 0 &&
	    json_is_string(json_object_get(j, "nonce")) && json_is_string(d) &&
	    ws_base64_decode(json_string_value(d), json_string_length(d), data,
			     len) == 0) {
		*cmd = json_integer_value(n_);
		s = json_integer_value(json_object_get(j, "s")) == 2 ? 2 : 1;
	}
	json_decref(j);
	return s;
}

/* The session's policy: the policy file, else the profile, else the
 * language's default profile. 0, or fail()'s status. */
static int load_policy(const char *lang, const char *profile, const char *pfile,
		       struct policy **pol)
{
	struct policy_error perr;
	char msg[1024];

	memset(&perr, 0, sizeof(perr));
	int rc = pfile ? policy_load_file(pfile, pol, &perr)
		       : policy_load_profile(profile ? profile
					     : !strcmp(lang, "python")
						     ? "default"
						     : lang,
					     pol, &perr);
	if (rc < 0) {
		policy_error_format(&perr, msg, sizeof(msg));
		return fail("bad policy: %s", msg);
	}
	return 0;
}

/* The session's limits: the policy's, else session_limits; its life for
 * the wall and CPU time; memory_mb (when > 0) for the memory. */
static void limits_of(const struct policy *pol, double life_s,
		      json_int_t memory_mb, struct ward_limits *lim)
{
	struct ward_limits pl;

	policy_limits(pol, &pl);
#define PICK(f) lim->f = pl.f ? pl.f : session_limits.f
	PICK(memory_bytes);
	PICK(procs);
	PICK(fsize_bytes);
	PICK(nofile);
	PICK(output_bytes);
	PICK(events);
	PICK(disk_bytes);
#undef PICK
	lim->wall_ms = (long long)(life_s * 1000);
	lim->cpu_s = (long long)life_s + 1;
	if (memory_mb > 0)
		lim->memory_bytes = (long long)memory_mb << 20;
}

/* The workdir's size: a tmpfs on it, in this worker's own mount namespace
 * (the server reaches it through /proc/PID/root: session.c; it made the
 * workdir with tmp/ inside, which the mount hides: made again). *quota:
 * whether it is mounted; detail: the layer's record. 0, or fail()'s
 * status. */
static int workdir_quota(const char *workdir, long long disk_bytes, bool drop,
			 char *detail, size_t n, bool *quota)
{
	*quota = ward_workdir_quota(workdir, disk_bytes,
				    drop ? WS_SANDBOX_UID : getuid(),
				    drop ? WS_SANDBOX_GID : getgid(), detail,
				    n) == 0;
	if (*quota) {
		char sub[PATH_MAX];
		snprintf(sub, sizeof(sub), "%s/tmp", workdir);
		if (mkdir(sub, 0700) < 0 ||
		    (drop && chown(sub, WS_SANDBOX_UID, WS_SANDBOX_GID) < 0))
			return fail("cannot create %s: %s", sub,
				    strerror(errno));
	}
	return 0;
}

/* The run's end row written and, when tell, said to the server ({"end":
 * ...} on the control socket). -EIO when the seal log failed, else 0. */
static int end_run(struct audit *au, const struct tracer_result *r, bool tell)
{
	char *layers = json_layers(r);
	struct audit_run_end re;
	ward_run_end_of(r, layers, realtime_ns(), &re);
	if (r->setup_error[0])
		re.cause = r->setup_error;
	int arc = audit_run_end(au, &re);
	const char *slog = audit_seal_log_error(au);
	if (tell)
		ws_worker_reply(json_pack(
			"{s:{s:s, s:s, s:i, s:i, s:b, s:o}}", "end", "status",
			r->status, "cause", re.cause ? re.cause : "",
			"exit_code", r->exit_code, "signal", r->signal,
			"recorded", arc == 0, "seal_log_error",
			slog ? json_string(slog) : json_null()));
	free(layers);
	return slog ? -EIO : 0;
}

/*
 * The session's setup (cfg "setup": {"code", "language"}), run before its
 * interpreter under the policy's setup phase, as ward run --setup does
 * (tools/run/cmd_run.c): its own processes, every one ended when its first
 * exits, its output recorded and returned to the server (not mixed into
 * the first cell's), the run's record begun by it. Then the server hears
 * {"run_id", "setup"}, or, when the setup failed, *failed is set to
 * {"run_id", "error", "setup"} for the caller to send once the run's end
 * is recorded (the session does not start). *to becomes the interpreter's
 * options. Returns 0 when the interpreter is to start, 1 when the setup
 * failed (its phase recorded), or fail()'s status.
 */
static int ws_setup_run(json_t *setup, double timeout_s, struct policy *pol,
			struct tracer_opts *to, struct ward_record *rec,
			struct tracer_result *sr, json_t **failed)
{
	const char *code = json_string_value(json_object_get(setup, "code"));
	const char *lang =
		json_string_value(json_object_get(setup, "language"));
	struct policy *sp = policy_phase(pol, "setup");
	struct tracer_opts so = *to;
	long long t0, t1;
	char msg[1024];

	if (!sp)
		return fail("setup: policy %s has no setup phase: add "
			    "\"phases\": {\"setup\": {...}} (docs/policy.md, "
			    "\"Phases\")",
			    policy_name(pol));
	if (!code || !lang)
		return fail("session worker: bad setup");
	char *argv[5] = { (char *)interp_of(sp, lang),
			  (char *)(!strcmp(lang, "node") ? "-e" : "-c"),
			  (char *)code, NULL, NULL };
	if (!strcmp(lang, "sh"))
		argv[3] = (char *)"sh";
	if (access(argv[0], X_OK) < 0)
		return fail("setup: interpreter %s: not executable", argv[0]);
	so.interpreter = argv[0];
	so.argv = argv;
	so.policy = sp;
	so.record = ws_begin_record_quiet;
	so.n_code_fds = 0;
	so.side_in = so.side_out = -1;
	so.passthrough = false;
	so.pass_past_limit = false;
	so.capture = true;
	so.end_cause = "the setup's first process exited; the processes it "
		       "left were ended before the session started";
	so.limits.wall_ms = (long long)(timeout_s * 1000);
	t0 = realtime_ns();
	int rc = tracer_run(&so, sr);
	t1 = realtime_ns();
	if (!rec->ran)
		ws_begin_record_quiet(rec, &rec->au, msg, sizeof(msg));
	if (!rec->au)
		return fail("%s", rec->err);
	if (rec->ri->start_ns > t0 && rec->ri->start_ns < t1)
		t0 = rec->ri->start_ns;
	char *layers = json_layers(sr);
	int prc = ward_record_phase(rec->au, rec->run_id, 1, "setup", sr, t0,
				    t1, 0, code, strlen(code), layers);
	free(layers);
	json_t *res = json_pack("{s:s, s:i, s:I, s:I}", "status", sr->status,
				"exit_code", sr->exit_code, "events",
				(json_int_t)sr->events, "denied",
				(json_int_t)sr->denials);
	if (!res ||
	    ward_json_set_bytes(res, "stdout", sr->out[1], sr->out_len[1]) ||
	    ward_json_set_bytes(res, "stderr", sr->out[2], sr->out_len[2]))
		return fail("out of memory");
	bool ok = rc == 0 && prc == 0 && !strcmp(sr->status, "ok");
	if (!ok) {
		snprintf(msg, sizeof(msg),
			 "setup failed (%s%s%s), the session did not start; "
			 "its record: run %s",
			 prc ? "its phase not recorded" : sr->status,
			 sr->cause[0] ? ": " : "", sr->cause, rec->run_id);
		*failed = json_pack("{s:s, s:s, s:o}", "run_id", rec->run_id,
				    "error", msg, "setup", res);
		return 1;
	}
	ws_worker_reply(
		json_pack("{s:s, s:o}", "run_id", rec->run_id, "setup", res));
	to->record = NULL;
	to->record_run_on = NULL;
	to->record_join = NULL;
	to->audit = rec->au;
	to->prepared = NULL;
	to->first_serial = (int)sr->processes;
	to->limits.events = to->limits.events > sr->events
				    ? to->limits.events - sr->events
				    : 1;
	return 0;
}

int ws_worker_main(void)
{
	json_t *cfg = read_config();
	const char *lang, *profile, *pfile, *db, *workdir;
	json_int_t memory_mb = 0;
	double life_s = 3600;
	json_t *env_obj = NULL;
	struct policy *pol = NULL;
	char msg[1024];

	if (!cfg ||
	    json_unpack(cfg, "{s:s, s?s, s?s, s:s, s:s, s?I, s?F, s?o}",
			"language", &lang, "profile", &profile, "policy",
			&pfile, "db", &db, "workdir", &workdir, "memory_mb",
			&memory_mb, "max_life_s", &life_s, "env", &env_obj) < 0)
		return fail("session worker: bad configuration");
	struct ws_zyg *zyg = NULL;
	if (ws_zyg_new(cfg, &zyg, msg, sizeof(msg)) < 0)
		return fail("%s", msg);
	if (zyg && json_object_get(cfg, "setup"))
		return fail("session worker: a zygote's session has no setup");
	/* The database opened while the rest is set up (runrec.h). */
	struct ward_record rec = { .db = db };
	ward_record_preopen(&rec);
	profile = json_string_value(json_object_get(cfg, "profile"));
	pfile = json_string_value(json_object_get(cfg, "policy"));
	int rc = load_policy(lang, profile, pfile, &pol);
	if (rc)
		return rc;
	/* Where the code sees its workdir (as ward run: tracer/view.c) */
	const char *home = tracer_view_possible() ? TRACER_HOME : workdir;
	if (policy_set_workdir(pol, home) < 0)
		return fail("cannot bind $WORKDIR to %s", home);
	/* The filter compiles while the run is recorded (as ward run). */
	struct tracer_prepared *prep = NULL;
	tracer_prepare(pol, &prep);
	const char *interp = interp_of(pol, lang);
	if (access(interp, X_OK) < 0)
		return fail("interpreter %s: not executable", interp);
	const char *drv = driver(lang);
	if (!drv)
		return fail("no session driver for %s", lang);

	struct ward_limits lim;
	limits_of(pol, life_s, memory_mb, &lim);

	char *argv[5] = { (char *)interp,
			  (char *)(!strcmp(lang, "node") ? "-e" : "-c"),
			  (char *)drv, NULL, NULL };
	if (!strcmp(lang, "sh"))
		argv[3] = (char *)"sh";
	json_t *envx = ws_zyg_env(zyg, env_obj);
	char **env = envx ? build_env(home, envx) : NULL;
	json_decref(envx);
	if (!env)
		return fail("out of memory");

	struct audit *au = NULL;
	if (ward_guard_record(pol, db, workdir, msg, sizeof(msg)) < 0)
		return fail("%s", msg);
	char pol_sha[WARD_SHA256_HEX_LEN + 1],
		code_sha[WARD_SHA256_HEX_LEN + 1];
	ward_sha256_hex(policy_text(pol), strlen(policy_text(pol)), pol_sha);
	/* a template's code is ward's warm-up (sessions': their cells) */
	const char *warm = ws_zyg_warmup(zyg);
	ward_sha256_hex(warm ? warm : "", warm ? strlen(warm) : 0, code_sha);
	char ljs[512], kernel[400], host[256];
	ward_host_kernel(host, sizeof(host), kernel, sizeof(kernel));
	ward_limits_json(&lim, ljs, sizeof(ljs));
	bool drop = geteuid() == 0;
	char quota_detail[160];
	bool quota;
	rc = workdir_quota(workdir, lim.disk_bytes, drop, quota_detail,
			   sizeof(quota_detail), &quota);
	if (rc)
		return rc;
	struct audit_run_info ri = {
		.argv_json = "[\"ward\",\"serve\"]",
		.language = lang,
		.interpreter = interp,
		.code = warm ? warm : "",
		.code_len = warm ? strlen(warm) : 0,
		.code_sha256 = code_sha,
		/* the code is in the cells table, or ward's warm-up */
		.code_name = warm ? "zygote-template" : "session",
		.policy_name = policy_name(pol),
		.policy_json = policy_text(pol),
		.policy_sha256 = pol_sha,
		.workdir = home, /* as the code saw it: what its rules mean */
		.limits_json = ljs,
		.host = host,
		.kernel = kernel,
		.ward_version = WARD_VERSION,
		.uid = drop ? WS_SANDBOX_UID : getuid(),
	};
	/* Recorded on a thread of tracer_run's while the sandbox is set up
	 * (as ward run); the interpreter's execve waits for it. */
	rec.ri = &ri;

	int side[2];
	if (pipe2(side, O_CLOEXEC) < 0)
		return fail("pipe: %s", strerror(errno));
	struct tracer_opts to = {
		.interpreter = interp,
		.argv = argv,
		.envp = env,
		.workdir = workdir,
		.home = home,
		.drop_user = drop,
		.uid = WS_SANDBOX_UID,
		.gid = WS_SANDBOX_GID,
		.limits = lim,
		.policy = pol,
		.record = ws_begin_record,
		.record_arg = &rec,
		.record_run_on = ward_record_run_on,
		.record_join = ward_record_join,
		.passthrough = true,
		.pass_past_limit = true, /* the caller's head and tail */
		/* pinned while the interpreter starts, the way ward run is
		 * (~2 ms less on a Python start here): the driver's ready
		 * line unpins it before the first cell (tracer/output.c) */
		.pin_cpu = TRACER_PIN_AUTO,
		.require_layers = policy_required_layers(pol),
		.code_fds = { WS_FD_CELLS, side[1] },
		.n_code_fds = 2,
		.side_in = side[0],
		.side_out = WS_FD_RESULT,
		.side_output = side_output,
		/* longer than the server takes (read_res: MAX_FRAME, checked
		 * after each read of up to 64 KiB) */
		.side_line_max = (size_t)MAX_FRAME + 65536 + 1,
		.end_with_root = true,
		.prepared = prep,
		/* questions of "ask" rules go to the server on the control
		 * socket, its answers come back there (session-ask.c); else
		 * the server's only writes after the configuration are a
		 * pooled one-shot's limit, from its hand-out on
		 * (session-script.c; a policy that asks is never pooled for
		 * one-shots) */
		.ask_fd = policy_asks(pol) ? WS_FD_CTL : -1,
		.wall_fd = policy_asks(pol) ? -1 : WS_FD_CTL,
	};
	struct tracer_result r, sr;
	json_t *setup = json_object_get(cfg, "setup"), *failed = NULL;
	double setup_s = 120;
	bool main_runs = true;
	long long main_t0 = 0;
	memset(&sr, 0, sizeof(sr));
	if (setup) {
		json_unpack(cfg, "{s?F}", "setup_timeout_s", &setup_s);
		rc = ws_setup_run(setup, setup_s, pol, &to, &rec, &sr, &failed);
		if (rc > 1) { /* told the server already */
			tracer_result_free(&sr);
			tracer_prepared_free(prep);
			close(side[0]);
			close(side[1]);
			return rc;
		}
		main_runs = rc == 0;
	}
	if (main_runs) {
		main_t0 = realtime_ns();
		rc = ws_zyg_setup(zyg, &to, &rec, pol_sha, side, msg,
				  sizeof(msg));
		if (rc < 0) {
			ws_zyg_end(zyg, NULL);
			return fail("%s", msg);
		}
		rc = tracer_run(&to, &r);
		ws_zyg_end(zyg, &r);
	} else { /* the run is the setup's */
		r = sr;
		memset(&sr, 0, sizeof(sr));
		rc = 0;
	}
	tracer_layer_add(&r, "workdir-quota", quota, quota_detail);
	ward_workdir_layer(&r, workdir, home);
	if (setup && main_runs && rec.au &&
	    ward_record_phase(rec.au, rec.run_id, 2, "main", &r, main_t0,
			      realtime_ns(), to.first_serial, NULL, 0,
			      NULL) < 0)
		rc = -EIO;
	if (!rec.ran) /* tracer_run failed before it could record the run */
		ws_begin_record(&rec, &au, msg, sizeof(msg));
	if (!rec.au) {
		tracer_result_free(&r);
		tracer_prepared_free(prep);
		close(side[0]);
		close(side[1]);
		return fail("%s", rec.err);
	}
	au = rec.au;
	if (setup && main_runs) { /* the run's counts are both phases' */
		r.events += sr.events;
		r.denials += sr.denials;
		r.processes += sr.processes;
	}
	/* after a failed setup the server hears its error, once the run's
	 * end is recorded (it ends this worker then) */
	if (end_run(au, &r, !failed) < 0)
		rc = -EIO;
	if (failed)
		ws_worker_reply(failed);
	tracer_result_free(&r);
	tracer_result_free(&sr);
	tracer_prepared_free(prep);
	audit_close(au);
	close(side[0]);
	close(side[1]);
	for (char **e = env; *e; e++)
		free(*e);
	free(env);
	policy_free(pol);
	json_decref(cfg);
	return rc < 0 && rc != -ECHILD ? WARD_EXIT_INTERNAL : 0;
}
