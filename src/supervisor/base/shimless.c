/* shimless.c -- every image's hello; an image without the shim given its gate, records and
 * userfaultfd by injection (shimless.h). */
#include "shimless.h"
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <unistd.h>
#include <linux/userfaultfd.h>
#include "inject.h"
#include "prosper/internal/uffd_abi.h"

#define PAGE 4096u
#define CODE_BYTES PAGE
#define RECORDS_BYTES ((sizeof(struct shimless_records) + PAGE - 1) / PAGE * PAGE)
#define AREA_BYTES (RECORDS_BYTES + CODE_BYTES)
#define BLOB_AT 16 /* the blob's offset in the code page, after the gate */

static const unsigned char gate_code[3] = { 0x0f, 0x05, 0xcc }; /* syscall; int3 */

/* The records blob, copied into the code page; position-independent, registers only.
 *   in:  rdi = struct shim_sigtab *, rsi = struct shim_timers *
 *   for sig 1..64: rt_sigaction(sig, NULL, &act[sig], 8); installed gets bit sig-1 when the
 *   handler is not SIG_DFL (a failed call leaves act[sig] and its bit as they were: never, for
 *   1..64); for w 0..2: getitimer(w, &now[w]); then int3.
 * Offsets: act[] at 8 in shim_sigtab, 32 bytes each; now[] at 8 in shim_timers, 32 bytes each
 * (checked below). */
extern const unsigned char shimless_blob[], shimless_blob_end[];
__asm__(".section .rodata\n"
	"shimless_blob:\n"
	"\tmov %rdi, %r12\n"
	"\tmov %rsi, %r13\n"
	"\tmov (%r12), %r14\n"          /* installed, as it was */
	"\tmov $1, %r15d\n"
	"1:\tmov %r15, %rdx\n"
	"\tshl $5, %rdx\n"
	"\tlea 8(%r12,%rdx), %rdx\n"    /* &act[sig] */
	"\tmov $13, %eax\n"              /* rt_sigaction */
	"\tmov %r15, %rdi\n"
	"\txor %esi, %esi\n"
	"\tmov $8, %r10d\n"
	"\tsyscall\n"
	"\ttest %rax, %rax\n"
	"\tjnz 3f\n"
	"\tlea -1(%r15), %rcx\n"
	"\tbtr %rcx, %r14\n"
	"\tcmpq $0, (%rdx)\n"            /* SIG_DFL */
	"\tje 3f\n"
	"\tbts %rcx, %r14\n"
	"3:\tinc %r15\n"
	"\tcmp $64, %r15\n"
	"\tjbe 1b\n"
	"\tmov %r14, (%r12)\n"
	"\txor %r15d, %r15d\n"
	"4:\tmov $36, %eax\n"             /* getitimer */
	"\tmov %r15, %rdi\n"
	"\tmov %r15, %rsi\n"
	"\tshl $5, %rsi\n"
	"\tlea 8(%r13,%rsi), %rsi\n"    /* &now[w] */
	"\tsyscall\n"
	"\tinc %r15\n"
	"\tcmp $3, %r15\n"
	"\tjb 4b\n"
	"\tint3\n"
	"shimless_blob_end:\n"
	".previous\n");
_Static_assert(offsetof(struct shim_sigtab, act) == 8 && sizeof(struct shim_ksigaction) == 32 && SHIM_NSIG == 65,
	       "the blob's sigtab layout");
_Static_assert(offsetof(struct shim_timers, now) == 8 && sizeof(struct shim_itimerval) == 32, "the blob's timers layout");

enum image_kind image_kind(pid_t pid, char *why, size_t whylen)
{
	char p[64];
	snprintf(p, sizeof p, "/proc/%d/exe", (int)pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	Elf64_Ehdr eh;
	if (fd < 0 || pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64) {
		if (fd >= 0)
			close(fd);
		snprintf(why, whylen, "not an x86-64 ELF program");
		return IMAGE_NOT_FOLLOWED;
	}
	int interp = 0;
	for (unsigned i = 0; i < eh.e_phnum && i < 256 && !interp; i++) {
		Elf64_Phdr ph;
		if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize)) != (ssize_t)sizeof ph)
			break;
		interp = ph.p_type == PT_INTERP;
	}
	close(fd);
	return interp ? IMAGE_SHIM : IMAGE_SHIMLESS;
}

/* Where the area goes in pid at its exec stop: just below the lowest mapping it has then -- its
 * executable, or the vdso and vvar the kernel puts below a static-pie one -- leaving out the stack
 * and vsyscall.  The same at every exec of the same executable: no ASLR.  0 if none is found. */
static uint64_t area_top(pid_t pid)
{
	char p[64];
	snprintf(p, sizeof p, "/proc/%d/maps", (int)pid);
	FILE *f = fopen(p, "r");
	if (!f)
		return 0;
	char line[4200];
	uint64_t low = 0;
	while (fgets(line, sizeof line, f)) {
		unsigned long long start, end;
		if (sscanf(line, "%llx-%llx", &start, &end) == 2 && !strstr(line, "[stack]") &&
		    !strstr(line, "[vsyscall]") && !strstr(line, "[heap]") && (!low || start < low))
			low = start;
	}
	fclose(f);
	return low;
}

/* Steps 1-4 of shimless.h in the stopped image pid.  0, or a negative errno with why. */
static int make_area(pid_t pid, struct shim_hello *h, int *uffd, char *why, size_t whylen)
{
	uint64_t top = area_top(pid);
	if (top < AREA_BYTES + 0x10000) {
		snprintf(why, whylen, "cannot find its executable's mappings");
		return -EIO;
	}
	struct user_regs_struct entry;
	if (ptrace(PTRACE_GETREGS, pid, 0, &entry) != 0) {
		snprintf(why, whylen, "cannot read its registers: %s", strerror(errno));
		return -EIO;
	}
	struct inject in;
	if (inject_open(&in, pid, entry.rip) != 0) {
		snprintf(why, whylen, "cannot open its memory: %s", strerror(errno));
		return -EIO;
	}
	unsigned char saved[sizeof gate_code];
	int rc = pread(in.mem_fd, saved, sizeof saved, (off_t)entry.rip) == (ssize_t)sizeof saved ? 0 : -EIO;
	if (rc == 0 && (rc = inject_write(&in, entry.rip, gate_code, sizeof gate_code)) == 0) {
		/* The exec stop is inside execve: leaving it, the kernel writes execve's 0 into rax over
		 * the registers set here, so the first call runs as read() whatever it asks -- read(-1)
		 * then, which does nothing. */
		inject_syscall(&in, SYS_read, -1, 0, 0, 0, 0, 0);
		uint64_t at = top - AREA_BYTES;
		long got = inject_syscall(&in, SYS_mmap, (long)at, AREA_BYTES, PROT_READ | PROT_WRITE,
					  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (got != (long)at) {
			snprintf(why, whylen, "cannot map its records at %#llx: %s",
				 (unsigned long long)at, got < 0 ? strerror((int)-got) : "mapped elsewhere");
			if (got > 0)
				inject_syscall(&in, SYS_munmap, got, AREA_BYTES, 0, 0, 0, 0);
			rc = -EIO;
		} else if ((got = inject_syscall(&in, SYS_mprotect, (long)(top - CODE_BYTES), CODE_BYTES,
						 PROT_READ | PROT_EXEC, 0, 0, 0)) != 0) {
			snprintf(why, whylen, "cannot make its gate executable: %s", strerror((int)-got));
			rc = -EIO;
		}
		if (inject_write(&in, entry.rip, saved, sizeof saved) != 0 && !rc) {
			snprintf(why, whylen, "cannot put its entry point back");
			rc = -EIO;
		}
	} else {
		snprintf(why, whylen, "cannot write at its entry point %#llx", (unsigned long long)entry.rip);
		rc = -EIO;
	}
	if (rc) {
		ptrace(PTRACE_SETREGS, pid, 0, &in.base);
		inject_close(&in);
		return rc;
	}
	uint64_t code = top - CODE_BYTES, rec = top - AREA_BYTES;
	size_t blob_len = (size_t)(shimless_blob_end - shimless_blob);
	struct shim_timers all = { .used = 7 }; /* read every checkpoint (the blob) */
	in.gate = code;
	if (inject_write(&in, code, gate_code, sizeof gate_code) != 0 ||
	    inject_write(&in, code + BLOB_AT, shimless_blob, blob_len) != 0 ||
	    inject_write(&in, rec + offsetof(struct shimless_records, timers), &all, sizeof all) != 0) {
		snprintf(why, whylen, "cannot write its gate");
		rc = -EIO;
	}
	*h = (struct shim_hello){ .status = 'U', .injected = 1, .gate = code,
				  .sigtab = rec + offsetof(struct shimless_records, sigtab),
				  .timers = rec + offsetof(struct shimless_records, timers),
				  .pending = rec + offsetof(struct shimless_records, pending),
				  .limits = rec + offsetof(struct shimless_records, limits),
				  .posix_timers = rec + offsetof(struct shimless_records, posix_timers),
				  .scratch = rec + offsetof(struct shimless_records, scratch) };
	/* its userfaultfd, as the shim makes it (one of user mode only where that is all it may have) */
	long flags = O_CLOEXEC | O_NONBLOCK;
	long fd = rc ? -1 : inject_syscall(&in, SYS_userfaultfd, flags, 0, 0, 0, 0, 0);
	if (fd < 0 && !rc && (flags = prosper_uffd_retry_flags((int)flags, (int)-fd)) >= 0 &&
	    (fd = inject_syscall(&in, SYS_userfaultfd, flags, 0, 0, 0, 0, 0)) >= 0)
		h->uffd_user_mode_only = 1;
	*uffd = -1;
	if (fd >= 0) {
		int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
		if (pidfd >= 0) {
			*uffd = (int)syscall(SYS_pidfd_getfd, pidfd, (int)fd, 0);
			close(pidfd);
		}
		inject_syscall(&in, SYS_close, fd, 0, 0, 0, 0, 0);
	}
	ptrace(PTRACE_SETREGS, pid, 0, &in.base); /* at its entry point, as the exec left it */
	inject_close(&in);
	if (rc)
		return rc;
	if (*uffd >= 0) {
		struct uffdio_api api = { .api = UFFD_API, .features = PROSPER_UFFD_TRACK_FEATURES };
		h->status = ioctl(*uffd, UFFDIO_API, &api) == 0 ? 'K' : 'A';
		if (h->status != 'K') {
			close(*uffd);
			*uffd = -1;
		}
	}
	return h->status == 'K' ? 0 : h->status == 'U' ? -ENOSYS : -EPROTO;
}

int image_hello(const struct hello_channel *ch, pid_t pid, int resume, struct shim_hello *h, int *uffd, char *why,
		size_t whylen)
{
	*uffd = -1;
	memset(h, 0, sizeof *h);
	enum image_kind kind = image_kind(pid, why, whylen);
	if (kind == IMAGE_NOT_FOLLOWED) {
		ptrace(PTRACE_CONT, pid, 0, 0);
		return -ENOEXEC;
	}
	if (kind == IMAGE_SHIM) {
		ptrace(PTRACE_CONT, pid, 0, 0);
		return hello_wait(ch, pid, h, uffd);
	}
	int rc = make_area(pid, h, uffd, why, whylen);
	h->resume = (char)resume;
	if (resume && rc == 0)
		syscall(SYS_tgkill, pid, pid, SIGSTOP); /* where the shim would stop itself */
	ptrace(PTRACE_CONT, pid, 0, 0);
	return rc;
}

int shimless_refresh(pid_t pid, const struct shim_hello *hello)
{
	/* the main thread (its tgid is pid), and no memory to write: no /proc file to open, at every
	 * checkpoint (inject_open reads two) */
	struct inject in = { .pid = pid, .tgid = pid, .gate = hello->gate, .mem_fd = -1 };
	int rc = ptrace(PTRACE_GETREGS, pid, 0, &in.base) == 0 ? 0 : -errno;
	if (rc == 0) {
		uint64_t entry = hello->gate + BLOB_AT;
		long got = inject_code(&in, entry, entry + (uint64_t)(shimless_blob_end - shimless_blob),
				       (long)hello->sigtab, (long)hello->timers);
		rc = got == -EPROTO || got == -ESRCH ? (int)got : 0;
		/* the program goes on exactly where it was stopped */
		if (ptrace(PTRACE_SETREGS, pid, 0, &in.base) != 0 && !rc)
			rc = -errno;
	}
	inject_close(&in);
	return rc;
}
