/* supervise.c -- the capture half of `prosper run` (DESIGN D3): launch a program under ptrace
 * with the shim preloaded, stop it every interval, and write one epoch per stop into a pool:
 * registers and the memory map in the epoch's blob, every private writable mapping as a
 * buffered region, dirty pages found by the page tracker (or everything, `full`).
 *
 * usage: prosper-supervise --pool PATH [--interval MS] [--tracker page|full] [--capacity MIB]
 *                          [--stack-granularity G] [--heap-granularity G]
 *                          [--verify] [--stats-json PATH] -- PROGRAM [ARGS...]
 *
 * Trackers: the page tracker (or `full`) names candidate pages; within them the `diff` filter
 * compares G-byte granules with the committed image and writes only those that changed (G = 0:
 * whole pages).  Defaults: stack 8 B, other memory 256 B.  The stack is SP-aware: only
 * [SP - 128, top) is saved; below it the frames are dead.
 *
 * Invariants
 *   - The child is never left stopped: every stop we cause ends in PTRACE_CONT/LISTEN, also on
 *     error paths; an error stops checkpointing, never the program.
 *   - One stop = one epoch: all regions and the blob of a checkpoint commit together.
 *   - A program that starts a thread, forks or execs is no longer checkpointed (round 1 is
 *     single-threaded); the last good epoch stays; the program runs to its end.
 *   - --verify (the soundness oracle): after each commit, while the child is still stopped, every
 *     region read back from the pool equals the child's memory read through /proc/PID/mem.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "prosper/pool.h"
#include "prosper/track.h"

#define MAX_VMAS 1024
#define MAX_RANGES 65536

struct vma {
	uint64_t start, end, offset;
	char perms[5];
	char path[256];
	int region;       /* pool region id, or -1 */
	int seen;
};

struct sup {
	pid_t pid;
	prosper_pool *pool;
	struct prosper_track track;
	int tracker;
	int verify;
	int enabled;                 /* checkpointing still on */
	uint32_t stack_gran, heap_gran;
	uint64_t sp;                 /* at this stop */
	uint8_t *old;                /* committed bytes, for the diff filter */
	size_t old_cap;
	struct vma vmas[MAX_VMAS];
	int nvmas;
	struct prosper_range *ranges;
	uint8_t *buf;
	size_t buf_cap;
	/* statistics */
	uint64_t checkpoints, bytes, stack_bytes, page_bytes, stack_page_bytes, mismatches, verified_bytes;
	double stop_total, stop_max;
	const char *disabled_reason;
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int die(const char *msg)
{
	fprintf(stderr, "prosper run: %s\n", msg);
	return 2;
}

static void disable(struct sup *s, const char *why)
{
	if (!s->enabled)
		return;
	s->enabled = 0;
	s->disabled_reason = why;
	fprintf(stderr, "prosper run: %s; checkpointing stopped, the last checkpoint (epoch %llu) is kept\n", why,
		(unsigned long long)(s->pool ? prosper_pool_epoch(s->pool) : 0));
}

/* ------------------------------------------------------------------ memory map */

static int tracked(const struct vma *v)
{
	if (v->perms[1] != 'w' || v->perms[3] != 'p')
		return 0; /* read-only, or shared (not persisted: warned once) */
	return strcmp(v->path, "[vvar]") && strcmp(v->path, "[vdso]") && strcmp(v->path, "[vsyscall]") &&
	       strcmp(v->path, "[vvar_vclock]");
}

static int read_maps(struct sup *s, struct vma *out, int *n)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/maps", (int)s->pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	char line[512];
	*n = 0;
	while (fgets(line, sizeof line, f) && *n < MAX_VMAS) {
		struct vma v = { .region = -1 };
		unsigned long long a, b, off;
		int pos = 0;
		if (sscanf(line, "%llx-%llx %4s %llx %*s %*s%n", &a, &b, v.perms, &off, &pos) < 4)
			continue;
		v.start = a;
		v.end = b;
		v.offset = off;
		char *p = line + pos;
		while (*p == ' ')
			p++;
		p[strcspn(p, "\n")] = 0;
		snprintf(v.path, sizeof v.path, "%s", p);
		out[(*n)++] = v;
	}
	fclose(f);
	return 0;
}

static struct vma *find_vma(struct sup *s, uint64_t start)
{
	for (int i = 0; i < s->nvmas; i++)
		if (s->vmas[i].start == start)
			return &s->vmas[i];
	return NULL;
}

/* ------------------------------------------------------------------ reading the child */

static int read_child(struct sup *s, uint64_t addr, size_t len)
{
	if (len > s->buf_cap) {
		free(s->buf);
		s->buf_cap = len;
		s->buf = malloc(len);
		if (!s->buf)
			return -ENOMEM;
	}
	struct iovec local = { s->buf, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t got = process_vm_readv(s->pid, &local, 1, &remote, 1, 0);
	return got == (ssize_t)len ? 0 : -EIO;
}

static int is_stack(const struct vma *v) { return !strcmp(v->path, "[stack]"); }

struct diff_ctx {
	struct sup *s;
	struct vma *v;
	uint64_t base; /* region offset of the compared buffer */
	int rc;
	uint64_t bytes;
};

static void write_changed(void *vctx, uint64_t off, uint64_t len)
{
	struct diff_ctx *d = vctx;
	if (d->rc)
		return;
	d->rc = prosper_pool_write(d->s->pool, (uint32_t)d->v->region, d->base + off, d->s->buf + off, len);
	d->bytes += len;
}

/* copy_range -- child bytes [a, b) of vma v into its region.  `whole`: a new mapping, copied
 * as it is; otherwise dirty pages, filtered by the diff granularity of the region's kind. */
static int copy_range(struct sup *s, struct vma *v, uint64_t a, uint64_t b, int whole)
{
	if (is_stack(v) && !whole) {
		uint64_t lo = s->sp - 128; /* SP-aware: nothing below the red zone is live */
		if (lo > a)
			a = lo;
		if (a >= b)
			return 0;
	}
	int rc = read_child(s, a, b - a);
	if (rc)
		return rc;
	uint32_t g = is_stack(v) ? s->stack_gran : s->heap_gran;
	uint64_t n = 0;
	if (whole || g == 0) {
		rc = prosper_pool_write(s->pool, (uint32_t)v->region, a - v->start, s->buf, b - a);
		n = b - a;
	} else {
		if (b - a > s->old_cap) {
			free(s->old);
			s->old_cap = b - a;
			s->old = malloc(s->old_cap);
			if (!s->old)
				return -ENOMEM;
		}
		rc = prosper_pool_region_read(s->pool, (uint32_t)v->region, a - v->start, s->old, b - a);
		if (rc)
			return rc;
		struct diff_ctx d = { s, v, a - v->start, 0, 0 };
		prosper_track_diff(s->old, s->buf, b - a, g, write_changed, &d);
		rc = d.rc;
		n = d.bytes;
	}
	if (!rc) {
		s->bytes += n;
		if (!whole) {
			s->page_bytes += b - a;
			if (is_stack(v)) {
				s->stack_bytes += n;
				s->stack_page_bytes += b - a;
			}
		}
	}
	return rc;
}

/* ------------------------------------------------------------------ one checkpoint */

/* The blob: registers, extended state, and the memory map, for resume. */
struct blob_hdr {
	uint64_t magic;          /* "PRSPBLB1" */
	uint32_t version, nvmas;
	uint32_t xstate_bytes, reserved;
	struct user_regs_struct regs;
};

static int checkpoint(struct sup *s)
{
	static struct vma now_vmas[MAX_VMAS];
	int n = 0;
	struct user_regs_struct regs;
	static uint8_t xstate[16384];
	struct iovec xs = { xstate, sizeof xstate };
	if (ptrace(PTRACE_GETREGS, s->pid, 0, &regs) != 0)
		return -errno;
	if (ptrace(PTRACE_GETREGSET, s->pid, (void *)NT_X86_XSTATE, &xs) != 0)
		return -errno;
	s->sp = regs.rsp;
	int rc = read_maps(s, now_vmas, &n);
	if (rc)
		return rc;
	/* Regions follow the map: new VMAs are added (and tracked from now), changed ones
	 * resized, vanished ones removed. */
	for (int i = 0; i < s->nvmas; i++)
		s->vmas[i].seen = 0;
	for (int i = 0; i < n; i++) {
		struct vma *nv = &now_vmas[i];
		if (!tracked(nv))
			continue;
		struct vma *old = find_vma(s, nv->start);
		if (old && old->region >= 0) {
			/* Same start, but a new mapping (munmap + mmap between two stops): its pages
			 * are not tracked and its contents are new.  Drop the old region; below, the
			 * mapping is added as new. */
			uint64_t common_end = old->end < nv->end ? old->end : nv->end;
			int covered = prosper_track_covers(&s->track, nv->start, common_end);
			if (covered < 0)
				return covered;
			if (!covered) {
				if ((rc = prosper_pool_region_remove(s->pool, (uint32_t)old->region)) != 0)
					return rc;
				*old = s->vmas[--s->nvmas];
				old = NULL;
			}
		}
		if (old && old->region >= 0) {
			old->seen = 1;
			if (old->end != nv->end) {
				if ((rc = prosper_pool_region_resize(s->pool, (uint32_t)old->region, nv->end - nv->start)) != 0)
					return rc;
				if (nv->end > old->end) {
					if ((rc = prosper_track_add(&s->track, old->end, nv->end)) != 0)
						return rc;
					if ((rc = copy_range(s, old, old->end, nv->end, 1)) != 0)
						return rc;
				}
				old->end = nv->end;
			}
			continue;
		}
		if (s->nvmas == MAX_VMAS)
			return -ENOSPC;
		char name[PROSPER_REGION_NAME_MAX];
		snprintf(name, sizeof name, "m%llx", (unsigned long long)nv->start);
		int kind = !strcmp(nv->path, "[stack]") ? PROSPER_KIND_STACK
			   : !strcmp(nv->path, "[heap]") ? PROSPER_KIND_HEAP
			   : nv->path[0] == '/' ? PROSPER_KIND_DATA : PROSPER_KIND_ANON;
		int id = prosper_pool_region_add(s->pool, name, (uint32_t)kind, PROSPER_REGION_BUFFERED, nv->start,
						 nv->end - nv->start, 3);
		if (id < 0)
			return id;
		struct vma *v = &s->vmas[s->nvmas++];
		*v = *nv;
		v->region = id;
		v->seen = 1;
		/* protect first, then copy: a write after the copy is seen at the next checkpoint */
		if ((rc = prosper_track_add(&s->track, v->start, v->end)) != 0)
			return rc;
		if ((rc = copy_range(s, v, v->start, v->end, 1)) != 0)
			return rc;
	}
	for (int i = 0; i < s->nvmas; i++) {
		struct vma *v = &s->vmas[i];
		if (v->seen || v->region < 0)
			continue;
		if ((rc = prosper_pool_region_remove(s->pool, (uint32_t)v->region)) != 0)
			return rc;
		s->vmas[i] = s->vmas[--s->nvmas];
		i--;
	}
	/* Dirty pages of regions that existed before this stop. */
	for (int i = 0; i < s->nvmas; i++) {
		struct vma *v = &s->vmas[i];
		long k = prosper_track_collect(&s->track, v->start, v->end, s->ranges, MAX_RANGES);
		if (k < 0)
			return (int)k;
		for (long j = 0; j < k; j++)
			if ((rc = copy_range(s, v, s->ranges[j].start, s->ranges[j].end, 0)) != 0)
				return rc;
	}
	/* The blob: registers, xstate, the map of tracked VMAs. */
	size_t blen = sizeof(struct blob_hdr) + xs.iov_len + (size_t)s->nvmas * sizeof(struct vma);
	uint8_t *blob = malloc(blen);
	struct blob_hdr h = { .magic = 0x31424C4250535250ull, .version = 1, .nvmas = (uint32_t)s->nvmas,
			      .xstate_bytes = (uint32_t)xs.iov_len, .regs = regs };
	memcpy(blob, &h, sizeof h);
	memcpy(blob + sizeof h, xstate, xs.iov_len);
	memcpy(blob + sizeof h + xs.iov_len, s->vmas, (size_t)s->nvmas * sizeof(struct vma));
	rc = prosper_pool_commit(s->pool, blob, blen);
	free(blob);
	if (rc)
		return rc;
	s->checkpoints++;
	if (s->verify)
		for (int i = 0; i < s->nvmas; i++) {
			struct vma *v = &s->vmas[i];
			uint64_t from = is_stack(v) && s->sp - 128 > v->start ? s->sp - 128 - v->start : 0;
			size_t len = v->end - v->start - from;
			uint8_t *img = malloc(len);
			if (!img || prosper_pool_region_read(s->pool, (uint32_t)v->region, from, img, len) ||
			    read_child(s, v->start + from, len)) {
				free(img);
				return -EIO;
			}
			for (size_t b = 0; b < len; b++)
				s->mismatches += img[b] != s->buf[b];
			s->verified_bytes += len;
			free(img);
		}
	return 0;
}

/* ------------------------------------------------------------------ launch and loop */

static int recv_uffd(int sock, pid_t pid, int *uffd)
{
	struct pollfd p = { sock, POLLIN, 0 };
	int r = poll(&p, 1, 10000);
	if (r <= 0)
		return -ETIMEDOUT;
	char byte;
	struct iovec iov = { &byte, 1 };
	union { struct cmsghdr h; char buf[CMSG_SPACE(sizeof(int))]; } u;
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf };
	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) <= 0)
		return -EPIPE;
	if (byte != 'K')
		return byte == 'U' ? -ENOSYS : -EPROTO;
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_type != SCM_RIGHTS)
		return -EPROTO;
	memcpy(uffd, CMSG_DATA(c), sizeof *uffd);
	return 0;
}

int main(int argc, char **argv)
{
	const char *pool_path = NULL, *stats = NULL, *tracker = "page";
	double interval_ms = 10;
	uint64_t capacity_mib = 4096;
	int verify = 0, i;
	long stack_gran = 8, heap_gran = 256;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) { i++; break; }
		else if (!strcmp(argv[i], "--pool") && i + 1 < argc) pool_path = argv[++i];
		else if (!strcmp(argv[i], "--interval") && i + 1 < argc) interval_ms = atof(argv[++i]);
		else if (!strcmp(argv[i], "--tracker") && i + 1 < argc) tracker = argv[++i];
		else if (!strcmp(argv[i], "--capacity") && i + 1 < argc) capacity_mib = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--stats-json") && i + 1 < argc) stats = argv[++i];
		else if (!strcmp(argv[i], "--verify")) verify = 1;
		else if (!strcmp(argv[i], "--stack-granularity") && i + 1 < argc) stack_gran = atol(argv[++i]);
		else if (!strcmp(argv[i], "--heap-granularity") && i + 1 < argc) heap_gran = atol(argv[++i]);
		else return die("usage: prosper-supervise --pool PATH [--interval MS] [--tracker page|full] "
				"[--capacity MIB] [--verify] [--stats-json PATH] -- PROGRAM [ARGS]");
	}
	if (!pool_path || i >= argc)
		return die("a pool (--pool) and a program are required");
	if (interval_ms < 0.1 || interval_ms > 3600e3)
		return die("--interval is 0.1 ms .. 1 h");
	if ((stack_gran && (stack_gran < 8 || stack_gran > 4096 || (stack_gran & (stack_gran - 1)))) ||
	    (heap_gran && (heap_gran < 8 || heap_gran > 4096 || (heap_gran & (heap_gran - 1)))))
		return die("granularities are 0 (whole pages) or powers of two from 8 to 4096");
	int kind = !strcmp(tracker, "page") ? PROSPER_TRACK_PAGE : !strcmp(tracker, "full") ? PROSPER_TRACK_FULL : 0;
	if (!kind)
		return die("--tracker is page or full");
	char shim[4096];
	ssize_t self = readlink("/proc/self/exe", shim, sizeof shim - 32);
	if (self <= 0)
		return die("cannot find the shim");
	shim[self] = 0;
	*strrchr(shim, '/') = 0;
	strcat(shim, "/../shim/libprosper-shim.so");
	char *real = realpath(shim, NULL);
	if (!real)
		return die("the shim libprosper-shim.so is not built");

	struct sup *s = calloc(1, sizeof *s);
	s->tracker = kind;
	s->verify = verify;
	s->stack_gran = (uint32_t)stack_gran;
	s->heap_gran = (uint32_t)heap_gran;
	s->enabled = 1;
	s->ranges = malloc(MAX_RANGES * sizeof *s->ranges);
	struct prosper_pool_config cfg;
	prosper_pool_config_default(&cfg);
	cfg.capacity = capacity_mib << 20;
	if (prosper_pool_create(pool_path, &cfg, &s->pool) != 0) {
		char m[300];
		snprintf(m, sizeof m, "%s", prosper_pool_errormsg());
		return die(m);
	}

	int sv[2], go[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0 || pipe2(go, O_CLOEXEC) != 0)
		return die("socketpair failed");
	pid_t pid = fork();
	if (pid < 0)
		return die("fork failed");
	if (pid == 0) {
		close(sv[0]);
		personality(ADDR_NO_RANDOMIZE);
		char fdstr[16];
		snprintf(fdstr, sizeof fdstr, "%d", sv[1]);
		setenv("PROSPER_SHIM_SOCK", fdstr, 1);
		setenv("LD_PRELOAD", real, 1);
		setenv("GLIBC_TUNABLES", "glibc.pthread.rseq=0", 1);
		/* wait until the parent has seized us (no signals: they would need forwarding) */
		char c;
		close(go[1]);
		while (read(go[0], &c, 1) < 0 && errno == EINTR)
			;
		execvp(argv[i], argv + i);
		fprintf(stderr, "prosper run: cannot execute %s: %s\n", argv[i], strerror(errno));
		_exit(127);
	}
	close(sv[1]);
	close(go[0]);
	s->pid = pid;
	int st;
	if (ptrace(PTRACE_SEIZE, pid, 0, (void *)(long)(PTRACE_O_TRACEEXEC | PTRACE_O_TRACECLONE |
							   PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK)) != 0) {
		kill(pid, SIGKILL);
		return die("ptrace is not permitted here");
	}
	if (write(go[1], "g", 1) != 1)
		return die("the program did not start");
	close(go[1]);

	int uffd = -1, have_uffd = 0, execs = 0;
	struct timespec iv;
	iv.tv_sec = (time_t)(interval_ms / 1000);
	iv.tv_nsec = (long)((interval_ms - iv.tv_sec * 1000.0) * 1e6);
	int exit_code = 0;
	for (;;) {
		nanosleep(&iv, NULL);
		if (!have_uffd && kind == PROSPER_TRACK_PAGE && s->enabled && execs > 0) {
			int rc = recv_uffd(sv[0], pid, &uffd);
			if (rc) {
				disable(s, rc == -ENOSYS ? "userfaultfd is not available (vm.unprivileged_userfaultfd?)"
							 : "the shim did not report (statically linked program?)");
			} else {
				have_uffd = 1;
				if (prosper_track_open(&s->track, kind, pid, uffd) != 0)
					disable(s, s->track.err);
			}
		}
		if (kind == PROSPER_TRACK_FULL && !have_uffd && execs > 0) {
			prosper_track_open(&s->track, kind, pid, -1);
			have_uffd = 1;
		}
		if (ptrace(PTRACE_INTERRUPT, pid, 0, 0) != 0 && errno == ESRCH)
			break;
		/* Wait for our interrupt stop; forward everything else. */
		for (;;) {
			pid_t w = waitpid(-1, &st, __WALL);
			if (w < 0)
				goto done;
			if (w != pid) {
				/* a new thread or child process: not supervised in round 1 */
				if (WIFSTOPPED(st))
					ptrace(PTRACE_DETACH, w, 0, 0);
				continue;
			}
			if (WIFEXITED(st)) { exit_code = WEXITSTATUS(st); goto done; }
			if (WIFSIGNALED(st)) { exit_code = 128 + WTERMSIG(st); goto done; }
			int event = st >> 16, sig = WSTOPSIG(st);
			if (event == PTRACE_EVENT_EXEC) {
				if (++execs > 1)
					disable(s, "the program executed another program");
				ptrace(PTRACE_CONT, pid, 0, 0);
				continue;
			}
			if (event == PTRACE_EVENT_CLONE) {
				disable(s, "the program started a thread (multi-threaded programs are not persisted yet)");
				ptrace(PTRACE_CONT, pid, 0, 0);
				continue;
			}
			if (event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK) {
				disable(s, "the program forked (multi-process programs are not persisted)");
				ptrace(PTRACE_CONT, pid, 0, 0);
				continue;
			}
			if (event == PTRACE_EVENT_STOP) {
				int group = sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
				if (s->enabled && have_uffd && execs > 0) {
					double t0 = now();
					int rc = checkpoint(s);
					double dt = now() - t0;
					s->stop_total += dt;
					if (dt > s->stop_max)
						s->stop_max = dt;
					if (rc) {
						static char why[300];
						snprintf(why, sizeof why, "checkpoint failed: %s (%s)", strerror(-rc),
							 s->track.err[0] ? s->track.err : prosper_pool_errormsg());
						disable(s, why);
					}
				}
				ptrace(group ? PTRACE_LISTEN : PTRACE_CONT, pid, 0, 0);
				break;
			}
			ptrace(PTRACE_CONT, pid, 0, (void *)(long)sig); /* signal-delivery stop: deliver it */
		}
	}
done:
	if (stats) {
		FILE *f = fopen(stats, "w");
		if (f) {
			fprintf(f, "{\"checkpoints\": %llu, \"bytes\": %llu, \"stack_bytes\": %llu, \"stack_page_bytes\": %llu, "
				   "\"page_bytes\": %llu, \"mean_stop_ms\": %.4f, \"max_stop_ms\": %.4f, "
				   "\"mismatches\": %llu, \"verified_bytes\": %llu, \"epoch\": %llu, \"tracker\": \"%s\", "
				   "\"disabled\": %s%s%s}\n",
				(unsigned long long)s->checkpoints, (unsigned long long)s->bytes,
				(unsigned long long)s->stack_bytes, (unsigned long long)s->stack_page_bytes,
				(unsigned long long)s->page_bytes,
				s->checkpoints ? 1e3 * s->stop_total / s->checkpoints : 0.0, 1e3 * s->stop_max,
				(unsigned long long)s->mismatches, (unsigned long long)s->verified_bytes,
				(unsigned long long)prosper_pool_epoch(s->pool), tracker, s->disabled_reason ? "\"" : "null",
				s->disabled_reason ? s->disabled_reason : "", s->disabled_reason ? "\"" : "");
			fclose(f);
		}
	}
	prosper_track_close(&s->track);
	prosper_pool_close(&s->pool);
	return exit_code;
}
