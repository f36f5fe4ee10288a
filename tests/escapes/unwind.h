/*
 * unwind.h - what the U cases (attacks on ward's backtraces) share.
 *
 * ward takes a native backtrace at every denial. An unwinder looks up the
 * unwind data of each return address in the file mapped there, so the
 * code chooses which file that is, what it contains and what its name
 * says by then. Each U case maps a file it made, executable, then makes a
 * denied openat of the secret "from" inside that mapping:
 * esc_fake_ret_syscall makes the syscall with a return address of its
 * choosing on top of the stack, and unwind data (its CFI) that says so,
 * so the unwinder's second frame is that address, whatever it is. No code
 * in the mapping needs to run. The call's own return is unchanged.
 *
 * esc_elf builds a small ELF file whose one executable segment has a
 * valid .eh_frame_hdr table and .eh_frame for the code at ESC_CODE (one
 * CIE, one FDE: CFA = rsp + 8, return address at CFA - 8), so that an
 * unwinder that can read it walks on through it to the attack's real
 * callers; the variants break one thing each.
 */
#ifndef WARD_ESCAPE_UNWIND_H
#define WARD_ESCAPE_UNWIND_H

#include <elf.h>
#include <sys/mman.h>
#include <sys/stat.h>

/* long esc_fake_ret_syscall(long nr, long a1, long a2, long a3,
 *                           unsigned long ret): syscall nr(a1, a2, a3)
 * with ret where its return address would be. The CFI is left as at the
 * entry (CFA = rsp + 8) while ret is pushed: a deliberate lie. */
__asm__(".text\n"
	".globl esc_fake_ret_syscall\n"
	".type esc_fake_ret_syscall,@function\n"
	"esc_fake_ret_syscall:\n"
	".cfi_startproc\n"
	"	push %r8\n"
	"	mov %rdi, %rax\n"
	"	mov %rsi, %rdi\n"
	"	mov %rdx, %rsi\n"
	"	mov %rcx, %rdx\n"
	"	syscall\n"
	"	add $8, %rsp\n"
	"	ret\n"
	".cfi_endproc\n"
	".size esc_fake_ret_syscall, .-esc_fake_ret_syscall\n");
long esc_fake_ret_syscall(long nr, long a1, long a2, long a3,
			  unsigned long ret);

/* openat(secret) "called from" ret; reports RESULT like result(). */
static __attribute__((unused)) long deny_from(const char *secret,
					      unsigned long ret)
{
	long r = esc_fake_ret_syscall(SYS_openat, AT_FDCWD,
				      (long)(uintptr_t)secret, O_RDONLY, ret);

	if (r < 0) {
		errno = (int)-r;
		return result(-1);
	}
	return result(r);
}

/* The file's layout (ESC_SIZE bytes, one PT_LOAD at vaddr 0). */
enum {
	ESC_SIZE = 4096,
	ESC_HDR = 0x100,  /* .eh_frame_hdr */
	ESC_CIE = 0x200,  /* .eh_frame: the CIE */
	ESC_FDE = 0x220,  /* ... the FDE */
	ESC_CODE = 0x400, /* what the FDE covers, 0x400 bytes */
	ESC_RET = 0x500,  /* the fake return address's offset */
};

enum esc_variant {
	ESC_GOOD,     /* all of it valid */
	ESC_PHOFF,    /* program headers far outside the file */
	ESC_HDR_OUT,  /* PT_GNU_EH_FRAME outside the file, table huge */
	ESC_FDE_OUT,  /* the table's FDE offset points far away */
	ESC_CIE_SELF, /* the FDE's CIE pointer points at the FDE */
};

static __attribute__((unused)) void put32(uint8_t *b, size_t at, uint32_t v)
{
	memcpy(b + at, &v, 4);
}

static __attribute__((unused)) void esc_elf(uint8_t *b, enum esc_variant v)
{
	Elf64_Ehdr eh = { 0 };
	Elf64_Phdr ph[2] = { 0 };
	/* clang-format off */
	static const uint8_t cie[] = {
		0x1c, 0, 0, 0,	 /* length: 28 bytes follow */
		0, 0, 0, 0,	 /* CIE id */
		1, 'z', 'R', 0,	 /* version, augmentation */
		1, 0x78, 16,	 /* code align 1, data align -8, RA r16 */
		1, 0x1b,	 /* augmentation data: FDE pcrel|sdata4 */
		0x0c, 7, 8,	 /* def_cfa rsp+8 */
		0x90, 1,	 /* r16 at cfa-8 */
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* nops to the length */
	};
	/* clang-format on */

	memset(b, 0, ESC_SIZE);
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_DYN;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_phoff = v == ESC_PHOFF ? 0x7fff0000 : sizeof(eh);
	eh.e_ehsize = sizeof(eh);
	eh.e_phentsize = sizeof(Elf64_Phdr);
	eh.e_phnum = v == ESC_PHOFF ? 40 : 2;
	memcpy(b, &eh, sizeof(eh));
	ph[0].p_type = PT_LOAD;
	ph[0].p_flags = PF_R | PF_X;
	ph[0].p_filesz = ph[0].p_memsz = ESC_SIZE;
	ph[0].p_align = 4096;
	ph[1].p_type = PT_GNU_EH_FRAME;
	ph[1].p_flags = PF_R;
	ph[1].p_offset = ph[1].p_vaddr = v == ESC_HDR_OUT ? 0x7ff00000
							  : ESC_HDR;
	ph[1].p_filesz = ph[1].p_memsz = 0x40;
	ph[1].p_align = 4;
	memcpy(b + sizeof(eh), ph, sizeof(ph));

	/* .eh_frame_hdr: version, eh_frame_ptr pcrel|sdata4, count udata4,
	 * table datarel|sdata4; one entry {start, fde} relative to it */
	b[ESC_HDR] = 1;
	b[ESC_HDR + 1] = 0x1b;
	b[ESC_HDR + 2] = 0x03;
	b[ESC_HDR + 3] = 0x3b;
	put32(b, ESC_HDR + 4, ESC_CIE - (ESC_HDR + 4));
	put32(b, ESC_HDR + 8, v == ESC_HDR_OUT ? 0x7fffffff : 1);
	put32(b, ESC_HDR + 12, ESC_CODE - ESC_HDR);
	put32(b, ESC_HDR + 16,
	      v == ESC_FDE_OUT ? 0x40000000 : ESC_FDE - ESC_HDR);

	memcpy(b + ESC_CIE, cie, sizeof(cie));
	/* the FDE: length, CIE pointer (back from this field), pc_begin
	 * (pcrel), pc_range, no augmentation data, no instructions */
	put32(b, ESC_FDE, 0x10);
	put32(b, ESC_FDE + 4, v == ESC_CIE_SELF ? 4 : ESC_FDE + 4 - ESC_CIE);
	put32(b, ESC_FDE + 8, ESC_CODE - (ESC_FDE + 8));
	put32(b, ESC_FDE + 12, 0x400);
	b[ESC_FDE + 16] = 0;
	put32(b, ESC_FDE + 20, 0); /* terminator */
	memset(b + ESC_CODE, 0xcc, 0x400);
}

/* Writes len bytes of b to path (a new file). 0 or -1. */
static __attribute__((unused)) int write_file(const char *path, const void *b,
					      size_t len)
{
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
	int r = fd >= 0 && write(fd, b, len) == (ssize_t)len ? 0 : -1;

	if (fd >= 0)
		close(fd);
	if (r)
		say("write %s: %s", path, errname(errno));
	return r;
}

/* Maps len bytes of path, readable and executable, at hint (0: anywhere;
 * else exactly there). The address, or 0. */
static __attribute__((unused)) unsigned long
map_exec(const char *path, size_t len, unsigned long hint)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	void *p;

	if (fd < 0) {
		say("open %s: %s", path, errname(errno));
		return 0;
	}
	p = mmap((void *)hint, len, PROT_READ | PROT_EXEC,
		 MAP_PRIVATE | (hint ? MAP_FIXED_NOREPLACE : 0), fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		say("mmap %s: %s", path, errname(errno));
		return 0;
	}
	return (unsigned long)p;
}

/* An ELF of the given variant written to path and mapped: its base. */
static __attribute__((unused)) unsigned long elf_mapped(const char *path,
							enum esc_variant v)
{
	static uint8_t img[ESC_SIZE];

	esc_elf(img, v);
	if (write_file(path, img, sizeof(img)))
		return 0;
	return map_exec(path, sizeof(img), 0);
}

#endif
