/*
 * proxy.c - the egress proxy (net.allow_domains): the code's only way out
 * of its network namespace.
 *
 * The run keeps its own network namespace with loopback only. The run's
 * init (ns.c), once it has made that namespace, makes a listening TCP
 * socket on 127.0.0.1:POLICY_PROXY_PORT in it (CLOEXEC: the code never
 * holds it); at the init's clone of the code, before the code runs one
 * instruction, ward takes it with pidfd_getfd. The socket is ward's, lives
 * in the run's namespace, and nothing inside can reach anything else.
 * ward's threads are in the host's namespace, so the connections the
 * proxy makes to origin servers are made from outside the sandbox. (No
 * setns: that needs CAP_SYS_ADMIN in ward's own user namespace, which an
 * ordinary user's ward lacks.)
 *
 * Threads: an acceptor, and one thread per connection (at most
 * PROXY_CONN_MAX at once), never the ptrace loop's thread. Every wait is
 * a poll with a deadline that also watches the stop pipe: a slow or
 * hostile client ties up its own thread and nothing else, and the run's
 * end (tracer_proxy_stop) wakes and joins them all. Name resolution
 * (getaddrinfo) is the one wait it cannot cut short: the resolver's own
 * timeouts bound it.
 *
 * A connection: the request head (CONNECT host:port, or a plain HTTP
 * request with an absolute URI; proxyparse.c) -> the policy decides the
 * name and port (policy_domain_check) -> the name is resolved by ward
 * (net.hosts / --add-host first, else the host's resolver) -> each
 * address is judged after resolution (policy_proxy_may_reach: loopback,
 * link-local, metadata, private ranges refused unless named), and the one
 * connected to is the one judged -> CONNECT: "200", then the first TLS
 * record is read and its server name must be the CONNECT name; plain
 * HTTP: the head rewritten for the origin and Content-Length bytes of
 * body, nothing after -> bytes relayed both ways until either side ends
 * or PROXY_IDLE_S pass without a byte.
 *
 * The record: one events row per connection (syscall "proxy", nr -1, no
 * process): the name, port, address, decision and rule, bytes each way
 * and duration (docs/schema.md). A refusal is committed before the code
 * hears of it.
 */
#include "tracer-int.h"
#include "proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../common/json.h"
#include "../common/log.h"

enum {
	PROXY_CONN_MAX = 64,
	PROXY_HEAD_S = 10,    /* to send the request head */
	PROXY_HELLO_S = 10,   /* to send the ClientHello after "200" */
	PROXY_CONNECT_S = 10, /* to connect to the origin */
	PROXY_IDLE_S = 120,   /* a relay without a byte either way */
	PROXY_HELLO_MAX = 16384 + 2048 + 5,
	PROXY_RELAY_BUF = 65536,
};

#define XSTR(x)	  #x
#define STR(x)	  XSTR(x)
#define PROXY_URL "http://127.0.0.1:" STR(POLICY_PROXY_PORT)

struct tracer_proxy {
	struct tracer *t;
	const struct policy *pol;
	int lfd;	    /* listening, in the run's network namespace */
	int stop_r, stop_w; /* closing stop_w wakes every wait */
	pthread_t acceptor;
	bool started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int nconn; /* connection threads alive */
};

struct conn {
	struct tracer_proxy *px;
	int cfd, ufd;
	long long ts_ns, t0_ms;
	struct proxy_req req;
	char name[PROXY_HOST_MAX]; /* the target as the code named it */
	int port;
	char addr[INET6_ADDRSTRLEN]; /* the address connected to, or "" */
	char sni[PROXY_HOST_MAX];
	bool has_sni;
	long long up, down; /* bytes code -> origin, origin -> code */
	size_t have;	    /* bytes in buf */
	char buf[PROXY_HELLO_MAX > PROXY_HEAD_MAX ? PROXY_HELLO_MAX
						  : PROXY_HEAD_MAX];
};

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Wait for events on fd until the deadline (CLOCK_MONOTONIC ms). 1: ready,
 * 0: the deadline passed, -1: the proxy is stopping (or poll failed). */
static int wait_fd(struct conn *c, int fd, short events, long long deadline)
{
	for (;;) {
		struct pollfd p[2] = { { fd, events, 0 },
				       { c->px->stop_r, POLLIN, 0 } };
		long long left = deadline - now_ms();
		int rc;

		if (left <= 0)
			return 0;
		rc = poll(p, 2, left > 60000 ? 60000 : (int)left);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0 || p[1].revents)
			return -1;
		if (rc > 0)
			return 1;
	}
}

static int send_all(struct conn *c, int fd, const char *b, size_t len)
{
	long long deadline = now_ms() + PROXY_IDLE_S * 1000LL;

	while (len) {
		ssize_t w = send(fd, b, len, MSG_NOSIGNAL);

		if (w > 0) {
			b += w;
			len -= (size_t)w;
			continue;
		}
		if (w < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		if (wait_fd(c, fd, POLLOUT, deadline) != 1)
			return -ETIMEDOUT;
	}
	return 0;
}

/* ---- the record ---- */

static void json_field(struct ward_strbuf *sb, const char *key, const char *val)
{
	ward_strbuf_appendf(sb, "%s\"%s\":", sb->len > 1 ? "," : "", key);
	if (val)
		ward_strbuf_json_str(sb, val, strlen(val), 0);
	else
		ward_strbuf_puts(sb, "null");
}

/* One events row for the connection; a denial is committed at once. */
static void record(struct conn *c, const struct policy_verdict *v)
{
	struct tracer *t = c->px->t;
	char args[2048], raw[PROXY_HOST_MAX + 8], target[INET6_ADDRSTRLEN + 8];
	struct ward_strbuf sb;
	bool deny = v->action != POLICY_ALLOW;

	ward_strbuf_init_fixed(&sb, args, sizeof(args));
	ward_strbuf_puts(&sb, "{");
	json_field(&sb, "method", c->req.method[0] ? c->req.method : NULL);
	json_field(&sb, "name", c->name[0] ? c->name : NULL);
	ward_strbuf_appendf(&sb, ",\"port\":%d", c->port);
	json_field(&sb, "addr", c->addr[0] ? c->addr : NULL);
	json_field(&sb, "sni", c->has_sni ? c->sni : NULL);
	ward_strbuf_appendf(&sb,
			    ",\"bytes_up\":%lld,\"bytes_down\":%lld,"
			    "\"duration_ms\":%lld}",
			    c->up, c->down, now_ms() - c->t0_ms);
	snprintf(raw, sizeof(raw), "%s:%d", c->name, c->port);
	snprintf(target, sizeof(target),
		 strchr(c->addr, ':') ? "[%s]:%d" : "%s:%d", c->addr, c->port);
	struct audit_event e = {
		.ts_ns = c->ts_ns,
		.nr = -1,
		.syscall = "proxy",
		.args_json = sb.truncated ? "{}" : args,
		.raw = c->name[0] ? raw : NULL,
		.target = c->addr[0] ? target : NULL,
		.decision = deny ? "deny" : "allow",
		.rule = v->rule,
		.reason = v->reason,
		.err = deny ? v->err : 0,
	};
	evq_push(t, &e);
	if (deny)
		evq_drain(t); /* durable before the code is told */
}

static void refuse(struct conn *c, struct policy_verdict *v, int status,
		   const char *rule, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* Record a refusal made here (not by the domain list), then tell the code
 * (status 0: the "200" was sent already, just close). */
static void refuse(struct conn *c, struct policy_verdict *v, int status,
		   const char *rule, const char *fmt, ...)
{
	char resp[512];
	va_list ap;
	int n;

	if (rule) {
		memset(v, 0, sizeof(*v));
		v->action = POLICY_DENY;
		v->err = ECONNREFUSED;
		v->rule = rule;
		va_start(ap, fmt);
		vsnprintf(v->reason, sizeof(v->reason), fmt, ap);
		va_end(ap);
	}
	record(c, v);
	if (!status)
		return;
	n = snprintf(resp, sizeof(resp),
		     "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\n"
		     "Connection: close\r\nX-Ward-Rule: %s\r\n"
		     "Content-Length: %zu\r\n\r\nward: %s\n",
		     status, status == 403 ? "Forbidden" : "Bad Request",
		     v->rule, strlen(v->reason) + 7, v->reason);
	if (n > 0 && (size_t)n < sizeof(resp))
		send_all(c, c->cfd, resp, (size_t)n);
}

/* ---- one connection ---- */

static int read_head(struct conn *c, char *why, size_t n)
{
	long long deadline = now_ms() + PROXY_HEAD_S * 1000LL;
	int rc = -EAGAIN;

	while (rc == -EAGAIN) {
		ssize_t r = recv(c->cfd, c->buf + c->have,
				 PROXY_HEAD_MAX - c->have, 0);

		if (r == 0)
			return -EPIPE;
		if (r < 0) {
			if (errno != EAGAIN && errno != EINTR)
				return -errno;
			if (wait_fd(c, c->cfd, POLLIN, deadline) != 1)
				return -ETIMEDOUT;
			continue;
		}
		c->have += (size_t)r;
		rc = proxy_parse_head(c->buf, c->have, &c->req, why, n);
	}
	return rc;
}

static int connect_to(struct conn *c, const struct sockaddr *sa, socklen_t len)
{
	long long deadline = now_ms() + PROXY_CONNECT_S * 1000LL;
	int fd = socket(sa->sa_family,
			SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int err = 0;
	socklen_t el = sizeof(err);

	if (fd < 0)
		return -errno;
	if (connect(fd, sa, len) < 0 && errno != EINPROGRESS) {
		err = errno;
	} else if (wait_fd(c, fd, POLLOUT, deadline) != 1) {
		err = ETIMEDOUT;
	} else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0) {
		err = errno;
	}
	if (err) {
		close(fd);
		return -err;
	}
	return fd;
}

/* Try one address: judged first, connected to only if it may be. */
static int try_addr(struct conn *c, int family, const unsigned char *a,
		    char *why, size_t n)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t len;
	char txt[INET6_ADDRSTRLEN];
	int fd;

	inet_ntop(family, a, txt, sizeof(txt));
	if (!policy_proxy_may_reach(c->px->pol, family, a, why, n)) {
		snprintf(c->addr, sizeof(c->addr), "%s", txt);
		return -EACCES;
	}
	if (family == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)c->port);
		memcpy(&s4->sin_addr, a, 4);
		len = sizeof(*s4);
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)c->port);
		memcpy(&s6->sin6_addr, a, 16);
		len = sizeof(*s6);
	}
	fd = connect_to(c, (struct sockaddr *)&ss, len);
	if (fd >= 0 || !c->addr[0])
		snprintf(c->addr, sizeof(c->addr), "%s", txt);
	if (fd < 0)
		snprintf(why, n, "connect to %s: %s", txt, strerror(-fd));
	return fd;
}

/* Resolve c->name and connect to the first address that may be reached.
 * Returns the fd, -EACCES (every address refused: why says why), or
 * another -errno (why says what failed). */
static int open_origin(struct conn *c, char *why, size_t n)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
	unsigned char a[16];
	int family, fd = -EHOSTUNREACH, refused = 0, tried = 0;

	if (policy_host_lookup(c->px->pol, c->name, &family, a) == 0)
		return try_addr(c, family, a, why, n);
	if (getaddrinfo(c->name, NULL, &hints, &res) != 0) {
		snprintf(why, n, "%s does not resolve", c->name);
		return -EHOSTUNREACH;
	}
	for (ai = res; ai && fd < 0; ai = ai->ai_next) {
		const void *p;

		if (ai->ai_family == AF_INET)
			p = &((struct sockaddr_in *)ai->ai_addr)->sin_addr;
		else if (ai->ai_family == AF_INET6)
			p = &((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr;
		else
			continue;
		memcpy(a, p, ai->ai_family == AF_INET ? 4 : 16);
		tried++;
		fd = try_addr(c, ai->ai_family, a, why, n);
		refused += fd == -EACCES;
	}
	freeaddrinfo(res);
	if (fd < 0 && tried && refused == tried)
		return -EACCES;
	return fd;
}

/* After "200": the first TLS record, whose server name must be the
 * CONNECT name. 0: forward it; else refused (why says why). */
static int check_hello(struct conn *c, char *why, size_t n)
{
	long long deadline = now_ms() + PROXY_HELLO_S * 1000LL;
	int rc = -EAGAIN;

	while (rc == -EAGAIN) {
		rc = proxy_sni((unsigned char *)c->buf, c->have, c->sni,
			       sizeof(c->sni));
		if (rc != -EAGAIN)
			break;
		if (c->have == sizeof(c->buf)) {
			rc = -EINVAL;
			break;
		}
		ssize_t r = recv(c->cfd, c->buf + c->have,
				 sizeof(c->buf) - c->have, 0);
		if (r > 0) {
			c->have += (size_t)r;
		} else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
			snprintf(why, n,
				 "CONNECT %s:%d: the code sent no TLS "
				 "ClientHello",
				 c->name, c->port);
			return -EPIPE;
		} else if (wait_fd(c, c->cfd, POLLIN, deadline) != 1) {
			snprintf(why, n,
				 "CONNECT %s:%d: no TLS ClientHello "
				 "within %d s",
				 c->name, c->port, PROXY_HELLO_S);
			return -ETIMEDOUT;
		}
	}
	if (rc == -EINVAL) {
		snprintf(
			why, n,
			"CONNECT %s:%d: what followed is not a TLS ClientHello "
			"(CONNECT carries TLS only; plain HTTP goes as "
			"http:// requests)",
			c->name, c->port);
		return rc;
	}
	if (rc == -ENOENT)
		return 0; /* no server name: the connection is to c->name's
			   * address all the same */
	c->has_sni = true;
	size_t sl = strlen(c->sni), nl = strlen(c->name);
	if (sl && c->sni[sl - 1] == '.')
		sl--;
	if (nl && c->name[nl - 1] == '.')
		nl--;
	if (sl != nl || strncasecmp(c->sni, c->name, nl) != 0) {
		snprintf(why, n,
			 "CONNECT %.80s:%d: the TLS server name is "
			 "%.80s",
			 c->name, c->port, c->sni);
		return -EACCES;
	}
	return 0;
}

/* Copy bytes both ways until both sides end, or none for PROXY_IDLE_S.
 * up_left >= 0: at most that many more bytes from the code (plain HTTP:
 * the body), the rest of what it sends is dropped. */
static void relay(struct conn *c, long long up_left)
{
	char *b = malloc(PROXY_RELAY_BUF);
	bool up_open = true, down_open = true;

	if (!b)
		return;
	while (up_open || down_open) {
		struct pollfd p[3] = {
			{ c->cfd, up_open && up_left != 0 ? POLLIN : 0, 0 },
			{ c->ufd, down_open ? POLLIN : 0, 0 },
			{ c->px->stop_r, POLLIN, 0 },
		};
		int rc = poll(p, 3, PROXY_IDLE_S * 1000);

		if (rc < 0 && errno == EINTR)
			continue;
		if (rc <= 0 || p[2].revents)
			break;
		for (int i = 0; i < 2; i++) {
			int from = i ? c->ufd : c->cfd,
			    to = i ? c->cfd : c->ufd;
			size_t want = PROXY_RELAY_BUF;
			ssize_t r;

			if (!p[i].revents)
				continue;
			if (!i && up_left >= 0 && (long long)want > up_left)
				want = (size_t)up_left;
			r = recv(from, b, want, 0);
			if (r < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (r <= 0 || send_all(c, to, b, (size_t)r) < 0) {
				shutdown(to, SHUT_WR);
				if (i)
					down_open = false;
				else
					up_open = false;
				continue;
			}
			if (i) {
				c->down += r;
			} else {
				c->up += r;
				if (up_left > 0)
					up_left -= r;
			}
		}
		if (!down_open)
			break; /* the origin is done: so is the exchange */
	}
	free(b);
}

static void serve(struct conn *c)
{
	struct policy_verdict v;
	char why[192];
	int rc;

	why[0] = '\0';
	rc = read_head(c, why, sizeof(why));
	if (rc == -EINVAL)
		return refuse(c, &v, 400, "net.proxy-request", "%s", why);
	if (rc)
		return; /* the code went away or said nothing: no request */
	snprintf(c->name, sizeof(c->name), "%s", c->req.host);
	c->port = c->req.port;
	policy_domain_check(c->px->pol, c->name, c->port, &v);
	if (v.action != POLICY_ALLOW)
		return refuse(c, &v, 403, NULL, NULL);
	rc = open_origin(c, why, sizeof(why));
	if (rc == -EACCES)
		return refuse(c, &v, 403, "net.proxy-address",
			      "proxy to %.60s:%d (%s): %s", c->name, c->port,
			      c->addr, why);
	if (rc < 0)
		return refuse(c, &v, 502, "net.proxy-origin", "%s", why);
	c->ufd = rc;
	if (c->req.connect) {
		static const char ok[] =
			"HTTP/1.1 200 Connection established\r\n\r\n";
		/* what came after the head is the start of the hello */
		memmove(c->buf, c->buf + c->req.head_len,
			c->have - c->req.head_len);
		c->have -= c->req.head_len;
		if (send_all(c, c->cfd, ok, sizeof(ok) - 1) < 0)
			return record(c, &v);
		rc = check_hello(c, why, sizeof(why));
		if (rc)
			return refuse(c, &v, 0, "net.proxy-sni", "%s", why);
		if (send_all(c, c->ufd, c->buf, c->have) < 0)
			return record(c, &v);
		c->up += (long long)c->have;
		relay(c, -1);
	} else {
		char out[PROXY_HEAD_MAX + PROXY_HOST_MAX + 64];
		long w = proxy_rewrite(c->buf, &c->req, out, sizeof(out));
		size_t body = c->have - c->req.head_len;
		long long cl = c->req.content_length > 0 ? c->req.content_length
							 : 0;

		if (w < 0)
			return refuse(c, &v, 400, "net.proxy-request",
				      "the request head is too long");
		if ((long long)body > cl)
			body = (size_t)cl; /* a second request: dropped */
		if (send_all(c, c->ufd, out, (size_t)w) < 0 ||
		    send_all(c, c->ufd, c->buf + c->req.head_len, body) < 0)
			return record(c, &v);
		c->up += w + (long long)body;
		relay(c, cl - (long long)body);
	}
	record(c, &v);
}

static void *conn_main(void *arg)
{
	struct conn *c = arg;
	struct tracer_proxy *px = c->px;

	serve(c);
	close(c->cfd);
	if (c->ufd >= 0)
		close(c->ufd);
	free(c);
	pthread_mutex_lock(&px->mu);
	px->nconn--;
	pthread_cond_broadcast(&px->cv);
	pthread_mutex_unlock(&px->mu);
	return NULL;
}

static void start_conn(struct tracer_proxy *px, int fd)
{
	struct conn *c = NULL;
	pthread_attr_t at;
	pthread_t th;
	bool ok = false;

	pthread_mutex_lock(&px->mu);
	if (px->nconn < PROXY_CONN_MAX && (c = calloc(1, sizeof(*c)))) {
		c->px = px;
		c->cfd = fd;
		c->ufd = -1;
		c->ts_ns = tracer_now_ns();
		c->t0_ms = now_ms();
		pthread_attr_init(&at);
		pthread_attr_setstacksize(&at, 256 * 1024);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		ok = pthread_create(&th, &at, conn_main, c) == 0;
		pthread_attr_destroy(&at);
		if (ok)
			px->nconn++;
	}
	pthread_mutex_unlock(&px->mu);
	if (!ok) {
		/* over the limit: the code may retry when one ends */
		free(c);
		close(fd);
	}
}

static void *accept_main(void *arg)
{
	struct tracer_proxy *px = arg;

	for (;;) {
		struct pollfd p[2] = { { px->lfd, POLLIN, 0 },
				       { px->stop_r, POLLIN, 0 } };
		int fd;

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (!p[0].revents)
			continue;
		fd = accept4(px->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd >= 0)
			start_conn(px, fd);
		else if (errno == EMFILE || errno == ENFILE || errno == ENOMEM)
			usleep(100 * 1000); /* ward is short of fds: wait */
	}
	return NULL;
}

/* ---- start and stop ---- */

/* ward's copy of the init's fd (the init is stopped at its clone of the
 * code, traced by ward: pidfd_getfd's ptrace check passes, root or not). */
static int take_fd(struct tracer *t, pid_t init, int init_fd)
{
	int pfd = t->ns.init_fd, fd;
	bool mine = false;

	if (init_fd < 0)
		return -ENOENT;
	if (pfd < 0) {
		pfd = (int)syscall(SYS_pidfd_open, init, 0);
		if (pfd < 0)
			return -errno;
		mine = true;
	}
	fd = (int)syscall(SYS_pidfd_getfd, pfd, init_fd, 0); /* CLOEXEC */
	if (fd < 0)
		fd = -errno;
	if (mine)
		close(pfd);
	return fd;
}

int tracer_proxy_start(struct tracer *t, pid_t init, int init_fd)
{
	struct tracer_proxy *px;
	int p[2], fd, rc;

	if (!policy_net_proxy(t->o->policy) || t->proxy)
		return 0;
	if (!(t->ns.flags & CLONE_NEWNET))
		return -EPERM;
	fd = take_fd(t, init, init_fd);
	if (fd < 0)
		return fd;
	px = calloc(1, sizeof(*px));
	if (!px || pipe2(p, O_CLOEXEC) < 0) {
		rc = px ? -errno : -ENOMEM;
		free(px);
		close(fd);
		return rc;
	}
	px->t = t;
	px->pol = t->o->policy;
	px->lfd = fd;
	px->stop_r = p[0];
	px->stop_w = p[1];
	pthread_mutex_init(&px->mu, NULL);
	pthread_cond_init(&px->cv, NULL);
	rc = pthread_create(&px->acceptor, NULL, accept_main, px);
	if (rc) {
		close(p[0]);
		close(p[1]);
		close(fd);
		free(px);
		return -rc;
	}
	px->started = true;
	t->proxy = px;
	debug("proxy listening in the run's namespace on 127.0.0.1:%d",
	      POLICY_PROXY_PORT);
	return 0;
}

void tracer_proxy_stop(struct tracer *t)
{
	struct tracer_proxy *px = t->proxy;

	if (!px)
		return;
	close(px->stop_w); /* every poll of the proxy's threads wakes */
	pthread_join(px->acceptor, NULL);
	pthread_mutex_lock(&px->mu);
	while (px->nconn > 0)
		pthread_cond_wait(&px->cv, &px->mu);
	pthread_mutex_unlock(&px->mu);
	close(px->lfd);
	close(px->stop_r);
	pthread_mutex_destroy(&px->mu);
	pthread_cond_destroy(&px->cv);
	free(px);
	t->proxy = NULL;
}

char **tracer_proxy_env(char *const *envp)
{
	static const char *const names[] = {
		"HTTP_PROXY",  "HTTPS_PROXY", "ALL_PROXY", "http_proxy",
		"https_proxy", "all_proxy",   "NO_PROXY",  "no_proxy",
	};
	size_t n = 0, k = 0, nn = sizeof(names) / sizeof(names[0]);
	char **env;

	while (envp && envp[n])
		n++;
	env = calloc(n + nn + 1, sizeof(*env));
	if (!env)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		bool ours = false;

		for (size_t j = 0; j < nn && !ours; j++) {
			size_t l = strlen(names[j]);
			ours = !strncmp(envp[i], names[j], l) &&
			       envp[i][l] == '=';
		}
		if (!ours)
			env[k++] = envp[i];
	}
	/* static strings: the array is freed, its strings are not ours */
	env[k++] = (char *)"HTTP_PROXY=" PROXY_URL;
	env[k++] = (char *)"HTTPS_PROXY=" PROXY_URL;
	env[k++] = (char *)"ALL_PROXY=" PROXY_URL;
	env[k++] = (char *)"http_proxy=" PROXY_URL;
	env[k++] = (char *)"https_proxy=" PROXY_URL;
	env[k++] = (char *)"all_proxy=" PROXY_URL;
	env[k++] = (char *)"NO_PROXY=localhost,127.0.0.1,::1";
	env[k++] = (char *)"no_proxy=localhost,127.0.0.1,::1";
	return env;
}
