/*
 * cmd_run.c - `ward run`: load the policy, open the record, prepare the
 * workdir and environment, supervise the code, report.
 */
#include "tools/cmds.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <pwd.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"
#include "common/errnames.h"
#include "common/log.h"
#include "common/sha256.h"
#include "policy/policy.h"
#include "tracer/tracer.h"
#include "tools/run/recguard.h"
#include "tools/run/runrec.h"
#include "tools/run/ttyask.h"
#include "tools/run/workfiles.h"

#define SANDBOX_UID 65534 /* nobody */
#define SANDBOX_GID 65534 /* nogroup */

static const struct ward_limits builtin_limits = {
	.wall_ms = 60000,
	.cpu_s = 60,
	.memory_bytes = 4096LL << 20,
	.procs = 256,
	.fsize_bytes = 1024LL << 20,
	.nofile = 1024,
	.output_bytes = 16LL << 20,
	.events = 1000000,
	.disk_bytes = 1024LL << 20,
};

/* One --input file as copied: name, size, hash and (when kept under the
 * --keep-inputs cap) its bytes, for the table inputs. */
struct input_rec {
	char *name;
	long long size;
	char sha256[WARD_SHA256_HEX_LEN + 1];
	char *data; /* NULL when not kept */
};

#define KEEP_INPUTS_DEFAULT (64LL << 20)

struct run_args {
	const char *lang, *profile, *policy_file, *db, *workdir, *interp;
	const char *code_arg; /* -c CODE */
	const char *file;     /* FILE or "-" */
	/* --setup FILE / --setup-code CODE: run first, under the policy's
	 * setup phase (setup_run below) */
	const char *setup_file, *setup_code;
	struct ward_limits lim; /* command-line overrides; 0 = unset */
	bool keep, json, quiet, summary, no_cgroup;
	int pin_cpu; /* -1: none; TRACER_PIN_AUTO: the default */
	int spin_us;
	unsigned long long require; /* --require: policy_layer_name() bits */
	char **envs;
	size_t n_envs;
	char **hosts; /* --add-host NAME:IP */
	size_t n_hosts;
	char **inputs; /* --input files copied into the workdir */
	size_t n_inputs;
	struct input_rec *in_recs; /* what copy_inputs() copied, recorded */
	long long keep_inputs;	   /* --keep-inputs: bytes of inputs kept */
	const char *rerun_of;	   /* --rerun-of RUN (recorded in argv) */
	const char *stdin_file;	   /* --stdin FILE, or NULL: /dev/null */
	char **script_args;
	int n_script_args;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ward run [options] (FILE | -c CODE | -) [-- ARGS...]\n"
		"\n"
		"Run code under ward's supervisor: every sensitive syscall is decided by the\n"
		"policy and recorded, with every process and every byte of output, in the\n"
		"audit database. Output passes through as usual; the exit status is the\n"
		"code's own.\n"
		"\n"
		"  FILE              a script; copied into the workdir and run from there\n"
		"  -c CODE           code given on the command line\n"
		"  -                 code read from standard input (the code's own stdin is\n"
		"                    /dev/null unless --stdin)\n"
		"\n"
		"options:\n"
		"  --setup FILE      first run FILE under the policy's setup phase\n"
		"                    (\"phases\": {\"setup\": ...}, docs/policy.md), in\n"
		"                    the same workdir and record; then the code under\n"
		"                    the policy itself, in processes started afresh:\n"
		"                    nothing of the setup survives into it. Its language\n"
		"                    is from its extension, else the code's. If the\n"
		"                    setup fails, the code does not run\n"
		"  --setup-code CODE the same with code given on the command line (in the\n"
		"                    code's language)\n"
		"  --lang L          python, node or sh (default: from FILE's extension\n"
		"                    .py/.js/.mjs/.sh, else python)\n"
		"  --profile NAME    a policy shipped with ward: default (python), node, sh,\n"
		"                    audit (learning mode: nothing denied, would-be denials\n"
		"                    recorded). Default: the language's profile\n"
		"  --policy FILE     a policy file (docs/policy.md); overrides --profile\n"
		"  --interpreter P   run this interpreter instead of the policy's\n"
		"  --db PATH         audit database (default: $WARD_DB, else\n"
		"                    $XDG_STATE_HOME/ward/audit.db, else\n"
		"                    ~/.local/state/ward/audit.db)\n"
		"  --seal-log FILE   append each seal ward makes to FILE (one JSON line,\n"
		"                    synced), to check with `ward verify --seal-log FILE`;\n"
		"                    keep it where whoever can rewrite the database cannot\n"
		"                    (default: $WARD_SEAL_LOG; docs/security.md)\n"
		"  --seal-syslog     send each seal to the system log too (authpriv.notice,\n"
		"                    tag ward-seal: `journalctl -t ward-seal -o cat` is a\n"
		"                    seal log; $WARD_SEAL_SYSLOG names another socket)\n"
		"  --workdir DIR     the code's working directory (created if missing);\n"
		"                    default: a fresh temporary directory, removed after\n"
		"                    the run unless --keep\n"
		"  --keep            keep the temporary workdir (its path is printed)\n"
		"  --input FILE      copy FILE into the workdir before the run (repeatable);\n"
		"                    its name, size, SHA-256 and bytes are recorded for\n"
		"                    `ward rerun`\n"
		"  --keep-inputs SIZE  keep at most SIZE bytes of --input files in the\n"
		"                    record (default 64M, 0: none); a file past the cap\n"
		"                    is recorded by name, size and SHA-256 only, and\n"
		"                    `ward rerun` needs it given again\n"
		"  --add-host NAME:IP  the egress proxy (net.allow_domains) resolves NAME\n"
		"                    to IP (repeatable; docs/policy.md)\n"
		"  --env NAME[=VAL]  pass one variable to the code (repeatable); nothing of\n"
		"                    ward's own environment is passed otherwise. Recorded\n"
		"                    in runs.env: NAME=VAL with its value (it is in the\n"
		"                    recorded command line anyway), NAME alone (taken\n"
		"                    from ward's environment) by name only, never its\n"
		"                    value: pass secrets that way\n"
		"  --stdin FILE      the code's standard input reads FILE (opened by ward,\n"
		"                    read-only) instead of /dev/null\n"
		"  --tag TEXT        a label kept in the recorded command line (runs.argv)\n"
		"                    and nowhere else; ward batch tags each sample's run\n"
		"  --rerun-of RUN    mark this run as a re-run of RUN in the record (its\n"
		"                    argv); `ward rerun` passes it\n"
		"  --timeout SEC     wall-clock limit (default: the policy's, else 60)\n"
		"  --cpu SEC         CPU time limit per process\n"
		"  --memory SIZE     memory limit (e.g. 512M, 4G) on the memory the run uses,\n"
		"                    in a cgroup where one can be made (as root, or a\n"
		"                    delegated cgroup v2 subtree): the kernel's OOM kill\n"
		"                    ends the run with status limit; elsewhere an\n"
		"                    address-space rlimit per process (MemoryError)\n"
		"  --max-procs N     processes and threads alive at once in the run; also\n"
		"                    a pids cgroup where one can be made (a fork it refuses\n"
		"                    ends the run with status limit)\n"
		"  --no-cgroup       no cgroups: rlimits and ward's own count only (saves\n"
		"                    a few ms at start on cgroup v1: median 3, up to 14)\n"
		"  --memory-cgroup   accepted for old scripts: cgroups are the default\n"
		"  --max-output SIZE bytes of each stream the record keeps (default: the\n"
		"                    policy's, else 16M); past them the stream is only\n"
		"                    counted (stdout_bytes, stderr_bytes) and marked\n"
		"                    truncated. The output passing through is never cut:\n"
		"                    you see every byte the code wrote\n"
		"  --max-events N    decided syscalls the run may record (default: the\n"
		"                    policy's, else 1000000); the next one ends the run\n"
		"                    with status limit: the database, outside the code's\n"
		"                    other limits, cannot grow without end\n"
		"  --max-disk SIZE   total size of the temporary workdir (default: the\n"
		"                    policy's, else 1G): as root, a tmpfs of that size on\n"
		"                    it (ENOSPC past it); not with --workdir or --keep\n"
		"  --json            print one JSON object instead of passing output through\n"
		"                    (see JSON below)\n"
		"  --spin-us N       after continuing the code, poll this many microseconds\n"
		"                    for its next stop before sleeping, while a CPU is free\n"
		"                    (default 100; 0: never): saves a CPU wake-up per trap\n"
		"  --pin-cpu[=N]     run the code and ward's supervisor on CPU N (default\n"
		"                    the current one) while the code runs one thread at a\n"
		"                    time: traps get cheaper (no cross-CPU wake-ups); the\n"
		"                    code sees one CPU in its affinity mask until it starts\n"
		"                    a thread or forks, or waits for its CPU (other work\n"
		"                    on it). The default, on the current CPU,\n"
		"                    when ward has two or more\n"
		"  --no-pin          no pinning: the code sees every CPU from its start\n"
		"  --require LAYER[,LAYER]  refuse to run (exit 125) unless each layer is\n"
		"                    active: landlock, namespaces, cgroup-memory,\n"
		"                    cgroup-pids, rlimits, seccomp, ptrace, argument-copies\n"
		"                    (also the policy's \"require\" key; `ward show` lists a\n"
		"                    run's layers).\n"
		"                    Without it a missing layer is said on stderr, recorded,\n"
		"                    and the run goes on\n"
		"  --summary         after the run, print a short audit summary on stderr\n"
		"  --quiet           no denial lines on stderr\n"
		"  -v                more diagnostics from ward\n"
		"  -h, --help        this text\n"
		"\n"
		"JSON (--json): {run_id, exit_code, signal, status, cause, timed_out,\n"
		"duration_ms, stdout, stderr, stdout_bytes, stderr_bytes,\n"
		"stdout_truncated, stderr_truncated, processes, events, denied,\n"
		"denials, layers, db, chain, ...}. stdout and stderr are what the\n"
		"record kept of each stream (at most --max-output bytes), as UTF-8\n"
		"text: always a string, bytes that are not UTF-8 each replaced by\n"
		"U+FFFD. Exactly when the kept bytes are not valid UTF-8,\n"
		"stdout_base64 (stderr_base64) is there too, with those bytes exactly,\n"
		"in base64: take it when it is there, else the text. stdout_bytes\n"
		"counts every byte the code wrote to stdout; stdout_truncated is true\n"
		"when the record (and so stdout here) has fewer.\n"
		"\n"
		"exit status: the code's own; 128+N when it was killed by signal N; 124 on\n"
		"timeout; 125 for ward's own errors (bad arguments, bad policy, unusable\n"
		"database or workdir).\n"
		"\n"
		"The code runs with HOME and TMPDIR inside the workdir, PATH=/usr/local/bin:\n"
		"/usr/bin:/bin and LANG=C.UTF-8. As root, it runs as uid/gid 65534\n"
		"(nobody/nogroup) and the workdir is handed to that user.\n");
}

/* "512M", "4G", "1024" (bytes). */
static long long parse_size(const char *opt, const char *s)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	long long mul = 1;

	if (errno || end == s || v < 0)
		die("%s: '%s' is not a size (use e.g. 4096, 512K, 64M, 2G)",
		    opt, s);
	switch (toupper((unsigned char)*end)) {
	case '\0': break;
	case 'K':
		mul = 1LL << 10;
		end++;
		break;
	case 'M':
		mul = 1LL << 20;
		end++;
		break;
	case 'G':
		mul = 1LL << 30;
		end++;
		break;
	default:
		die("%s: '%s' is not a size (use e.g. 4096, 512K, 64M, 2G)",
		    opt, s);
	}
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end)
		die("%s: '%s' is not a size (use e.g. 4096, 512K, 64M, 2G)",
		    opt, s);
	return (long long)(v * (double)mul);
}

static long long parse_num(const char *opt, const char *s, double scale)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);

	if (errno || end == s || *end || v <= 0)
		die("%s: '%s' must be a positive number", opt, s);
	return (long long)(v * scale + 0.5);
}

/* A whole number from 1 to max. */
static long long parse_whole(const char *opt, const char *s, long long max)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < 1 || v > max)
		die("%s: '%s' must be a whole number from 1 to %lld", opt, s,
		    max);
	return v;
}

/* A count >= 0 (0 allowed, unlike parse_num). */
static long parse_count(const char *opt, const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v > 1000000)
		die("%s: '%s' must be a whole number from 0 to 1000000", opt,
		    s);
	return v;
}

/* "landlock,namespaces" -> policy_layer_name() bits. */
static unsigned long long parse_layers(const char *s)
{
	unsigned long long bits = 0;
	char valid[256] = "";
	const char *name;

	for (unsigned i = 0; (name = policy_layer_name(i)); i++)
		snprintf(valid + strlen(valid), sizeof(valid) - strlen(valid),
			 "%s%s", i ? ", " : "", name);
	while (*s) {
		size_t n = strcspn(s, ",");
		unsigned i;

		for (i = 0; (name = policy_layer_name(i)); i++)
			if (strlen(name) == n && !strncmp(name, s, n))
				break;
		if (!name)
			die("--require: unknown layer '%.*s'; valid: %s",
			    (int)n, s, valid);
		bits |= 1ULL << i;
		s += n + (s[n] == ',');
	}
	if (!bits)
		die("--require: name a layer (valid: %s)", valid);
	return bits;
}

static int parse_cpu(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v >= CPU_SETSIZE)
		die("--pin-cpu: '%s' is not a CPU number (0, 1, ...)", s);
	return (int)v;
}

static void parse_args(int argc, char **argv, struct run_args *a)
{
	enum {
		O_LANG = 256,
		O_PROFILE,
		O_POLICY,
		O_DB,
		O_SEAL_LOG,
		O_SEAL_SYSLOG,
		O_WORKDIR,
		O_KEEP,
		O_ENV,
		O_TIMEOUT,
		O_CPU,
		O_MEMORY,
		O_PROCS,
		O_OUTPUT,
		O_EVENTS,
		O_DISK,
		O_JSON,
		O_QUIET,
		O_INTERP,
		O_SUMMARY,
		O_INPUT,
		O_PIN,
		O_NOPIN,
		O_MEMCG,
		O_NOCG,
		O_SPIN,
		O_REQUIRE,
		O_KEEP_INPUTS,
		O_RERUN_OF,
		O_STDIN,
		O_TAG,
		O_SETUP,
		O_SETUP_CODE,
		O_ADD_HOST
	};
	static const struct option opts[] = {
		{ "lang", required_argument, 0, O_LANG },
		{ "profile", required_argument, 0, O_PROFILE },
		{ "policy", required_argument, 0, O_POLICY },
		{ "db", required_argument, 0, O_DB },
		{ "seal-log", required_argument, 0, O_SEAL_LOG },
		{ "seal-syslog", no_argument, 0, O_SEAL_SYSLOG },
		{ "workdir", required_argument, 0, O_WORKDIR },
		{ "keep", no_argument, 0, O_KEEP },
		{ "env", required_argument, 0, O_ENV },
		{ "timeout", required_argument, 0, O_TIMEOUT },
		{ "cpu", required_argument, 0, O_CPU },
		{ "memory", required_argument, 0, O_MEMORY },
		{ "max-procs", required_argument, 0, O_PROCS },
		{ "max-output", required_argument, 0, O_OUTPUT },
		{ "max-events", required_argument, 0, O_EVENTS },
		{ "max-disk", required_argument, 0, O_DISK },
		{ "json", no_argument, 0, O_JSON },
		{ "quiet", no_argument, 0, O_QUIET },
		{ "summary", no_argument, 0, O_SUMMARY },
		{ "interpreter", required_argument, 0, O_INTERP },
		{ "input", required_argument, 0, O_INPUT },
		{ "pin-cpu", optional_argument, 0, O_PIN },
		{ "no-pin", no_argument, 0, O_NOPIN },
		{ "memory-cgroup", no_argument, 0, O_MEMCG },
		{ "no-cgroup", no_argument, 0, O_NOCG },
		{ "spin-us", required_argument, 0, O_SPIN },
		{ "require", required_argument, 0, O_REQUIRE },
		{ "keep-inputs", required_argument, 0, O_KEEP_INPUTS },
		{ "rerun-of", required_argument, 0, O_RERUN_OF },
		{ "stdin", required_argument, 0, O_STDIN },
		{ "tag", required_argument, 0, O_TAG },
		{ "setup", required_argument, 0, O_SETUP },
		{ "setup-code", required_argument, 0, O_SETUP_CODE },
		{ "add-host", required_argument, 0, O_ADD_HOST },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	int c;

	a->pin_cpu = TRACER_PIN_AUTO;
	a->spin_us = 100;
	a->keep_inputs = KEEP_INPUTS_DEFAULT;
	a->envs = calloc((size_t)argc + 1, sizeof(char *));
	a->inputs = calloc((size_t)argc + 1, sizeof(char *));
	a->hosts = calloc((size_t)argc + 1, sizeof(char *));
	if (!a->envs || !a->inputs || !a->hosts)
		die("out of memory");
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:c:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'c': a->code_arg = optarg; break;
		case 'v': ward_verbose++; break;
		case 'h': usage(stdout); exit(0);
		case O_LANG: a->lang = optarg; break;
		case O_PROFILE: a->profile = optarg; break;
		case O_POLICY: a->policy_file = optarg; break;
		case O_DB: a->db = optarg; break;
		case O_SEAL_LOG: ward_seal_log_arg("--seal-log", optarg); break;
		case O_SEAL_SYSLOG: ward_seal_syslog_arg(); break;
		case O_WORKDIR: a->workdir = optarg; break;
		case O_KEEP: a->keep = true; break;
		case O_ENV: a->envs[a->n_envs++] = optarg; break;
		case O_TIMEOUT:
			a->lim.wall_ms = parse_num("--timeout", optarg, 1000);
			break;
		case O_CPU: a->lim.cpu_s = parse_num("--cpu", optarg, 1); break;
		case O_MEMORY:
			a->lim.memory_bytes = parse_size("--memory", optarg);
			break;
		case O_PROCS:
			a->lim.procs = parse_num("--max-procs", optarg, 1);
			break;
		case O_OUTPUT:
			a->lim.output_bytes =
				parse_size("--max-output", optarg);
			break;
		case O_EVENTS:
			a->lim.events =
				parse_whole("--max-events", optarg, 1LL << 53);
			break;
		case O_DISK:
			a->lim.disk_bytes = parse_size("--max-disk", optarg);
			if (a->lim.disk_bytes < 1LL << 20)
				die("--max-disk: '%s' is too small: give at "
				    "least 1M",
				    optarg);
			break;
		case O_JSON: a->json = true; break;
		case O_QUIET: a->quiet = true; break;
		case O_SUMMARY: a->summary = true; break;
		case O_INTERP: a->interp = optarg; break;
		case O_INPUT: a->inputs[a->n_inputs++] = optarg; break;
		case O_SPIN:
			a->spin_us = (int)parse_count("--spin-us", optarg);
			break;
		case O_MEMCG: a->no_cgroup = false; break;
		case O_NOCG: a->no_cgroup = true; break;
		case O_REQUIRE: a->require |= parse_layers(optarg); break;
		case O_KEEP_INPUTS:
			a->keep_inputs = parse_size("--keep-inputs", optarg);
			break;
		case O_RERUN_OF: a->rerun_of = optarg; break;
		case O_STDIN: a->stdin_file = optarg; break;
		case O_TAG: break; /* only in the recorded argv */
		case O_SETUP: a->setup_file = optarg; break;
		case O_SETUP_CODE: a->setup_code = optarg; break;
		case O_ADD_HOST: a->hosts[a->n_hosts++] = optarg; break;
		case O_PIN:
			a->pin_cpu = optarg ? parse_cpu(optarg)
					    : sched_getcpu();
			if (a->pin_cpu < 0)
				die("--pin-cpu: cannot tell the current CPU");
			break;
		case O_NOPIN: a->pin_cpu = -1; break;
		case ':':
			die("run: %s needs a value (see `ward run --help`)",
			    argv[optind - 1]);
		default:
			die("run: unknown option %s (see `ward run --help`)",
			    argv[optind - 1]);
		}
	}
	if (!a->code_arg) {
		if (optind >= argc)
			die("run: no code: give FILE, -c CODE or - (see `ward run --help`)");
		a->file = argv[optind++];
	}
	if (optind < argc && !strcmp(argv[optind], "--"))
		optind++;
	a->script_args = argv + optind;
	a->n_script_args = argc - optind;
	if (a->lang && strcmp(a->lang, "python") && strcmp(a->lang, "node") &&
	    strcmp(a->lang, "sh"))
		die("--lang: '%s' is not one of python, node, sh", a->lang);
	if (a->setup_file && a->setup_code)
		die("run: give one of --setup FILE and --setup-code CODE");
	if (a->setup_file && !strcmp(a->setup_file, "-"))
		die("--setup: give a file (standard input is not a setup)");
}

int ward_run_args_start(int argc, char **argv, size_t *n_inputs, size_t *n_envs)
{
	struct run_args a;

	memset(&a, 0, sizeof(a));
	parse_args(argc, argv, &a);
	free(a.envs);
	free(a.inputs);
	free(a.hosts);
	*n_inputs = a.n_inputs;
	*n_envs = a.n_envs;
	return argc - a.n_script_args;
}

/* --stdin FILE, opened before anything runs: a missing file is said
 * before the record begins. -1 without --stdin. */
static int open_stdin(const struct run_args *a)
{
	struct stat st;
	int fd;

	if (!a->stdin_file)
		return -1;
	fd = open(a->stdin_file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		die("--stdin %s: %s", a->stdin_file, strerror(errno));
	if (fstat(fd, &st) || S_ISDIR(st.st_mode))
		die("--stdin %s: a directory is not an input", a->stdin_file);
	return fd;
}

static struct policy *load_policy(const struct run_args *a, const char *lang)
{
	struct policy *p = NULL;
	struct policy_error err;
	char msg[1024];
	int rc;
	const char *profile = a->profile;

	memset(&err, 0, sizeof(err));
	if (!profile)
		profile = !strcmp(lang, "python") ? "default" : lang;
	if (a->policy_file)
		rc = policy_load_file(a->policy_file, &p, &err);
	else
		rc = policy_load_profile(profile, &p, &err);
	if (rc < 0) {
		policy_error_format(&err, msg, sizeof(msg));
		if (rc == -ENOENT && !a->policy_file) {
			fprintf(stderr,
				"ward: no profile named '%s'; shipped profiles:",
				profile);
			for (const char *const *n = policy_profile_names(); *n;
			     n++)
				fprintf(stderr, " %s", *n);
			fprintf(stderr, "\n");
			exit(WARD_EXIT_INTERNAL);
		}
		die("bad policy: %s", msg);
	}
	return p;
}

static void merge_limits(struct ward_limits *out, const struct ward_limits *cli,
			 const struct policy *p)
{
	struct ward_limits pol;

	policy_limits(p, &pol);
#define PICK(f) out->f = cli->f ? cli->f : pol.f ? pol.f : builtin_limits.f
	PICK(wall_ms);
	PICK(cpu_s);
	PICK(memory_bytes);
	PICK(procs);
	PICK(fsize_bytes);
	PICK(nofile);
	PICK(output_bytes);
	PICK(events);
	PICK(disk_bytes);
#undef PICK
}

/* Workdir: created (temporary or given), resolved, usable by the code. */
static char *make_workdir(const struct run_args *a, bool drop,
			  long long disk_bytes, bool *temp, bool *quota,
			  char *quota_detail, size_t qn)
{
	char buf[PATH_MAX], *real;

	*temp = *quota = false;
	snprintf(quota_detail, qn,
		 a->workdir ? "--workdir given: its size is its file system's"
			    : "--keep: a workdir that outlives ward is not "
			      "a tmpfs; its size is /tmp's");
	if (a->workdir) {
		if (mkdir(a->workdir, 0700) < 0 && errno != EEXIST)
			die_errno("--workdir %s: cannot create it", a->workdir);
		real = realpath(a->workdir, NULL);
		if (!real)
			die_errno("--workdir %s", a->workdir);
		struct stat st;
		if (stat(real, &st) < 0 || !S_ISDIR(st.st_mode))
			die("--workdir %s: not a directory", a->workdir);
	} else {
		snprintf(buf, sizeof(buf), "/tmp/ward-XXXXXX");
		if (!mkdtemp(buf))
			die_errno("cannot create a temporary workdir in /tmp");
		real = realpath(buf, NULL);
		if (!real)
			die_errno("%s", buf);
		*temp = true;
		if (!a->keep)
			*quota = ward_workdir_quota(
					 real, disk_bytes,
					 drop ? SANDBOX_UID : getuid(),
					 drop ? SANDBOX_GID : getgid(),
					 quota_detail, qn) == 0;
	}
	snprintf(buf, sizeof(buf), "%s/tmp", real);
	if (mkdir(buf, 0700) < 0 && errno != EEXIST)
		die_errno("cannot create %s", buf);
	if (drop) {
		/* Without the run's own file tree, the code reaches the
		 * workdir by its host path: every directory above must be
		 * searchable by it. Checked before anything is handed over. */
		char up[PATH_MAX];
		snprintf(up, sizeof(up), "%s", real);
		for (char *s = strrchr(up, '/');
		     !tracer_view_possible() && s && s != up;
		     s = strrchr(up, '/')) {
			*s = '\0';
			struct stat st;
			if (stat(up, &st) == 0 && !(st.st_mode & S_IXOTH))
				die("--workdir %s: %s is not searchable by uid %d "
				    "(the code runs as nobody), and this system "
				    "gives ward no mount namespace to show the "
				    "workdir at " TRACER_HOME ": make %s "
				    "searchable (chmod o+x) or choose another "
				    "workdir",
				    real, up, SANDBOX_UID, up);
		}
		if (chown(real, SANDBOX_UID, SANDBOX_GID) < 0 ||
		    chown(buf, SANDBOX_UID, SANDBOX_GID) < 0)
			die_errno("cannot hand the workdir %s to uid %d", real,
				  SANDBOX_UID);
	}
	return real;
}

/* The temporary workdir while it exists: removed at exit too, so that
 * ward's own errors (die) leave nothing behind. */
static char *temp_workdir;

static void remove_temp_workdir(void)
{
	if (temp_workdir) {
		ward_rm_workdir(temp_workdir);
		temp_workdir = NULL;
	}
}

/* The temporary workdir is removed on a thread while the run's end is
 * committed, which waits for the disk (its sync): ~0.3 ms less before
 * ward exits. Its artifacts are recorded by then (path, size, hash). */
static void *rm_workdir_thread(void *arg)
{
	ward_rm_workdir(arg);
	/* and those of wards that died (SIGKILL) before they could */
	ward_sweep_workdirs();
	return NULL;
}

static void write_file(const char *path, const char *data, size_t len,
		       bool drop)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0 || wf_write_all(fd, data, len) < 0)
		die_errno("cannot write %s", path);
	if (drop && fchown(fd, SANDBOX_UID, SANDBOX_GID) < 0)
		die_errno("cannot hand %s to uid %d", path, SANDBOX_UID);
	close(fd);
}

/* --input files: copied (not linked) so the code cannot reach the original.
 * Each is remembered in a->in_recs for the record; its bytes are kept while
 * the inputs kept so far stay within --keep-inputs. */
static void copy_inputs(struct run_args *a, const char *workdir, bool drop)
{
	long long kept = 0;

	a->in_recs = calloc(a->n_inputs + 1, sizeof(*a->in_recs));
	if (!a->in_recs)
		die("out of memory");
	for (size_t i = 0; i < a->n_inputs; i++) {
		const char *src = a->inputs[i];
		const char *base = strrchr(src, '/');
		size_t len = 0;
		char *dst, *data = ward_read_path(src, &len);

		if (!data)
			die_errno("--input %s", src);
		base = base ? base + 1 : src;
		if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
			die("--input %s: give a file", src);
		if (asprintf(&dst, "%s/%s", workdir, base) < 0)
			die("out of memory");
		write_file(dst, data, len, drop);
		free(dst);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(a->in_recs[j].name, base))
				die("--input %s: a file named %s is given twice",
				    src, base);
		struct input_rec *rec = &a->in_recs[i];
		rec->name = strdup(base);
		if (!rec->name)
			die("out of memory");
		rec->size = (long long)len;
		ward_sha256_hex(data, len, rec->sha256);
		if (kept + rec->size <= a->keep_inputs) {
			kept += rec->size;
			rec->data = data;
		} else {
			free(data);
		}
	}
}

static long long realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The inputs into the table inputs of run_id (free_inputs frees them). */
static int record_inputs(struct run_args *a, struct audit *au,
			 const char *run_id, const char *db, char *err,
			 size_t n)
{
	for (size_t i = 0; i < a->n_inputs; i++) {
		struct input_rec *rec = &a->in_recs[i];
		struct audit_input in = {
			.run_id = run_id,
			.n = (long long)i + 1,
			.name = rec->name,
			.size = rec->size,
			.sha256 = rec->sha256,
			.data = rec->data,
		};
		if (audit_input(au, &in) < 0) {
			snprintf(err, n,
				 "audit database %s: cannot record --input %s: "
				 "%s",
				 db, rec->name, audit_errmsg(au));
			return -EIO;
		}
	}
	return 0;
}

static void free_inputs(struct run_args *a)
{
	for (size_t i = 0; i < a->n_inputs && a->in_recs; i++) {
		free(a->in_recs[i].data);
		free(a->in_recs[i].name);
	}
	free(a->in_recs);
	a->in_recs = NULL;
}

/* The run's record, begun on tracer_run's output thread (tracer.h): the
 * database opened, the run row and the inputs written. On failure
 * rec.err says what, and no code runs. */
struct run_record {
	struct ward_record rec; /* first: record_arg is &rec, as runrec.h's
				 * record_run_on and record_join take it */
	struct run_args *a;
};
_Static_assert(offsetof(struct run_record, rec) == 0,
	       "a struct ward_record * is a struct run_record *");

static int begin_record(void *arg, struct audit **out, char *err, size_t n)
{
	struct run_record *c = arg;
	struct ward_record *r = &c->rec;

	if (ward_record_begin(r) < 0)
		goto fail;
	debug("run %s recorded", r->run_id);
	if (record_inputs(c->a, r->au, r->run_id, r->db, r->err,
			  sizeof(r->err)) < 0) {
		audit_close(r->au);
		r->au = NULL;
		goto fail;
	}
	*out = r->au;
	return 0;
fail:
	snprintf(err, n, "%s", r->err);
	return -EIO;
}

/* runs.env: what --env passed, as a JSON array: {"name", "value"} for
 * NAME=VALUE, {"name", "from": "environment"} for NAME taken from ward's
 * environment (its value is not recorded). Variables not passed are left
 * out. */
static char *env_json(const struct run_args *a)
{
	json_t *arr = json_array();
	char *s;

	for (size_t i = 0; arr && i < a->n_envs; i++) {
		const char *e = a->envs[i], *eq = strchr(e, '=');
		json_t *o;

		if (eq)
			o = json_pack("{s:s%, s:o}", "name", e,
				      (size_t)(eq - e), "value",
				      ward_json_text(eq + 1, strlen(eq + 1)));
		else if (getenv(e))
			o = json_pack("{s:s, s:s}", "name", e, "from",
				      "environment");
		else
			continue;
		if (!o || json_array_append_new(arr, o) < 0)
			die("out of memory");
	}
	s = arr ? json_dumps(arr, JSON_COMPACT) : NULL;
	json_decref(arr);
	if (!s)
		die("out of memory");
	return s;
}

static char **build_env(const struct run_args *a, const char *workdir)
{
	char **env = calloc(a->n_envs + 8, sizeof(char *));
	size_t n = 0;

	if (!env)
		die("out of memory");
	if (asprintf(&env[n++], "HOME=%s", workdir) < 0 ||
	    asprintf(&env[n++], "TMPDIR=%s/tmp", workdir) < 0)
		die("out of memory");
	env[n++] = strdup("PATH=/usr/local/bin:/usr/bin:/bin");
	env[n++] = strdup("LANG=C.UTF-8");
	for (size_t i = 0; i < a->n_envs; i++) {
		const char *e = a->envs[i];
		const char *eq = strchr(e, '=');
		if (eq == e || !*e)
			die("--env '%s': give NAME or NAME=VALUE", e);
		if (eq) {
			env[n++] = strdup(e);
		} else if (getenv(e)) {
			if (asprintf(&env[n++], "%s=%s", e, getenv(e)) < 0)
				die("out of memory");
		} else {
			warn("--env %s: not set in ward's environment; not passed",
			     e);
		}
	}
	for (size_t i = 0; i < n; i++)
		if (!env[i])
			die("out of memory");
	return env;
}

static char *json_argv(int argc, char **argv)
{
	json_t *arr = json_array();
	char *s;

	json_array_append_new(arr, json_string("ward"));
	for (int i = 0; i < argc; i++) {
		json_t *s1 = json_string(argv[i]);
		json_array_append_new(arr, s1 ? s1 : json_string("?"));
	}
	s = json_dumps(arr, JSON_COMPACT);
	json_decref(arr);
	if (!s)
		die("out of memory");
	return s;
}

/* The run's containment layers as a JSON array (tracer_result.layers). */
static json_t *layers_json(const struct tracer_result *r)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < r->n_layers; i++) {
		const struct tracer_layer *l = &r->layers[i];
		json_array_append_new(
			arr, json_pack("{s:s, s:b, s:o}", "name", l->name,
				       "active", l->active, "detail",
				       ward_json_text(l->detail,
						      strlen(l->detail))));
	}
	if (!arr)
		die("out of memory");
	return arr;
}

static void print_json(const struct tracer_result *r, const char *run_id,
		       const char *db, int exit_status, const char *chain,
		       json_t *setup)
{
	json_t *o = json_object(), *den = json_array();

	for (size_t i = 0; i < r->n_denials; i++) {
		const struct tracer_denial *d = &r->denial_list[i];
		json_array_append_new(
			den,
			json_pack("{s:s, s:o, s:s, s:s, s:s?}", "syscall",
				  d->syscall, "target",
				  ward_json_text(d->target, strlen(d->target)),
				  "action", d->action, "rule", d->rule, "errno",
				  d->err ? ward_errno_name(d->err) : NULL));
	}
	json_object_set_new(o, "run_id", json_string(run_id));
	json_object_set_new(o, "exit_code", json_integer(exit_status));
	json_object_set_new(o, "signal",
			    r->signal ? json_integer(r->signal) : json_null());
	json_object_set_new(o, "status", json_string(r->status));
	json_object_set_new(o, "cause",
			    r->cause[0]
				    ? ward_json_text(r->cause, strlen(r->cause))
				    : json_null());
	json_object_set_new(o, "timed_out",
			    json_boolean(!strcmp(r->status, "timeout")));
	json_object_set_new(o, "duration_ms", json_integer(r->duration_ms));
	/* the record's bytes: text, and base64 when that is not them */
	if (ward_json_set_bytes(o, "stdout", r->out[1], r->out_len[1]) < 0 ||
	    ward_json_set_bytes(o, "stderr", r->out[2], r->out_len[2]) < 0)
		die("out of memory");
	json_object_set_new(o, "stdout_bytes", json_integer(r->out_bytes[1]));
	json_object_set_new(o, "stderr_bytes", json_integer(r->out_bytes[2]));
	json_object_set_new(o, "stdout_truncated",
			    json_boolean(r->truncated[1]));
	json_object_set_new(o, "stderr_truncated",
			    json_boolean(r->truncated[2]));
	json_object_set_new(o, "processes", json_integer(r->processes));
	json_object_set_new(o, "events", json_integer(r->events));
	json_object_set_new(o, "denied", json_integer((json_int_t)r->denials));
	json_object_set_new(o, "memory_limit_by", json_string(r->memory_by));
	json_object_set_new(o, "layers", layers_json(r));
	json_object_set_new(o, "denials", den);
	json_object_set_new(o, "db", json_string(db));
	/* the run's seal and heads, to keep elsewhere (ward verify --seal);
	 * the tags of its rows stay in the record */
	json_t *cj = chain ? json_loads(chain, 0, NULL) : NULL;
	json_object_del(cj, "run");
	json_object_del(cj, "processes");
	json_object_del(cj, "inputs");
	json_object_set_new(o, "chain", cj ? cj : json_null());
	if (setup) /* --setup: how the setup phase went */
		json_object_set(o, "setup", setup);
	json_dumpf(o, stdout, JSON_COMPACT);
	fputc('\n', stdout);
	fflush(stdout);
	json_decref(o);
}

/* The exit status ward returns for a finished run. */
static int exit_status_of(const struct tracer_result *r)
{
	if (!strcmp(r->status, "timeout"))
		return 124;
	if (!strcmp(r->status, "aborted"))
		return 128 + (r->ward_signal ? r->ward_signal : 15);
	if (r->signal)
		return 128 + r->signal;
	if (r->exit_code < 0)
		return 128 + 9;
	return r->exit_code;
}

/* The files the run created or changed in its workdir, as artifacts of
 * cell 0 (a session's cells are 1, 2, ...). */
struct run_art {
	struct audit *au;
	const char *run_id;
};

static int record_artifact(const char *path, long long size, const char *sha256,
			   void *arg)
{
	struct run_art *ra = arg;
	struct audit_artifact art = {
		.run_id = ra->run_id,
		.cell = 0,
		.path = path,
		.size = size,
		.sha256 = sha256,
		.ts_ns = realtime_ns(),
	};

	/* a failure leaves the row out; the end row is written anyway and
	 * reports a database that fails */
	audit_artifact(ra->au, &art);
	return 0;
}

/* The interpreter: --interpreter, else the policy's for lang, else the
 * system's; dies unless it is an absolute path ward can execute. */
static const char *pick_interpreter(const struct run_args *a,
				    const struct policy *pol, const char *lang)
{
	const char *interp = a->interp ? a->interp
				       : policy_interpreter(pol, lang);
	if (!interp)
		interp = !strcmp(lang, "node") ? "/usr/bin/node"
			 : !strcmp(lang, "sh") ? "/bin/sh"
					       : "/usr/bin/python3";
	if (interp[0] != '/')
		die("--interpreter %s: give an absolute path", interp);
	if (access(interp, X_OK) < 0)
		die_errno("interpreter %s", interp);
	return interp;
}

/* The code (-c, stdin or the file; the caller frees it), its length and
 * its name in the record ("-c", "-" or the file); dies if unreadable. */
static char *read_code(const struct run_args *a, size_t *code_len,
		       const char **code_name)
{
	char *code;

	if (a->code_arg) {
		code = strdup(a->code_arg);
		*code_len = strlen(a->code_arg);
		*code_name = "-c";
	} else if (!strcmp(a->file, "-")) {
		code = ward_read_all(0, code_len);
		*code_name = "-";
	} else {
		int fd = open(a->file, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			die_errno("cannot read %s", a->file);
		code = ward_read_all(fd, code_len);
		close(fd);
		*code_name = a->file;
	}
	if (!code)
		die_errno("cannot read the code");
	return code;
}

/* The interpreter's argv (NULL-terminated; the caller frees the array,
 * not its strings): -c/-e CODE, or the script written into the workdir
 * under its own name (main.py etc. for stdin) unless it is there already,
 * then the script's arguments. */
static char **interpreter_argv(const struct run_args *a, const char *lang,
			       const char *interp, char *code, size_t code_len,
			       const char *workdir, bool drop)
{
	char **iargv = calloc((size_t)a->n_script_args + 6, sizeof(char *));
	int n = 0;
	if (!iargv)
		die("out of memory");
	iargv[n++] = (char *)interp;
	if (a->code_arg) {
		iargv[n++] = (char *)(!strcmp(lang, "node") ? "-e" : "-c");
		iargv[n++] = code;
		if (!strcmp(lang, "sh"))
			iargv[n++] = (char *)"sh";
	} else {
		const char *base = strcmp(a->file, "-") ? strrchr(a->file, '/')
							: NULL;
		char *dst;
		base = base ? base + 1 : strcmp(a->file, "-") ? a->file : NULL;
		if (!base)
			base = !strcmp(lang, "node") ? "main.js"
			       : !strcmp(lang, "sh") ? "main.sh"
						     : "main.py";
		if (asprintf(&dst, "%s/%s", workdir, base) < 0)
			die("out of memory");
		char *src_real = strcmp(a->file, "-") ? realpath(a->file, NULL)
						      : NULL;
		if (!src_real || strcmp(src_real, dst))
			write_file(dst, code, code_len, drop);
		free(src_real);
		free(dst);
		iargv[n++] = (char *)base;
	}
	for (int i = 0; i < a->n_script_args; i++)
		iargv[n++] = a->script_args[i];
	return iargv;
}

/* The setup phase of a run (--setup, --setup-code): the policy's setup
 * phase, what runs under it, and how it went. */
struct setup_step {
	struct policy *pol; /* the base's phase: borrowed */
	const char *lang, *interp, *code_name;
	char *code;
	size_t code_len;
	char **argv;
	struct tracer_result r;
	long long started_ns, ended_ns;
	bool ran;
};

/* Loads what the setup runs and checks the policy has a setup phase;
 * dies (exit 125) before anything runs if not. */
static void setup_load(const struct run_args *a, struct policy *pol,
		       const char *lang, struct setup_step *st)
{
	struct run_args sa = *a;

	memset(st, 0, sizeof(*st));
	if (!a->setup_file && !a->setup_code)
		return;
	st->pol = policy_phase(pol, "setup");
	if (!st->pol)
		die("%s: policy %s has no setup phase: add \"phases\": "
		    "{\"setup\": {...}} with what the setup may do more than "
		    "the code (docs/policy.md, \"Phases\")",
		    a->setup_file ? "--setup" : "--setup-code",
		    policy_name(pol));
	st->lang = a->setup_file ? ward_lang_of_file(a->setup_file) : lang;
	sa.code_arg = a->setup_code;
	sa.file = a->setup_file;
	sa.interp = strcmp(st->lang, lang) ? NULL : a->interp;
	st->interp = pick_interpreter(&sa, st->pol, st->lang);
	st->code = read_code(&sa, &st->code_len, &st->code_name);
}

/* The setup's argv: its file written into the workdir (under its own
 * name, which must not be the code's), or -c CODE. */
static void setup_argv(const struct run_args *a, struct setup_step *st,
		       const char *workdir, bool drop)
{
	struct run_args sa = *a;
	const char *sb = a->setup_file ? strrchr(a->setup_file, '/') : NULL;
	const char *mb = a->file ? strrchr(a->file, '/') : NULL;

	sb = sb ? sb + 1 : a->setup_file;
	mb = mb ? mb + 1 : a->file;
	if (sb && mb && !strcmp(sb, mb))
		die("--setup %s: the code has the same name in the workdir; "
		    "rename one",
		    a->setup_file);
	sa.code_arg = a->setup_code;
	sa.file = a->setup_file;
	sa.n_script_args = 0;
	st->argv = interpreter_argv(&sa, st->lang, st->interp, st->code,
				    st->code_len, workdir, drop);
}

/*
 * Runs the setup phase: its own processes under the setup policy, begun
 * with the run's record (so the run starts with it). Every process it
 * leaves is ended when its first one exits (end_with_root), and tracer_run
 * returns only when its whole tree, and its pid namespace, are gone: the
 * code then starts from ward, in new namespaces, under the narrower policy
 * and its own Landlock (docs/security.md, "Phases"). Returns tracer_run's
 * rc; to is turned into the main phase's options.
 */
static int setup_run(struct setup_step *st, struct tracer_opts *to,
		     struct run_record *rec)
{
	struct tracer_opts so = *to;
	int rc;

	so.interpreter = st->interp;
	so.argv = st->argv;
	so.policy = st->pol;
	so.end_with_root = true;
	so.end_cause = "the setup's first process exited; the processes it "
		       "left were ended before the code started";
	so.has_stdin = false;
	so.stdin_fd = -1;
	debug("starting the setup phase");
	st->started_ns = realtime_ns();
	rc = tracer_run(&so, &st->r);
	st->ended_ns = realtime_ns();
	st->ran = true;
	debug("setup phase: %s", st->r.status);
	/* main: the record begun, numbering on, compiled afresh, and the
	 * events it may still record */
	to->record = NULL;
	to->record_run_on = NULL;
	to->record_join = NULL;
	to->audit = rec->rec.au;
	to->prepared = NULL;
	to->first_serial = (int)st->r.processes;
	to->limits.events = to->limits.events > st->r.events
				    ? to->limits.events - st->r.events
				    : 1;
	return rc;
}

/* The run's result from its two phases: main's, with the setup's counts
 * added; or, when the setup failed and the code never ran, the setup's
 * (moved out of st) with a cause saying so. */
static void merge_phases(struct setup_step *st, struct tracer_result *r,
			 bool main_ran)
{
	if (!main_ran) {
		*r = st->r;
		memset(&st->r, 0, sizeof(st->r));
		if (!r->setup_error[0]) {
			char c[sizeof(r->cause)];

			snprintf(c, sizeof(c), "%s", r->cause);
			snprintf(r->cause, sizeof(r->cause),
				 "the setup phase ended %s%s%s; the code did "
				 "not run",
				 r->status, c[0] ? ": " : "", c);
		}
		return;
	}
	r->events += st->r.events;
	r->denials += st->r.denials;
	r->processes += st->r.processes;
	r->duration_ms += st->r.duration_ms;
	for (int s = 1; s <= 2; s++) {
		r->out_bytes[s] += st->r.out_bytes[s];
		r->truncated[s] = r->truncated[s] || st->r.truncated[s];
	}
}

/* --json's "setup": how the setup phase went, and what it wrote. */
static json_t *setup_json(const struct setup_step *st)
{
	const struct tracer_result *r = &st->r;
	json_t *o = json_pack("{s:s, s:i, s:I, s:I, s:I}", "status",
			      r->status ? r->status : "error", "exit_code",
			      exit_status_of(r), "duration_ms",
			      (json_int_t)r->duration_ms, "events",
			      (json_int_t)r->events, "denied",
			      (json_int_t)r->denials);

	if (!o || ward_json_set_bytes(o, "stdout", r->out[1], r->out_len[1]) ||
	    ward_json_set_bytes(o, "stderr", r->out[2], r->out_len[2]))
		die("out of memory");
	json_object_set_new(o, "cause",
			    r->cause[0]
				    ? ward_json_text(r->cause, strlen(r->cause))
				    : json_null());
	return o;
}

/* One line on stderr when the run did not end as the code chose: the
 * sandbox not set up, the run stopped by ward, or (without --json) a
 * status other than ok or error. */
static void warn_outcome(const struct run_args *a,
			 const struct tracer_result *r, int rc,
			 const char *run_id)
{
	if (r->setup_error[0])
		warn("the sandbox could not be set up: %s", r->setup_error);
	else if (rc < 0 && rc != -ECHILD)
		warn("the run was stopped: %s",
		     r->cause[0] ? r->cause : strerror(-rc));
	else if (strcmp(r->status, "ok") && strcmp(r->status, "error") &&
		 !a->json)
		warn("run %s: %s: %s", run_id, r->status, r->cause);
}

/* ward's own threads, not the code's processes (the sum is exact, the
 * user/system split is sampled). */
static void debug_own_cpu(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	debug("database closed; ward's own CPU time %.2f ms",
	      (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
		      (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3);
}

/* The run's workdir: on the host (path; temporary unless --workdir),
 * where the code sees it (home), its quota and its claim. */
struct run_workdir {
	char *path;
	const char *home;
	bool temp, quota;
	int lock; /* ward_workdir_lock's, or -1 */
	char quota_detail[160];
};

/* Makes the workdir, claims a temporary one (and removes it at exit unless
 * --keep), and binds the policy's $WORKDIR to where the code sees it. */
static void setup_workdir(const struct run_args *a, struct policy *pol,
			  long long disk_bytes, bool drop,
			  struct run_workdir *w)
{
	w->path = make_workdir(a, drop, disk_bytes, &w->temp, &w->quota,
			       w->quota_detail, sizeof(w->quota_detail));
	/* claimed while ward lives: if it is killed, the next ward's sweep
	 * removes what it leaves (without the lock, nothing sweeps it) */
	w->lock = w->temp ? ward_workdir_lock(w->path) : -1;
	if (w->temp && w->lock < 0)
		warn("workdir %s: no lock (%s): if ward is killed, nothing "
		     "will remove it",
		     w->path, strerror(-w->lock));
	if (w->temp && !a->keep) {
		temp_workdir = w->path;
		atexit(remove_temp_workdir);
	}
	/* Where the code sees it: the run's own file tree shows it at
	 * TRACER_HOME (tracer/view.c); there the policy's $WORKDIR and HOME
	 * point, and no host path of it reaches the code. */
	w->home = tracer_view_possible() ? TRACER_HOME : w->path;
	if (policy_set_workdir(pol, w->home) < 0)
		die("cannot bind $WORKDIR to %s", w->home);
	debug("workdir %s ready, seen at %s", w->path, w->home);
}

int ward_cmd_run(int argc, char **argv)
{
	struct run_args a;
	memset(&a, 0, sizeof(a));
	parse_args(argc, argv, &a);

	const char *lang = a.lang ? a.lang : ward_lang_of_file(a.file);
	debug("start");
	/* The record: begun by tracer_run on a thread of its own while the
	 * sandbox is set up (begin_record), the database opened from now on
	 * when it exists (ward_record_preopen). */
	char db[PATH_MAX], errbuf[512];
	bool have_db = audit_default_path(a.db, db, sizeof(db)) == 0;
	struct run_record rec = { .rec = { .db = db }, .a = &a };
	if (have_db)
		ward_record_preopen(&rec.rec);
	struct policy *pol = load_policy(&a, lang);
	debug("policy %s loaded", policy_name(pol));
	for (size_t i = 0; i < a.n_hosts; i++)
		if (policy_add_host(pol, a.hosts[i], errbuf, sizeof(errbuf)) <
		    0)
			die("%s", errbuf);
	/* Compile the filter while the rest is set up. It reads only the
	 * policy's trap_stat and syscall rules, which nothing changes from
	 * here on (the workdir and the record's guard are path rules). On
	 * failure tracer_run compiles it. */
	struct tracer_prepared *prep = NULL;
	tracer_prepare(pol, &prep);
	const char *interp = pick_interpreter(&a, pol, lang);
	struct setup_step st;
	setup_load(&a, pol, lang, &st);
	size_t code_len = 0;
	const char *code_name;
	char *code = read_code(&a, &code_len, &code_name);
	int stdin_fd = open_stdin(&a);

	struct ward_limits lim;
	merge_limits(&lim, &a.lim, pol);
	bool drop = geteuid() == 0;
	struct run_workdir wd;
	setup_workdir(&a, pol, lim.disk_bytes, drop, &wd);

	char **iargv = interpreter_argv(&a, lang, interp, code, code_len,
					wd.path, drop);
	char **env = build_env(&a, wd.home);
	copy_inputs(&a, wd.path, drop);
	if (st.pol)
		setup_argv(&a, &st, wd.path, drop);

	/* The record: nothing runs unless it can be written. */
	struct audit *au = NULL;
	if (!have_db)
		die("no audit database path: set HOME, WARD_DB or pass --db");
	/* The record out of the code's reach (tools/run/recguard.c). */
	if (ward_guard_record(pol, db, wd.path, errbuf, sizeof(errbuf)) < 0)
		die("%s", errbuf);

	char code_sha[WARD_SHA256_HEX_LEN + 1],
		pol_sha[WARD_SHA256_HEX_LEN + 1];
	ward_sha256_hex(code, code_len, code_sha);
	ward_sha256_hex(policy_text(pol), strlen(policy_text(pol)), pol_sha);
	char kernel[400], host[256];
	ward_host_kernel(host, sizeof(host), kernel, sizeof(kernel));
	char *wargv = json_argv(argc, argv);
	char *envj = env_json(&a);
	char ljs[512];
	ward_limits_json(&lim, ljs, sizeof(ljs));
	struct audit_run_info ri = {
		.argv_json = wargv,
		.language = lang,
		.interpreter = interp,
		.code = code,
		.code_len = code_len,
		.code_sha256 = code_sha,
		.code_name = code_name,
		.policy_name = policy_name(pol),
		.policy_json = policy_text(pol),
		.policy_sha256 = pol_sha,
		/* as the code saw it: what its rules mean */
		.workdir = wd.home,
		.limits_json = ljs,
		.host = host,
		.kernel = kernel,
		.ward_version = WARD_VERSION,
		.uid = drop ? SANDBOX_UID : getuid(),
		.env_json = envj,
	};
	/* The code's execve waits for the record (begin_record). */
	rec.rec.ri = &ri;

	struct tracer_opts to = {
		.interpreter = interp,
		.argv = iargv,
		.envp = env,
		.workdir = wd.path,
		.home = wd.home,
		.drop_user = drop,
		.uid = SANDBOX_UID,
		.gid = SANDBOX_GID,
		.limits = lim,
		.policy = pol,
		.record = begin_record,
		.record_arg = &rec.rec,
		.record_run_on = ward_record_run_on,
		.record_join = ward_record_join,
		.passthrough = !a.json,
		/* the live user gets every byte; only the record (and --json's
		 * copy of it) is bounded by --max-output */
		.pass_past_limit = true,
		.print_denials = !a.json && !a.quiet,
		.capture = a.json,
		.pin_cpu = a.pin_cpu,
		.spin_us = a.spin_us,
		.no_cgroup = a.no_cgroup,
		.require_layers = a.require | policy_required_layers(pol),
		.prepared = prep,
		.has_stdin = a.stdin_file != NULL,
		.stdin_fd = stdin_fd,
	};
	/* "ask" rules: asked on the terminal, never the code's stdin;
	 * without one, denied at once */
	struct ward_ttyask ask = { .fd = { -1, -1 }, .tty = -1 };
	if (policy_asks(pol))
		to.ask_fd = ward_ttyask_start(&ask);
	struct tracer_result r;
	struct wf_snap before;
	wf_snap_take(wd.path, &before);
	int rc = 0;
	bool main_ran = true;
	if (st.pol) {
		rc = setup_run(&st, &to, &rec);
		tracer_layer_add(&st.r, "workdir-quota", wd.quota,
				 wd.quota_detail);
		ward_workdir_layer(&st.r, wd.path, wd.home);
		/* the code runs only after a setup that went well, and with
		 * its record there */
		main_ran = rc == 0 && !strcmp(st.r.status, "ok") && to.audit;
	}
	long long main_t0 = realtime_ns();
	if (main_ran) {
		debug("starting the code");
		rc = tracer_run(&to, &r);
		ward_ttyask_stop(&ask);
		tracer_layer_add(&r, "workdir-quota", wd.quota,
				 wd.quota_detail);
		ward_workdir_layer(&r, wd.path, wd.home);
	}
	if (!rec.rec.ran) /* tracer_run failed before it could record it */
		begin_record(&rec.rec, &au, errbuf, sizeof(errbuf));
	if (!rec.rec.au)
		die("%s", rec.rec.err);
	au = rec.rec.au;
	const char *run_id = rec.rec.run_id;
	json_t *setup_j = NULL;
	int prc = 0;
	if (st.ran) {
		/* a phase row each (the events of each are those of its
		 * processes); the run, its record, begins as the setup
		 * starts */
		if (ri.start_ns > st.started_ns && ri.start_ns < st.ended_ns)
			st.started_ns = ri.start_ns;
		json_t *slj = layers_json(&st.r);
		char *sl = json_dumps(slj, JSON_COMPACT);
		json_decref(slj);
		prc = ward_record_phase(au, run_id, 1, "setup", &st.r,
					st.started_ns, st.ended_ns, 0, st.code,
					st.code_len, sl);
		free(sl);
		if (!prc && main_ran)
			prc = ward_record_phase(au, run_id, 2, "main", &r,
						main_t0, realtime_ns(),
						to.first_serial, NULL, 0, NULL);
		if (prc < 0)
			warn("audit database %s: the run's phases: %s", db,
			     audit_errmsg(au));
		setup_j = a.json ? setup_json(&st) : NULL;
		merge_phases(&st, &r, main_ran);
	}
	debug("code finished: %s (memory limit by %s)", r.status, r.memory_by);
	int status = exit_status_of(&r);
	if (r.setup_error[0] || (rc < 0 && rc != -ECHILD) || prc < 0)
		status = WARD_EXIT_INTERNAL;

	json_t *lj = layers_json(&r);
	char *layers = json_dumps(lj, JSON_COMPACT);
	json_decref(lj);
	if (!layers)
		die("out of memory");
	struct run_art ra = { au, run_id };
	wf_each_changed(wd.path, &before, record_artifact, &ra);
	wf_snap_free(&before);
	struct audit_run_end re;
	ward_run_end_of(&r, layers, realtime_ns(), &re);
	pthread_t rm_thread;
	bool rm_async = wd.temp && !a.keep && temp_workdir &&
			pthread_create(&rm_thread, NULL, rm_workdir_thread,
				       (void *)temp_workdir) == 0;
	int arc = audit_run_end(au, &re);
	free(layers);
	debug("end of run recorded");
	if (rm_async) {
		pthread_join(rm_thread, NULL);
		temp_workdir = NULL;
	}

	if (a.json)
		print_json(&r, run_id, db, status, audit_run_chain(au),
			   setup_j);
	warn_outcome(&a, &r, rc, run_id);
	if (arc < 0) {
		warn("audit database %s: the run's record failed: %s", db,
		     audit_errmsg(au));
		status = WARD_EXIT_INTERNAL;
	}
	if (audit_seal_log_error(au)) {
		warn("run %s: %s", run_id, audit_seal_log_error(au));
		status = WARD_EXIT_INTERNAL;
	}
	if (a.summary)
		fprintf(stderr,
			"ward: run %s: %s, exit %d, %lld ms; %lld processes, "
			"%lld syscalls decided, %lld denied; audit: %s\n",
			run_id, r.status, status, r.duration_ms, r.processes,
			r.events, r.denials, db);
	if (wd.temp && !a.keep)
		remove_temp_workdir();
	else if (wd.temp)
		ward_workdir_keep(wd.path, wd.lock);
	if (wd.temp && a.keep && !a.json)
		fprintf(stderr, "ward: workdir kept: %s\n", wd.path);
	if (!rm_async)
		ward_sweep_workdirs();

	debug("workdir handled");
	tracer_result_free(&r);
	tracer_result_free(&st.r);
	json_decref(setup_j);
	free(st.argv); /* its strings are the step's and the code's */
	free(st.code);
	tracer_prepared_free(prep);
	audit_close(au);
	if (ward_verbose > 0)
		debug_own_cpu();
	policy_free(pol);
	for (char **e = env; *e; e++)
		free(*e);
	free(env);
	free(iargv);
	free(wargv);
	free(envj);
	free(wd.path);
	free(code);
	free(a.envs);
	free(a.hosts);
	free_inputs(&a);
	free(a.inputs);
	return status;
}
