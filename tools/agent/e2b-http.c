/*
 * e2b-http.c - the HTTP side of `ward serve --listen` (libmicrohttpd, one
 * thread per connection): request bodies gathered under a cap, multipart
 * uploads taken apart by libmicrohttpd's post processor, replies whole or
 * streamed, SIGINT/SIGTERM stop it. What a request means is e2b-api.c's.
 *
 * A streamed reply runs its job on a thread of its own; the connection's
 * thread waits in the content reader for what the job wrote, watching the
 * socket too: a client that hangs up (or the server stopping) fires the
 * job's cancel, which interrupts the cell or command it is running.
 */
#include "tools/agent/e2b.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/log.h"

static atomic_bool stopping;
static int sig_pipe[2] = { -1, -1 };

/* ---- replies ---- */

void e2b_reply_bytes(struct e2b_reply *rp, unsigned status, const char *ctype,
		     char *data, size_t len)
{
	free(rp->body);
	rp->status = status;
	rp->ctype = ctype;
	rp->body = data;
	rp->len = len;
}

void e2b_reply_json(struct e2b_reply *rp, unsigned status, json_t *j)
{
	char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;

	json_decref(j);
	if (!text) {
		text = strdup("{\"code\":500,\"message\":\"out of memory\"}");
		status = 500;
	}
	e2b_reply_bytes(rp, status, "application/json", text,
			text ? strlen(text) : 0);
}

void e2b_reply_error(struct e2b_reply *rp, unsigned status, const char *fmt,
		     ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	e2b_reply_json(rp, status,
		       json_pack("{s:i, s:s}", "code", (int)status, "message",
				 msg));
}

const char *e2b_header(const struct e2b_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

const char *e2b_query(const struct e2b_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND,
					   name);
}

/* ---- streams ---- */

struct e2b_stream {
	pthread_mutex_t lock;
	char *buf; /* written by the job, not yet sent */
	size_t len, cap;
	bool done, failed;
	int efd;     /* eventfd: the job wrote or ended */
	int conn_fd; /* the client's socket, watched for a hang-up */
	struct ws_cancel *cancel;
	pthread_t thread;
	e2b_job_fn job;
	void *arg;
	void (*free_arg)(void *arg);
};

void e2b_stream_put(struct e2b_stream *st, const void *data, size_t len)
{
	uint64_t one = 1;

	pthread_mutex_lock(&st->lock);
	if (st->len + len > st->cap) {
		size_t cap = (st->len + len) * 2 + 4096;
		char *nb = realloc(st->buf, cap);
		if (!nb) {
			pthread_mutex_unlock(&st->lock);
			e2b_stream_fail(st);
			return;
		}
		st->buf = nb;
		st->cap = cap;
	}
	memcpy(st->buf + st->len, data, len);
	st->len += len;
	pthread_mutex_unlock(&st->lock);
	if (write(st->efd, &one, sizeof(one)) < 0) {
		/* the counter cannot overflow here; nothing to do */
	}
}

void e2b_stream_fail(struct e2b_stream *st)
{
	pthread_mutex_lock(&st->lock);
	st->failed = true;
	pthread_mutex_unlock(&st->lock);
	ws_cancel_fire(st->cancel);
}

struct ws_cancel *e2b_stream_cancel(struct e2b_stream *st)
{
	return st->cancel;
}

static void *stream_main(void *p)
{
	struct e2b_stream *st = p;
	uint64_t one = 1;

	st->job(st, st->arg);
	pthread_mutex_lock(&st->lock);
	st->done = true;
	pthread_mutex_unlock(&st->lock);
	if (write(st->efd, &one, sizeof(one)) < 0) {
		/* as above */
	}
	return NULL;
}

/* Waits for the job's output; a hang-up or the server stopping cancels. */
static ssize_t stream_read(void *cls, uint64_t pos, char *out, size_t max)
{
	struct e2b_stream *st = cls;

	(void)pos;
	for (;;) {
		pthread_mutex_lock(&st->lock);
		if (st->failed) {
			pthread_mutex_unlock(&st->lock);
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
		if (st->len) {
			size_t n = st->len < max ? st->len : max;
			memcpy(out, st->buf, n);
			memmove(st->buf, st->buf + n, st->len - n);
			st->len -= n;
			pthread_mutex_unlock(&st->lock);
			return (ssize_t)n;
		}
		bool done = st->done;
		pthread_mutex_unlock(&st->lock);
		if (done)
			return MHD_CONTENT_READER_END_OF_STREAM;
		struct pollfd q[2] = { { st->efd, POLLIN, 0 },
				       { st->conn_fd, POLLRDHUP, 0 } };
		int n = poll(q, st->conn_fd >= 0 ? 2 : 1, 250);
		if (n > 0 && (q[0].revents & POLLIN)) {
			uint64_t v;
			if (read(st->efd, &v, sizeof(v)) < 0) {
				/* EAGAIN: another wake-up took it */
			}
		}
		if (atomic_load(&stopping) ||
		    (n > 0 &&
		     (q[1].revents & (POLLRDHUP | POLLHUP | POLLERR)))) {
			ws_cancel_fire(st->cancel);
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
	}
}

/* The response is gone (sent, or the client left): the job is told to
 * stop, then waited for. */
static void stream_free(void *cls)
{
	struct e2b_stream *st = cls;

	ws_cancel_fire(st->cancel);
	pthread_join(st->thread, NULL);
	if (st->free_arg)
		st->free_arg(st->arg);
	ws_cancel_free(st->cancel);
	close(st->efd);
	pthread_mutex_destroy(&st->lock);
	free(st->buf);
	free(st);
}

static struct MHD_Response *stream_start(struct MHD_Connection *conn,
					 struct e2b_reply *rp)
{
	struct e2b_stream *st = calloc(1, sizeof(*st));
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
		conn, MHD_CONNECTION_INFO_CONNECTION_FD);

	if (!st)
		return NULL;
	st->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	st->cancel = ws_cancel_new();
	st->conn_fd = ci ? ci->connect_fd : -1;
	st->job = rp->job;
	st->arg = rp->arg;
	st->free_arg = rp->free_arg;
	pthread_mutex_init(&st->lock, NULL);
	if (st->efd < 0 || !st->cancel ||
	    pthread_create(&st->thread, NULL, stream_main, st)) {
		if (st->efd >= 0)
			close(st->efd);
		ws_cancel_free(st->cancel);
		pthread_mutex_destroy(&st->lock);
		free(st);
		return NULL;
	}
	rp->job = NULL; /* arg is the stream's now */
	struct MHD_Response *res = MHD_create_response_from_callback(
		MHD_SIZE_UNKNOWN, 64 << 10, stream_read, st, stream_free);
	if (!res)
		stream_free(st);
	return res;
}

/* ---- requests ---- */

struct conn_state {
	struct e2b_req req;
	size_t cap, limit;
	size_t seen; /* bytes of a multipart body so far */
	struct MHD_PostProcessor *pp;
	bool bad_form; /* multipart/form-data without a usable boundary */
};

static int add_part(struct conn_state *cs, const char *filename)
{
	struct e2b_req *r = &cs->req;
	struct e2b_file *nf =
		realloc(r->files, (r->n_files + 1) * sizeof(*r->files));

	if (!nf)
		return -ENOMEM;
	r->files = nf;
	nf[r->n_files] = (struct e2b_file){ strdup(filename), NULL, 0, 0 };
	if (!nf[r->n_files].name)
		return -ENOMEM;
	r->n_files++;
	return 0;
}

static enum MHD_Result on_part(void *cls, enum MHD_ValueKind kind,
			       const char *key, const char *filename,
			       const char *ctype, const char *enc,
			       const char *data, uint64_t off, size_t size)
{
	struct conn_state *cs = cls;
	struct e2b_req *r = &cs->req;

	(void)kind, (void)ctype, (void)enc;
	if (!filename || strcmp(key, "file"))
		return MHD_YES; /* other fields: not E2B's */
	if (off == 0 && add_part(cs, filename) < 0)
		return MHD_NO;
	if (!r->n_files)
		return MHD_NO;
	struct e2b_file *f = &r->files[r->n_files - 1];
	if (r->too_large || f->len + size > E2B_MAX_UPLOAD) {
		r->too_large = true;
		return MHD_YES;
	}
	if (f->len + size + 1 > f->cap) {
		/* doubling: the parts come in small pieces */
		size_t cap = (f->len + size + 1) * 2;
		char *nd = realloc(f->data, cap);
		if (!nd)
			return MHD_NO;
		f->data = nd;
		f->cap = cap;
	}
	memcpy(f->data + f->len, data, size);
	f->len += size;
	return MHD_YES;
}

static int append_body(struct conn_state *cs, const char *data, size_t n)
{
	struct e2b_req *r = &cs->req;

	if (r->too_large || r->len + n > cs->limit) {
		r->too_large = true;
		return 0;
	}
	if (r->len + n + 1 > cs->cap) {
		size_t cap = (r->len + n + 1) * 2;
		char *nb = realloc(r->body, cap);
		if (!nb)
			return -ENOMEM;
		r->body = nb;
		cs->cap = cap;
	}
	memcpy(r->body + r->len, data, n);
	r->len += n;
	r->body[r->len] = '\0';
	return 0;
}

static void conn_free(struct conn_state *cs)
{
	if (!cs)
		return;
	if (cs->pp)
		MHD_destroy_post_processor(cs->pp);
	for (size_t i = 0; i < cs->req.n_files; i++) {
		free(cs->req.files[i].name);
		free(cs->req.files[i].data);
	}
	free(cs->req.files);
	free(cs->req.body);
	free(cs);
}

static struct conn_state *conn_new(struct MHD_Connection *conn, const char *url)
{
	struct conn_state *cs = calloc(1, sizeof(*cs));
	const char *ct;

	if (!cs)
		return NULL;
	cs->req.conn = conn;
	/* uploads may be as large as a file may be; the rest is JSON */
	cs->limit = !strcmp(url, "/files") ? E2B_MAX_UPLOAD + (64 << 10)
					   : E2B_MAX_BODY;
	ct = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
					 MHD_HTTP_HEADER_CONTENT_TYPE);
	if (ct && !strncasecmp(ct, "multipart/form-data", 19)) {
		cs->pp = MHD_create_post_processor(conn, 64 << 10, on_part, cs);
		cs->bad_form = !cs->pp;
	}
	return cs;
}

static enum MHD_Result queue(struct MHD_Connection *conn, struct e2b_reply *rp)
{
	struct MHD_Response *res;
	enum MHD_Result ok;

	if (rp->job) {
		res = stream_start(conn, rp);
	} else {
		res = MHD_create_response_from_buffer(rp->len, rp->body,
						      MHD_RESPMEM_MUST_FREE);
		if (res)
			rp->body = NULL;
	}
	if (rp->job && rp->free_arg)
		rp->free_arg(rp->arg); /* not started */
	free(rp->body);
	if (!res)
		return MHD_NO;
	if (rp->ctype)
		MHD_add_response_header(res, MHD_HTTP_HEADER_CONTENT_TYPE,
					rp->ctype);
	ok = MHD_queue_response(conn, rp->status, res);
	MHD_destroy_response(res);
	return ok;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
				  const char *url, const char *method,
				  const char *version, const char *data,
				  size_t *data_size, void **con_cls)
{
	struct e2b *e = cls;
	struct conn_state *cs = *con_cls;

	(void)version;
	if (!cs) {
		cs = conn_new(conn, url);
		*con_cls = cs;
		return cs ? MHD_YES : MHD_NO;
	}
	if (*data_size) {
		int rc = 0;
		if (cs->bad_form) {
			/* answered when the body is in */
		} else if (cs->pp) {
			/* the whole form is capped too, not only each file */
			cs->seen += *data_size;
			if (cs->seen > cs->limit)
				cs->req.too_large = true;
			else if (MHD_post_process(cs->pp, data, *data_size) !=
					 MHD_YES &&
				 !cs->req.too_large)
				rc = -EINVAL;
		} else {
			rc = append_body(cs, data, *data_size);
		}
		*data_size = 0;
		return rc < 0 ? MHD_NO : MHD_YES;
	}
	struct e2b_reply rp = { 0 };
	cs->req.method = method;
	cs->req.url = url;
	if (cs->bad_form)
		e2b_reply_error(
			&rp, 400,
			"a multipart/form-data body needs a boundary (2 "
			"characters or more) in its Content-Type");
	else
		e2b_handle(e, &cs->req, &rp);
	if (!rp.status)
		e2b_reply_error(&rp, 500, "%s %s: no answer (a bug in ward)",
				method, url);
	return queue(conn, &rp);
}

static void on_done(void *cls, struct MHD_Connection *conn, void **con_cls,
		    enum MHD_RequestTerminationCode why)
{
	(void)cls, (void)conn, (void)why;
	conn_free(*con_cls);
	*con_cls = NULL;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512];

	(void)cls;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	msg[strcspn(msg, "\n")] = '\0';
	fprintf(stderr, "ward: serve: http: %s\n", msg);
}

/* ---- listening ---- */

/* HOST:PORT or [HOST]:PORT, numeric or "localhost", into *ss. */
static int parse_listen(const char *spec, struct sockaddr_storage *ss,
			socklen_t *sl)
{
	char host[256];
	const char *colon = strrchr(spec, ':'), *h = spec;
	size_t hl;
	struct addrinfo hints = { .ai_flags = AI_NUMERICSERV,
				  .ai_socktype = SOCK_STREAM },
			*ai = NULL;

	if (!colon || !colon[1])
		return -EINVAL;
	hl = (size_t)(colon - spec);
	if (hl >= 2 && spec[0] == '[' && spec[hl - 1] == ']') {
		h++;
		hl -= 2;
	}
	if (hl == 0 || hl >= sizeof(host))
		return -EINVAL;
	memcpy(host, h, hl);
	host[hl] = '\0';
	if (strcmp(host, "localhost"))
		hints.ai_flags |= AI_NUMERICHOST;
	if (getaddrinfo(host, colon + 1, &hints, &ai) || !ai)
		return -EINVAL;
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*sl = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

static bool loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(
			&((const struct sockaddr_in6 *)ss)->sin6_addr);
	return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >>
		24) == 127;
}

static void on_signal(int sig)
{
	char c = (char)sig;

	if (write(sig_pipe[1], &c, 1) < 0) {
		/* the pipe is full: a stop is already pending */
	}
}

static void print_bound(struct MHD_Daemon *d, const struct sockaddr_storage *ss)
{
	const union MHD_DaemonInfo *di =
		MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	char host[INET6_ADDRSTRLEN] = "?";
	bool v6 = ss->ss_family == AF_INET6;

	if (v6)
		inet_ntop(AF_INET6,
			  &((const struct sockaddr_in6 *)ss)->sin6_addr, host,
			  sizeof(host));
	else
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr,
			  host, sizeof(host));
	/* one line on stdout, for scripts that listen on port 0 */
	printf("ward: serving E2B's API on http://%s%s%s:%u\n", v6 ? "[" : "",
	       host, v6 ? "]" : "", di ? di->port : 0);
	fflush(stdout);
}

int e2b_serve(struct ws_server *s, const struct e2b_options *o)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	struct e2b *e;
	struct MHD_Daemon *d;
	const char *spec = o->listen ? o->listen : "127.0.0.1:49982";
	int rc;

	if (parse_listen(spec, &ss, &sl) < 0) {
		fprintf(stderr,
			"ward: serve: --listen %s: give HOST:PORT with a numeric "
			"address (127.0.0.1:49982, [::1]:49982; port 0 picks "
			"one)\n",
			spec);
		return -EINVAL;
	}
	(void)sl;
	rc = e2b_new(s, o->api_key, &e);
	if (rc < 0)
		return rc;
	e->max_life_s = o->max_life_s;
	e->setup = o->setup;
	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		rc = -errno;
		e2b_free(e);
		return rc;
	}
	d = MHD_start_daemon(
		MHD_USE_THREAD_PER_CONNECTION |
			MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
			MHD_USE_ERROR_LOG |
			(ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
		0, NULL, NULL, on_request, e, MHD_OPTION_EXTERNAL_LOGGER,
		mhd_log, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
		MHD_OPTION_NOTIFY_COMPLETED, on_done, NULL,
		MHD_OPTION_CONNECTION_LIMIT, 256u,
		MHD_OPTION_CONNECTION_TIMEOUT, 600u, MHD_OPTION_END);
	if (!d) {
		rc = -EADDRINUSE;
		fprintf(stderr,
			"ward: serve: cannot listen on %s (in use, or not an "
			"address of this machine)\n",
			spec);
		goto out;
	}
	print_bound(d, &ss);
	if (!loopback(&ss))
		fprintf(stderr,
			"ward: serve: warning: %s is reachable from other "
			"machines, over plain HTTP (the API key and tokens "
			"travel in clear): put TLS in front, or listen on "
			"127.0.0.1\n",
			spec);
	struct sigaction sa = { .sa_handler = on_signal,
				.sa_flags = SA_RESTART };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	for (;;) {
		struct pollfd q = { sig_pipe[0], POLLIN, 0 };
		if (poll(&q, 1, 1000) > 0)
			break;
		e2b_tick(e);
	}
	atomic_store(&stopping, true);
	MHD_stop_daemon(d);
	rc = 0;
out:
	e2b_free(e);
	close(sig_pipe[0]);
	close(sig_pipe[1]);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	return rc;
}
