/* preflight.h -- what the system must allow before `prosper run` or `prosper resume` starts
 * anything (preflight.c): a program started without it would run on unprotected after
 * "checkpointing stopped", or leave a checkpoint no resume can use.
 *
 * Each check tries the thing itself rather than reading a setting, so that whatever forbids it
 * (vm.unprivileged_userfaultfd, Yama's ptrace_scope, a seccomp filter, a security module) is
 * caught; the refusal's message names the setting that usually does.
 *
 * Invariants
 *   - Nothing of the user's is touched and no program is started: a refused command leaves the
 *     pool, its folder and the program's files as they were (exit 2, one line, a stable code).
 *   - A check that passes changes nothing either: its test process and fds are gone before the
 *     command goes on.
 */
#ifndef PROSPER_SUP_PREFLIGHT_H
#define PROSPER_SUP_PREFLIGHT_H
#include <stddef.h>
#include "refusal.h"

/* The program `name`, found as the launch's exec finds it (PATH): a set-user-ID or set-group-ID
 * program run by an ordinary user loses that privilege under ptrace, so it would not do what it
 * does natively (setuid-program).  0 or the refusal, with why. */
enum refusal preflight_program(const char *name, char *why, size_t whylen);

/* May this user trace its own children (ptrace-denied), and make a userfaultfd with the
 * write-protect tracking checkpoints need (no-userfaultfd), full or of user mode only (as the
 * shim makes it, uffd_abi.h)?  0 or the refusal, with why. */
enum refusal preflight_tracing(char *why, size_t whylen);

#endif
