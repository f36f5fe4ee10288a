/*
 * decode-net.c - socket, connect, bind, listen, sendto, sendmsg, sendmmsg.
 */
#include "tracer-int.h"
#include "args.h"
#include "decode.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#define A(i) (si->seccomp.args[i])

static const char *family_name(int f)
{
	switch (f) {
	case AF_UNIX: return "AF_UNIX";
	case AF_INET: return "AF_INET";
	case AF_INET6: return "AF_INET6";
	case AF_NETLINK: return "AF_NETLINK";
	case AF_PACKET: return "AF_PACKET";
	case AF_ALG: return "AF_ALG";
	case AF_VSOCK: return "AF_VSOCK";
	case AF_UNSPEC: return "AF_UNSPEC";
	default: return NULL;
	}
}

static void args_family(struct ward_event *ev, const char *key, int f)
{
	const char *n = family_name(f);

	if (n)
		args_str(ev, key, n);
	else
		args_int(ev, key, f);
}

/*
 * Decode a sockaddr of len bytes at addr into ev->sa. Returns 0, -EFAULT,
 * -EINVAL (too short for its family, as the kernel would say).
 */
static int decode_sockaddr(struct tracee *tc, uint64_t addr, uint64_t len,
			   struct ward_event *ev)
{
	struct sockaddr_storage ss;
	struct ward_sockaddr *sa = &ev->sa;
	size_t n = len > sizeof(ss) ? sizeof(ss) : (size_t)len;
	int rc;

	if (len < sizeof(sa_family_t) || len > 0x7fffffff)
		return -EINVAL;
	memset(&ss, 0, sizeof(ss));
	rc = umem_read(tc->tid, addr, &ss, n);
	if (rc < 0)
		return rc;
	sa->present = true;
	sa->family = ss.ss_family;
	sa->port = -1;
	args_family(ev, "family", sa->family);
	switch (ss.ss_family) {
	case AF_INET: {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;
		if (n < sizeof(*in))
			return -EINVAL;
		inet_ntop(AF_INET, &in->sin_addr, sa->addr, sizeof(sa->addr));
		sa->port = ntohs(in->sin_port);
		break;
	}
	case AF_INET6: {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
		if (n < sizeof(*in6))
			return -EINVAL;
		if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
			sa->v4mapped = true;
			inet_ntop(AF_INET, &in6->sin6_addr.s6_addr[12],
				  sa->addr, sizeof(sa->addr));
		} else {
			inet_ntop(AF_INET6, &in6->sin6_addr, sa->addr,
				  sizeof(sa->addr));
		}
		sa->port = ntohs(in6->sin6_port);
		break;
	}
	case AF_UNIX: {
		struct sockaddr_un *un = (struct sockaddr_un *)&ss;
		size_t plen = n - offsetof(struct sockaddr_un, sun_path);
		if (n <= offsetof(struct sockaddr_un, sun_path))
			break; /* unnamed (autobind) */
		if (un->sun_path[0] == '\0' && plen > 0) {
			sa->abstract = true;
			size_t o = 0;
			for (size_t i = 1;
			     i < plen && o + 3 < sizeof(sa->unix_path); i++) {
				if (un->sun_path[i] == '\0') {
					sa->unix_path[o++] = '\\';
					sa->unix_path[o++] = '0';
				} else {
					sa->unix_path[o++] = un->sun_path[i];
				}
			}
			sa->unix_path[o] = '\0';
			args_str(ev, "abstract", sa->unix_path);
		} else {
			size_t l = strnlen(un->sun_path, plen);
			memcpy(sa->unix_path, un->sun_path, l);
			sa->unix_path[l] = '\0';
			args_str(ev, "path", sa->unix_path);
		}
		break;
	}
	default: break;
	}
	if (sa->addr[0]) {
		args_str(ev, "addr", sa->addr);
		if (sa->v4mapped)
			args_raw(ev, "v4mapped", "true");
	}
	if (sa->port >= 0)
		args_int(ev, "port", sa->port);
	return 0;
}

/* A unix socket path names a file: resolve it like the kernel will. */
static void resolve_unix(struct tracer *t, struct tracee *tc,
			 struct ward_event *ev)
{
	bool exists;

	(void)t;
	if (ev->sa.family != AF_UNIX || ev->sa.abstract || !ev->sa.unix_path[0])
		return;
	snprintf(ev->raw, sizeof(ev->raw), "%s", ev->sa.unix_path);
	if (tracer_resolve(tc->tid, tc->tgid, RESOLVE_CWD, ev->raw, true,
			   ev->path, sizeof(ev->path), &exists) == 0) {
		ev->exists = exists;
		snprintf(ev->sa.unix_path, sizeof(ev->sa.unix_path), "%s",
			 ev->path);
	}
}

int dec_socket(struct tracer *t, struct tracee *tc,
	       const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	(void)t;
	(void)tc;
	ev->cls = WARD_CLASS_NET;
	ev->net_op = WARD_NET_SOCKET;
	ev->sock_family = (int)(uint32_t)A(0);
	ev->sock_type = (int)(uint32_t)A(1);
	ev->sock_proto = (int)(uint32_t)A(2);
	args_family(ev, "family", ev->sock_family);
	args_int(ev, "type", ev->sock_type & 0xf);
	args_int(ev, "protocol", ev->sock_proto);
	return 0;
}

static int addr_op(struct tracer *t, struct tracee *tc, struct ward_event *ev,
		   enum ward_net_op op, uint64_t fd, uint64_t addr,
		   uint64_t len)
{
	int rc;

	ev->cls = WARD_CLASS_NET;
	ev->net_op = op;
	args_int(ev, "fd", (int)(uint32_t)fd);
	if (addr == 0) {
		if (op == WARD_NET_SEND)
			return 0; /* connected socket: no address */
		return -EFAULT;
	}
	rc = decode_sockaddr(tc, addr, len, ev);
	if (rc < 0)
		return rc;
	resolve_unix(t, tc, ev);
	return 0;
}

int dec_connect(struct tracer *t, struct tracee *tc,
		const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	return addr_op(t, tc, ev, WARD_NET_CONNECT, A(0), A(1), A(2));
}

int dec_bind(struct tracer *t, struct tracee *tc,
	     const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	return addr_op(t, tc, ev, WARD_NET_BIND, A(0), A(1), A(2));
}

int dec_listen(struct tracer *t, struct tracee *tc,
	       const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	(void)t;
	(void)tc;
	ev->cls = WARD_CLASS_NET;
	ev->net_op = WARD_NET_LISTEN;
	args_int(ev, "fd", (int)(uint32_t)A(0));
	args_int(ev, "backlog", (int)(uint32_t)A(1));
	return 0;
}

int dec_sendto(struct tracer *t, struct tracee *tc,
	       const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	int rc = addr_op(t, tc, ev, WARD_NET_SEND, A(0), A(4), A(5));

	if (rc == 0)
		args_int(ev, "len", (long long)A(2));
	return rc;
}

/* struct msghdr as the x86_64 kernel reads it. */
struct msghdr64 {
	uint64_t name;
	uint32_t namelen;
	uint32_t pad;
	uint64_t iov, iovlen, control, controllen;
	uint32_t flags;
	uint32_t pad2;
};

int dec_sendmsg(struct tracer *t, struct tracee *tc,
		const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	struct msghdr64 m;
	int rc = umem_read(tc->tid, A(1), &m, sizeof(m));

	if (rc < 0)
		return rc;
	return addr_op(t, tc, ev, WARD_NET_SEND, A(0), m.name, m.namelen);
}

/* Every message may carry its own address. ward decides on one: all named
 * messages must name the same address, else the call is refused. */
int dec_sendmmsg(struct tracer *t, struct tracee *tc,
		 const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	enum { MAX_MSGS = 64, MMSG_SIZE = 64 };
	uint64_t vlen = (uint32_t)A(2);
	struct ward_sockaddr first;
	bool have = false;

	if (vlen > MAX_MSGS)
		vlen = MAX_MSGS; /* the kernel caps at UIO_MAXIOV; ward at 64 */
	for (uint64_t i = 0; i < vlen; i++) {
		struct msghdr64 m;
		int rc =
			umem_read(tc->tid, A(1) + i * MMSG_SIZE, &m, sizeof(m));
		if (rc < 0)
			return rc;
		if (!m.name)
			continue;
		ev->args_json[0] = '\0';
		rc = addr_op(t, tc, ev, WARD_NET_SEND, A(0), m.name, m.namelen);
		if (rc < 0)
			return rc;
		if (!have) {
			first = ev->sa;
			have = true;
		} else if (strcmp(first.addr, ev->sa.addr) ||
			   first.port != ev->sa.port ||
			   first.family != ev->sa.family ||
			   strcmp(first.unix_path, ev->sa.unix_path)) {
			return -EINVAL;
		}
	}
	if ((uint32_t)A(2) > MAX_MSGS)
		return -EINVAL;
	if (!have)
		return addr_op(t, tc, ev, WARD_NET_SEND, A(0), 0, 0);
	args_int(ev, "vlen", (long long)vlen);
	return 0;
}
