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
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

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
 * Decode a sockaddr of len bytes at addr into ev->sa, and copy the bytes
 * for the kernel (*off: their offset in t->cp). Returns 0, -EFAULT,
 * -EINVAL (too short or too long, as the kernel would say).
 */
static int decode_sockaddr(struct tracer *t, struct tracee *tc, uint64_t addr,
			   uint64_t len, struct ward_event *ev, long *off)
{
	struct sockaddr_storage ss;
	struct ward_sockaddr *sa = &ev->sa;
	size_t n = (size_t)len;
	int rc;

	if (len < sizeof(sa_family_t) || len > sizeof(ss))
		return -EINVAL;
	memset(&ss, 0, sizeof(ss));
	rc = umem_read(tc->tid, addr, &ss, n);
	if (rc < 0)
		return rc;
	*off = copy_put(&t->cp, &ss, n, 8);
	if (*off < 0)
		return (int)*off;
	_Static_assert(sizeof(sa->given) >= sizeof(ss), "sockaddr_storage");
	memcpy(sa->given, &ss, n);
	sa->given_len = (unsigned)n;
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

/*
 * The address as the code passed it, in the notation of events.target
 * (docs/schema.md): "a.b.c.d:port", "[v6%scope]:port" (a v4-mapped address
 * as written, "[::ffff:a.b.c.d]:port"), "unix:PATH" as given (relative
 * stays relative), "unix:@NAME" (NULs as \0), "unix:" (unnamed), or
 * "family N: HEX" with the bytes after the family in hex. Called only for events
 * that are recorded: the stop path pays for no formatting it does not
 * keep. NULL when the call named no address.
 */
const char *tracer_net_raw(const struct ward_event *ev, char *buf, size_t n)
{
	const struct ward_sockaddr *sa = &ev->sa;
	struct sockaddr_storage ss;
	char a[INET6_ADDRSTRLEN];
	size_t off, l;

	if (ev->cls != WARD_CLASS_NET || !sa->present || !sa->given_len)
		return NULL;
	memset(&ss, 0, sizeof(ss));
	memcpy(&ss, sa->given, sa->given_len);
	switch (ss.ss_family) {
	case AF_INET: {
		const struct sockaddr_in *in = (const struct sockaddr_in *)&ss;

		inet_ntop(AF_INET, &in->sin_addr, a, sizeof(a));
		snprintf(buf, n, "%s:%d", a, ntohs(in->sin_port));
		return buf;
	}
	case AF_INET6: {
		const struct sockaddr_in6 *in6 =
			(const struct sockaddr_in6 *)&ss;

		inet_ntop(AF_INET6, &in6->sin6_addr, a, sizeof(a));
		if (in6->sin6_scope_id)
			snprintf(buf, n, "[%s%%%u]:%d", a,
				 (unsigned)in6->sin6_scope_id,
				 ntohs(in6->sin6_port));
		else
			snprintf(buf, n, "[%s]:%d", a, ntohs(in6->sin6_port));
		return buf;
	}
	case AF_UNIX: {
		const struct sockaddr_un *un = (const struct sockaddr_un *)&ss;
		size_t at = offsetof(struct sockaddr_un, sun_path);

		if (sa->given_len <= at)
			snprintf(buf, n, "unix:");
		else if (sa->abstract)
			snprintf(buf, n, "unix:@%s", sa->unix_path);
		else
			snprintf(buf, n, "unix:%.*s",
				 (int)strnlen(un->sun_path, sa->given_len - at),
				 un->sun_path);
		return buf;
	}
	default:
		snprintf(buf, n, "family %d%s", (int)ss.ss_family,
			 sa->given_len > sizeof(sa_family_t) ? ": " : "");
		off = strlen(buf);
		l = sizeof(sa_family_t);
		for (; l < sa->given_len && off + 3 <= n; l++)
			off += (size_t)snprintf(buf + off, n - off, "%02x",
						sa->given[l]);
		buf[off] = '\0';
		return buf;
	}
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

/* Decodes the address; *off gets the offset of its copy, or -1 when
 * there is none (a send on a connected socket). */
static int addr_op(struct tracer *t, struct tracee *tc, struct ward_event *ev,
		   enum ward_net_op op, uint64_t fd, uint64_t addr,
		   uint64_t len, long *off)
{
	int rc;

	ev->cls = WARD_CLASS_NET;
	ev->net_op = op;
	args_int(ev, "fd", (int)(uint32_t)fd);
	*off = -1;
	if (addr == 0) {
		if (op == WARD_NET_SEND)
			return 0; /* connected socket: no address */
		return -EFAULT;
	}
	rc = decode_sockaddr(t, tc, addr, len, ev, off);
	if (rc < 0)
		return rc;
	resolve_unix(t, tc, ev);
	return 0;
}

/* connect, bind, sendto: the address and its length in two registers. */
static int addr_regs(struct tracer *t, struct tracee *tc, struct ward_event *ev,
		     const struct ptrace_syscall_info *si, enum ward_net_op op,
		     int addri)
{
	long off;
	int rc = addr_op(t, tc, ev, op, A(0), A(addri), A(addri + 1), &off);

	if (rc == 0 && off >= 0) {
		/* the sockaddr's bytes are the code's at that address */
		copy_arg_at_src(&t->cp, addri, (uint64_t)off, A(addri + 1));
		copy_arg_val(&t->cp, addri + 1, (uint32_t)A(addri + 1));
	}
	return rc;
}

int dec_connect(struct tracer *t, struct tracee *tc,
		const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	return addr_regs(t, tc, ev, si, WARD_NET_CONNECT, 1);
}

int dec_bind(struct tracer *t, struct tracee *tc,
	     const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	return addr_regs(t, tc, ev, si, WARD_NET_BIND, 1);
}

/* The family of socket fd of the tracee (a copy of the fd for a moment:
 * pidfd_getfd, getsockopt SO_DOMAIN); 0 when it is not a socket or
 * cannot be looked at (then no family rule matches: fail closed). */
static int fd_family(pid_t tgid, int fd)
{
	int pfd, mine, dom = 0;
	socklen_t len = sizeof(dom);

	pfd = (int)syscall(SYS_pidfd_open, tgid, 0);
	if (pfd < 0)
		return 0;
	mine = (int)syscall(SYS_pidfd_getfd, pfd, fd, 0); /* CLOEXEC */
	close(pfd);
	if (mine < 0)
		return 0;
	if (getsockopt(mine, SOL_SOCKET, SO_DOMAIN, &dom, &len) < 0)
		dom = 0;
	close(mine);
	return dom;
}

int dec_listen(struct tracer *t, struct tracee *tc,
	       const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	(void)t;
	ev->cls = WARD_CLASS_NET;
	ev->net_op = WARD_NET_LISTEN;
	ev->sock_family = fd_family(tc->tgid, (int)(uint32_t)A(0));
	args_int(ev, "fd", (int)(uint32_t)A(0));
	if (ev->sock_family)
		args_family(ev, "family", ev->sock_family);
	args_int(ev, "backlog", (int)(uint32_t)A(1));
	return 0;
}

int dec_sendto(struct tracer *t, struct tracee *tc,
	       const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	int rc = addr_regs(t, tc, ev, si, WARD_NET_SEND, 4);

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

/*
 * The msghdr is copied with its name: the kernel reads msg_name from the
 * msghdr, so a pointer or length changed after the check must not count,
 * and neither must a name added to a header that had none.
 */
static int send_msghdr(struct tracer *t, struct tracee *tc,
		       struct ward_event *ev, uint64_t fd, uint64_t hdr,
		       int hdri)
{
	struct msghdr64 m;
	long off, at;
	int rc = umem_read(tc->tid, hdr, &m, sizeof(m));

	if (rc < 0)
		return rc;
	rc = addr_op(t, tc, ev, WARD_NET_SEND, fd, m.name, m.namelen, &off);
	if (rc < 0)
		return rc;
	if (off < 0)
		m.namelen = 0;
	else
		m.name = (uint64_t)off;
	at = copy_put(&t->cp, &m, sizeof(m), 8);
	if (at < 0)
		return (int)at;
	if (off >= 0) {
		rc = copy_reloc(&t->cp, (size_t)at);
		if (rc < 0)
			return rc;
	}
	copy_arg_at(&t->cp, hdri, (uint64_t)at);
	return 0;
}

int dec_sendmsg(struct tracer *t, struct tracee *tc,
		const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	return send_msghdr(t, tc, ev, A(0), A(1), 1);
}

/*
 * sendmmsg(fd, msgvec, vlen, flags): the kernel writes each message's
 * msg_len back into msgvec, which a read-only copy cannot take. ward sends
 * the first message as sendmsg(fd, copy, flags) and writes its msg_len and
 * the count (1) itself at the exit stop (copy.c); a sendmmsg may always
 * send fewer messages than asked, and callers send the rest again.
 */
int dec_sendmmsg(struct tracer *t, struct tracee *tc,
		 const struct ptrace_syscall_info *si, struct ward_event *ev)
{
	int rc;

	if ((uint32_t)A(2) == 0) {
		/* nothing is read or sent */
		ev->cls = WARD_CLASS_NET;
		ev->net_op = WARD_NET_SEND;
		args_int(ev, "fd", (int)(uint32_t)A(0));
		args_int(ev, "vlen", 0);
		return 0;
	}
	rc = send_msghdr(t, tc, ev, A(0), A(1), 1);
	if (rc < 0)
		return rc;
	args_int(ev, "vlen", (long long)(uint32_t)A(2));
	copy_arg_val(&t->cp, 2, A(3)); /* sendmsg's flags */
	t->cp.nr = __NR_sendmsg;
	t->cp.mmsg = A(1);
	return 0;
}
