/*
 * test-zygote.c - sandboxes forked from a warm template (tracer/zygote.c),
 * end to end with the real Python driver (tools/agent/drivers/python.py):
 * a template run (its own supervisor, in a process of its own, as a
 * server's template worker is) and zygote children attached from this
 * process, each a run of its own in the same database.
 *
 * Shown: the child's code runs as pid 2 of a pid namespace of its own,
 * sees only its own workdir, /tmp and processes, has no capability and
 * cannot unshare or add a filter (killed in the kernel: the record names
 * the kill); two siblings share nothing (a file, a /tmp file, pids);
 * numpy's global generator is reseeded per fork; the record says where the
 * run came from; a fork whose set-up goes out of order is killed before
 * its code runs. Needs root and unprivileged user namespaces.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../audit/audit.h"
#include "../../policy/policy.h"
#include "../../tracer/tracer-int.h"
#include "dbq.h"
#include "tap.h"

static char tmp[256], dbpath[300], driver_path[600];
static char *driver;
static char template_id[AUDIT_RUN_ID_LEN + 1];

/* the template: its control socket, its hand-off pipe, its supervisor */
static int tctl = -1, handoff_r = -1;
static int template_sup;

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "re");
	static char buf[1 << 20];
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return n ? buf : NULL;
}

static int begin(struct audit **au, struct policy *pol, const char *name,
		 char id[AUDIT_RUN_ID_LEN + 1])
{
	char err[256];
	struct audit_run_info ri = {
		.argv_json = "[\"test-zygote\"]",
		.language = "python",
		.interpreter = "/usr/bin/python3",
		.code = "",
		.code_sha256 = "0",
		.code_name = name,
		.policy_name = policy_name(pol),
		.policy_json = policy_text(pol),
		.policy_sha256 = "0",
		.workdir = TRACER_HOME,
		.limits_json = "{}",
		.kernel = "test",
		.ward_version = "test",
	};
	if (audit_open(dbpath, false, au, err, sizeof(err)) < 0 ||
	    audit_run_begin(*au, &ri, id) < 0) {
		ok(0, "audit: %s", err);
		audit_close(*au);
		*au = NULL;
		return -EIO;
	}
	return 0;
}

static void end(struct audit *au, const struct tracer_result *r)
{
	struct audit_run_end re = {
		.status = r->status,
		.exit_code = r->exit_code,
		.processes = r->processes,
		.denials = r->denials,
		.events = r->events,
		.cause = r->cause,
	};
	audit_run_end(au, &re);
	audit_close(au);
}

static char py[] = "/usr/bin/python3", dash_c[] = "-c";
static char env_t0[] = "WARD_ZYGOTE=template",
	    env_t1[] = "WARD_ZYGOTE_WARMUP=import json\n"
		       "try:\n import numpy\nexcept ImportError:\n pass\n",
	    env_home[] = "HOME=" TRACER_HOME,
	    env_path[] = "PATH=/usr/bin:/bin";

/* The template's supervisor, in a process of its own (a process's
 * tracees are all its threads'). > 0 when the template is ready; its run
 * id in template_id. */
static pid_t start_template(struct policy *pol, const char *wd)
{
	int sp[2], ho[2], res[2], idp[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0 ||
	    pipe2(ho, O_CLOEXEC) < 0 || pipe2(res, O_CLOEXEC) < 0 ||
	    pipe2(idp, O_CLOEXEC) < 0)
		return -errno;
	/* a grandchild: a tracer's waitpid(-1) of this process must not see
	 * it (a server's child worker is no parent of its template's) */
	pid_t mid = fork(), pid = 0;
	if (mid == 0 && fork() != 0)
		_exit(0);
	if (mid == 0) {
		struct audit *au;
		char id[AUDIT_RUN_ID_LEN + 1];
		char *argv[] = { py, dash_c, driver, NULL };
		char *envp[] = { env_t0, env_t1, env_home, env_path, NULL };
		close(sp[0]);
		close(ho[0]);
		close(idp[0]);
		if (begin(&au, pol, "zygote-template", id) < 0)
			_exit(2);
		if (write(idp[1], id, sizeof(id)) != sizeof(id))
			_exit(2);
		close(idp[1]);
		struct tracer_opts o = {
			.audit = au,
			.interpreter = py,
			.argv = argv,
			.envp = envp,
			.workdir = wd,
			.home = TRACER_HOME,
			.drop_user = true,
			.uid = 65534,
			.gid = 65534,
			.policy = pol,
			.no_cgroup = true,
			.pin_cpu = -1,
			.limits = { .wall_ms = 120000 },
			.passthrough = true, /* its errors, on ours */
			.code_fds = { sp[1], res[1] },
			.n_code_fds = 2,
			.zygote_handoff_fd = ho[1],
		};
		struct tracer_result r;
		tracer_run(&o, &r);
		end(au, &r);
		_exit(0);
	}
	close(sp[1]);
	close(ho[1]);
	close(res[1]);
	close(idp[1]);
	if (mid > 0)
		waitpid(mid, NULL, 0);
	pid = mid > 0 ? 1 : -1;
	tctl = sp[0];
	handoff_r = ho[0];
	/* its result pipe: the ready lines (read to the end by nobody: the
	 * template writes two lines only) */
	if (read(idp[0], template_id, sizeof(template_id)) !=
	    sizeof(template_id))
		template_id[0] = '\0';
	close(idp[0]);
	char c = 0;
	struct pollfd pf = { tctl, POLLIN, 0 };
	if (poll(&pf, 1, 60000) != 1 || read(tctl, &c, 1) != 1 || c != 'R')
		pid = -EIO;
	close(res[0]);
	return pid;
}

/* ---- a child: attach asks the template for a fork ---- */

struct child {
	int cells[2];  /* [0] ours, [1] the code's fd 5 */
	int result[2]; /* [0] ours, [1] the code's fd 6 */
	const char *code;
	char frame[8192]; /* the cell's result frame */
	pthread_t th;
	bool out_of_order; /* the fork's first act: not its unshare */
};

static pid_t fork_from_template(void *arg, const struct tracer_attach_fds *f)
{
	struct child *k = arg;
	int fds[5] = { f->out_w, f->err_w, f->sync_r, k->cells[1],
		       k->result[1] };
	char cbuf[CMSG_SPACE(sizeof(fds))], c = 0;
	struct iovec iov = { (char *)"F", 1 };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	int32_t pid = -1;

	memset(cbuf, 0, sizeof(cbuf));
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(cm), fds, sizeof(fds));
	if (sendmsg(tctl, &mh, MSG_NOSIGNAL) != 1 || read(tctl, &c, 1) != 1 ||
	    c != 'K' || read(handoff_r, &pid, sizeof(pid)) != sizeof(pid))
		return -EIO;
	close(k->cells[1]);
	close(k->result[1]);
	k->cells[1] = k->result[1] = -1;
	return pid > 0 ? pid : -ESRCH;
}

/* A fork that breaks the order (tests its supervisor, not the driver):
 * a process forked here, under the template's filters, that opens a file
 * before anything else. */
static void *feed(void *arg)
{
	struct child *k = arg;
	char head[128], buf[4096];
	size_t n = 0;

	snprintf(head, sizeof(head),
		 "{\"n\":1,\"nonce\":\"5a\",\"timeout_s\":30,\"len\":%zu}\n",
		 strlen(k->code));
	if (write(k->cells[0], head, strlen(head)) < 0 ||
	    write(k->cells[0], k->code, strlen(k->code)) < 0)
		return NULL;
	/* result lines until the cell's (or the end) */
	for (;;) {
		ssize_t got = read(k->result[0], buf, sizeof(buf));
		if (got <= 0)
			break;
		if (n + (size_t)got >= sizeof(k->frame))
			got = (ssize_t)(sizeof(k->frame) - 1 - n);
		memcpy(k->frame + n, buf, (size_t)got);
		n += (size_t)got;
		k->frame[n] = '\0';
		if (strstr(k->frame, "\"nonce\": \"5a\"") ||
		    strstr(k->frame, "\"nonce\":\"5a\""))
			break;
	}
	close(k->cells[0]); /* EOF: the driver ends */
	k->cells[0] = -1;
	return NULL;
}

static int run_child(struct policy *pol, const char *wd, struct child *k,
		     struct tracer_result *r, char id[AUDIT_RUN_ID_LEN + 1])
{
	struct audit *au;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, k->cells) < 0 ||
	    pipe2(k->result, O_CLOEXEC) < 0)
		return -errno;
	if (begin(&au, pol, "zygote-child", id) < 0)
		return -EIO;
	struct tracer_opts o = {
		.audit = au,
		.interpreter = py,
		.argv = (char *const[]){ py, NULL },
		.envp = (char *const[]){ NULL },
		.workdir = wd,
		.home = TRACER_HOME,
		.policy = pol,
		.capture = true,
		.pin_cpu = -1,
		.limits = { .wall_ms = 15000, .memory_bytes = 512LL << 20,
			    .procs = 32 },
		.attach = fork_from_template,
		.attach_arg = k,
		.zygote_child = true,
		.zygote_origin = template_id,
		.end_with_root = true,
	};
	pthread_create(&k->th, NULL, feed, k);
	int rc = tracer_run(&o, r);
	if (k->cells[0] >= 0)
		shutdown(k->cells[0], SHUT_RDWR);
	if (k->result[1] >= 0) { /* never handed to a fork */
		close(k->result[1]);
		k->result[1] = -1;
	}
	pthread_join(k->th, NULL);
	for (int i = 0; i < 2; i++) {
		if (k->cells[i] >= 0)
			close(k->cells[i]);
		if (k->result[i] >= 0)
			close(k->result[i]);
	}
	end(au, r);
	return rc;
}

static const struct tracer_layer *layer(const struct tracer_result *r,
					const char *name)
{
	for (size_t i = 0; i < r->n_layers; i++)
		if (!strcmp(r->layers[i].name, name))
			return &r->layers[i];
	return NULL;
}

static char *out_of(struct tracer_result *r)
{
	return r->out[1] ? r->out[1] : (char *)"";
}

static const char probe_code[] =
	"import os, json\n"
	"r = {'pid': os.getpid(), 'uid': os.getuid(), 'cwd': os.getcwd()}\n"
	"r['procs'] = [p for p in range(1, 4096) "
	"if os.path.exists('/proc/%%d' %% p)]\n"
	"r['nspid'] = [l.split()[1:] for l in open('/proc/self/status') "
	"if l.startswith('NSpid')][0]\n"
	"r['wd'] = sorted(os.listdir('.'))\n"
	"r['other'] = os.path.exists('mine-a')\n"
	"open('mine-%s', 'w').write('x')\n"
	"r['caps'] = [l.split()[1] for l in open('/proc/self/status') "
	"if l.startswith('CapEff')]\n"
	"try:\n"
	"    import numpy\n"
	"    r['rand'] = float(numpy.random.random())\n"
	"except ImportError:\n"
	"    r['rand'] = None\n"
	"print('ZYG', json.dumps(r), flush=True)\n";

static void probe(struct policy *pol, const char *wd, const char *tag,
		  char *line, size_t n)
{
	struct child k = { .code = NULL };
	char code[2048], id[AUDIT_RUN_ID_LEN + 1];
	struct tracer_result r;

	snprintf(code, sizeof(code), probe_code, tag);
	k.code = code;
	int rc = run_child(pol, wd, &k, &r, id);
	ok(rc == 0 && !strcmp(r.status, "ok"),
	   "%s: the forked sandbox's run: rc %d, %s %s %s", tag, rc, r.status,
	   r.cause, r.setup_error);
	const char *p = strstr(out_of(&r), "ZYG ");
	snprintf(line, n, "%s", p ? p + 4 : "");
	line[strcspn(line, "\n")] = '\0';
	ok(p != NULL, "%s: its cell ran: %s", tag, line);
	const struct tracer_layer *z = layer(&r, "zygote");
	ok(z && z->active && strstr(z->detail, template_id),
	   "%s: the record names the template's run: %s", tag,
	   z ? z->detail : "(no zygote layer)");
	ok(r.processes >= 1, "%s: processes recorded: %lld", tag, r.processes);
	tracer_result_free(&r);
}

/* A cell the code should not get away with: the run's end, its cause. */
static void escape(struct policy *pol, const char *wd, const char *what,
		   const char *code, const char *want_status,
		   const char *want_cause, const char *want_out)
{
	struct child k = { .code = code };
	char id[AUDIT_RUN_ID_LEN + 1];
	struct tracer_result r;

	char shown[200];

	run_child(pol, wd, &k, &r, id);
	snprintf(shown, sizeof(shown), "%s", out_of(&r));
	for (char *p = shown; *p; p++)
		if (*p == '\n')
			*p = '|';
	ok(!strcmp(r.status, want_status) &&
		   (!want_cause || strstr(r.cause, want_cause)) &&
		   (!want_out || strstr(out_of(&r), want_out)),
	   "%s: %s (%s; out: %s)", what, r.status, r.cause, shown);
	tracer_result_free(&r);
}

static const char unshare_code[] =
	"import ctypes\n"
	"print('before', flush=True)\n"
	"ctypes.CDLL(None).unshare(0x10000000)\n"
	"print('escaped', flush=True)\n";
static const char filter_code[] =
	"import ctypes\n"
	"print('before', flush=True)\n"
	"ctypes.CDLL(None).prctl(22, 2, 0, 0, 0)\n"
	"print('escaped', flush=True)\n";
static const char pid1_code[] =
	"import os, signal\n"
	"try:\n"
	"    os.kill(1, signal.SIGKILL)\n"
	"    print('sent', flush=True)\n"
	"except OSError as e:\n"
	"    print('refused', e.errno, flush=True)\n"
	"print('alive', os.getppid(), flush=True)\n";

/* A template that is not ward's driver: its fork opens a file before
 * its unshare. Its supervisor kills it before anything of the code's. */
static const char rogue_template[] =
	"import os, socket\n"
	"os.chdir('/')\n"
	"ctl = socket.socket(fileno=5)\n"
	"ctl.sendall(b'R')\n"
	"while True:\n"
	"    msg, fds, _, _ = socket.recv_fds(ctl, 1, 8)\n"
	"    if not msg:\n"
	"        os._exit(0)\n"
	"    if os.fork() == 0:\n"
	"        os.dup2(fds[0], 1)\n"
	"        s = fds[2]\n"
	"        got = b''\n"
	"        while len(got) < 2:\n"
	"            got += os.read(s, 2 - len(got))\n"
	"        open('/etc/hostname').read()\n"
	"        print('rogue ran', flush=True)\n"
	"        os._exit(0)\n"
	"    for fd in fds:\n"
	"        os.close(fd)\n"
	"    ctl.sendall(b'K')\n";

/* A template that unshares itself: the floor its filter relaxes for its
 * forks still holds for it. */
static const char unsharing_template[] =
	"import ctypes\n"
	"ctypes.CDLL(None).unshare(0x10000000)\n"
	"print('escaped', flush=True)\n";

static const char *q(const char *sql, char *out, size_t n)
{
	return db_first(dbpath, sql, out, n);
}

int main(int argc, char **argv)
{
	struct policy *pol = NULL;
	struct policy_error e;
	char wd_t[300], wd_a[300], wd_b[300], cmd[1200];

	if (argc > 1 && !strcmp(argv[1], "__unwinder"))
		tracer_unwinder_main(argc, argv);
	if (geteuid() != 0 || !tracer_view_possible()) {
		skip("zygote: needs root and namespaces");
		return done_testing();
	}
	if (!tracer_zygote_possible()) {
		skip("zygote: unprivileged user namespaces are off here");
		return done_testing();
	}
	/* the driver, from the source tree (BUILD/tests/test-zygote) */
	ssize_t l = readlink("/proc/self/exe", driver_path,
			     sizeof(driver_path) - 64);
	if (l <= 0)
		return 99;
	driver_path[l] = '\0';
	for (int i = 0; i < 3; i++)
		*strrchr(driver_path, '/') = '\0';
	strcat(driver_path, "/tools/agent/drivers/python.py");
	driver = slurp(driver_path);
	if (!driver) {
		ok(0, "the driver at %s", driver_path);
		return done_testing();
	}
	snprintf(tmp, sizeof(tmp), "/tmp/ward-unit-zygote-XXXXXX");
	if (!mkdtemp(tmp))
		return 99;
	snprintf(dbpath, sizeof(dbpath), "%s/audit.db", tmp);
	snprintf(wd_t, sizeof(wd_t), "%s/template", tmp);
	snprintf(wd_a, sizeof(wd_a), "%s/a", tmp);
	snprintf(wd_b, sizeof(wd_b), "%s/b", tmp);
	chmod(tmp, 0755);
	if (mkdir(wd_t, 0755) < 0 || mkdir(wd_a, 0755) < 0 ||
	    mkdir(wd_b, 0755) < 0 || chown(wd_a, 65534, 65534) < 0 ||
	    chown(wd_b, 65534, 65534) < 0)
		return 99;
	snprintf(cmd, sizeof(cmd), "%s/given", wd_a);
	int gf = open(cmd, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (gf >= 0)
		close(gf);
	memset(&e, 0, sizeof(e));
	if (policy_load_profile("default", &pol, &e) < 0 ||
	    policy_set_workdir(pol, TRACER_HOME) < 0) {
		ok(0, "the default profile");
		return done_testing();
	}
	template_sup = start_template(pol, wd_t);
	ok(template_sup > 0 && template_id[0],
	   "the template started and ran ward's warm-up (run %s)",
	   template_id);
	if (template_sup > 0) {
		char a[2048], b[2048];
		probe(pol, wd_a, "a", a, sizeof(a));
		probe(pol, wd_b, "b", b, sizeof(b));
		ok(strstr(a, "\"pid\": 2,") != NULL,
		   "the code is pid 2 of its own pid namespace");
		ok(strstr(a, "\"uid\": 65534") != NULL, "as uid 65534");
		ok(strstr(a, "\"cwd\": \"" TRACER_HOME "\"") != NULL,
		   "in its own workdir");
		ok(strstr(a, "\"procs\": [2") != NULL &&
			   !strstr(a, "\"procs\": [1"),
		   "it sees its own process (pid 1, ward's, is hidden from "
		   "it, as ward's init is)");
		ok(strstr(a, "\"nspid\": [\"2\"]") != NULL,
		   "its /proc is its own pid namespace's");
		ok(strstr(a, "\"wd\": [\"given\"]") != NULL,
		   "its workdir holds its own files");
		ok(strstr(b, "\"wd\": []") != NULL &&
			   strstr(b, "\"other\": false"),
		   "a sibling sees nothing of the first's workdir");
		ok(strstr(a, "\"caps\": [\"0000000000000000\"]") != NULL,
		   "no capability");
		snprintf(cmd, sizeof(cmd), "%s/mine-a", wd_a);
		ok(access(cmd, F_OK) == 0,
		   "what it wrote is in its own workdir on the host");
		const char *ra = strstr(a, "\"rand\": "),
			   *rb = strstr(b, "\"rand\": ");
		if (ra && rb && strncmp(ra, "\"rand\": null", 12))
			ok(strcmp(ra, rb) != 0,
			   "numpy's generator differs between siblings: %s / %s",
			   ra, rb);
		else
			skip("numpy is not installed");
	}
	if (template_sup > 0) {
		escape(pol, wd_a, "the code's unshare is killed in the kernel",
		       unshare_code, "killed", "unshare", "before");
		escape(pol, wd_a, "the code's own seccomp filter is killed",
		       filter_code, "killed", "prctl", "before");
		escape(pol, wd_a, "pid 1 (ward's) is out of the code's reach",
		       pid1_code, "ok", NULL, "refused 1\nalive 1");
	}
	if (tctl >= 0)
		close(tctl); /* EOF: the template ends, and its run */
	char c;
	while (handoff_r >= 0 && read(handoff_r, &c, 1) > 0)
		;
	close(handoff_r);
	handoff_r = tctl = -1;
	/* a fork out of the set-up's order: killed before its code */
	driver = (char *)rogue_template;
	if (start_template(pol, wd_t) > 0)
		escape(pol, wd_a, "a fork whose first call is not its unshare",
		       "print('never')", "killed", "out of its order", NULL);
	else
		ok(0, "the rogue template started");
	if (tctl >= 0)
		close(tctl);
	while (handoff_r >= 0 && read(handoff_r, &c, 1) > 0)
		;
	close(handoff_r);
	handoff_r = tctl = -1;
	driver = (char *)unsharing_template;
	ok(start_template(pol, wd_t) < 0, "a template that unshares never "
					  "comes up");
	char sql[300], got[300];
	snprintf(sql, sizeof(sql),
		 "select status || ' ' || coalesce(cause, '') from runs where "
		 "id = '%s'",
		 template_id);
	for (int i = 0; i < 100 && !strncmp(q(sql, got, sizeof(got)),
					    "running", 7);
	     i++)
		usleep(50 * 1000);
	ok(!strncmp(got, "killed", 6) && strstr(got, "floor.zygote"),
	   "its run is killed by the floor: %s", got);
	if (tctl >= 0)
		close(tctl);
	while (handoff_r >= 0 && read(handoff_r, &c, 1) > 0)
		;
	policy_free(pol);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd) != 0)
		ok(0, "cleanup");
	return done_testing();
}
