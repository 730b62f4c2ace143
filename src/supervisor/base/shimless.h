/* shimless.h -- the hello of every image of the program, and for an image the shim cannot be
 * loaded into (statically linked: Go's default build, `gcc -static`, musl) the shim's work done
 * by the supervisor through injected system calls (docs/run-resume.md, "Statically linked
 * programs").
 *
 * A dynamically linked image loads the shim (LD_PRELOAD), which says hello with the addresses of
 * its gate and records and a userfaultfd (shim_proto.h, hello_channel.h).  A static one has no
 * loader to preload anything; at its exec stop (PTRACE_EVENT_EXEC: not one instruction of it has
 * run) the supervisor instead
 *   1. writes `syscall; int3` over the 3 bytes at its entry point (through /proc/PID/mem), makes
 *      it map the shimless area just below its lowest mapping (its executable's, or for a
 *      static-pie one the vdso's below it), and puts the entry point's bytes back;
 *   2. writes into the area's top page -- the code page, made read+execute -- the gate
 *      (`syscall; int3`) and the records blob; the pages below it hold the records (struct
 *      shimless_records), read+write, zero but for timers.used (all three: read every cut);
 *   3. makes it create a userfaultfd, takes it (pidfd_getfd), has it close its own, and sets the
 *      API from here;
 *   4. fills the hello a shim would have sent, with injected = 1 and no NVM gate.
 * Nothing there moves (no ASLR, launch.h), so the area has the same address at the run and
 * at every resume of the image: a resume makes it again at its exec stop, the restore keeps it
 * (restore_map.c: the gate's mapping must be in the checkpoint unchanged) and fills it with the
 * checkpoint's records like any memory of the program's.
 *
 * The shim keeps its records as the program changes them (its sigaction/setitimer/setrlimit
 * wrappers).  With no shim, each checkpoint reads them instead, before memory is read: the blob,
 * run once per checkpoint in the main thread (shimless_refresh), reads every signal's disposition
 * (rt_sigaction) and the three interval timers (getitimer) into the records; the limits are read
 * from outside (rlimits.c).  Not done without the shim: bind()'s second try at a unix socket name
 * the killed run left behind (shim.c), and NVM memory (libprosper-nvm needs the shim's gate).
 *
 * Invariants
 *   - The program's own bytes are changed only while it is stopped at its exec stop, and are put
 *     back before it runs, whatever failed.
 *   - Every path leaves the process as the caller expects it: continued (run), or continued with
 *     a SIGSTOP on its way (resume, like the shim's own stop); a failure says why.
 *   - The refresh runs only while every thread is stopped, and gives the main thread its
 *     registers back untouched.
 */
#ifndef PROSPER_SUP_SHIMLESS_H
#define PROSPER_SUP_SHIMLESS_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "hello_channel.h"
#include "prosper/internal/shim_proto.h"

/* The records of an image without the shim, in the area's pages below its code page. */
struct shimless_records {
	struct shim_sigtab sigtab;
	struct shim_timers timers;
	struct shim_pending pending;
	struct shim_limits limits;
	struct shim_posix_timers posix_timers;
	uint64_t scratch[SHIM_SCRATCH_BYTES / 8];
};

enum image_kind { IMAGE_NOT_FOLLOWED = -1, IMAGE_SHIM = 0, IMAGE_SHIMLESS = 1 };
/* What the image of stopped process pid is: dynamically linked x86-64 (the shim), statically
 * linked x86-64 (shimless), or neither (why says what). */
enum image_kind image_kind(pid_t pid, char *why, size_t whylen);

/* The hello of the image pid is stopped in at its exec stop: its shim's (pid is continued and its
 * hello awaited, hello_wait) or, shimless, the one made as above (then continued; with resume, a
 * SIGSTOP sent first, as the shim stops itself).  Returns as hello_wait; -ENOEXEC with why for an
 * image that cannot be followed, and -EIO with why when the injection failed (the process is
 * continued as it was). */
int image_hello(const struct hello_channel *ch, pid_t pid, int resume, struct shim_hello *h, int *uffd, char *why,
		size_t whylen);

/* At a checkpoint, every thread of process pid stopped, before its memory is read: the records of
 * its shimless image (hello) read again by the blob.  0 or a negative errno. */
int shimless_refresh(pid_t pid, const struct shim_hello *hello);

#endif
