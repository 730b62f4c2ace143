/* nvm.c -- NVM-resident memory of a supervised program (include/prosper/nvm.h).
 *
 * Each prosper_nvm_alloc is a DIRECT pool region (libcrpm's default mode: the working copy is
 * the main slots, pool.h) of kind NVM, mapped into the program MAP_SHARED from the pool file at
 * a fixed address (NVM_BASE upwards, never reused), segment by segment at the slots' offsets.
 * The pool is written by one protocol in one process: the supervisor's handle makes every
 * copy-on-write and every commit; the program only stores into main slots it was allowed to.
 *
 *   request  libprosper-nvm stops in the shim's `int3; ret` gate; we add/remove the region, make
 *            the program open the pool and map (or unmap) it through the syscall gate, answer in
 *            rax.  A new region's segments are new in this epoch: mapped writable.
 *   fault    a clean segment is mapped read-only; the first store of an epoch raises SIGSEGV,
 *            which ptrace shows us before the program sees it: copy-on-write of the committed
 *            contents into a backup slot, made durable (prosper_pool_direct_prepare), then an
 *            injected mprotect makes the segment writable, and the store is restarted without
 *            the signal.  A fault may also OPEN segments AHEAD of their own first store (below):
 *            they are prepared in the same batch, made writable by one mprotect per run of
 *            adjacent segments, and are "written" from then on exactly like the faulting one.
 *   stop     every region written in the interval is made read-only again (one injected
 *            mprotect per region); its written segments are handed to the commit.  Nothing of
 *            it is copied.
 *   commit   (worker, program running) each written segment is compared with its committed copy
 *            at block granularity and the changed blocks are named with prosper_pool_direct_dirty
 *            (the commit flushes them from the main slots); then the epoch commits with the DRAM
 *            state of the same stop.
 *   resume   recovery has put every segment's committed contents into its main slot (slots never
 *            move): the regions are mapped read-only again at their addresses; no copy.
 *
 * Opening ahead (nvm_ahead.c): a fault also opens the segments the program is about to write.
 *
 * Invariants
 *   N1 A segment is writable in the program only after its copy-on-write of this epoch is
 *      durable (or while new in this epoch): a crash at any instant recovers the NVM contents of
 *      the last committed epoch.
 *   N2 At a stop every written segment is write-protected before the program runs again, and a
 *      fault is served only once the commit of the previous stop has finished (the caller waits
 *      for it), so the main slots hold exactly the stop's contents until that commit is durable.
 *   N3 NVM mappings are never part of the DRAM capture (capture.c skips them) and never in the
 *      epoch blob: the pool's region table of the epoch is their only record.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <time.h>
#include "prosper/internal/shim_proto.h"
#include "inject.h"
#include "nvm_ahead.h"
#include "stopclock.h"
#include "sup.h"
#include "nvm.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

/* Far above the executable, heap and libraries of a program run without ASLR, below the stack. */
#define NVM_BASE 0x600000000000ull

struct nvm_region *sup_nvm_find(struct sup *s, uint64_t addr)
{
	for (int i = 0; i < s->nnvm; i++)
		if (addr - s->nvm[i].start < s->nvm[i].len)
			return &s->nvm[i];
	return NULL;
}

static struct nvm_region *nvm_add(struct sup *s, uint32_t id, uint64_t start, uint64_t len)
{
	if (s->nnvm == s->nvm_cap) {
		int cap = s->nvm_cap ? 2 * s->nvm_cap : 16;
		struct nvm_region *n = realloc(s->nvm, (size_t)cap * sizeof *n);
		if (!n)
			return NULL;
		s->nvm = n;
		s->nvm_cap = cap;
	}
	uint32_t nsegs = (uint32_t)(len / s->nvm_seg);
	struct nvm_region *r = &s->nvm[s->nnvm];
	*r = (struct nvm_region){ .id = id, .start = start, .len = len, .written = calloc(nsegs, 1),
				  .committing = calloc(nsegs, 1), .changed = calloc(nsegs, 1), .ahead = calloc(nsegs, 1) };
	if (!r->written || !r->committing || !r->changed || !r->ahead) {
		free(r->written);
		free(r->committing);
		free(r->changed);
		free(r->ahead);
		return NULL;
	}
	s->nnvm++;
	if (start + len > s->nvm_next)
		s->nvm_next = start + len;
	return r;
}

static void nvm_drop(struct sup *s, struct nvm_region *r)
{
	free(r->written);
	free(r->committing);
	free(r->changed);
	free(r->ahead);
	*r = s->nvm[--s->nnvm];
}

/* nvm_map -- make the program map region r from the pool file (whose path is at path_addr in
 * the program) with prot, every run of segments whose slots are adjacent in one mmap. */
static long nvm_map(struct sup *s, struct inject *in, uint64_t path_addr, const struct nvm_region *r, int prot,
		    long fixed)
{
	long fd = inject_syscall(in, SYS_openat, AT_FDCWD, (long)path_addr, O_RDWR | O_CLOEXEC, 0, 0, 0);
	if (fd < 0)
		return fd;
	long rc = 0;
	uint32_t nsegs = (uint32_t)(r->len / s->nvm_seg);
	for (uint32_t k = 0; k < nsegs && rc >= 0;) {
		int64_t off = prosper_pool_direct_offset(s->tree->pool, r->id, k);
		if (off < 0) {
			rc = -EIO;
			break;
		}
		uint32_t e = k + 1;
		while (e < nsegs && prosper_pool_direct_offset(s->tree->pool, r->id, e) == off + (int64_t)((e - k) * s->nvm_seg))
			e++;
		uint64_t at = r->start + (uint64_t)k * s->nvm_seg, n = (uint64_t)(e - k) * s->nvm_seg;
		long got = inject_syscall(in, SYS_mmap, (long)at, (long)n, prot, MAP_SHARED | fixed, fd, (long)off);
		rc = got == (long)at ? 0 : got < 0 ? got : -EEXIST;
		k = e;
	}
	inject_syscall(in, SYS_close, fd, 0, 0, 0, 0, 0);
	return rc;
}

static long nvm_alloc(struct sup *s, struct inject *in, uint64_t size)
{
	uint64_t seg = s->nvm_seg, len = (size + seg - 1) / seg * seg;
	if (size > (1ull << 40) || !len)
		return -ENOMEM;
	uint64_t start = s->nvm_next > NVM_BASE ? s->nvm_next : NVM_BASE;
	char name[PROSPER_REGION_NAME_MAX];
	snprintf(name, sizeof name, "nvm%llx", (unsigned long long)start);
	int id = prosper_pool_region_add(s->tree->pool, name, PROSPER_KIND_NVM, PROSPER_REGION_DIRECT, start, len, 3);
	if (id < 0)
		return -ENOMEM;
	struct nvm_region *r = nvm_add(s, (uint32_t)id, start, len);
	long rc = r ? 0 : -ENOMEM;
	if (!rc && inject_write(s->nvm_proc, s->nvm_path_addr, s->tree->pool_path, strlen(s->tree->pool_path) + 1) != 0)
		rc = -EIO;
	/* new segments: writable at once, all of them compared at the next stop */
	if (!rc)
		rc = nvm_map(s, in, s->nvm_path_addr, r, PROT_READ | PROT_WRITE, MAP_FIXED_NOREPLACE);
	if (rc) {
		if (r) {
			inject_syscall(in, SYS_munmap, (long)start, (long)len, 0, 0, 0, 0);
			nvm_drop(s, r);
		}
		prosper_pool_region_remove(s->tree->pool, (uint32_t)id);
		return rc == -EEXIST || rc == -EIO ? -ENOMEM : rc;
	}
	memset(r->written, 1, len / seg);
	r->any_written = 1;
	return (long)start;
}

static long nvm_free(struct sup *s, struct inject *in, uint64_t addr)
{
	struct nvm_region *r = sup_nvm_find(s, addr);
	if (!r)
		return -ENOENT;
	if (r->start != addr)
		return -EINVAL;
	if (inject_syscall(in, SYS_munmap, (long)r->start, (long)r->len, 0, 0, 0, 0) != 0)
		return -EINVAL;
	int rc = prosper_pool_region_remove(s->tree->pool, r->id);
	nvm_drop(s, r);
	return rc ? -EIO : 0;
}

/* nvm_inject -- control thread tid (stopped) for injected calls.  /proc/PID/mem is opened once
 * per program and shared: a fault costs two stops of the thread, not a file open. */
static int nvm_inject(struct sup *s, pid_t tid, struct inject *in)
{
	if (!s->nvm_proc) {
		struct inject *p = calloc(1, sizeof *p);
		if (!p || inject_open(p, tid, s->gate) != 0) {
			free(p);
			return -1;
		}
		s->nvm_proc = p;
	}
	return inject_open_thread(in, s->nvm_proc, tid);
}

int sup_nvm_claims(struct sup *s, pid_t tid, int sig)
{
	if (sig == SIGTRAP && s->nvm_gate) {
		struct user_regs_struct regs;
		return ptrace(PTRACE_GETREGS, tid, 0, &regs) == 0 && regs.rip == s->nvm_gate + 1;
	}
	if (sig == SIGSEGV && s->nnvm) {
		siginfo_t si;
		return ptrace(PTRACE_GETSIGINFO, tid, 0, &si) == 0 && si.si_code == SEGV_ACCERR &&
		       sup_nvm_find(s, (uint64_t)(uintptr_t)si.si_addr) != NULL;
	}
	return 0;
}

/* A request at the gate: the answer goes into rax, the thread returns from the gate. */
static int serve_request(struct sup *s, pid_t tid)
{
	struct inject in;
	if (nvm_inject(s, tid, &in) != 0)
		return -1;
	struct user_regs_struct regs = in.base;
	long op = (long)regs.rdi, arg = (long)regs.rsi, answer;
	if (!s->tree->pool || !s->gate || !s->nvm_path_addr)
		answer = -ENOSYS;
	else if (op == SHIM_NVM_ALLOC)
		answer = s->tree->enabled ? nvm_alloc(s, &in, (uint64_t)arg) : -ENOSYS;
	else if (op == SHIM_NVM_FREE)
		answer = nvm_free(s, &in, (uint64_t)arg);
	else
		answer = -EINVAL;
	regs.rax = (unsigned long)answer;
	int rc = ptrace(PTRACE_SETREGS, tid, 0, &regs);
	inject_close(&in);
	return rc;
}

/* A first store to a clean segment: copy-on-write, then writable (N1) -- with the segments
 * prepared ahead, by one injected mprotect per run of adjacent segments. */
static int serve_fault(struct sup *s, pid_t tid, char *why, size_t whylen)
{
	siginfo_t si;
	if (ptrace(PTRACE_GETSIGINFO, tid, 0, &si) != 0)
		return -1;
	uint64_t a = (uint64_t)(uintptr_t)si.si_addr;
	struct nvm_region *r = sup_nvm_find(s, a);
	uint32_t k = (uint32_t)((a - r->start) / s->nvm_seg), *set, n;
	if (nvm_prepare_set(s, r, k, &set, &n, why, whylen) != 0)
		return -1;
	struct inject in;
	if (nvm_inject(s, tid, &in) != 0) {
		free(set);
		return -1;
	}
	long m = 0;
	for (uint32_t i = 0; i < n && !m;) {
		uint32_t e = i + 1;
		while (e < n && set[e] == set[e - 1] + 1)
			e++;
		m = inject_syscall(&in, SYS_mprotect, (long)(r->start + (uint64_t)set[i] * s->nvm_seg),
				   (long)((uint64_t)(e - i) * s->nvm_seg), PROT_READ | PROT_WRITE, 0, 0, 0);
		i = e;
	}
	int rc = ptrace(PTRACE_SETREGS, tid, 0, &in.base);
	inject_close(&in);
	if (m != 0 || rc != 0) {
		for (uint32_t i = 0; i < n; i++)
			r->ahead[set[i]] = AHEAD_NONE;
		free(set);
		snprintf(why, whylen, "cannot make NVM segment %u writable in the program", k);
		return -1;
	}
	for (uint32_t i = 0; i < n; i++) {
		r->written[set[i]] = 1;
		s->tree->stats.nvm.ahead_segments += set[i] != k;
	}
	free(set);
	r->any_written = 1;
	s->tree->stats.nvm.faults++;
	return 0;
}

int sup_nvm_serve(struct sup *s, pid_t tid, int sig, char *why, size_t whylen)
{
	snprintf(why, whylen, "cannot serve an NVM request of thread %d", (int)tid);
	double t0 = stopclock_now();
	int rc = sig == SIGTRAP ? serve_request(s, tid) : serve_fault(s, tid, why, whylen);
	if (sig != SIGTRAP)
		s->tree->stats.nvm.fault_seconds += stopclock_now() - t0;
	if (rc == 0 && ptrace(PTRACE_CONT, tid, 0, 0) != 0)
		rc = -1;
	return rc;
}

int sup_nvm_stop(struct sup *s)
{
	int any = 0;
	for (int i = 0; i < s->nnvm; i++)
		any |= s->nvm[i].any_written;
	if (!any)
		return 0;
	/* any thread in a stop of ours executes the calls; a group-stopped one cannot */
	const struct thr *t = NULL;
	for (int i = 0; i < s->nthr && !t; i++)
		if (s->thr[i].stopped && !s->thr[i].listening)
			t = &s->thr[i];
	struct inject in;
	if (!t || nvm_inject(s, t->tid, &in) != 0)
		return -ESRCH;
	int rc = 0;
	for (int i = 0; i < s->nnvm && !rc; i++) {
		struct nvm_region *r = &s->nvm[i];
		if (!r->any_written)
			continue;
		if (inject_syscall(&in, SYS_mprotect, (long)r->start, (long)r->len, PROT_READ, 0, 0, 0) != 0)
			rc = -EIO;
		memcpy(r->committing, r->written, r->len / s->nvm_seg);
		memset(r->written, 0, r->len / s->nvm_seg);
		r->any_written = 0;
		r->any_committing = 1;
	}
	if (ptrace(PTRACE_SETREGS, t->tid, 0, &in.base) != 0 && !rc)
		rc = -ESRCH;
	inject_close(&in);
	return rc;
}

struct dirty_ctx {
	struct sup *s;
	uint32_t id;
	uint64_t base;
	int rc;
	int changed;
};

static void name_dirty(void *vctx, uint64_t off, uint64_t len)
{
	struct dirty_ctx *d = vctx;
	if (!d->rc)
		d->rc = prosper_pool_direct_dirty(d->s->tree->pool, d->id, d->base + off, len);
	d->s->tree->stats.nvm.dirty_bytes += len;
	d->changed = 1;
}

int sup_nvm_commit(struct sup *s)
{
	for (int i = 0; i < s->nnvm; i++) {
		struct nvm_region *r = &s->nvm[i];
		uint32_t nsegs = (uint32_t)(r->len / s->nvm_seg), repeat = 0, hits = 0, changed = 0;
		for (uint32_t k = 0; k < nsegs && r->any_committing; k++) {
			if (!r->committing[k])
				continue;
			r->committing[k] = 0;
			uint64_t len = 0, n = 0;
			const uint8_t *cur = prosper_pool_direct_addr(s->tree->pool, r->id, k, &len);
			const void *old = NULL;
			if (!cur || prosper_pool_region_view(s->tree->pool, r->id, (uint64_t)k * s->nvm_seg, len, &old, &n) != 0 ||
			    n != len)
				return -EIO;
			if (!old) {
				if (!s->nvm_zeros && !(s->nvm_zeros = calloc(1, s->nvm_seg)))
					return -ENOMEM;
				old = s->nvm_zeros;
			}
			struct dirty_ctx d = { s, r->id, (uint64_t)k * s->nvm_seg, 0, 0 };
			prosper_track_diff(old, cur, len, 256, name_dirty, &d);
			if (d.rc)
				return d.rc;
			r->changed[k] |= (uint8_t)(d.changed << 1); /* bit 1: this interval; bit 0: the last set */
			changed += (uint32_t)d.changed;
			if (r->ahead[k]) {
				s->tree->stats.nvm.ahead_changed += (uint32_t)d.changed;
				if (r->ahead[k] == AHEAD_REPEAT) {
					repeat++;
					hits += (uint32_t)d.changed;
				}
				r->ahead[k] = AHEAD_NONE;
			}
		}
		r->any_committing = 0;
		/* the next repeat set: this interval's changes, or also the last set's when this
		 * interval proved nothing (the program hardly wrote) */
		uint8_t keep = nvm_ahead_judge(r, repeat, hits, changed - hits) ? 0 : 1;
		for (uint32_t k = 0; k < nsegs; k++)
			r->changed[k] = (uint8_t)((r->changed[k] >> 1) | (r->changed[k] & keep));
	}
	return 0;
}

int sup_nvm_restore(struct sup *s, struct inject *in, uint64_t path_addr, char *why, size_t whylen)
{
	int n = prosper_pool_region_count(s->tree->pool);
	for (int i = 0; i < n; i++) {
		struct prosper_region_info ri;
		if (prosper_pool_region_get(s->tree->pool, i, &ri) != 0 || ri.kind != PROSPER_KIND_NVM)
			continue;
		uint64_t seg = 0;
		if (!prosper_pool_direct_addr(s->tree->pool, ri.id, 0, &seg) || seg != s->nvm_seg || ri.length % seg) {
			snprintf(why, whylen, "the pool's NVM region at %#llx is not laid out in %llu-byte segments",
				 (unsigned long long)ri.vaddr, (unsigned long long)s->nvm_seg);
			return -1;
		}
		struct nvm_region *r = nvm_add(s, ri.id, ri.vaddr, ri.length);
		long rc = !r ? -ENOMEM : !path_addr ? -EIO : nvm_map(s, in, path_addr, r, PROT_READ, MAP_FIXED_NOREPLACE);
		if (rc) {
			snprintf(why, whylen, "cannot map NVM memory at %#llx from the pool: %s", (unsigned long long)ri.vaddr,
				 strerror((int)-rc));
			return -1;
		}
	}
	return 0;
}
