/* K06: the syscall instruction from a page the code wrote itself (no libc,
 * no known return address): openat of the secret. Same decision as any
 * openat. */
#include "escape.h"
#include <sys/mman.h>

int attack(int argc, char **argv)
{
	/* mov %rdi,%rax; mov %rsi,%rdi; mov %rdx,%rsi; mov %rcx,%rdx;
	 * mov %r8,%r10; syscall; ret */
	static const unsigned char code[] = { 0x48, 0x89, 0xf8, 0x48, 0x89,
					      0xf7, 0x48, 0x89, 0xd6, 0x48,
					      0x89, 0xca, 0x4d, 0x89, 0xc2,
					      0x0f, 0x05, 0xc3 };
	long (*fn)(long, long, long, long, long);
	void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long r;

	if (page == MAP_FAILED)
		return result(-1), 1;
	memcpy(page, code, sizeof(code));
	if (mprotect(page, 4096, PROT_READ | PROT_EXEC) < 0)
		return result(-1), 1;
	fn = (long (*)(long, long, long, long, long))page;
	r = fn(257, AT_FDCWD, (long)(uintptr_t)ARG("secret"), O_RDONLY, 0);
	if (r < 0) {
		errno = (int)-r;
		result(-1);
	} else {
		result(r);
		leaked((int)r, ARG("token"));
	}
	say("AFTER");
	return 0;
}
