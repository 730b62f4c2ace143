/* tree_restore.c -- a resume of a checkpoint of several processes (tree.h, docs/run-resume.md
 * "Process trees"): the first process is relaunched as always; before anything is restored, the
 * pipes and socketpairs between the processes are made again in it, with the bytes that were in
 * flight, and every other process is forked again by its parent (an injected clone(), the id
 * asked of the namespace's init; an orphan by the first process with CLONE_PARENT, so that it is
 * the init's child again) and made to execute its image's program with the shim, in resume mode;
 * a child that had ended and was not waited for is made to end again the same way.  So
 * each one is the child of the process that was its parent, holds every pipe of the tree, and
 * stops in its shim like the first process; resume.c then restores them one by one and lets
 * them all go at once.
 *
 * Invariants: a process whose id or parent cannot be given back is a refusal (every process is
 * then killed); the pipes are made at fd numbers above every fd of the checkpoint, so no restore
 * of an fd closes or replaces one before each process has taken its ends (restore.c).
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>
#include "fdkind.h"
#include "inject.h"
#include "hello_channel.h"
#include "sharedmem.h"
#include "premake.h"
#include "tree.h"
#include "tree_image.h"
#include "hello.h"
#include "shimless.h"
#include "why.h"

#define SCRATCH (1u << 20) /* strings of an exec: argv and environment */

/* Put argv (argc strings) and the environment (base, then extra, NULL-terminated) into the
 * scratch mapping: the addresses of the two arrays. */
static int put_strings(struct injector *h, const struct img *im, const char *const *extra, uint64_t *argv_at,
		       uint64_t *env_at, uint64_t *exe_at, uint64_t *cwd_at)
{
	size_t n = 0;
	uint32_t count = im->h->argc + im->h->envc;
	const char *p = img_s(im, im->h->args_str);
	for (uint32_t i = 0; i < count; i++)
		n += strlen(p + n) + 1;
	const char *exe = img_s(im, im->h->exe_str), *cwd = img_s(im, im->h->launch_cwd_str);
	size_t nextra = 0, extra_bytes = 0;
	while (extra[nextra])
		extra_bytes += strlen(extra[nextra++]) + 1;
	size_t words = (size_t)count + nextra + 2;
	size_t total = words * 8 + n + extra_bytes + strlen(exe) + strlen(cwd) + 2;
	if (total > SCRATCH)
		return -1;
	uint8_t *buf = calloc(1, total);
	if (!buf)
		return -1;
	uint64_t *vec = (uint64_t *)buf, at = words * 8, k = 0;
	memcpy(buf + at, p, n);
	for (uint32_t i = 0; i < count; i++) {
		if (i == im->h->argc)
			vec[k++] = 0; /* argv's end */
		vec[k++] = h->scratch + at;
		at += strlen((char *)buf + at) + 1;
	}
	if (im->h->argc == count)
		vec[k++] = 0;
	for (size_t e = 0; e < nextra; e++) {
		size_t l = strlen(extra[e]) + 1;
		memcpy(buf + at, extra[e], l);
		vec[k++] = h->scratch + at;
		at += l;
	}
	vec[k++] = 0;
	*exe_at = h->scratch + at;
	at += (size_t)sprintf((char *)buf + at, "%s", exe) + 1;
	*cwd_at = h->scratch + at;
	at += (size_t)sprintf((char *)buf + at, "%s", cwd) + 1;
	*argv_at = h->scratch;
	*env_at = h->scratch + ((uint64_t)im->h->argc + 1) * 8;
	int rc = inject_write(&h->in, h->scratch, buf, at);
	free(buf);
	return rc;
}

/* The child process stopped at its first stop executes its image's program (with the shim, in
 * resume mode); it is left stopped in its shim.  0, or -1 with why. */
static int exec_image(struct tree *t, pid_t child, uint64_t gate, const struct img *im, struct shim_hello *hello,
		      int *uffd, char *why, size_t whylen)
{
	struct injector h;
	if (injector_open(&h, child, gate, SCRATCH) != 0)
		WHY_FAIL("cannot control the forked process");
	const char *extra[] = { t->run.channel.env, "PROSPER_SHIM_RESUME=1", NULL };
	uint64_t argv_at, env_at, exe_at, cwd_at;
	if (put_strings(&h, im, extra, &argv_at, &env_at, &exe_at, &cwd_at) != 0) {
		injector_close(&h);
		WHY_FAIL("cannot give the forked process its arguments");
	}
	if (inject_syscall(&h.in, SYS_chdir, (long)cwd_at, 0, 0, 0, 0, 0) != 0) {
		injector_close(&h);
		WHY_FAIL("cannot enter %s", img_s(im, im->h->launch_cwd_str));
	}
	struct user_regs_struct r = h.in.base;
	r.rip = gate, r.rax = SYS_execve, r.orig_rax = (unsigned long)-1;
	r.rdi = exe_at, r.rsi = argv_at, r.rdx = env_at;
	inject_close(&h.in);
	int st;
	if (ptrace(PTRACE_SETREGS, child, 0, &r) != 0 || ptrace(PTRACE_CONT, child, 0, 0) != 0 ||
	    waitpid(child, &st, __WALL) != child || !WIFSTOPPED(st) || (st >> 16) != PTRACE_EVENT_EXEC)
		WHY_FAIL("cannot execute %s again", img_s(im, im->h->exe_str));
	char no_hello[300] = "";
	int rc = image_hello(&t->run.channel, child, 1, hello, uffd, no_hello, sizeof no_hello);
	if (rc != 0 || !hello->resume)
		WHY_FAIL("%s did not reach the restorer (%s)", img_s(im, im->h->exe_str),
			 no_hello[0] ? no_hello : rc ? strerror(-rc) : "not in resume mode");
	while (waitpid(child, &st, __WALL) == child && WIFSTOPPED(st) && WSTOPSIG(st) != SIGSTOP)
		ptrace(PTRACE_CONT, child, 0, (void *)(long)WSTOPSIG(st));
	if (!WIFSTOPPED(st))
		WHY_FAIL("%s ended before the restore", img_s(im, im->h->exe_str));
	return 0;
}

/* The child process stopped at its first stop ends again as it had ended at the cut: its wait
 * status, for its parent to collect (a signal's death with the default action, no core dump).
 * 0, or -1 with why. */
static int exit_again(pid_t child, uint64_t gate, int32_t own, uint32_t status, char *why, size_t whylen)
{
	struct injector h;
	if (injector_open(&h, child, gate, SCRATCH) != 0)
		WHY_FAIL("process %d: cannot control it to end it again", (int)own);
	int sig = (int)(status & 0x7f);
	struct user_regs_struct r = h.in.base;
	r.rip = gate, r.orig_rax = (unsigned long)-1;
	if (sig) {
		struct { uint64_t handler, flags, restorer, mask; } dfl = { 0 }; /* SIG_DFL */
		uint64_t none = 0;
		if (inject_write(&h.in, h.scratch, &dfl, sizeof dfl) != 0 ||
		    inject_syscall(&h.in, SYS_rt_sigaction, sig, (long)h.scratch, 0, 8, 0, 0) != 0 ||
		    inject_write(&h.in, h.scratch, &none, sizeof none) != 0 ||
		    inject_syscall(&h.in, SYS_rt_sigprocmask, SIG_SETMASK, (long)h.scratch, 0, 8, 0, 0) != 0 ||
		    inject_syscall(&h.in, SYS_prctl, PR_SET_DUMPABLE, 0, 0, 0, 0, 0) != 0) {
			injector_close(&h);
			WHY_FAIL("process %d: cannot give signal %d its default action again", (int)own, sig);
		}
		r.rax = SYS_kill, r.rdi = (unsigned long)own, r.rsi = (unsigned long)sig;
	} else {
		r.rax = SYS_exit_group, r.rdi = (status >> 8) & 0xff;
	}
	inject_close(&h.in); /* its scratch goes with it */
	if (ptrace(PTRACE_SETREGS, child, 0, &r) != 0 || ptrace(PTRACE_CONT, child, 0, 0) != 0)
		WHY_FAIL("process %d: cannot end it again", (int)own);
	int st;
	while (waitpid(child, &st, __WALL) == child && WIFSTOPPED(st))
		ptrace(PTRACE_CONT, child, 0, (void *)(long)((st >> 16) == 0 && WSTOPSIG(st) == sig ? sig : 0));
	if (!(WIFEXITED(st) || WIFSIGNALED(st)) || ((uint32_t)st & 0xff7f) != (status & 0xff7f))
		WHY_FAIL("process %d: it did not end as at the checkpoint (status %#x, not %#x)", (int)own, (unsigned)st, status & 0xffff);
	return 0;
}

/* The launch record of a process of the tree, from its image (copies: the blob is reused). */
static int take_record(struct sup *m, const struct img *im)
{
	char **args = calloc(im->h->argc + 1u, sizeof *args), **env = calloc(im->h->envc + 1u, sizeof *env);
	if (!args || !env)
		return -1;
	const char *p = img_s(im, im->h->args_str);
	for (uint32_t i = 0; i < im->h->argc + im->h->envc; i++, p += strlen(p) + 1) {
		char **slot = i < im->h->argc ? &args[i] : &env[i - im->h->argc];
		if (!(*slot = strdup(p)))
			return -1;
	}
	m->exec_mem = (struct exec_mem){ .argv = args, .envp = env, .own_from = 0 };
	m->argv = args, m->argc = (int)im->h->argc, m->envp = env, m->envc = (int)im->h->envc;
	snprintf(m->exe, sizeof m->exe, "%s", img_s(im, im->h->exe_str));
	snprintf(m->launch_cwd, sizeof m->launch_cwd, "%s", img_s(im, im->h->launch_cwd_str));
	m->tid_offset = im->h->tid_offset;
	return 0;
}

/* The first process's stdio that is the checkpointed file (the run's output, `>> out`): opened
 * again now, cut to its size and position, so every process forked after shares that one open
 * file -- one offset, as they shared it at the cut (restore.c then leaves it). */
static int reopen_shared_stdio(struct tree *t, struct injector *root, char *why, size_t whylen)
{
	const struct img *im = &t->resume.imgs[0];
	for (uint32_t i = 0; i < im->h->nfds; i++) {
		const struct img_fd *f = &im->fds[i];
		const char *path = img_s(im, f->path);
		if (!fd_stdio_reopened_here(f, path))
			continue;
		size_t n = strlen(path) + 1;
		if (truncate(path, (off_t)f->size) != 0 || n > SCRATCH || inject_write(&root->in, root->scratch, path, n) != 0)
			WHY_FAIL("cannot cut %s back to its checkpointed size", path);
		long fd = inject_syscall(&root->in, SYS_openat, AT_FDCWD, (long)root->scratch,
					 (long)(f->flags & (O_ACCMODE | O_APPEND | O_NONBLOCK | O_LARGEFILE)), 0, 0, 0);
		if (fd < 0 || inject_syscall(&root->in, SYS_dup3, fd, f->fd, 0, 0, 0, 0) != f->fd ||
		    inject_syscall(&root->in, SYS_lseek, f->fd, (long)f->pos, SEEK_SET, 0, 0, 0) != (long)f->pos)
			WHY_FAIL("fd %d: cannot reopen %s", f->fd, path);
		inject_syscall(&root->in, SYS_close, fd, 0, 0, 0, 0, 0);
		t->resume.stdio_shared |= 1u << f->fd;
	}
	return 0;
}

/* The record of process e of the checkpoint, forked again as child (with its launch record and
 * metadata log when it has an image im); NULL with why (the child killed). */
static struct sup *member(struct tree *t, struct sup *s, pid_t child, const struct tree_proc *e, const struct img *im,
			  char *why, size_t whylen)
{
	struct sup *m = tree_proc_new(t, &s->cfg);
	char name[40];
	snprintf(name, sizeof name, "%s.%d", META_REGION_NAME, (int)e->pid);
	if (!m || (im && (!(m->meta = metalog_new_named(name)) || take_record(m, im) != 0))) {
		kill(child, SIGKILL);
		snprintf(why, whylen, "out of memory");
		return NULL;
	}
	m->pid = child, m->thr[0].tid = child, m->nthr = 1;
	m->own_pid = pidns_own_id(child);
	snprintf(m->region_prefix, sizeof m->region_prefix, "p%d.", (int)e->pid);
	if (m->own_pid != e->pid) {
		snprintf(why, whylen, "process %d: its id is not free in the namespace (it got %d)", (int)e->pid, (int)m->own_pid);
		return NULL;
	}
	return m;
}

/* The terminal's foreground group at the cut was one of the program's own (a job-control shell
 * had given it the terminal): it is so again, if the resume has that terminal (/dev/tty). */
static void give_terminal(struct tree *t, int32_t pgid)
{
	pid_t leader = 0;
	for (int i = 0; i < t->nprocs && !leader; i++)
		if (t->procs[i]->own_pid == pgid && !t->procs[i]->exited)
			leader = t->procs[i]->pid;
	int tty = leader ? open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC) : -1;
	if (tty < 0)
		return; /* no leader of that group came back, or no terminal: nothing to give */
	sigset_t ttou, old;
	sigemptyset(&ttou);
	sigaddset(&ttou, SIGTTOU); /* we may be in the background ourselves */
	sigprocmask(SIG_BLOCK, &ttou, &old);
	if (tcsetpgrp(tty, leader) != 0)
		fprintf(stderr, "%s: warning: cannot give the terminal back to process group %d: %s\n", sup_command(),
			(int)pgid, strerror(errno));
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(tty);
}

int tree_relaunch(struct sup *s, char *why, size_t whylen)
{
	struct tree *t = s->tree;
	s->own_pid = t->resume.view->procs[0]->pid;
	struct injector root;
	if (injector_open(&root, s->pid, s->gate, SCRATCH) != 0)
		WHY_FAIL("cannot control the relaunched program");
	int rc = reopen_shared_stdio(t, &root, why, whylen);
	if (!rc)
		rc = tree_premake(t, &root, why, whylen);
	for (uint32_t i = 1; i < t->resume.view->nprocs && !rc; i++) {
		const struct tree_proc *e = t->resume.view->procs[i];
		const struct img *im = &t->resume.imgs[i];
		/* an orphan (parent 0) is forked by the first process as a sibling: a child of the
		 * namespace's init, as it had become */
		struct sup *parent = e->parent == 0 ? s : NULL;
		for (int k = 0; k < t->nprocs && !parent; k++)
			if (t->procs[k]->own_pid == e->parent)
				parent = t->procs[k];
		struct injector ph, *hp = parent == s ? &root : &ph;
		if (!parent || (hp == &ph && injector_open(&ph, parent->pid, parent->gate, SCRATCH) != 0)) {
			snprintf(why, whylen, "process %d: its parent %d cannot fork it again", (int)e->pid, (int)e->parent);
			rc = -1;
			break;
		}
		pidns_next(&t->run.ns, e->pid);
		hp->in.cloned = 0;
		long r = inject_syscall(&hp->in, SYS_clone, SIGCHLD | (e->parent == 0 ? CLONE_PARENT : 0), 0, 0, 0, 0, 0);
		pid_t child = hp->in.cloned;
		if (hp == &ph)
			injector_close(&ph);
		int st;
		if (r < 0 || child <= 0 || waitpid(child, &st, __WALL) != child || !WIFSTOPPED(st)) {
			snprintf(why, whylen, "process %d: its parent could not fork it again (%s)", (int)e->pid,
				 r < 0 ? strerror((int)-r) : "no child");
			rc = -1;
			break;
		}
		struct sup *m = member(t, s, child, e, e->exited ? NULL : im, why, whylen);
		if (!m) {
			rc = -1;
			break;
		}
		if (e->exited) { /* a zombie: forked again and ended again, for its parent to wait for */
			rc = exit_again(child, parent->gate, e->pid, e->exited & 0xffffu, why, whylen);
			m->exited = m->memory_dropped = 1, m->exit_status = (int)(e->exited & 0xffffu);
			continue;
		}
		metalog_attach_stub(m->meta, t->pool, t->resume.view->blobs[i], e->blob_len);
		m->resume.img = im;
		m->resume.uffd = -1;
		/* its session and process group again (before its exec, as a shell does): a leader
		 * leads again; a member of a group other than its parent's (a pipeline's, joined by a
		 * job-control shell) joins it, its leader being made before it or not at all */
		const struct tree_proc *pe = NULL;
		for (uint32_t j = 0; j < i && !pe; j++)
			if (t->resume.view->procs[j]->pid == e->parent)
				pe = t->resume.view->procs[j];
		int lead_session = e->sid == e->pid, own_group = e->pgid && (!pe || e->pgid != pe->pgid);
		if (lead_session || own_group) {
			struct inject ci;
			if (inject_open(&ci, child, parent->gate) == 0) {
				if (lead_session)
					inject_syscall(&ci, SYS_setsid, 0, 0, 0, 0, 0, 0);
				else
					inject_syscall(&ci, SYS_setpgid, 0, e->pgid == e->pid ? 0 : e->pgid, 0, 0, 0, 0);
				ptrace(PTRACE_SETREGS, child, 0, &ci.base);
				inject_close(&ci);
			}
		}
		rc = exec_image(t, child, parent->gate, im, &m->resume.hello, &m->resume.uffd, why, whylen);
		if (!rc)
			sup_take_hello(m, &m->resume.hello);
	}
	if (!rc && t->resume.view->fg_pgid)
		give_terminal(t, t->resume.view->fg_pgid);
	injector_close(&root);
	return rc;
}
