/* filefilter.h -- the seccomp filters that send the program's file-changing system calls to the
 * supervisor (filetrack.h; docs/run-resume.md, "Files").
 *
 * The launch filter, installed in the launched program before it executes, returns
 * SECCOMP_RET_TRACE for the calls that can change a file, SECCOMP_RET_ALLOW for the rest.
 *
 * Output to the run's own stdout and stderr.  A write to fd 1 or 2 is let through without a stop
 * while those are the run's own stdio (a terminal, a pipe, the run's own output file, which a
 * resume cuts back itself: fd_file.c): a program that prints a line at a time would otherwise pay
 * a stop per line.  For that to stay true, the launch filter sends every call that can make fd 1
 * or 2 something else -- dup2/dup3 onto them, close or close_range of them, fcntl(F_SETFD) on them
 * (close-on-exec frees them at the next exec) -- and when one would make it a file of the file
 * system, the supervisor adds the *tightening* filter to that process (injected, for all its
 * threads), which sends its writes to fd 1 and 2 as well.  Seccomp filters stack and the stricter
 * answer wins, so a tightened process and every process it makes stay tightened.
 *
 * Invariants
 *   - Every call that can change a file reaches the supervisor, except a write or writev to fd 1
 *     or 2 of a process not tightened, whose fd 1 and 2 are then the run's own or a pipe, a
 *     socket, a terminal or a character device.
 *   - The launch filter has the stdio exception only when the run's fd 1 and 2 are open and are
 *     the checkpoint's own stdio (filetrack_stdio_trusted).
 */
#ifndef PROSPER_SUP_FILEFILTER_H
#define PROSPER_SUP_FILEFILTER_H
#include <linux/filter.h>
#include <stddef.h>

/* Which launch filter a program gets (launch.h). */
enum { FILTER_NONE = 0, FILTER_ALL = 1, FILTER_BUT_STDIO = 2 /* writes to its fd 1 and 2 let through */ };

/* In the launched child before it executes: the launch filter, with the stdio exception or not.
 * 0, or -errno. */
int filefilter_install(int stdio_exception);

/* The tightening filter's program, into f (room for FILEFILTER_TIGHTEN_LEN instructions): its
 * length. */
#define FILEFILTER_TIGHTEN_LEN 10
int filefilter_tighten_prog(struct sock_filter *f);

/* Calls the launch filter sends only for the stdio exception's sake (they change no file). */
int filefilter_stdio_call(long nr);

#endif
