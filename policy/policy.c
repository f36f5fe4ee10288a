/*
 * policy.c - loading entry points, lifetime, $WORKDIR binding and the
 * accessors the tracer and the command read.
 */
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy-int.h"
#include "profiles.h"

#define POLICY_FILE_MAX (1 << 20) /* a policy is a page or two of JSON */

/*
 * Copy src to dst (n bytes) with control characters written as JSON
 * escapes ("\t", "\u001b"), so a message quoting user text stays one line.
 */
static void copy_escaped(char *dst, size_t n, const char *src)
{
	size_t used = 0;

	for (; *src && used + 1 < n; src++) {
		unsigned char ch = (unsigned char)*src;
		const char *named = ch == '\n'	 ? "\\n"
				    : ch == '\t' ? "\\t"
				    : ch == '\r' ? "\\r"
						 : NULL;
		char esc[8];
		size_t len;

		if (ch >= 0x20 && ch != 0x7f) {
			dst[used++] = (char)ch;
			continue;
		}
		if (!named)
			snprintf(esc, sizeof(esc), "\\u%04x", ch);
		len = strlen(named ? named : esc);
		if (used + len + 1 > n)
			break;
		memcpy(dst + used, named ? named : esc, len);
		used += len;
	}
	dst[used] = '\0';
}

void pol_set_error(struct policy_error *err, const char *file, int line,
		   int col, const char *where, const char *fmt, ...)
{
	char msg[sizeof(err->msg)];
	va_list ap;

	if (!err)
		return;
	snprintf(err->file, sizeof(err->file), "%s", file ? file : "");
	err->line = line;
	err->col = line ? col : 0;
	copy_escaped(err->where, sizeof(err->where), where ? where : "");
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	copy_escaped(err->msg, sizeof(err->msg), msg);
}

void policy_error_format(const struct policy_error *e, char *buf, size_t n)
{
	char loc[320];
	int used = 0;

	if (!buf || n == 0)
		return;
	loc[0] = '\0';
	if (e->file[0])
		used = snprintf(loc, sizeof(loc), "%s", e->file);
	if (e->line > 0)
		used += snprintf(loc + used, sizeof(loc) - (size_t)used, "%s%d",
				 used ? ":" : "", e->line);
	if (e->line > 0 && e->col > 0)
		snprintf(loc + used, sizeof(loc) - (size_t)used, ":%d", e->col);
	snprintf(buf, n, "%s%s%s%s%s", loc, loc[0] ? ": " : "", e->where,
		 e->where[0] ? ": " : "", e->msg);
}

static void clear_error(struct policy_error *err)
{
	if (err)
		memset(err, 0, sizeof(*err));
}

/* "dir/strict.json" -> "strict" into buf. */
static void base_name(const char *path, char *buf, size_t n)
{
	const char *b = strrchr(path, '/');
	size_t len;

	b = b ? b + 1 : path;
	len = strlen(b);
	if (len > 5 && strcmp(b + len - 5, ".json") == 0)
		len -= 5;
	if (len == 0) {
		b = "policy";
		len = 6;
	}
	snprintf(buf, n, "%.*s", (int)len, b);
}

int policy_load_string(const char *text, const char *label, struct policy **out,
		       struct policy_error *err)
{
	char name[128];

	clear_error(err);
	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!text) {
		pol_set_error(err, label, 0, 0, "", "no policy text");
		return -EINVAL;
	}
	if (!label)
		label = "<string>";
	base_name(label[0] == '<' ? "policy" : label, name, sizeof(name));
	return pol_parse(text, strlen(text), label, name, out, err);
}

/* Read all of path (at most POLICY_FILE_MAX bytes) into *buf. */
static int read_file(const char *path, char **buf, size_t *len,
		     struct policy_error *err)
{
	FILE *f = fopen(path, "rbe"); /* e: O_CLOEXEC */
	char *b;
	size_t n;
	int rc = 0;

	if (!f) {
		rc = -errno;
		pol_set_error(err, path, 0, 0, "", "cannot open: %s",
			      strerror(-rc));
		return rc;
	}
	b = malloc(POLICY_FILE_MAX + 1);
	if (!b) {
		fclose(f);
		return -ENOMEM;
	}
	n = fread(b, 1, POLICY_FILE_MAX + 1, f);
	if (ferror(f)) {
		rc = -EIO;
		pol_set_error(err, path, 0, 0, "", "cannot read: %s",
			      strerror(errno ? errno : EIO));
	} else if (n > POLICY_FILE_MAX) {
		rc = -EINVAL;
		pol_set_error(err, path, 0, 0, "",
			      "larger than %d bytes; is this a policy?",
			      POLICY_FILE_MAX);
	} else if (memchr(b, '\0', n)) {
		rc = -EINVAL;
		pol_set_error(err, path, 0, 0, "",
			      "contains a NUL byte; a policy is JSON text");
	}
	fclose(f);
	if (rc) {
		free(b);
		return rc;
	}
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;
}

int policy_load_file(const char *path, struct policy **out,
		     struct policy_error *err)
{
	char name[128];
	char *text = NULL;
	size_t len = 0;
	int rc;

	clear_error(err);
	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!path || !path[0]) {
		pol_set_error(err, "", 0, 0, "", "no policy file given");
		return -EINVAL;
	}
	rc = read_file(path, &text, &len, err);
	if (rc) {
		if (rc == -ENOMEM)
			pol_set_error(err, path, 0, 0, "", "out of memory");
		return rc;
	}
	base_name(path, name, sizeof(name));
	rc = pol_parse(text, len, path, name, out, err);
	free(text);
	return rc;
}

#define MAX_PROFILES 32
static const char *profile_names[MAX_PROFILES + 1];
static pthread_once_t profile_names_once = PTHREAD_ONCE_INIT;

static void fill_profile_names(void)
{
	for (size_t i = 0; i < MAX_PROFILES && ward_profiles[i].name; i++)
		profile_names[i] = ward_profiles[i].name;
}

const char *const *policy_profile_names(void)
{
	pthread_once(&profile_names_once, fill_profile_names);
	return profile_names;
}

int policy_load_profile(const char *name, struct policy **out,
			struct policy_error *err)
{
	char label[sizeof(err->file)];
	const char *const *names;
	size_t used = 0;
	char list[192];

	clear_error(err);
	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!name)
		name = "";
	snprintf(label, sizeof(label), "profile:%s", name);
	for (size_t i = 0; ward_profiles[i].name; i++)
		if (strcmp(ward_profiles[i].name, name) == 0)
			return pol_parse(ward_profiles[i].text,
					 strlen(ward_profiles[i].text), label,
					 name, out, err);
	names = policy_profile_names();
	list[0] = '\0';
	for (size_t i = 0; names[i] && used < sizeof(list); i++) {
		int w = snprintf(list + used, sizeof(list) - used, "%s%s",
				 i ? ", " : "", names[i]);

		if (w < 0)
			break;
		used += (size_t)w;
	}
	pol_set_error(err, label, 0, 0, "", "no such profile; valid: %s", list);
	return -ENOENT;
}

static void path_free(struct pol_path *pp)
{
	if (pp->bound != pp->text)
		free(pp->bound);
	free(pp->text);
}

void policy_free(struct policy *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nphases; i++)
		policy_free(p->phase[i]);
	for (size_t i = 0; i < p->nfs; i++) {
		free(p->fs[i].id);
		path_free(&p->fs[i].path);
	}
	free(p->fs);
	free(p->fs_order);
	for (size_t i = 0; i < p->nexec; i++) {
		free(p->exec_globs[i]);
		free(p->exec_ids[i]);
	}
	free(p->exec_globs);
	free(p->exec_ids);
	free(p->exec_ask);
	for (size_t i = 0; i < p->nnet; i++) {
		free(p->net[i].id);
		free(p->net[i].abstract);
		path_free(&p->net[i].path);
	}
	free(p->net);
	pol_domains_free(p);
	for (size_t i = 0; i < p->nsys; i++) {
		free(p->sys[i].id);
		free(p->sys[i].name);
	}
	free(p->sys);
	for (size_t i = 0; i < POL_NLANGS; i++)
		free(p->interp[i]);
	for (size_t i = 0; i < p->nprotect; i++)
		free(p->protect[i]);
	free(p->protect);
	free(p->text);
	free(p->name);
	free(p->description);
	free(p->workdir);
	free(p);
}

int pol_path_bind(struct pol_path *pp, const char *wd)
{
	char *b;

	if (!pp->workdir || !pp->text)
		return 0;
	free(pp->bound);
	pp->bound = NULL;
	pp->len = 0;
	if (!wd)
		return 0;
	/* wd is "/" or has no trailing '/'; text is "$WORKDIR[/...]" */
	if (asprintf(&b, "%s%s", strcmp(wd, "/") == 0 && pp->text[8] ? "" : wd,
		     pp->text + 8) < 0)
		return -ENOMEM;
	pp->bound = b;
	pp->len = strlen(b);
	return 0;
}

int policy_protect(struct policy *p, const char *path)
{
	char **list, *copy;

	if (!p || !path || path[0] != '/' || strlen(path) >= WARD_PATH_MAX)
		return -EINVAL;
	list = realloc(p->protect, (p->nprotect + 1) * sizeof(*list));
	if (!list)
		return -ENOMEM;
	p->protect = list;
	copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	p->protect[p->nprotect++] = copy;
	/* a phase is guarded as its base is */
	for (size_t i = 0; i < p->nphases; i++) {
		int rc = policy_protect(p->phase[i], path);

		if (rc)
			return rc;
	}
	return 0;
}

struct policy *policy_phase(const struct policy *p, const char *name)
{
	for (size_t i = 0; p && name && i < p->nphases; i++)
		if (!strcmp(p->phase_name[i], name))
			return p->phase[i];
	return NULL;
}

const char *policy_phase_name(const struct policy *p, size_t i)
{
	return p && i < p->nphases ? p->phase_name[i] : NULL;
}

int policy_set_workdir(struct policy *p, const char *workdir)
{
	char *wd;
	size_t n;
	int rc = 0;

	if (!p || !workdir || workdir[0] != '/')
		return -EINVAL;
	n = strlen(workdir);
	if (n >= WARD_PATH_MAX)
		return -EINVAL;
	while (n > 1 && workdir[n - 1] == '/')
		n--;
	wd = strndup(workdir, n);
	if (!wd)
		return -ENOMEM;
	free(p->workdir);
	p->workdir = wd;
	/* the phases first: each is all or nothing, like the base below */
	for (size_t i = 0; !rc && i < p->nphases; i++)
		rc = policy_set_workdir(p->phase[i], wd);
	for (size_t i = 0; !rc && i < p->nfs; i++)
		rc = pol_path_bind(&p->fs[i].path, wd);
	for (size_t i = 0; !rc && i < p->nnet; i++)
		if (p->net[i].has_path)
			rc = pol_path_bind(&p->net[i].path, wd);
	if (!rc)
		rc = pol_fs_index(p);
	if (rc) {
		/* all or nothing: leave no rule half bound */
		for (size_t i = 0; i < p->nfs; i++)
			pol_path_bind(&p->fs[i].path, NULL);
		for (size_t i = 0; i < p->nnet; i++)
			pol_path_bind(&p->net[i].path, NULL);
		free(p->workdir);
		p->workdir = NULL;
		/*
		 * The old index stays valid: unbound rules never match and
		 * the other rules did not move.
		 */
	}
	return rc;
}

const char *policy_name(const struct policy *p)
{
	return p->name;
}

const char *policy_text(const struct policy *p)
{
	return p->text;
}

bool policy_audit_mode(const struct policy *p)
{
	return p->audit;
}

long long policy_ask_timeout_ms(const struct policy *p)
{
	return p->ask_timeout_ms;
}

bool policy_asks(const struct policy *p)
{
	if (p->audit)
		return false; /* allowed there without asking */
	for (size_t i = 0; i < p->nfs; i++)
		if (p->fs[i].ask)
			return true;
	for (size_t i = 0; i < p->nnet; i++)
		if (p->net[i].ask)
			return true;
	for (size_t i = 0; i < p->nexec; i++)
		if (p->exec_ask[i])
			return true;
	return false;
}

/* An allow rule for IPv4/IPv6 whose peers are all loopback addresses. */
static bool rule_loopback_only(const struct pol_net_rule *r)
{
	static const unsigned char v6_lo[16] = { [15] = 1 };
	static const unsigned char v4m_lo[13] = {
		[10] = 0xff, [11] = 0xff, [12] = 127
	};

	if (!r->has_addr)
		return false;
	if (r->family == AF_INET)
		return r->prefix >= 8 && r->addr[0] == 127;
	return (r->prefix == 128 && !memcmp(r->addr, v6_lo, 16)) ||
	       (r->prefix >= 104 && !memcmp(r->addr, v4m_lo, 13));
}

bool policy_net_beyond_loopback(const struct policy *p)
{
	if (p->audit)
		return true; /* audit mode allows every peer */
	for (size_t i = 0; i < p->nnet; i++) {
		const struct pol_net_rule *r = &p->net[i];

		if (r->deny || (r->family != AF_INET && r->family != AF_INET6))
			continue;
		/* listen takes the bound address: bind rules decide that */
		if (!(r->ops & (POL_OP(WARD_NET_CONNECT) |
				POL_OP(WARD_NET_SEND) | POL_OP(WARD_NET_BIND))))
			continue;
		if (!rule_loopback_only(r))
			return true;
	}
	return false;
}

bool policy_trap_stat(const struct policy *p)
{
	return p->trap_stat;
}

size_t policy_syscall_rule_count(const struct policy *p)
{
	return p->nsys;
}

const char *policy_syscall_rule_name(const struct policy *p, size_t i)
{
	return i < p->nsys ? p->sys[i].name : NULL;
}

const char *policy_interpreter(const struct policy *p, const char *lang)
{
	static const char *const langs[POL_NLANGS] = {
		[POL_LANG_PYTHON] = "python",
		[POL_LANG_NODE] = "node",
		[POL_LANG_SH] = "sh",
	};

	if (!lang)
		return NULL;
	for (size_t i = 0; i < POL_NLANGS; i++)
		if (strcmp(langs[i], lang) == 0)
			return p->interp[i];
	return NULL;
}

void policy_limits(const struct policy *p, struct ward_limits *out)
{
	*out = p->limits;
}

unsigned long long policy_required_layers(const struct policy *p)
{
	return p->require;
}
