/*
 * test-attach.c - tracer_run's attach path (tracer_opts.attach): ward
 * supervises a process it did not spawn, the first step of the warm
 * pool's forked sandboxes (docs/performance.md).
 *
 * The process is forked here, puts itself under ward's guard filter and
 * the default profile's filter with no_new_privs and no capabilities (as
 * a forked sandbox's maker would), and waits on the sync pipe. Shown:
 * before the seize a trapped call fails (ENOSYS: fail closed); after it,
 * the policy decides (a file outside its trees is refused, one inside
 * opens) and the denial is counted; the rlimits come from outside; its
 * own namespaces are recorded; a process that is not ready (no filter,
 * a second thread) is refused before it runs on, and killed. Needs root
 * (ward seizes a process of its own uid only as root or as its parent;
 * the tests run as root) and a kernel with seccomp and ptrace.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../audit/audit.h"
#include "../../policy/policy.h"
#include "../../tracer/tracer-int.h"
#include "dbq.h"
#include "tap.h"

static char tmp[256], secret[300], allowed[300], dbpath[300];

struct maker {
	const struct sock_fprog *filter; /* NULL: none (refused) */
	bool second_thread;		 /* refused */
	bool cgroup; /* the run's memory and pids cgroups, entered from outside */
	bool fork_init; /* after its release: fork, the child (pid 1 of its
			 * new pid namespace) opens and says its pid */
	int unshare;	/* CLONE_NEW* to enter first */
};

static void *idle(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

static const char *err_name(int fd, int e)
{
	return fd >= 0	     ? "ok"
	       : e == ENOSYS ? "ENOSYS"
	       : e == EACCES ? "EACCES"
			     : strerror(e);
}

/* The forked sandbox's side, up to its output; never returns. */
__attribute__((noreturn)) static void sandbox(const struct maker *m,
					      const struct tracer_attach_fds *f)
{
	if (dup2(f->out_w, 1) < 0 || dup2(f->err_w, 2) < 0)
		_exit(120);
	if (m->unshare && unshare(m->unshare) < 0)
		_exit(121);
	if (m->second_thread) {
		pthread_t th;
		if (pthread_create(&th, NULL, idle, NULL))
			_exit(122);
	}
	if (m->filter) {
		struct __user_cap_header_struct h = {
			_LINUX_CAPABILITY_VERSION_3, 0
		};
		struct __user_cap_data_struct d[2];
		memset(d, 0, sizeof(d));
		if (syscall(SYS_capset, &h, d) < 0 ||
		    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &tracer_guard) <
			    0 ||
		    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0,
			    m->filter) < 0)
			_exit(123);
	}
	/* untraced: a trapped call must fail */
	int fd = open(allowed, O_RDONLY | O_CLOEXEC);
	const char *before = err_name(fd, errno);
	char go[2];
	size_t n = 0;
	while (n < 2) {
		ssize_t r = read(f->sync_r, go + n, 2 - n);
		if (r <= 0)
			_exit(124); /* EOF: not released */
		n += (size_t)r;
	}
	if (m->fork_init) {
		pid_t kid = fork();
		if (kid == 0) {
			fd = open(secret, O_RDONLY | O_CLOEXEC);
			printf("child pid=%d secret=%s\n", (int)getpid(),
			       err_name(fd, errno));
			fflush(stdout);
			_exit(0);
		}
		int st = 0;
		waitpid(kid, &st, 0);
		_exit(kid > 0 && WIFEXITED(st) ? WEXITSTATUS(st) : 125);
	}
	fd = open(secret, O_RDONLY | O_CLOEXEC);
	const char *sec = err_name(fd, errno);
	fd = open(allowed, O_RDONLY | O_CLOEXEC);
	const char *all = err_name(fd, errno);
	struct rlimit nofile, fsize;
	getrlimit(RLIMIT_NOFILE, &nofile);
	getrlimit(RLIMIT_FSIZE, &fsize);
	printf("before=%s go=%c%c secret=%s allowed=%s nofile=%llu "
	       "fsize=%llu\n",
	       before, go[0], go[1], sec, all,
	       (unsigned long long)nofile.rlim_cur,
	       (unsigned long long)fsize.rlim_cur);
	fflush(stdout);
	_exit(0);
}

static pid_t make(void *arg, const struct tracer_attach_fds *f)
{
	pid_t pid = fork();

	if (pid == 0)
		sandbox(arg, f);
	if (pid > 0)
		usleep(50 * 1000); /* it reaches its read (or its check) */
	return pid < 0 ? -errno : pid;
}

static char arg0[] = "attached";
static char *const code_argv[] = { arg0, NULL };
static char *const envp[] = { NULL };

/* A run of the attached process, recorded in dbpath (its run id in id). */
static int run(struct policy *pol, struct maker *m, struct tracer_result *r,
	       char id[AUDIT_RUN_ID_LEN + 1])
{
	struct audit *au = NULL;
	char err[256];
	struct audit_run_info ri = {
		.argv_json = "[\"test-attach\"]",
		.language = "python",
		.interpreter = "/usr/bin/python3",
		.code = "",
		.code_sha256 = "0",
		.code_name = "attached",
		.policy_name = policy_name(pol),
		.policy_json = policy_text(pol),
		.policy_sha256 = "0",
		.workdir = tmp,
		.limits_json = "{}",
		.kernel = "test",
		.ward_version = "test",
	};
	if (audit_open(dbpath, false, &au, err, sizeof(err)) < 0 ||
	    audit_run_begin(au, &ri, id) < 0) {
		ok(0, "audit: %s", err);
		audit_close(au);
		return -EIO;
	}
	struct tracer_opts o = {
		.audit = au,
		.interpreter = "/usr/bin/python3",
		.argv = code_argv,
		.envp = envp,
		.workdir = tmp,
		.home = tmp,
		.policy = pol,
		.capture = true,
		.no_cgroup = !m->cgroup,
		.pin_cpu = -1,
		.limits = { .nofile = 77,
			    .memory_bytes = m->cgroup ? 256LL << 20 : 0,
			    .procs = m->cgroup ? 16 : 0,
			    .fsize_bytes = 1 << 20,
			    .wall_ms = 20000 },
		.attach = make,
		.attach_arg = m,
	};
	int rc = tracer_run(&o, r);
	struct audit_run_end re = {
		.status = r->status,
		.exit_code = r->exit_code,
		.processes = r->processes,
		.denials = r->denials,
		.events = r->events,
	};
	audit_run_end(au, &re);
	audit_close(au);
	return rc;
}

static const char *q(const char *sql, char *out, size_t n)
{
	return db_first(dbpath, sql, out, n);
}

static const struct tracer_layer *layer(const struct tracer_result *r,
					const char *name)
{
	for (size_t i = 0; i < r->n_layers; i++)
		if (!strcmp(r->layers[i].name, name))
			return &r->layers[i];
	return NULL;
}

static bool no_children(void)
{
	return waitpid(-1, NULL, WNOHANG | __WALL) < 0 && errno == ECHILD;
}

static void supervised_case(struct policy *pol, const struct sock_fprog *filter)
{
	struct maker m = { .filter = filter,
			   .unshare = CLONE_NEWNET | CLONE_NEWUTS |
				      CLONE_NEWIPC,
			   .cgroup = true };
	struct tracer_result r;
	char want[200], id[AUDIT_RUN_ID_LEN + 1], sql[300], got[300];

	int rc = run(pol, &m, &r, id);
	is_int(rc, 0, "attached run: tracer_run returns 0");
	is_str(r.status, "ok", "attached run: status ok");
	is_int(r.exit_code, 0, "attached run: exit 0");
	is_str(r.setup_error, "", "attached run: no set-up error");
	snprintf(want, sizeof(want),
		 "before=ENOSYS go=%cg secret=EACCES allowed=ok "
		 "nofile=77 fsize=1048576\n",
		 !strncmp(r.memory_by, "cgroup", 6) ? 'c' : 'r');
	is_str(r.out[1], want,
	       "untraced: a trapped call fails (ENOSYS); seized: the policy "
	       "decides; rlimits set from outside");
	is_int(r.denials, 1, "attached run: the denial is counted");
	const struct tracer_layer *cg = layer(&r, "cgroup-memory");
	ok(!strncmp(r.memory_by, "cgroup", 6) && cg && cg->active,
	   "attached run: entered the run's memory cgroup from outside (%s: "
	   "%s)",
	   r.memory_by, cg ? cg->detail : "no layer");
	is_int(r.processes, 1, "attached run: one process");
	const struct tracer_layer *ns = layer(&r, "namespaces");
	ok(ns && strstr(ns->detail, "net, ipc, uts") && !ns->active,
	   "attached run: its own namespaces are recorded (%s), not pid/mnt",
	   ns ? ns->detail : "none");
	snprintf(sql, sizeof(sql),
		 "SELECT exe || ' ' || kind FROM processes WHERE run_id = '%s'",
		 id);
	char self[300], exe[320];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = '\0';
	snprintf(exe, sizeof(exe), "%s process", self);
	is_str(q(sql, got, sizeof(got)), exe,
	       "recorded: the attached process, as it is (its own image)");
	snprintf(
		sql, sizeof(sql),
		"SELECT syscall || ' ' || decision || ' ' || target FROM events "
		"WHERE run_id = '%s' AND decision = 'deny'",
		id);
	snprintf(want, sizeof(want), "openat deny %s", secret);
	is_str(q(sql, got, sizeof(got)), want, "recorded: the denial");
	const struct tracer_layer *sc = layer(&r, "seccomp");
	ok(sc && sc->active && strstr(sc->detail, "attached: "),
	   "attached run: the seccomp layer says what ward checked (%s)",
	   sc ? sc->detail : "none");
	tracer_result_free(&r);
	ok(no_children(), "attached run: nothing left");
}

/* The zygote's child's next step (docs/performance.md): in a new pid
 * namespace of its own it forks once more, and that child, pid 1 there, is
 * traced from its first instruction (PTRACE_O_TRACEFORK) and decided on. */
static void pid_namespace_case(struct policy *pol,
			       const struct sock_fprog *filter)
{
	struct maker m = { .filter = filter,
			   .unshare = CLONE_NEWPID | CLONE_NEWNS |
				      CLONE_NEWNET | CLONE_NEWIPC |
				      CLONE_NEWUTS,
			   .fork_init = true };
	struct tracer_result r;
	char id[AUDIT_RUN_ID_LEN + 1];

	int rc = run(pol, &m, &r, id);
	is_int(rc, 0, "pid namespace: tracer_run returns 0");
	is_int(r.exit_code, 0, "pid namespace: exit 0");
	is_str(r.out[1], "child pid=1 secret=EACCES\n",
	       "pid namespace: its fork is pid 1 there, traced and decided on");
	is_int(r.processes, 2, "pid namespace: both processes recorded");
	is_int(r.denials, 1, "pid namespace: the child's denial counted");
	const struct tracer_layer *ns = layer(&r, "namespaces");
	ok(ns && ns->active &&
		   strstr(ns->detail,
			  "pid (its children's), mnt, net, ipc, uts"),
	   "pid namespace: recorded active (%s)", ns ? ns->detail : "none");
	tracer_result_free(&r);
	ok(no_children(), "pid namespace: nothing left");
}

static void refused_case(struct policy *pol, struct maker *m, const char *why,
			 const char *what)
{
	struct tracer_result r;
	char id[AUDIT_RUN_ID_LEN + 1];

	int rc = run(pol, m, &r, id);
	ok(rc < 0, "%s: refused (%d)", what, rc);
	ok(strstr(r.setup_error, why) != NULL, "%s: set-up error names %s: %s",
	   what, why, r.setup_error);
	is_str(r.out[1] ? r.out[1] : "", "", "nothing of it ran on");
	tracer_result_free(&r);
	ok(no_children(), "%s: killed and reaped", what);
}

int main(int argc, char **argv)
{
	struct policy *pol = NULL;
	struct policy_error e;
	struct sock_fprog filter = { 0, NULL };
	char msg[512];

	/* a denial's backtrace starts the unwinder helper as this program */
	if (argc > 1 && !strcmp(argv[1], "__unwinder"))
		tracer_unwinder_main(argc, argv);
	if (geteuid() != 0) {
		skip("attach: needs root");
		return done_testing();
	}
	snprintf(tmp, sizeof(tmp), "/tmp/ward-unit-attach-XXXXXX");
	if (!mkdtemp(tmp))
		return 99;
	snprintf(secret, sizeof(secret), "%s-secret", tmp);
	snprintf(allowed, sizeof(allowed), "%s/allowed", tmp);
	snprintf(dbpath, sizeof(dbpath), "%s-audit.db", tmp);
	int fd = open(secret, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	int fd2 = open(allowed, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0 || fd2 < 0)
		return 99;
	close(fd);
	close(fd2);
	memset(&e, 0, sizeof(e));
	if (policy_load_profile("default", &pol, &e) < 0 ||
	    policy_set_workdir(pol, tmp) < 0 ||
	    tracer_filter_build(pol, &filter, msg, sizeof(msg)) < 0) {
		ok(0, "default profile and its filter: %s", msg);
		return done_testing();
	}
	supervised_case(pol, &filter);
	pid_namespace_case(pol, &filter);
	struct maker nofilter = { 0 };
	refused_case(pol, &nofilter, "NoNewPrivs", "no filter, no_new_privs");
	struct maker threads = { .filter = &filter, .second_thread = true };
	refused_case(pol, &threads, "Threads", "a second thread");

	free(filter.filter);
	policy_free(pol);
	unlink(secret);
	unlink(allowed);
	rmdir(tmp);
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "rm -f '%s'*", dbpath);
	if (system(cmd) != 0)
		ok(0, "cleanup");
	return done_testing();
}
