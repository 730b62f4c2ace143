/* exec.c -- the program executed another program (execve, at any depth: a `#!/usr/bin/env`
 * script, `env VAR=x prog`, an interpreter shim, `nice`, `timeout`): the new image becomes the
 * checkpointed program and checkpoints go on.
 *
 * At the exec stop (PTRACE_EVENT_EXEC) the new image has not run one instruction: the kernel has
 * built its initial stack (argc, argv, envp, auxv and their strings) and rip is at the loader's
 * entry.  The environment the program passed does not name the shim -- the shim takes itself out
 * of every image's environment (launch.h) -- so the loader is given a copy of the initial vectors
 * with the shim's variables added, just below the kernel's: the kernel leaves 128 KiB of stack
 * mapping below the initial stack (setup_arg_pages), and the loader finds argc/argv/envp/auxv at
 * rsp alone.  /proc/PID/environ and the program's own view (after the shim's constructor) stay
 * what the user gave.  The shim then says hello on the same channel as the first image, with a
 * userfaultfd of the new address space.
 *
 * The next checkpoint is of the new image, whole: the old image's regions are removed and the new
 * image's added in that one epoch, with the new launch record (executable, argv, the environment
 * the loader got, the working directory at the exec).  A crash before that commit resumes the old
 * image, which runs on to its exec again.
 *
 * A statically linked image has no loader to give the shim to: its environment is left as the
 * program passed it, and the supervisor makes its hello by injection (shimless.h).
 *
 * Invariants
 *   - The program is never left stopped, and never stops being checkpointed silently: an image
 *     that cannot be followed (not an x86-64 ELF program, no hello) stops
 *     checkpointing with a message naming it; the last checkpoint stays resumable.
 *   - Nothing of the old image survives in the supervisor's state: threads, map, tracker, tid
 *     offset, gates, warnings and NVM handles are reset here (NVM memory cannot be carried).
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <unistd.h>
#include "disable.h"
#include "inject.h"
#include "stage.h"
#include "launch.h"
#include "sup.h"
#include "worker.h"
#include "exec.h"
#include "ckpt_commit.h"
#include "hello.h"
#include "shimless.h"

/* Room the loader's copy of the vectors may take below the kernel's (of the 128 KiB). */
#define LOADER_COPY_MAX (96u << 10)

/* A /proc/PID file read whole (cmdline, environ): NUL-separated strings.  NULL on failure. */
static char *read_proc(pid_t pid, const char *name, size_t *len)
{
	char p[64];
	snprintf(p, sizeof p, "/proc/%d/%s", (int)pid, name);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	size_t cap = 4096, n = 0;
	char *b = malloc(cap + 1);
	for (ssize_t r; b; n += (size_t)r) {
		if (n == cap) {
			char *q = realloc(b, 2 * cap + 1);
			if (!q) {
				free(b);
				b = NULL;
				break;
			}
			b = q, cap *= 2;
		}
		if ((r = read(fd, b + n, cap - n)) <= 0) {
			if (r < 0) {
				free(b);
				b = NULL;
			}
			break;
		}
	}
	close(fd);
	if (b) {
		b[n] = 0;
		*len = n;
	}
	return b;
}

/* The NUL-separated strings of buf as a NULL-terminated vector (pointing into buf). */
static char **split(char *buf, size_t len, int *count)
{
	int n = 0;
	for (size_t i = 0; i < len; i++)
		n += buf[i] == 0;
	if (len && buf[len - 1])
		n++;
	char **v = calloc((size_t)n + 1, sizeof *v);
	if (!v)
		return NULL;
	int k = 0;
	for (size_t i = 0; i < len && k < n; i += strlen(buf + i) + 1)
		v[k++] = buf + i;
	*count = k;
	return v;
}

/* Give the loader the initial stack with env instead of the kernel's environment vector: a copy
 * of argc, argv (the kernel's strings), env (strings copied too) and auxv, 16-byte aligned below
 * the kernel's, and rsp moved to it.  0, or -1 with why. */
static int give_loader_environment(pid_t pid, char *const env[], char *why, size_t whylen)
{
	struct user_regs_struct r;
	if (ptrace(PTRACE_GETREGS, pid, 0, &r) != 0) {
		snprintf(why, whylen, "cannot read its registers: %s", strerror(errno));
		return -1;
	}
	/* the kernel's vectors: argc, argv..., 0, envp..., 0, auxv pairs up to AT_NULL */
	size_t cap = 256u << 10;
	uint64_t *old = malloc(cap);
	struct iovec l = { old, cap }, rem = { (void *)(uintptr_t)r.rsp, cap };
	ssize_t got = old ? process_vm_readv(pid, &l, 1, &rem, 1, 0) : -1;
	size_t words = got > 0 ? (size_t)got / 8 : 0, i = 0;
	uint64_t argc = words ? old[0] : 0;
	i = 1 + argc + 1;
	while (i < words && old[i])
		i++;
	size_t auxv_at = ++i;
	while (i + 1 < words && old[i] != AT_NULL)
		i += 2;
	if (!words || i + 1 >= words) {
		free(old);
		snprintf(why, whylen, "cannot read its initial stack");
		return -1;
	}
	size_t auxv_words = i + 2 - auxv_at;
	int envc = 0;
	size_t strings = 0;
	for (; env[envc]; envc++)
		strings += strlen(env[envc]) + 1;
	size_t vec = 8 * (1 + argc + 1 + (size_t)envc + 1 + auxv_words);
	size_t total = vec + strings;
	if (total > LOADER_COPY_MAX) {
		free(old);
		snprintf(why, whylen, "its arguments and environment are too large (%zu bytes) to add the shim", total);
		return -1;
	}
	uint64_t base = (r.rsp - 256 - total) & ~(uint64_t)15;
	uint8_t *blk = calloc(1, total);
	if (!blk) {
		free(old);
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	uint64_t *v = (uint64_t *)blk;
	size_t k = 0;
	v[k++] = argc;
	for (uint64_t a = 0; a < argc; a++)
		v[k++] = old[1 + a];
	v[k++] = 0;
	size_t at = vec;
	for (int e = 0; e < envc; e++) {
		size_t n = strlen(env[e]) + 1;
		memcpy(blk + at, env[e], n);
		v[k++] = base + at;
		at += n;
	}
	v[k++] = 0;
	memcpy(&v[k], &old[auxv_at], auxv_words * 8);
	free(old);
	struct iovec lw = { blk, total }, rw = { (void *)(uintptr_t)base, total };
	ssize_t put = process_vm_writev(pid, &lw, 1, &rw, 1, 0);
	free(blk);
	if (put != (ssize_t)total) {
		snprintf(why, whylen, "cannot write below its initial stack: %s", put < 0 ? strerror(errno) : "short write");
		return -1;
	}
	r.rsp = base;
	if (ptrace(PTRACE_SETREGS, pid, 0, &r) != 0) {
		snprintf(why, whylen, "cannot set its registers: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int sup_give_user_environment(pid_t pid, char *why, size_t whylen)
{
	size_t len = 0;
	char *buf = read_proc(pid, "environ", &len);
	int n = 0;
	char **env = buf ? split(buf, len, &n) : NULL;
	char *preload = NULL, *tunables = NULL;
	int k = 0, rc = -1;
	if (!env) {
		snprintf(why, whylen, "cannot read its environment from /proc");
		goto out;
	}
	static const char ours[] = ":glibc.pthread.rseq=0";
	for (int i = 0; i < n; i++) {
		char *e = env[i];
		if (!strncmp(e, "PROSPER_SHIM_", 13))
			continue;
		if (!strncmp(e, "LD_PRELOAD=", 11)) { /* ours first, then the user's own */
			char *colon = strchr(e + 11, ':');
			if (!colon || !colon[1] || asprintf(&preload, "LD_PRELOAD=%s", colon + 1) < 0)
				continue;
			e = preload;
		} else if (!strncmp(e, "GLIBC_TUNABLES=", 15)) { /* the user's own, then ours */
			size_t l = strlen(e), o = sizeof ours - 1;
			if (!strcmp(e + 15, ours + 1))
				continue; /* ours alone */
			if (l > 15 + o && !strcmp(e + l - o, ours) && (tunables = strndup(e, l - o)))
				e = tunables;
		}
		env[k++] = e;
	}
	env[k] = NULL;
	rc = give_loader_environment(pid, env, why, whylen);
out:
	free(preload), free(tunables), free(env), free(buf);
	return rc;
}

/* What exec.c allocated for the launch record of the image before (run and resume own theirs). */
static void free_record(struct sup *s)
{
	free(s->exec_mem.args_buf);
	free(s->exec_mem.env_buf);
	free(s->exec_mem.argv);
	if (s->exec_mem.envp)
		for (int i = s->exec_mem.own_from; s->exec_mem.envp[i]; i++)
			free(s->exec_mem.envp[i]);
	free(s->exec_mem.envp);
	memset(&s->exec_mem, 0, sizeof s->exec_mem);
}

/* The new image's launch record, read from /proc at the exec stop; the environment is the one its
 * loader is given (the user's, with the shim).  0, or -1 with why. */
static int new_record(struct sup *s, pid_t pid, char *why, size_t whylen)
{
	size_t alen = 0, elen = 0;
	char *args = read_proc(pid, "cmdline", &alen), *envs = read_proc(pid, "environ", &elen);
	int argc = 0, basec = 0, envc = 0;
	char **argv = args ? split(args, alen, &argc) : NULL, **base = envs ? split(envs, elen, &basec) : NULL;
	char **env = base ? launch_environment(base, s->tree->run.shim, &envc) : NULL;
	free(base);
	char p[64], exe[VMA_PATH_MAX], cwd[VMA_PATH_MAX];
	snprintf(p, sizeof p, "/proc/%d/exe", (int)pid);
	ssize_t xl = readlink(p, exe, sizeof exe - 1);
	snprintf(p, sizeof p, "/proc/%d/cwd", (int)pid);
	ssize_t cl = readlink(p, cwd, sizeof cwd - 1);
	if (!argv || !env || xl <= 0 || cl <= 0 || argc == 0) {
		free(args), free(envs), free(argv), free(env);
		snprintf(why, whylen, "cannot read its executable, arguments or environment from /proc");
		return -1;
	}
	exe[xl] = cwd[cl] = 0;
	free_record(s);
	s->exec_mem = (struct exec_mem){ .args_buf = args, .env_buf = envs, .argv = argv, .envp = env,
					 .own_from = envc - 2 /* LD_PRELOAD= and GLIBC_TUNABLES=: ours */ };
	snprintf(s->exe, sizeof s->exe, "%s", exe);
	snprintf(s->launch_cwd, sizeof s->launch_cwd, "%s", cwd);
	s->argv = argv;
	s->argc = argc;
	s->envp = env;
	s->envc = envc;
	return 0;
}

/* Forget the old image: its regions leave the pool with the next epoch, its threads, map,
 * tracker and per-image state go now. */
static int forget_image(struct sup *s)
{
	for (int i = 0; i < s->nvmas; i++)
		if (prosper_pool_region_remove(s->tree->pool, (uint32_t)s->vmas[i].region) != 0)
			return -1;
	stage_forget(s);
	s->nvmas = 0;
	s->nprev = 0;
	s->new_image = 1;
	s->thr[0].altstack = (struct img_altstack){ 0 }; /* an exec drops it: asked again (altstack.h) */
	s->thr[0].altstack_asked = 0;
	s->thr[0].altstack_asks = 0;
	s->tid_offset = 0;
	s->tid_offset_settled = 0;
	s->stack_dense_left = 0;
	s->cut.sp = 0;
	s->warned_shared = 0;
	s->nthr = 1;
	memset(&s->thr[0], 0, sizeof s->thr[0]);
	s->thr[0].tid = s->pid;
	if (s->nvm_proc) {
		inject_close(s->nvm_proc);
		free(s->nvm_proc);
		s->nvm_proc = NULL;
	}
	prosper_track_close(&s->track);
	return 0;
}

/* An image that is not followed has no gate nor records of ours: the old image's addresses mean
 * nothing in it, and a call injected there later (the file filter's tightening when it closes its
 * stdout, filecalls.c) ran whatever the new image had at that address -- a SIGSEGV in the program. */
static void forget_gate(struct sup *s)
{
	struct shim_hello none = { 0 };
	sup_take_hello(s, &none);
}

/* A child process's new image (tree.h): tracked like the first process's; 1 when it is tracked
 * or already gone (its exit comes next), 0 when tracking failed while it lives. */
static int sup_start_tracking_or_gone(struct sup *s, int uffd, const struct shim_hello *hello)
{
	sup_take_hello(s, hello);
	if (sup_start_tracking(s, uffd) == 0) {
		s->tree->stats.execs_followed++;
		return 1;
	}
	return proc_gone(s->pid);
}

void sup_exec(struct sup *s, struct worker *w)
{
	char why[VMA_PATH_MAX + 200];
	char reason[200] = "";
	pid_t pid = s->pid;
	if (!s->tree->enabled) {
		ptrace(PTRACE_CONT, pid, 0, 0);
		return;
	}
	/* the commit of the old image's last checkpoint ends first: the pool has one user */
	int rc = w ? worker_wait(w, why, sizeof why) : 0;
	if (rc) {
		sup_checkpoint_failed(s, rc, why);
		ptrace(PTRACE_CONT, pid, 0, 0);
		return;
	}
	enum image_kind kind = IMAGE_NOT_FOLLOWED;
	char exe[VMA_PATH_MAX] = "?", p[64];
	snprintf(p, sizeof p, "/proc/%d/exe", (int)pid);
	ssize_t xl = readlink(p, exe, sizeof exe - 1);
	if (xl > 0)
		exe[xl] = 0;
	if (s->nnvm > 0)
		snprintf(reason, sizeof reason, "the program held NVM memory, which an exec discards");
	else if ((kind = image_kind(pid, reason, sizeof reason)) == IMAGE_SHIMLESS)
		new_record(s, pid, reason, sizeof reason); /* no loader to give the shim to (shimless.h) */
	else if (kind == IMAGE_SHIM && new_record(s, pid, reason, sizeof reason) == 0) {
		int envc = s->envc;
		char **env = calloc((size_t)envc + 2, sizeof *env);
		if (env) {
			memcpy(env, s->envp, (size_t)envc * sizeof *env);
			env[envc] = s->tree->run.channel.env;
			give_loader_environment(pid, env, reason, sizeof reason);
			free(env);
		} else {
			snprintf(reason, sizeof reason, "out of memory");
		}
	}
	if (!reason[0] && forget_image(s) != 0)
		snprintf(reason, sizeof reason, "cannot drop the old image's regions: %s", prosper_pool_errormsg());
	if (reason[0] && s != s->tree->procs[0] && proc_gone(pid)) {
		ptrace(PTRACE_CONT, pid, 0, 0); /* a child process that ended meanwhile: its exit comes next */
		return;
	}
	if (reason[0]) {
		snprintf(why, sizeof why, "the program executed %s, which cannot be followed (%s)", exe, reason);
		forget_gate(s);
		sup_disable(s, why);
		ptrace(PTRACE_CONT, pid, 0, 0);
		return;
	}
	struct shim_hello hello = { 0 };
	int uffd = -1;
	rc = image_hello(&s->tree->run.channel, pid, 0, &hello, &uffd, reason, sizeof reason);
	if (s != s->tree->procs[0] && (rc == -ESRCH || (rc == 0 && sup_start_tracking_or_gone(s, uffd, &hello)))) {
		/* a child process that ended at once (a `$(readlink ...)`): nothing of it to keep; its
		 * exit is reported next, and a child that did start is tracked */
		return;
	}
	if (rc == -ESRCH) {
		s->tree->enabled = 0; /* it ended before its first instruction of its own: nothing to keep */
		snprintf(s->tree->disabled_reason, sizeof s->tree->disabled_reason, "the program ended");
		return;
	}
	if (rc == 0) {
		sup_take_hello(s, &hello);
		if (sup_start_tracking(s, uffd) == 0) {
			s->tree->stats.execs_followed++;
			return;
		}
		snprintf(reason, sizeof reason, "%s", s->track.err);
	} else {
		if (rc != -EIO) /* -EIO: the injection said why */
			snprintf(reason, sizeof reason, "%s",
				 rc == -ENOSYS ? "no userfaultfd" : rc == -EPROTO ? "no asynchronous write-protection"
				 : rc == -ENOEXEC ? "it executed another program before the shim started" : "the shim did not report");
		if (uffd >= 0)
			close(uffd);
	}
	snprintf(why, sizeof why, "the program executed %s, which cannot be followed (%s)", exe, reason);
	forget_gate(s);
	sup_disable(s, why);
}
