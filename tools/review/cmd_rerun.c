/*
 * cmd_rerun.c - `ward rerun RUN`: run a recorded run's code again, from the
 * database (code, language, interpreter, the code's arguments, input files,
 * environment, limits, policy), as a new run in the same database, then
 * compare the two runs as `ward diff` does.
 *
 * The new run is a `ward run` child (this binary, /proc/self/exe) given
 * everything from a private staging directory, with --rerun-of RUN so its
 * record says what it re-runs; its run id comes back in its --json result.
 */
#include "tools/cmds.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/log.h"
#include "common/sha256.h"
#include "tools/review/rundiff.h"
#include "tools/run/runrec.h"
#include "tools/review/view.h"
#include "tools/run/workfiles.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ward rerun RUN [--policy FILE | --profile NAME] [--db PATH]\n"
		"                  [--input FILE]... [--json] [--keep]\n"
		"\n"
		"Run a recorded run's code again in a fresh workdir, recorded as a new run\n"
		"in the same database, then compare the two runs as `ward diff` does\n"
		"(`ward diff --help` says how decisions are normalized).\n"
		"\n"
		"From the record: the code, its language and interpreter, the code's own\n"
		"arguments, the --input files (name and bytes), what --env passed, the\n"
		"limits (wall time, CPU, memory, processes, output), --no-cgroup and\n"
		"--require, and the policy as it was used. The new run's command line\n"
		"(runs.argv) holds --rerun-of RUN.\n"
		"\n"
		"  RUN               a run id, unique prefix, or last\n"
		"  --policy FILE     use this policy instead of the recorded one\n"
		"  --profile NAME    use a shipped profile instead of the recorded policy\n"
		"  --input FILE      an input file whose bytes the record does not hold\n"
		"                    (it was over `ward run --keep-inputs`): matched by\n"
		"                    name, and its SHA-256 must be the recorded one\n"
		"  --db PATH         audit database (default as for `ward run`)\n"
		"  --json            one JSON object: the new run and the comparison\n"
		"  --keep            keep the new run's workdir (its path is printed)\n"
		"  -h, --help        this text\n"
		"\n"
		"Environment: a variable the run was given as --env NAME=VALUE is given\n"
		"again with its recorded value; one given as --env NAME (from ward's\n"
		"environment) was recorded by name only, never its value, and is taken\n"
		"from ward rerun's environment again: it must be set there.\n"
		"\n"
		"Sessions (runs of ward serve and ward mcp) are refused: the record holds\n"
		"their cells but not what the client gave besides them (session.create\n"
		"env, files.write uploads, timing), so replaying the cells would not be\n"
		"faithful; `ward show` lists their cells.\n"
		"\n"
		"The code's own output is not shown (`ward show NEWRUN` or `ward replay`\n"
		"has it); a difference in it is reported.\n"
		"\n"
		"exit status: 0 the re-run is equivalent, 1 it differs (the first\n"
		"divergence is named), 125 for errors (unknown run, unusable database,\n"
		"missing input or environment variable, bad policy, a session).\n");
}

struct rerun_opts {
	const char *run, *policy, *profile, *db;
	const char **inputs;
	size_t n_inputs;
	bool json, keep;
};

/* What the recorded run needs, copied out of the record. */
struct recorded {
	char id[AUDIT_RUN_ID_LEN + 1];
	char *argv_json, *language, *interpreter, *code_name, *code_sha256;
	char *policy_json, *limits_json;
	char *code;
	size_t code_len;
	long long cells;
	bool env_recorded; /* runs.env is not NULL */
	/* its setup phase's code (ward run --setup), or NULL */
	char *setup_code;
	size_t setup_len;
};

struct input_copy {
	char *name, *sha256;
	long long size;
	char *data; /* the recorded bytes, or NULL */
	size_t data_len;
	bool kept;
};

struct inputs {
	struct input_copy *v;
	size_t n;
	int err;
};

static char *xstrdup(const char *s)
{
	char *d = strdup(s ? s : "");

	if (!d)
		die("out of memory");
	return d;
}

static int read_cb(const struct audit_run *r, void *arg)
{
	struct recorded *rc = arg;

	snprintf(rc->id, sizeof(rc->id), "%s", r->id);
	rc->argv_json = xstrdup(r->argv_json);
	rc->language = xstrdup(r->language);
	rc->interpreter = xstrdup(r->interpreter);
	rc->code_name = xstrdup(r->code_name);
	rc->code_sha256 = xstrdup(r->code_sha256);
	rc->policy_json = xstrdup(r->policy_json);
	rc->limits_json = xstrdup(r->limits_json);
	rc->code = malloc(r->code_len + 1);
	if (!rc->code)
		die("out of memory");
	memcpy(rc->code, r->code ? r->code : "", r->code_len);
	rc->code[r->code_len] = '\0';
	rc->code_len = r->code_len;
	return 0;
}

static int cell_cb(const struct audit_cell *c, void *arg)
{
	(void)c;
	(*(long long *)arg)++;
	return 0;
}

static int input_cb(const struct audit_input *in, void *arg)
{
	struct inputs *ins = arg;
	struct input_copy *v = realloc(ins->v, (ins->n + 1) * sizeof(*v)), *c;

	if (!v)
		die("out of memory");
	ins->v = v;
	c = &v[ins->n++];
	memset(c, 0, sizeof(*c));
	c->name = xstrdup(in->name);
	c->sha256 = xstrdup(in->sha256);
	c->size = in->size;
	c->kept = in->data != NULL;
	if (c->kept) {
		c->data = malloc(in->data_len + 1);
		if (!c->data)
			die("out of memory");
		memcpy(c->data, in->data, in->data_len);
		c->data_len = in->data_len;
	}
	return 0;
}

/* Reads the run row, its inputs, env and cells; dies (125) naming the
 * problem. */
static int phase_cb(const struct audit_phase *p, void *arg)
{
	struct recorded *rc = arg;

	if (strcmp(p->name, "setup") || !p->code)
		return 0;
	rc->setup_code = malloc(p->code_len + 1);
	if (!rc->setup_code)
		return -ENOMEM;
	memcpy(rc->setup_code, p->code, p->code_len);
	rc->setup_code[p->code_len] = '\0';
	rc->setup_len = p->code_len;
	return 0;
}

static void read_recorded(const struct rerun_opts *o, char *db, size_t dbn,
			  struct recorded *rec, struct inputs *ins,
			  json_t **env)
{
	struct audit *a = view_open_db(o->db, db, dbn);
	char *envs = NULL;
	json_error_t jerr;
	int r;

	if (!a)
		exit(WARD_EXIT_INTERNAL);
	if (view_find_run(a, db, o->run, rec->id) < 0)
		exit(WARD_EXIT_INTERNAL);
	r = audit_run_read(a, rec->id, read_cb, rec);
	if (!r)
		r = audit_cells_each(a, rec->id, cell_cb, &rec->cells);
	if (!r)
		r = audit_inputs_each(a, rec->id, input_cb, ins);
	if (!r)
		r = audit_phases_each(a, rec->id, phase_cb, rec);
	if (!r)
		r = audit_run_env(a, rec->id, &envs);
	if (r)
		die("reading run %s in %s: %s", rec->id, db, audit_errmsg(a));
	audit_close(a);
	rec->env_recorded = envs != NULL;
	*env = json_loads(envs ? envs : "[]", 0, &jerr);
	if (!*env || !json_is_array(*env))
		die("run %s in %s: its recorded environment (runs.env) is not "
		    "a JSON array: the record is damaged",
		    rec->id, db);
	free(envs);
}

/* The session, code, language and interpreter checks. */
static void check_recorded(const struct recorded *rec, const char *db)
{
	char sha[WARD_SHA256_HEX_LEN + 1];

	if (rec->cells > 0 || !strcmp(rec->code_name, "session"))
		die("rerun of sessions is not supported: run %s in %s is a "
		    "session of ward serve or ward mcp (%lld cells); the record "
		    "does not hold what its client gave besides the cells "
		    "(session.create env, files.write uploads, timing), so its "
		    "cells cannot be replayed faithfully; `ward show %s` lists "
		    "them",
		    rec->id, db, rec->cells, rec->id);
	ward_sha256_hex(rec->code, rec->code_len, sha);
	if (strcmp(sha, rec->code_sha256))
		die("run %s in %s: its code does not match its recorded "
		    "SHA-256 (the record is damaged; `ward verify` checks it)",
		    rec->id, db);
	if (strcmp(rec->language, "python") && strcmp(rec->language, "node") &&
	    strcmp(rec->language, "sh"))
		die("run %s in %s: unknown language '%s' in the record",
		    rec->id, db, rec->language);
	if (rec->interpreter[0] != '/' || access(rec->interpreter, X_OK) < 0)
		die("run %s was run by the interpreter %s, which is not "
		    "an executable here",
		    rec->id, rec->interpreter);
}

/* ------------------------------ staging ------------------------------ */

static char *stage_dir;

static void remove_stage(void)
{
	if (!stage_dir)
		return;
	ward_rm_workdir(stage_dir);
	free(stage_dir);
	stage_dir = NULL;
}

/* A file of the stage: inputs in in/, the code in code/, the policy at
 * the top, so that no recorded name can collide with another. */
static char *stage_path(const char *sub, const char *name)
{
	char *p;

	if (asprintf(&p, "%s/%s%s%s", stage_dir, sub ? sub : "", sub ? "/" : "",
		     name) < 0)
		die("out of memory");
	return p;
}

static void stage_write(const char *path, const char *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	if (fd < 0 || wf_write_all(fd, data, len) < 0)
		die_errno("cannot write %s", path);
	if (close(fd) < 0)
		die_errno("cannot write %s", path);
}

/* A file name the record gives (an input's name): one plain component. */
static bool plain_name(const char *s)
{
	return *s && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

static char *sha_of_file(const char *path, long long *size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), r;
	char *hex = malloc(WARD_SHA256_HEX_LEN + 1);

	if (!hex)
		die("out of memory");
	if (fd < 0)
		die_errno("--input %s", path);
	r = wf_hash_fd(fd, hex, size);
	close(fd);
	if (r < 0) {
		errno = -r;
		die_errno("--input %s", path);
	}
	return hex;
}

/* Each recorded input as a file in the stage, named as it was; returns
 * their paths. */
static char **stage_inputs(const struct rerun_opts *o,
			   const struct recorded *rec, const struct inputs *ins)
{
	char **paths = calloc(ins->n + 1, sizeof(char *));

	if (!paths)
		die("out of memory");
	for (size_t i = 0; i < o->n_inputs; i++) {
		const char *b = strrchr(o->inputs[i], '/');
		bool used = false;

		b = b ? b + 1 : o->inputs[i];
		for (size_t j = 0; j < ins->n; j++)
			used |= !strcmp(ins->v[j].name, b) && !ins->v[j].kept;
		if (!used)
			die("--input %s: run %s has no input named '%s' whose "
			    "bytes are missing from the record (its inputs "
			    "with bytes kept are given again by themselves)",
			    o->inputs[i], rec->id, b);
	}
	for (size_t j = 0; j < ins->n; j++) {
		const struct input_copy *c = &ins->v[j];
		char sha[WARD_SHA256_HEX_LEN + 1];

		if (!plain_name(c->name))
			die("run %s: input %zu has the name '%s', which is not "
			    "a file name: the record is damaged",
			    rec->id, j + 1, c->name);
		paths[j] = stage_path("in", c->name);
		if (c->kept) {
			ward_sha256_hex(c->data, c->data_len, sha);
			if ((long long)c->data_len != c->size ||
			    strcmp(sha, c->sha256))
				die("run %s: the recorded bytes of input '%s' "
				    "do not match its size and SHA-256: the "
				    "record is damaged",
				    rec->id, c->name);
			stage_write(paths[j], c->data, c->data_len);
			continue;
		}
		const char *given = NULL;
		for (size_t i = 0; i < o->n_inputs; i++) {
			const char *b = strrchr(o->inputs[i], '/');
			if (!strcmp(b ? b + 1 : o->inputs[i], c->name))
				given = o->inputs[i];
		}
		if (!given)
			die("run %s: input '%s' (%lld bytes) was not kept in "
			    "the record (over `ward run --keep-inputs`); give "
			    "the file again: ward rerun %s --input PATH/%s",
			    rec->id, c->name, c->size, rec->id, c->name);
		long long size;
		char *h = sha_of_file(given, &size);
		if (strcmp(h, c->sha256) || size != c->size)
			die("--input %s: not the file run %s was given (%lld "
			    "bytes, SHA-256 %s; the recorded '%s' has %lld "
			    "bytes, SHA-256 %s)",
			    given, rec->id, size, h, c->name, c->size,
			    c->sha256);
		free(h);
		char *real = realpath(given, NULL);
		if (!real || symlink(real, paths[j]) < 0)
			die_errno("--input %s", given);
		free(real);
	}
	return paths;
}

static void free_inputs(struct inputs *ins)
{
	for (size_t i = 0; i < ins->n; i++) {
		free(ins->v[i].name);
		free(ins->v[i].sha256);
		free(ins->v[i].data);
	}
	free(ins->v);
	ins->v = NULL;
	ins->n = 0;
}

/* The re-run got the recorded inputs: a file given again with --input
 * could have changed between its check and its copy. */
static void same_inputs(const struct inputs *want, const struct inputs *got,
			const char *id)
{
	bool same = want->n == got->n;

	for (size_t i = 0; same && i < want->n; i++)
		same = !strcmp(want->v[i].name, got->v[i].name) &&
		       !strcmp(want->v[i].sha256, got->v[i].sha256);
	if (!same)
		die("the re-run %s was not given the recorded inputs (a file "
		    "changed while it started?): do not trust its comparison",
		    id);
}

/* ------------------------------ the run ------------------------------ */

struct argv_b {
	char **v;
	size_t n, cap;
};

static void arg(struct argv_b *b, const char *s)
{
	if (b->n + 2 > b->cap) {
		b->cap = b->cap ? b->cap * 2 : 64;
		b->v = realloc(b->v, b->cap * sizeof(char *));
		if (!b->v)
			die("out of memory");
	}
	b->v[b->n++] = xstrdup(s);
	b->v[b->n] = NULL;
}

static void argv_free(struct argv_b *b)
{
	for (size_t i = 0; i < b->n; i++)
		free(b->v[i]);
	free(b->v);
	memset(b, 0, sizeof(*b));
}

static void argf(struct argv_b *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void argf(struct argv_b *b, const char *fmt, ...)
{
	char buf[64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	arg(b, buf);
}

/* ward run's options that take a separate value (tools/run/cmd_run.c). */
static bool takes_value(const char *opt)
{
	static const char *const with_value[] = {
		"--lang",      "--profile",    "--policy",
		"--db",	       "--workdir",    "--env",
		"--timeout",   "--cpu",	       "--memory",
		"--max-procs", "--max-output", "--interpreter",
		"--input",     "--spin-us",    "--keep-inputs",
		"--rerun-of",  "--stdin",      "--tag",
		"-c",	       "--setup",      "--setup-code",
	};

	for (size_t i = 0; i < sizeof(with_value) / sizeof(*with_value); i++)
		if (!strcmp(opt, with_value[i]))
			return true;
	return false;
}

/* The code's own arguments: those after the code in the recorded ward run
 * command line. Checks that the record has every input and the
 * environment that command line gave (a run recorded before schema
 * version 4 has neither). */
static void setup_arg(const struct recorded *rec, const char *opt,
		      const char *val, struct argv_b *flags);

static void script_args(const struct recorded *rec, size_t n_inputs,
			struct argv_b *flags, struct argv_b *out)
{
	size_t argv_inputs, argv_envs;
	json_t *js = json_loads(rec->argv_json, 0, NULL);
	size_t n = json_array_size(js);
	char **v = calloc(n + 1, sizeof(char *));
	int first;

	if (!v)
		die("out of memory");
	if (n < 2 ||
	    strcmp(json_string_value(json_array_get(js, 1)) ?: "", "run"))
		die("run %s: its recorded command line (runs.argv) is not "
		    "one of ward run",
		    rec->id);
	for (size_t i = 1; i < n; i++) {
		const char *s = json_string_value(json_array_get(js, i));
		if (!s)
			die("run %s: its recorded command line is not an "
			    "array of strings",
			    rec->id);
		v[i - 1] = xstrdup(s);
	}
	first = ward_run_args_start((int)n - 1, v, &argv_inputs, &argv_envs);
	if (argv_inputs != n_inputs)
		die("run %s was given %zu --input files but the record holds "
		    "%zu (recorded by a ward older than schema version 4?): "
		    "it cannot be re-run faithfully",
		    rec->id, argv_inputs, n_inputs);
	if (argv_envs && !rec->env_recorded)
		die("run %s was given --env but the record does not say what "
		    "reached the code (recorded by a ward older than schema "
		    "version 4?): it cannot be re-run faithfully",
		    rec->id);
	/* The options before the code that change the containment are kept:
	 * ward run takes its options before FILE only. */
	for (int i = 1; i < first; i++) {
		if (!strcmp(v[i], "--no-cgroup")) {
			arg(flags, v[i]);
		} else if (!strcmp(v[i], "--require") && i + 1 < first) {
			arg(flags, v[i]);
			arg(flags, v[++i]);
		} else if (!strncmp(v[i], "--require=", 10)) {
			arg(flags, v[i]);
		} else if ((!strcmp(v[i], "--setup") ||
			    !strcmp(v[i], "--setup-code")) &&
			   i + 1 < first) {
			setup_arg(rec, v[i], v[i + 1], flags);
			i++;
		} else if (takes_value(v[i])) {
			i++; /* its value is not an option */
		}
	}
	for (int i = first; i < (int)n - 1; i++)
		arg(out, v[i]);
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
	json_decref(js);
}

/* The run's setup again, from the record (its phase's code): --setup-code
 * as given, or the file staged under its own name (its extension gives its
 * language). A record without the setup's code cannot be re-run. */
static void setup_arg(const struct recorded *rec, const char *opt,
		      const char *val, struct argv_b *flags)
{
	const char *base = strrchr(val, '/');
	char *p;

	if (!rec->setup_code)
		die("run %s was given %s but the record holds no setup phase "
		    "code: it cannot be re-run faithfully",
		    rec->id, opt);
	if (!strcmp(opt, "--setup-code")) {
		if (strlen(rec->setup_code) != rec->setup_len)
			die("run %s: its setup code holds a NUL byte and "
			    "cannot be given on a command line again",
			    rec->id);
		arg(flags, opt);
		arg(flags, rec->setup_code);
		return;
	}
	base = base ? base + 1 : val;
	if (!plain_name(base))
		die("run %s: its --setup file name %s cannot be staged",
		    rec->id, val);
	p = stage_path("setup", base);
	stage_write(p, rec->setup_code, rec->setup_len);
	arg(flags, opt);
	arg(flags, p);
	free(p);
}

static long long limit_of(json_t *lim, const char *key)
{
	json_t *v = json_object_get(lim, key);

	return json_is_integer(v) ? json_integer_value(v) : 0;
}

static void build_argv(const struct rerun_opts *o, const struct recorded *rec,
		       json_t *env, char **inputs, size_t n_inputs,
		       const char *db, struct argv_b *b)
{
	json_t *lim = json_loads(rec->limits_json, 0, NULL), *e;
	struct argv_b flags = { 0 }, args = { 0 };
	long long v;
	size_t i;

	script_args(rec, n_inputs, &flags, &args);
	arg(b, "ward");
	arg(b, "run");
	arg(b, "--rerun-of");
	arg(b, rec->id);
	arg(b, "--json");
	arg(b, "--quiet");
	arg(b, "--db");
	arg(b, db);
	arg(b, "--lang");
	arg(b, rec->language);
	arg(b, "--interpreter");
	arg(b, rec->interpreter);
	for (i = 0; i < flags.n; i++)
		arg(b, flags.v[i]);
	if (o->profile) {
		arg(b, "--profile");
		arg(b, o->profile);
	} else {
		char *p = o->policy ? xstrdup(o->policy)
				    : stage_path(NULL, "policy.json");

		if (!o->policy)
			stage_write(p, rec->policy_json,
				    strlen(rec->policy_json));
		arg(b, "--policy");
		arg(b, p);
		free(p);
	}
	if ((v = limit_of(lim, "wall_ms")) > 0) {
		arg(b, "--timeout");
		argf(b, "%lld.%03lld", v / 1000, v % 1000);
	}
	/* the recorded limits ward run has options for, in their units */
	static const char *const opt_of[][2] = {
		{ "cpu_s", "--cpu" },
		{ "memory_bytes", "--memory" },
		{ "procs", "--max-procs" },
		{ "output_bytes", "--max-output" },
		{ "events", "--max-events" },
		{ "disk_bytes", "--max-disk" },
	};
	for (size_t k = 0; k < sizeof(opt_of) / sizeof(opt_of[0]); k++)
		if ((v = limit_of(lim, opt_of[k][0])) > 0) {
			arg(b, opt_of[k][1]);
			argf(b, "%lld", v);
		}
	json_decref(lim);
	if (o->keep)
		arg(b, "--keep");
	json_array_foreach(env, i, e)
	{
		const char *name =
			json_string_value(json_object_get(e, "name"));
		json_t *val = json_object_get(e, "value");

		if (!name || !*name || strchr(name, '='))
			die("run %s: a recorded --env has no valid name: the "
			    "record is damaged",
			    rec->id);
		arg(b, "--env");
		if (json_is_string(val)) {
			char *s;
			if (asprintf(&s, "%s=%s", name,
				     json_string_value(val)) < 0)
				die("out of memory");
			arg(b, s);
			free(s);
		} else if (getenv(name)) {
			arg(b, name);
		} else {
			die("run %s was given $%s from ward's environment; its "
			    "value is not recorded (by design): set %s in the "
			    "environment of ward rerun",
			    rec->id, name, name);
		}
	}
	for (i = 0; i < n_inputs; i++) {
		arg(b, "--input");
		arg(b, inputs[i]);
	}
	if (!strcmp(rec->code_name, "-c")) {
		if (strlen(rec->code) != rec->code_len)
			die("run %s: its -c code holds a NUL byte and cannot "
			    "be given on a command line again",
			    rec->id);
		arg(b, "-c");
		arg(b, rec->code);
	} else {
		const char *base = strrchr(rec->code_name, '/');
		const char *ext = !strcmp(rec->language, "node") ? "main.js"
				  : !strcmp(rec->language, "sh") ? "main.sh"
								 : "main.py";
		char *p;

		base = base ? base + 1 : rec->code_name;
		if (!strcmp(rec->code_name, "-") || !plain_name(base))
			base = ext;
		for (i = 0; i < n_inputs; i++)
			if (!strcmp(strrchr(inputs[i], '/') + 1, base))
				die("run %s: its code and an input are both "
				    "named %s",
				    rec->id, base);
		p = stage_path("code", base);
		stage_write(p, rec->code, rec->code_len);
		arg(b, p);
		free(p);
	}
	arg(b, "--");
	for (i = 0; i < args.n; i++)
		arg(b, args.v[i]);
	argv_free(&flags);
	argv_free(&args);
}

/* Runs `ward run` with argv; returns the new run's id from its --json
 * result, or dies. */
static void run_child(char **argv, char id[AUDIT_RUN_ID_LEN + 1])
{
	int p[2], st;
	pid_t pid;
	char *out = NULL;
	size_t len = 0;
	FILE *f;

	if (pipe2(p, O_CLOEXEC) < 0)
		die_errno("pipe");
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		die_errno("fork");
	if (pid == 0) {
		if (dup2(p[1], 1) < 0)
			_exit(WARD_EXIT_INTERNAL);
		execv("/proc/self/exe", argv);
		fprintf(stderr, "ward: cannot run ward run: %s\n",
			strerror(errno));
		_exit(WARD_EXIT_INTERNAL);
	}
	close(p[1]);
	/* ^C at the terminal reaches the child, whose run ends and is
	 * recorded; this process stays to compare and remove its stage. */
	void (*old_int)(int) = signal(SIGINT, SIG_IGN);
	f = fdopen(p[0], "r");
	if (!f)
		die_errno("fdopen");
	{
		char buf[65536];
		size_t n;
		while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
			char *no = realloc(out, len + n + 1);
			if (!no)
				die("out of memory");
			out = no;
			memcpy(out + len, buf, n);
			len += n;
			out[len] = '\0';
		}
	}
	fclose(f);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			die_errno("waitpid");
	signal(SIGINT, old_int);
	json_t *js = out ? json_loads(out, JSON_DISABLE_EOF_CHECK, NULL) : NULL;
	const char *rid = json_string_value(json_object_get(js, "run_id"));
	if (!rid || strlen(rid) != AUDIT_RUN_ID_LEN)
		die("the re-run did not start (ward run exited %d; its message "
		    "is above)",
		    WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	memcpy(id, rid, AUDIT_RUN_ID_LEN + 1);
	json_decref(js);
	free(out);
}

static void parse(int argc, char **argv, struct rerun_opts *o)
{
	static const struct option opts[] = {
		{ "policy", required_argument, 0, 'p' },
		{ "profile", required_argument, 0, 'P' },
		{ "db", required_argument, 0, 'd' },
		{ "input", required_argument, 0, 'i' },
		{ "json", no_argument, 0, 'j' },
		{ "keep", no_argument, 0, 'k' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	int c;

	o->inputs = calloc((size_t)argc + 1, sizeof(char *));
	if (!o->inputs)
		die("out of memory");
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'p': o->policy = optarg; break;
		case 'P': o->profile = optarg; break;
		case 'd': o->db = optarg; break;
		case 'i': o->inputs[o->n_inputs++] = optarg; break;
		case 'j': o->json = true; break;
		case 'k': o->keep = true; break;
		case 'h': usage(stdout); exit(0);
		case ':':
			die("rerun: %s needs a value (see `ward rerun --help`)",
			    argv[optind - 1]);
		default:
			die("rerun: unknown option %s (see `ward rerun --help`)",
			    argv[optind - 1]);
		}
	}
	if (argc - optind != 1)
		die("rerun: give one run: ward rerun RUN (see `ward rerun "
		    "--help`)");
	o->run = argv[optind];
	if (o->policy && o->profile)
		die("rerun: give --policy or --profile, not both");
	if (o->policy && access(o->policy, R_OK) < 0)
		die_errno("--policy %s", o->policy);
}

int ward_cmd_rerun(int argc, char **argv)
{
	struct rerun_opts o = { 0 };
	struct recorded rec = { 0 };
	struct inputs ins = { 0 };
	struct argv_b b = { 0 };
	struct rd_run r1, r2;
	char db[PATH_MAX], dbabs[PATH_MAX], nid[AUDIT_RUN_ID_LEN + 1];
	char tmpl[] = "/tmp/ward-rerun-XXXXXX";
	json_t *env = NULL;
	int status;

	parse(argc, argv, &o);
	read_recorded(&o, db, sizeof(db), &rec, &ins, &env);
	check_recorded(&rec, db);
	if (!realpath(db, dbabs))
		die_errno("audit database %s", db);
	if (!mkdtemp(tmpl))
		die_errno("cannot create a staging directory in /tmp");
	stage_dir = xstrdup(tmpl);
	for (const char *const *d =
		     (const char *const[]){ "in", "code", "setup", NULL };
	     *d; d++) {
		char *p = stage_path(NULL, *d);
		if (mkdir(p, 0700) < 0)
			die_errno("cannot create %s", p);
		free(p);
	}
	atexit(remove_stage);
	char **inputs = stage_inputs(&o, &rec, &ins);
	build_argv(&o, &rec, env, inputs, ins.n, dbabs, &b);
	run_child(b.v, nid);
	remove_stage();

	/* Compare, from the record. */
	struct audit *a = view_open_db(dbabs, db, sizeof(db));
	if (!a)
		return WARD_EXIT_INTERNAL;
	int rc = rd_load(a, rec.id, &r1);
	if (!rc)
		rc = rd_load(a, nid, &r2);
	else
		memset(&r2, 0, sizeof(r2));
	struct inputs got = { 0 };
	if (!rc)
		rc = audit_inputs_each(a, nid, input_cb, &got);
	if (rc)
		die("reading %s: %s", db,
		    rc == -ENOMEM ? "out of memory" : audit_errmsg(a));
	audit_close(a);
	same_inputs(&ins, &got, nid);
	free_inputs(&got);
	if (o.json) {
		struct rd_diff d;
		rd_compare(&r1, &r2, &d);
		json_t *j = json_pack("{s:s, s:s, s:o, s:o}", "rerun_of", r1.id,
				      "run", r2.id, "workdir",
				      o.keep && r2.host_workdir
					      ? json_string(r2.host_workdir)
					      : json_null(),
				      "diff", rd_json(&r1, &r2, &d));
		if (!j)
			die("out of memory");
		json_dumpf(j, stdout, JSON_COMPACT);
		fputc('\n', stdout);
		json_decref(j);
		status = d.equivalent ? 0 : 1;
	} else {
		printf("re-ran %s as %s\n", r1.id, r2.id);
		if (o.keep && r2.host_workdir)
			printf("workdir kept: %s\n", r2.host_workdir);
		status = rd_report(stdout, &r1, &r2, false);
		if (status < 0)
			die("out of memory");
	}
	fflush(stdout);
	rd_run_free(&r1);
	rd_run_free(&r2);
	argv_free(&b);
	for (size_t i = 0; i < ins.n; i++)
		free(inputs[i]);
	free_inputs(&ins);
	free(inputs);
	json_decref(env);
	free(rec.argv_json);
	free(rec.language);
	free(rec.interpreter);
	free(rec.code_name);
	free(rec.code_sha256);
	free(rec.policy_json);
	free(rec.limits_json);
	free(rec.code);
	free(rec.setup_code);
	free(o.inputs);
	return status;
}
