#include "errnames.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* clang-format off */
#define E(x) { #x, x }

/*
 * Linux errno names. The first entry for a value is its canonical name;
 * aliases follow the canonical entry so ward_errno_name() never picks them.
 */
static const struct {
	const char *name;
	int value;
} errnames[] = {
	E(EPERM), E(ENOENT), E(ESRCH), E(EINTR), E(EIO), E(ENXIO), E(E2BIG),
	E(ENOEXEC), E(EBADF), E(ECHILD), E(EAGAIN), E(EWOULDBLOCK),
	E(ENOMEM), E(EACCES), E(EFAULT), E(ENOTBLK), E(EBUSY), E(EEXIST),
	E(EXDEV), E(ENODEV), E(ENOTDIR), E(EISDIR), E(EINVAL), E(ENFILE),
	E(EMFILE), E(ENOTTY), E(ETXTBSY), E(EFBIG), E(ENOSPC), E(ESPIPE),
	E(EROFS), E(EMLINK), E(EPIPE), E(EDOM), E(ERANGE), E(EDEADLK),
	E(EDEADLOCK), E(ENAMETOOLONG), E(ENOLCK), E(ENOSYS), E(ENOTEMPTY),
	E(ELOOP), E(ENOMSG), E(EIDRM), E(ENOSTR), E(ENODATA), E(ETIME),
	E(ENOSR), E(EREMOTE), E(ENOLINK), E(EPROTO), E(EMULTIHOP),
	E(EBADMSG), E(EOVERFLOW), E(EILSEQ), E(EUSERS), E(ENOTSOCK),
	E(EDESTADDRREQ), E(EMSGSIZE), E(EPROTOTYPE), E(ENOPROTOOPT),
	E(EPROTONOSUPPORT), E(ESOCKTNOSUPPORT), E(EOPNOTSUPP), E(ENOTSUP),
	E(EPFNOSUPPORT), E(EAFNOSUPPORT), E(EADDRINUSE), E(EADDRNOTAVAIL),
	E(ENETDOWN), E(ENETUNREACH), E(ENETRESET), E(ECONNABORTED),
	E(ECONNRESET), E(ENOBUFS), E(EISCONN), E(ENOTCONN), E(ESHUTDOWN),
	E(ETOOMANYREFS), E(ETIMEDOUT), E(ECONNREFUSED), E(EHOSTDOWN),
	E(EHOSTUNREACH), E(EALREADY), E(EINPROGRESS), E(ESTALE), E(EDQUOT),
	E(ECANCELED), E(EOWNERDEAD), E(ENOTRECOVERABLE), E(ENOMEDIUM),
	E(EMEDIUMTYPE), E(ENOKEY), E(EKEYEXPIRED), E(EKEYREVOKED),
	E(EKEYREJECTED), E(ERFKILL), E(EHWPOISON),
};
/* clang-format on */

#undef E

#define NERRNAMES (sizeof(errnames) / sizeof(errnames[0]))

const char *ward_result_text(long long r, char *buf, unsigned long n)
{
	static const char *const restart[] = { "ERESTARTSYS", "ERESTARTNOINTR",
					       "ERESTARTNOHAND", "ENOIOCTLCMD",
					       "ERESTART_RESTARTBLOCK" };
	const char *name = NULL;

	if (r < 0 && r >= -4095) {
		name = ward_errno_name((int)-r);
		if (r <= -512 && r >= -516)
			name = restart[-r - 512];
		else if (!strcmp(name, "E?"))
			name = NULL;
	}
	if (name)
		snprintf(buf, n, "-%s", name);
	else
		snprintf(buf, n, "%lld", r);
	return buf;
}

int ward_errno_from_name(const char *name)
{
	if (!name)
		return 0;
	for (size_t i = 0; i < NERRNAMES; i++)
		if (strcmp(errnames[i].name, name) == 0)
			return errnames[i].value;
	return 0;
}

const char *ward_errno_name(int e)
{
	if (e < 0)
		e = -e;
	for (size_t i = 0; i < NERRNAMES; i++)
		if (errnames[i].value == e)
			return errnames[i].name;
	return "E?";
}
