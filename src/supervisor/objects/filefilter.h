/* filefilter.h -- the seccomp filters that send the program's file-changing system calls to the
 * supervisor (filetrack.h; docs/run-resume.md, "Files").
 *
 * The launch filter, installed in the launched program before it executes, returns
 * SECCOMP_RET_TRACE for the calls that can change a file, SECCOMP_RET_ALLOW for the rest -- and
 * for madvise(MADV_DONTFORK or MADV_WIPEONFORK), memory a copy-on-write view of the program would
 * not hold (snapshot.h).
 *
 * Output to the run's own stdout and stderr.  A write to fd 1 or 2 is let through without a stop
 * while it is the run's own stdio and that is a terminal, a pipe, a socket, a character device or
 * a file open for appending only (which a resume cuts back itself: fd_file.c; a file open without
 * O_APPEND could be rewritten in place after a seek, so its writes are seen): a program that
 * prints a line at a time would otherwise pay a stop per line.  For that to stay true, the launch
 * filter sends every call that can make fd 1 or 2 something else -- dup2/dup3 onto them, close or
 * close_range of them, fcntl(F_SETFD) on them (close-on-exec frees them at the next exec),
 * fcntl(F_SETFL) on them (O_APPEND taken off) -- and when one would make a let-through fd a file
 * of the file system (or may), the supervisor adds the *tightening* filter to that process
 * (injected, for all its threads), which sends its writes to fd 1 and 2 as well; an fd whose
 * writes the launch filter sends already needs nothing.  Seccomp filters stack and the stricter
 * answer wins, so a tightened process and every process it makes stay tightened.
 *
 * Invariants
 *   - Every call that can change a file reaches the supervisor, except a write or writev to an fd
 *     1 or 2 let through, of a process not tightened, which is then the run's own stdio as it was
 *     given (not a file, or a file open for appending), or a pipe, a socket, a terminal or a
 *     character device.
 *   - A resume lets fd 1 or 2 through only if the same holds for it in every process of the
 *     checkpoint and for the resume's own (filetrack_stdio_pass).
 */
#ifndef PROSPER_SUP_FILEFILTER_H
#define PROSPER_SUP_FILEFILTER_H
#include <linux/filter.h>
#include <stddef.h>

/* Which launch filter a program gets (launch.h): none, or the filter, with writes to fd 1 and/or
 * fd 2 let through (FILTER_PASS_FD1/FD2 added to FILTER_ON), and with FILTER_SENDS sendto, sendmsg
 * and shutdown sent too (output to a connection held until its checkpoint commits, outhold.h). */
enum { FILTER_NONE = 0, FILTER_ON = 1, FILTER_PASS_FD1 = 2, FILTER_PASS_FD2 = 4, FILTER_SENDS = 8 };

/* In the launched child before it executes: the launch filter (FILTER_* flags).  0, or -errno. */
int filefilter_install(int filter);

/* The tightening filter's program, into f (room for FILEFILTER_TIGHTEN_LEN instructions): its
 * length. */
#define FILEFILTER_TIGHTEN_LEN 10
int filefilter_tighten_prog(struct sock_filter *f);

/* Calls the launch filter sends only for the stdio exception's sake (they change no file). */
int filefilter_stdio_call(long nr);

#endif
