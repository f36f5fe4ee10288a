/*
 * batch-samples.c - `ward batch`'s samples: loading files and JSONL lines
 * (every mistake named by file:line), shards, and the result lines of an
 * earlier, interrupted batch (--resume).
 */
#include "tools/run/batch.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/sha256.h"

static int bad(char *err, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static struct batch_sample *add(struct batch_samples *s)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		void *v = realloc(s->v, cap * sizeof(*s->v));

		if (!v)
			return NULL;
		s->v = v;
		s->cap = cap;
	}
	memset(&s->v[s->n], 0, sizeof(*s->v));
	s->v[s->n].pass = -1;
	return &s->v[s->n++];
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

static char *dup_bytes(const char *s, size_t len)
{
	char *d = malloc(len + 1);

	if (d) {
		memcpy(d, s, len);
		d[len] = 0;
	}
	return d;
}

static int file_sample(struct batch_samples *s, const char *path, char *err,
		       size_t n)
{
	struct batch_sample *b;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return bad(err, n, "%s: cannot read the sample: %s", path,
			   strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return bad(err, n,
			   "%s: not a regular file (a sample is a "
			   "script or a .jsonl file)",
			   path);
	}
	close(fd);
	b = add(s);
	if (!b)
		return -ENOMEM;
	b->id = strdup(path);
	b->where = strdup(path);
	b->path = strdup(path);
	return b->id && b->where && b->path ? 0 : -ENOMEM;
}

static bool plain_name(const char *name)
{
	return *name && !strchr(name, '/') && strcmp(name, ".") &&
	       strcmp(name, "..");
}

static int take_files(struct batch_sample *b, json_t *v, const char *where,
		      char *err, size_t n)
{
	const char *name;
	json_t *data;

	if (!json_is_object(v))
		return bad(err, n,
			   "%s: \"files\" must be an object of name: "
			   "text",
			   where);
	b->files = calloc(json_object_size(v) + 1, sizeof(*b->files));
	if (!b->files)
		return -ENOMEM;
	json_object_foreach(v, name, data)
	{
		struct batch_file *f = &b->files[b->n_files];

		if (!plain_name(name))
			return bad(err, n,
				   "%s: files: \"%s\" is not a plain "
				   "file name (no '/', not . or ..)",
				   where, name);
		if (!json_is_string(data))
			return bad(err, n, "%s: files.%s must be a string",
				   where, name);
		f->name = strdup(name);
		f->len = json_string_length(data);
		f->data = dup_bytes(json_string_value(data), f->len);
		if (!f->name || !f->data)
			return -ENOMEM;
		b->n_files++;
	}
	return 0;
}

static int take_args(struct batch_sample *b, json_t *v, const char *where,
		     char *err, size_t n)
{
	size_t i;
	json_t *a;

	if (!json_is_array(v))
		return bad(err, n, "%s: \"args\" must be an array of strings",
			   where);
	b->args = calloc(json_array_size(v) + 1, sizeof(char *));
	if (!b->args)
		return -ENOMEM;
	json_array_foreach(v, i, a)
	{
		if (!json_is_string(a) ||
		    strlen(json_string_value(a)) != json_string_length(a))
			return bad(err, n,
				   "%s: args[%zu] must be a string "
				   "without NUL",
				   where, i);
		b->args[b->n_args] = strdup(json_string_value(a));
		if (!b->args[b->n_args++])
			return -ENOMEM;
	}
	return 0;
}

static int take_text(json_t *v, const char *key, char **out, size_t *len,
		     const char *where, char *err, size_t n)
{
	if (!json_is_string(v))
		return bad(err, n, "%s: \"%s\" must be a string", where, key);
	*len = json_string_length(v);
	*out = dup_bytes(json_string_value(v), *len);
	return *out ? 0 : -ENOMEM;
}

static int take_id(struct batch_sample *b, json_t *v, const char *where,
		   char *err, size_t n)
{
	char num[32];

	if (json_is_integer(v)) {
		snprintf(num, sizeof(num), "%lld",
			 (long long)json_integer_value(v));
		b->id = strdup(num);
	} else if (json_is_string(v) && json_string_length(v) &&
		   strlen(json_string_value(v)) == json_string_length(v)) {
		b->id = strdup(json_string_value(v));
	} else {
		return bad(err, n,
			   "%s: \"id\" must be a non-empty string or "
			   "an integer",
			   where);
	}
	return b->id ? 0 : -ENOMEM;
}

static int line_fields(struct batch_sample *b, json_t *o, const char *where,
		       char *err, size_t n)
{
	const char *key;
	json_t *v;
	size_t len;
	int rc = 0;

	json_object_foreach(o, key, v)
	{
		if (!strcmp(key, "id")) {
			rc = take_id(b, v, where, err, n);
		} else if (!strcmp(key, "code")) {
			rc = take_text(v, key, &b->code, &b->code_len, where,
				       err, n);
		} else if (!strcmp(key, "language")) {
			rc = take_text(v, key, &b->lang, &len, where, err, n);
			if (!rc && strcmp(b->lang, "python") &&
			    strcmp(b->lang, "node") && strcmp(b->lang, "sh"))
				rc = bad(err, n,
					 "%s: language \"%s\" is not "
					 "one of python, node, sh",
					 where, b->lang);
		} else if (!strcmp(key, "stdin")) {
			rc = take_text(v, key, &b->stdin_data, &b->stdin_len,
				       where, err, n);
			b->has_stdin = true;
		} else if (!strcmp(key, "args")) {
			rc = take_args(b, v, where, err, n);
		} else if (!strcmp(key, "files")) {
			rc = take_files(b, v, where, err, n);
		} else if (!strcmp(key, "expect_stdout")) {
			rc = take_text(v, key, &b->expect_stdout,
				       &b->expect_stdout_len, where, err, n);
			b->has_expect_stdout = true;
		} else if (!strcmp(key, "expect_exit")) {
			if (!json_is_integer(v) || json_integer_value(v) < 0 ||
			    json_integer_value(v) > 255)
				return bad(err, n,
					   "%s: \"expect_exit\" must "
					   "be an integer 0..255",
					   where);
			b->expect_exit = (int)json_integer_value(v);
			b->has_expect_exit = true;
		} else {
			return bad(err, n,
				   "%s: unknown key \"%s\" (a sample "
				   "has id, code, language, stdin, "
				   "args, files, expect_stdout, "
				   "expect_exit)",
				   where, key);
		}
		if (rc)
			return rc;
	}
	if (!b->id)
		return bad(err, n, "%s: the sample has no \"id\"", where);
	if (!b->code)
		return bad(err, n, "%s: the sample has no \"code\"", where);
	return 0;
}

static int jsonl_line(struct batch_samples *s, const char *path, size_t lineno,
		      const char *line, size_t len, char *err, size_t n)
{
	struct batch_sample *b;
	json_error_t je;
	json_t *o;
	char where[4200];
	int rc;

	snprintf(where, sizeof(where), "%s:%zu", path, lineno);
	o = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
	if (!o)
		return bad(err, n, "%s:%d: not JSON: %s", where, je.column,
			   je.text);
	if (!json_is_object(o)) {
		json_decref(o);
		return bad(err, n, "%s: a sample is a JSON object", where);
	}
	b = add(s);
	rc = !b ? -ENOMEM : line_fields(b, o, where, err, n);
	json_decref(o);
	if (!rc && !(b->where = strdup(where)))
		rc = -ENOMEM;
	return rc;
}

static int jsonl_file(struct batch_samples *s, const char *path, char *err,
		      size_t n)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	ssize_t len;
	int rc = 0;

	if (!f)
		return bad(err, n, "%s: cannot read the samples: %s", path,
			   strerror(errno));
	while (!rc && (len = getline(&line, &cap, f)) >= 0) {
		lineno++;
		while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			len--;
		if (strspn(line, " \t") == (size_t)len)
			continue;
		rc = jsonl_line(s, path, lineno, line, (size_t)len, err, n);
	}
	if (!rc && ferror(f))
		rc = bad(err, n, "%s: read error", path);
	free(line);
	fclose(f);
	return rc;
}

static int by_id_cmp(const void *a, const void *b)
{
	const struct batch_sample *x = *(struct batch_sample *const *)a;
	const struct batch_sample *y = *(struct batch_sample *const *)b;

	return strcmp(x->id, y->id);
}

int batch_index(struct batch_samples *s)
{
	free(s->sorted);
	s->sorted = calloc(s->n + 1, sizeof(*s->sorted));
	if (!s->sorted)
		return -ENOMEM;
	for (size_t i = 0; i < s->n; i++)
		s->sorted[i] = &s->v[i];
	qsort(s->sorted, s->n, sizeof(*s->sorted), by_id_cmp);
	return 0;
}

struct batch_sample *batch_find(const struct batch_samples *s, const char *id)
{
	struct batch_sample key = { .id = (char *)id }, *k = &key, **hit;

	hit = bsearch(&k, s->sorted, s->n, sizeof(*s->sorted), by_id_cmp);
	return hit ? *hit : NULL;
}

static int no_duplicates(struct batch_samples *s, char *err, size_t n)
{
	if (batch_index(s))
		return -ENOMEM;
	/* a sample's id names its result line and its run's tag: two
	 * samples with one id could not be told apart on --resume */
	for (size_t i = 1; i < s->n; i++) {
		const struct batch_sample *a = s->sorted[i - 1],
					  *b = s->sorted[i];

		if (strcmp(a->id, b->id))
			continue;
		if (a > b) {
			const struct batch_sample *t = a;

			a = b;
			b = t;
		}
		return bad(err, n,
			   "%s: sample id \"%s\" was already used "
			   "at %s: give each sample its own id",
			   b->where, b->id, a->where);
	}
	return 0;
}

int batch_load(struct batch_samples *s, char **paths, int n, char *err,
	       size_t errn)
{
	int rc = 0;

	for (int i = 0; !rc && i < n; i++)
		rc = ends_with(paths[i], ".jsonl")
			     ? jsonl_file(s, paths[i], err, errn)
			     : file_sample(s, paths[i], err, errn);
	if (rc == -ENOMEM)
		snprintf(err, errn, "out of memory");
	return rc ? rc : no_duplicates(s, err, errn);
}

static void sample_free(struct batch_sample *b)
{
	free(b->id);
	free(b->where);
	free(b->path);
	free(b->code);
	free(b->lang);
	free(b->stdin_data);
	for (size_t i = 0; i < b->n_args; i++)
		free(b->args[i]);
	free(b->args);
	for (size_t i = 0; i < b->n_files; i++) {
		free(b->files[i].name);
		free(b->files[i].data);
	}
	free(b->files);
	free(b->expect_stdout);
	free(b->status);
	free(b->error);
	json_decref(b->denials);
}

void batch_samples_free(struct batch_samples *s)
{
	for (size_t i = 0; i < s->n; i++)
		sample_free(&s->v[i]);
	free(s->v);
	free(s->sorted);
	memset(s, 0, sizeof(*s));
}

/* The shard a sample belongs to depends on its id only, not on the order
 * or the number of SAMPLES arguments. */
static unsigned shard_of(const char *id, unsigned n)
{
	uint8_t d[WARD_SHA256_LEN];
	unsigned long long h = 0;
	struct ward_sha256 c;

	ward_sha256_init(&c);
	ward_sha256_update(&c, id, strlen(id));
	ward_sha256_final(&c, d);
	for (int i = 0; i < 8; i++)
		h = h << 8 | d[i];
	return (unsigned)(h % n) + 1;
}

void batch_shard(struct batch_samples *s, unsigned i, unsigned n)
{
	size_t k = 0;

	for (size_t j = 0; j < s->n; j++) {
		if (shard_of(s->v[j].id, n) == i)
			s->v[k++] = s->v[j];
		else
			sample_free(&s->v[j]);
	}
	s->n = k;
	batch_index(s); /* smaller: cannot fail to fit where it was */
}

/* A finished line names its sample and a final status. */
static void line_done(struct batch_samples *s, json_t *o, int *done)
{
	const char *id = json_string_value(json_object_get(o, "id"));
	const char *st = json_string_value(json_object_get(o, "status"));
	struct batch_sample *b = id ? batch_find(s, id) : NULL;

	const char *run = json_string_value(json_object_get(o, "run_id"));
	json_t *pass = json_object_get(o, "pass"), *c;
	size_t i;

	const char *batch = json_string_value(json_object_get(o, "batch"));

	if (!b || !st || !strcmp(st, "cancelled") || !strcmp(st, "failed") ||
	    b->state == SAMPLE_DONE || !batch || strcmp(batch, s->batch_id))
		return;
	b->state = SAMPLE_DONE;
	(*done)++;
	/* what the summary and the report show of it */
	b->status = strdup(st);
	if (run && strlen(run) == AUDIT_RUN_ID_LEN)
		memcpy(b->run_id, run, AUDIT_RUN_ID_LEN + 1);
	b->pass = json_is_boolean(pass) ? json_is_true(pass) : -1;
	b->has_exit = json_is_integer(json_object_get(o, "exit_code"));
	b->exit_code = (int)json_integer_value(json_object_get(o, "exit_code"));
	b->signal = (int)json_integer_value(json_object_get(o, "signal"));
	b->duration_ms = json_integer_value(json_object_get(o, "duration_ms"));
	b->denials = json_incref(json_object_get(o, "denials"));
	json_array_foreach(json_object_get(o, "categories"), i,
			   c) for (int k = 0; k < CAT_N;
				   k++) if (!strcmp(json_string_value(c) ?: "",
						    batch_cat_name[k]))
		b->cats |= 1u << k;
}

int batch_resume_lines(struct batch_samples *s, const char *out_path, char *err,
		       size_t errn)
{
	int fd = open(out_path, O_RDWR | O_CLOEXEC | O_NOCTTY);
	FILE *f;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	off_t whole = 0;
	int done = 0;

	if (fd < 0 && errno == ENOENT)
		return 0;
	if (fd < 0 || !(f = fdopen(fd, "r"))) {
		snprintf(err, errn, "--resume: cannot read %s: %s", out_path,
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		return -EIO;
	}
	for (size_t lineno = 1; (len = getline(&line, &cap, f)) > 0; lineno++) {
		json_t *o;

		/* a line without its newline was torn by a crash (each line
		 * is one write, synced): it is not a result */
		if (line[len - 1] != '\n')
			break;
		o = json_loadb(line, (size_t)len, 0, NULL);
		if (!o) {
			free(line);
			fclose(f);
			return bad(err, errn,
				   "--resume: %s:%zu is not a "
				   "result line of ward batch",
				   out_path, lineno);
		}
		line_done(s, o, &done);
		json_decref(o);
		whole += len;
	}
	free(line);
	/* cut the torn tail so that the next line starts on its own */
	if (ftruncate(fd, whole) < 0) {
		snprintf(err, errn, "--resume: cannot truncate %s: %s",
			 out_path, strerror(errno));
		fclose(f);
		return -EIO;
	}
	fclose(f);
	return done;
}

/* ---------------------------- the batch's id ---------------------------- */

static char *id_path(const char *out)
{
	char *p;

	return asprintf(&p, "%s.batch", out) < 0 ? NULL : p;
}

int batch_id_new(struct batch_samples *s, const char *out, char *err,
		 size_t errn)
{
	uint8_t r[BATCH_ID_LEN / 2];
	char *path, *tmp = NULL, line[64];
	int fd = -1, rc = 0;

	if (getrandom(r, sizeof(r), 0) != sizeof(r))
		return bad(err, errn, "no random bytes for the batch's id: %s",
			   strerror(errno));
	for (size_t i = 0; i < sizeof(r); i++)
		snprintf(s->batch_id + 2 * i, 3, "%02x", r[i]);
	if (!out)
		return 0;
	/* written whole (a temporary file renamed) and synced before any
	 * sample runs: --resume always finds it */
	path = id_path(out);
	if (!path || asprintf(&tmp, "%s.tmp", path) < 0) {
		free(path);
		return -ENOMEM;
	}
	snprintf(line, sizeof(line), "{\"ward_batch\":\"%s\"}\n", s->batch_id);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, line, strlen(line)) != (ssize_t)strlen(line) ||
	    fsync(fd) || rename(tmp, path))
		rc = bad(err, errn, "--out: cannot write %s: %s", path,
			 strerror(errno));
	if (fd >= 0)
		close(fd);
	if (rc)
		unlink(tmp);
	free(tmp);
	free(path);
	return rc;
}

int batch_id_read(struct batch_samples *s, const char *out, char *err,
		  size_t errn)
{
	char *path = id_path(out);
	json_t *o;
	const char *id;
	int rc = 0;

	if (!path)
		return -ENOMEM;
	o = json_load_file(path, 0, NULL);
	id = json_string_value(json_object_get(o, "ward_batch"));
	if (!o && access(path, F_OK))
		rc = bad(err, errn,
			 "--resume: %s: %s (it holds the batch's id; "
			 "start the batch without --resume)",
			 path, strerror(errno));
	else if (!id || strlen(id) != BATCH_ID_LEN ||
		 strspn(id, "0123456789abcdef") != BATCH_ID_LEN)
		rc = bad(err, errn, "--resume: %s is not a ward batch id file",
			 path);
	else
		memcpy(s->batch_id, id, BATCH_ID_LEN + 1);
	json_decref(o);
	free(path);
	return rc;
}
