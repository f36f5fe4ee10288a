/*
 * domains.c - what the egress proxy may reach: net.allow_domains (names and
 * "*.suffix" wildcards with a port), net.hosts (names the proxy resolves
 * without DNS) and net.allow_private (blocked address ranges the policy
 * opens). Pure functions: the proxy (tracer/proxy.c) asks, this decides.
 *
 * The list lives in struct policy so that a policy's phases can each have
 * their own (one function decides name+port).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "policy-int.h"

#define HOST_NAME_MAXLEN 253

/* Lower-cases s in place and drops one trailing dot; true when it is a
 * host name: labels of [a-z0-9-] (and '_', which some CDNs use), 1 to 63
 * bytes, not starting or ending with '-', 253 bytes at most. */
static bool host_name_ok(char *s)
{
	size_t len = strlen(s), lab = 0;

	if (len && s[len - 1] == '.')
		s[--len] = '\0';
	if (!len || len > HOST_NAME_MAXLEN)
		return false;
	for (size_t i = 0; i <= len; i++) {
		char ch = s[i];

		if (ch >= 'A' && ch <= 'Z')
			s[i] = ch = (char)(ch - 'A' + 'a');
		if (ch == '.' || ch == '\0') {
			if (lab == 0 || lab > 63 || s[i - 1] == '-' ||
			    s[i - lab] == '-')
				return false;
			lab = 0;
			continue;
		}
		if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
		      ch == '-' || ch == '_'))
			return false;
		lab++;
	}
	return true;
}

int pol_domain_parse(const char *s, struct pol_domain *d, char *why, size_t n)
{
	const char *colon = strrchr(s, ':');
	char name[HOST_NAME_MAXLEN + 8];
	const char *pn;
	size_t nlen;
	long port;
	char *end;

	if (!colon || !colon[1]) {
		snprintf(why, n,
			 "\"%s\" needs a port: \"NAME:PORT\" or "
			 "\"*.SUFFIX:PORT\", like \"pypi.org:443\"",
			 s);
		return -EINVAL;
	}
	port = strtol(colon + 1, &end, 10);
	if (*end || port < 1 || port > 65535 || colon[1] == '-' ||
	    colon[1] == '+') {
		snprintf(why, n, "\"%s\": the port must be 1 to 65535", s);
		return -EINVAL;
	}
	nlen = (size_t)(colon - s);
	pn = s;
	d->wildcard = nlen > 2 && s[0] == '*' && s[1] == '.';
	if (d->wildcard) {
		pn += 2;
		nlen -= 2;
	}
	if (nlen >= sizeof(name))
		goto bad;
	memcpy(name, pn, nlen);
	name[nlen] = '\0';
	if (!host_name_ok(name))
		goto bad;
	d->name = strdup(name);
	d->port = (int)port;
	return d->name ? 0 : -ENOMEM;
bad:
	snprintf(why, n,
		 "\"%s\" is not a host name with a port (\"pypi.org:443\", "
		 "or \"*.pythonhosted.org:443\" for every name under one)",
		 s);
	return -EINVAL;
}

int pol_host_parse(const char *name, const char *ip, struct pol_host *h,
		   char *why, size_t n)
{
	char nm[HOST_NAME_MAXLEN + 2];

	if (strlen(name) >= sizeof(nm))
		goto badname;
	strcpy(nm, name);
	if (!host_name_ok(nm))
		goto badname;
	if (inet_pton(AF_INET, ip, h->addr) == 1)
		h->family = AF_INET;
	else if (inet_pton(AF_INET6, ip, h->addr) == 1)
		h->family = AF_INET6;
	else {
		snprintf(why, n,
			 "\"%s\" is not an IPv4 or IPv6 address (like "
			 "127.0.0.1 or ::1)",
			 ip);
		return -EINVAL;
	}
	h->name = strdup(nm);
	return h->name ? 0 : -ENOMEM;
badname:
	snprintf(why, n, "\"%s\" is not a host name (like mirror.test)", name);
	return -EINVAL;
}

void pol_domains_free(struct policy *p)
{
	for (size_t i = 0; i < p->ndomains; i++) {
		free(p->domains[i].id);
		free(p->domains[i].name);
	}
	free(p->domains);
	for (size_t i = 0; i < p->nhosts; i++)
		free(p->hosts[i].name);
	free(p->hosts);
	free(p->reach);
}

bool policy_net_proxy(const struct policy *p)
{
	return p->has_domains;
}

static bool domain_match(const struct pol_domain *d, const char *name, int port)
{
	size_t nl = strlen(name), dl = strlen(d->name);

	if (d->port != port)
		return false;
	if (!d->wildcard)
		return strcmp(d->name, name) == 0;
	/* "*.b.c" matches "a.b.c" and "x.a.b.c", not "b.c" nor "ab.c" */
	return nl > dl + 1 && name[nl - dl - 1] == '.' &&
	       strcmp(name + nl - dl, d->name) == 0;
}

static void verdict(struct policy_verdict *out, enum policy_action a, int err,
		    const char *rule)
{
	memset(out, 0, sizeof(*out));
	out->action = a;
	out->err = err;
	out->rule = rule;
}

void policy_domain_check(const struct policy *p, const char *name, int port,
			 struct policy_verdict *out)
{
	char nm[HOST_NAME_MAXLEN + 2];

	if (strlen(name) >= sizeof(nm) ||
	    (strcpy(nm, name), !host_name_ok(nm))) {
		verdict(out, POLICY_DENY, ECONNREFUSED, "net.proxy-name");
		snprintf(out->reason, sizeof(out->reason),
			 "proxy request: the target is not a host name");
		return;
	}
	for (size_t i = 0; i < p->ndomains; i++) {
		const struct pol_domain *d = &p->domains[i];

		if (!domain_match(d, nm, port))
			continue;
		verdict(out, POLICY_ALLOW, 0, d->id);
		snprintf(out->reason, sizeof(out->reason),
			 "proxy to %.100s:%d: allowed by %s", nm, port, d->id);
		return;
	}
	verdict(out, POLICY_DENY, ECONNREFUSED, POL_RULE_DEFAULT);
	snprintf(out->reason, sizeof(out->reason),
		 "proxy to %.100s:%d: no net.allow_domains entry names it", nm,
		 port);
}

int policy_host_lookup(const struct policy *p, const char *name, int *family,
		       unsigned char addr[16])
{
	char nm[HOST_NAME_MAXLEN + 2];

	if (strlen(name) >= sizeof(nm))
		return -ENOENT;
	strcpy(nm, name);
	if (!host_name_ok(nm))
		return -ENOENT;
	for (size_t i = 0; i < p->nhosts; i++) {
		if (strcmp(p->hosts[i].name, nm) != 0)
			continue;
		*family = p->hosts[i].family;
		memcpy(addr, p->hosts[i].addr, 16);
		return 0;
	}
	return -ENOENT;
}

static int add_host_one(struct policy *p, const char *spec, char *err,
			size_t n)
{
	const char *colon = strchr(spec, ':');
	struct pol_host h, *nv;
	char name[HOST_NAME_MAXLEN + 2];
	int rc;

	if (!colon || (size_t)(colon - spec) >= sizeof(name)) {
		snprintf(err, n,
			 "--add-host \"%s\": must be NAME:IP, like "
			 "mirror.test:127.0.0.1",
			 spec);
		return -EINVAL;
	}
	memcpy(name, spec, (size_t)(colon - spec));
	name[colon - spec] = '\0';
	rc = pol_host_parse(name, colon + 1, &h, err, n);
	if (rc)
		return rc;
	nv = realloc(p->hosts, (p->nhosts + 1) * sizeof(*nv));
	if (!nv) {
		free(h.name);
		return -ENOMEM;
	}
	p->hosts = nv;
	memmove(nv + 1, nv, p->nhosts * sizeof(*nv));
	nv[0] = h;
	p->nhosts++;
	return 0;
}

/* The policy's and each of its phases' (a phase is a whole policy of its
 * own: the setup reaches the name the run was told of). */
int policy_add_host(struct policy *p, const char *spec, char *err, size_t n)
{
	int rc = add_host_one(p, spec, err, n);

	for (size_t i = 0; !rc && i < p->nphases; i++)
		rc = add_host_one(p->phase[i], spec, err, n);
	return rc;
}

/* ---- the address floor ---- */

struct blocked {
	int family;
	unsigned char net[16];
	int prefix;
	const char *what;
};

#define V4(a, b, c, d)                                                         \
	{                                                                      \
		a, b, c, d                                                     \
	}
static const struct blocked blocked[] = {
	{ AF_INET, V4(0, 0, 0, 0), 8, "0.0.0.0/8 (this network)" },
	{ AF_INET, V4(10, 0, 0, 0), 8, "10.0.0.0/8 (private)" },
	{ AF_INET, V4(100, 64, 0, 0), 10, "100.64.0.0/10 (shared)" },
	{ AF_INET, V4(127, 0, 0, 0), 8, "127.0.0.0/8 (loopback)" },
	{ AF_INET, V4(169, 254, 169, 254), 32,
	  "169.254.169.254 (cloud metadata)" },
	{ AF_INET, V4(169, 254, 0, 0), 16, "169.254.0.0/16 (link-local)" },
	{ AF_INET, V4(172, 16, 0, 0), 12, "172.16.0.0/12 (private)" },
	{ AF_INET, V4(192, 0, 0, 0), 24, "192.0.0.0/24 (IETF protocol)" },
	{ AF_INET, V4(192, 168, 0, 0), 16, "192.168.0.0/16 (private)" },
	{ AF_INET, V4(198, 18, 0, 0), 15, "198.18.0.0/15 (benchmarking)" },
	{ AF_INET, V4(224, 0, 0, 0), 4, "224.0.0.0/4 (multicast)" },
	{ AF_INET, V4(240, 0, 0, 0), 4, "240.0.0.0/4 (reserved)" },
	{ AF_INET6,
	  { 0 },
	  96,
	  "::/96 (unspecified, loopback, IPv4-compatible)" },
	{ AF_INET6, { 0xfc }, 7, "fc00::/7 (unique local)" },
	{ AF_INET6, { 0xfe, 0x80 }, 10, "fe80::/10 (link-local)" },
	{ AF_INET6, { 0xfe, 0xc0 }, 10, "fec0::/10 (site-local)" },
	{ AF_INET6, { 0xff }, 8, "ff00::/8 (multicast)" },
	{ AF_INET6, { 0x20, 0x01, 0, 0 }, 32, "2001::/32 (Teredo)" },
	{ AF_INET6, { 0x01, 0, 0, 0, 0, 0, 0, 0 }, 64, "100::/64 (discard)" },
};

static bool in_prefix(const unsigned char *a, const unsigned char *net,
		      int prefix)
{
	int full = prefix / 8, rest = prefix % 8;

	if (memcmp(a, net, (size_t)full) != 0)
		return false;
	if (!rest)
		return true;
	unsigned char m = (unsigned char)(0xffu << (8 - rest));
	return (a[full] & m) == (net[full] & m);
}

/* The IPv4 address an IPv6 one carries to an IPv4 host: ::ffff:a.b.c.d,
 * NAT64's 64:ff9b::a.b.c.d, 6to4's 2002:AABB:CCDD::. */
static bool embedded_v4(const unsigned char *a, unsigned char v4[4])
{
	static const unsigned char mapped[12] = { [10] = 0xff, [11] = 0xff };
	static const unsigned char nat64[12] = { 0, 0x64, 0xff, 0x9b };

	if (!memcmp(a, mapped, 12) || !memcmp(a, nat64, 12)) {
		memcpy(v4, a + 12, 4);
		return true;
	}
	if (a[0] == 0x20 && a[1] == 0x02) {
		memcpy(v4, a + 2, 4);
		return true;
	}
	return false;
}

static bool reach_named(const struct policy *p, int family,
			const unsigned char *a)
{
	for (size_t i = 0; i < p->nreach; i++)
		if (p->reach[i].family == family &&
		    in_prefix(a, p->reach[i].addr, p->reach[i].prefix))
			return true;
	return false;
}

bool policy_proxy_may_reach(const struct policy *p, int family,
			    const unsigned char *addr, char *why, size_t n)
{
	unsigned char v4[4];

	if (why && n)
		why[0] = '\0';
	if (family == AF_INET6 && embedded_v4(addr, v4)) {
		/* judged as the IPv4 address inside, and named as such */
		family = AF_INET;
		addr = v4;
	}
	if (family != AF_INET && family != AF_INET6) {
		if (why)
			snprintf(why, n, "not an IPv4 or IPv6 address");
		return false;
	}
	if (reach_named(p, family, addr))
		return true;
	for (size_t i = 0; i < sizeof(blocked) / sizeof(blocked[0]); i++) {
		const struct blocked *b = &blocked[i];

		if (b->family != family || !in_prefix(addr, b->net, b->prefix))
			continue;
		if (why)
			snprintf(why, n,
				 "%s is not reached unless net.allow_private "
				 "names it",
				 b->what);
		return false;
	}
	return true;
}
