/*
 * umem.c - bounded reads of a stopped tracee's memory.
 *
 * process_vm_readv first; it fails as a whole when any page of the remote
 * range is unmapped, so strings are read in pieces that never cross a page
 * boundary. PTRACE_PEEKDATA is the fallback when the kernel refuses
 * process_vm_readv (-EPERM: a tracee that is not dumpable).
 */
#include "tracer-int.h"

#include <errno.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <unistd.h>

#define PAGE 4096u

static int peek_read(pid_t tid, uint64_t addr, void *buf, size_t len)
{
	unsigned char *dst = buf;
	uint64_t start = addr & ~(uint64_t)7;
	size_t skip = addr - start;

	while (len > 0) {
		long word;
		size_t take = sizeof(word) - skip;

		errno = 0;
		word = ptrace(PTRACE_PEEKDATA, tid, (void *)start, NULL);
		if (word == -1 && errno)
			return errno == EIO ? -EFAULT : -errno;
		if (take > len)
			take = len;
		memcpy(dst, (unsigned char *)&word + skip, take);
		dst += take;
		len -= take;
		start += sizeof(word);
		skip = 0;
	}
	return 0;
}

int umem_read(pid_t tid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(uintptr_t)addr, len };
	ssize_t got;

	if (len == 0)
		return 0;
	if (addr == 0)
		return -EFAULT;
	got = process_vm_readv(tid, &local, 1, &remote, 1, 0);
	if (got == (ssize_t)len)
		return 0;
	if (got >= 0)
		return -EFAULT; /* partial: the range ends in a hole */
	if (errno == EPERM)
		return peek_read(tid, addr, buf, len);
	return errno == ESRCH ? -ESRCH : -EFAULT;
}

int umem_read_str(pid_t tid, uint64_t addr, char *buf, size_t n)
{
	size_t used = 0;

	if (addr == 0)
		return -EFAULT;
	while (used < n - 1) {
		size_t chunk = PAGE - ((addr + used) & (PAGE - 1));
		int rc;

		if (chunk > n - 1 - used)
			chunk = n - 1 - used;
		rc = umem_read(tid, addr + used, buf + used, chunk);
		if (rc < 0)
			return rc;
		char *nul = memchr(buf + used, '\0', chunk);
		if (nul)
			return 0;
		used += chunk;
	}
	buf[n - 1] = '\0';
	return -ENAMETOOLONG;
}

int umem_read_str_win(pid_t tid, struct umem_page *pg, uint64_t addr, char *buf,
		      size_t n)
{
	uint64_t page = addr & ~(uint64_t)(PAGE - 1);

	if (addr == 0 || n == 0)
		return umem_read_str(tid, addr, buf, n);
	if (pg->addr != page) {
		/* addr's page is mapped if the string is readable at all */
		struct iovec local = { pg->buf, PAGE };
		struct iovec remote = { (void *)(uintptr_t)page, PAGE };

		/* no PTRACE_PEEKDATA fallback for a whole page */
		pg->addr = 0;
		if (process_vm_readv(tid, &local, 1, &remote, 1, 0) != PAGE)
			return umem_read_str(tid, addr, buf, n);
		pg->addr = page;
	}
	size_t off = (size_t)(addr - page), room = PAGE - off;
	const char *nul =
		memchr(pg->buf + off, '\0', room < n - 1 ? room : n - 1);

	if (!nul) /* crosses into the next page, or too long: as before */
		return umem_read_str(tid, addr, buf, n);
	memcpy(buf, pg->buf + off, (size_t)(nul - (pg->buf + off)) + 1);
	return 0;
}
