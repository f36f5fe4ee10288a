/* T01: install our own seccomp filter returning USER_NOTIF for openat: a
 * USER_NOTIF action outranks ward's TRACE, so a listener thread could
 * CONTINUE the open of the secret and ward would never see it. The
 * seccomp syscall is in the kill floor. */
#include "escape.h"
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>

int attack(int argc, char **argv)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
	long lfd;

	lfd = result(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
			     SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog));
	say("AFTER");
	if (lfd >= 0) {
		int fd = open(ARG("secret"), O_RDONLY | O_NONBLOCK);
		if (fd >= 0)
			leaked(fd, ARG("token"));
	}
	return 0;
}
