/* track.c -- finding the writes to containers: store hooks, annotations, write faults.
 *
 * Three ways a write is found, all ending in the same per-segment state machine
 * (crpm_internal.h: SEG_CLEAN -> SEG_HOOKED | SEG_FAULTED, back to SEG_CLEAN at a checkpoint):
 *   - clang's SanitizerCoverage trace-stores calls __sanitizer_cov_storeN(addr) before every
 *     store of an instrumented program (bin/prosper-cc).  The hook first tests the address
 *     against ONE range covering every open container (two loads, a subtract, a compare), so a
 *     store to the stack or the C heap costs a call and a branch.
 *   - crpm_annotate and the mem* wrappers (linked with --wrap by prosper-cc) name a range.
 *   - Uninstrumented stores: every segment is write-protected (mprotect) at the start of an
 *     epoch; the first store to one raises SIGSEGV, the handler prepares the segment and
 *     unprotects it, the store is restarted.  Which blocks it changed is then unknown, so the
 *     segment is SEG_FAULTED and the checkpoint compares it with its committed copy.
 *
 * Why mprotect+SIGSEGV and not userfaultfd write-protection: in-process and synchronous (no
 * handler thread, the faulting thread does its own copy-on-write), independent of
 * vm.unprivileged_userfaultfd, and at SEGMENT granularity the number of mappings stays at one
 * per segment at most (page-granular protection could split a 1 GiB container into 262144
 * mappings, past vm.max_map_count).  Block precision comes from the comparison, not from the
 * protection granularity.
 *
 * Invariants
 *   T1 A segment leaves SEG_CLEAN only after its copy-on-write is durable (default mode), and
 *      is writable before its state says so: a thread that sees a non-CLEAN state may store.
 *   T2 In an instrumented program every store to a SEG_HOOKED segment sets its blocks' bits in
 *      c->dirty before it happens.  In a program that is not instrumented (or with
 *      CRPM_TRACK_PROTECT) no segment becomes SEG_HOOKED: the library's own writes mark a
 *      segment SEG_FAULTED too, so no uninstrumented store goes unseen.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "prosper/internal/crpm_internal.h"
#include "hook.h"

#define MAX_OPEN 16

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct crpm_container *open_ctrs[MAX_OPEN];
/* The filter: every container lies in [filter_lo, filter_lo + filter_span).  Exported under
 * these names for the copy of the hooks instrumented.c puts into the program itself. */
uintptr_t crpm__filter_lo, crpm__filter_span; /* hook.h */
#define filter_lo crpm__filter_lo
#define filter_span crpm__filter_span
static int handler_installed;
static struct sigaction previous_segv;
/* Set by the object prosper-cc links into instrumented programs (instrumented.c). */
static int program_instrumented;

void crpm_declare_instrumented(void) { program_instrumented = 1; }

int crpm_program_instrumented(void) { return program_instrumented; }

/* The container of the last hit, checked first (a program usually has one). */
static struct crpm_container *last_hit;

static struct crpm_container *find_ctr(uintptr_t a)
{
	struct crpm_container *c = __atomic_load_n(&last_hit, __ATOMIC_RELAXED);
	if (c && a - (uintptr_t)c->base < c->length)
		return c;
	for (int i = 0; i < MAX_OPEN; i++) {
		c = __atomic_load_n(&open_ctrs[i], __ATOMIC_ACQUIRE);
		if (c && a - (uintptr_t)c->base < c->length) {
			__atomic_store_n(&last_hit, c, __ATOMIC_RELAXED);
			return c;
		}
	}
	return NULL;
}

static void fatal(struct crpm_container *c, const char *what)
{
	fprintf(stderr, "crpm: %s: %s; the container cannot stay consistent, aborting\n", what, crpm_errormsg());
	abort();
}

/* prepare -- the first write of this epoch to segment k: copy-on-write (default mode), make it
 * writable, publish its state (T1). */
static void prepare(struct crpm_container *c, uint32_t k, uint8_t how)
{
	pthread_mutex_lock(&c->lock);
	if (__atomic_load_n(&c->seg_state[k], __ATOMIC_ACQUIRE) == SEG_CLEAN) {
		if (c->mode == CRPM_MODE_DEFAULT) {
			int rc = prosper_pool_direct_prepare(c->pool, c->region, k);
			if (rc) {
				crpm_fail(rc, "copy-on-write of segment %u: %s", k, prosper_pool_errormsg());
				fatal(c, "a write to the container");
			}
		}
		if (c->tracking != CRPM_TRACK_HOOKS &&
		    mprotect(c->base + (uint64_t)k * c->seg_size, c->seg_size, PROT_READ | PROT_WRITE)) {
			crpm_fail(-errno, "mprotect: %s", strerror(errno));
			fatal(c, "unprotecting a segment");
		}
		if (how == SEG_FAULTED)
			c->faults++;
		__atomic_store_n(&c->seg_state[k], how, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&c->lock);
}

static inline void mark_blocks(struct crpm_container *c, uint64_t off, uint64_t len)
{
	uint64_t b0 = off >> c->block_shift, b1 = (off + len - 1) >> c->block_shift;
	for (uint64_t b = b0; b <= b1; b++) {
		uint64_t *w = &c->dirty[b >> 6], m = 1ull << (b & 63);
		if (!(__atomic_load_n(w, __ATOMIC_RELAXED) & m))
			__atomic_fetch_or(w, m, __ATOMIC_RELAXED);
	}
}

static uint8_t note_state(const struct crpm_container *c)
{
	return c->tracking == CRPM_TRACK_PROTECT || (c->tracking == CRPM_TRACK_AUTO && !program_instrumented)
		       ? SEG_FAULTED
		       : SEG_HOOKED;
}

/* note -- the first write of this epoch to each segment of the range prepares it; with mark,
 * the blocks are recorded as written (SEG_HOOKED segments). */
static int note(struct crpm_container *c, void *addr, size_t len, int mark)
{
	uint64_t off = (uint64_t)((uint8_t *)addr - c->base);
	if (!len || off >= c->length || c->tracking == CRPM_TRACK_PAGES)
		return 0; /* the page tracker sees every write by itself */
	if (len > c->length - off)
		len = c->length - off;
	uint8_t how = note_state(c);
	for (uint64_t k = off >> c->seg_shift; k <= (off + len - 1) >> c->seg_shift; k++)
		if (__atomic_load_n(&c->seg_state[k], __ATOMIC_ACQUIRE) == SEG_CLEAN)
			prepare(c, (uint32_t)k, how);
	if (mark && how == SEG_HOOKED)
		mark_blocks(c, off, len);
	return 0;
}

int crpm_note_write(struct crpm_container *c, void *addr, size_t len) { return note(c, addr, len, 1); }

int crpm_protect_all(struct crpm_container *c)
{
	if (c->tracking == CRPM_TRACK_HOOKS || c->tracking == CRPM_TRACK_PAGES || !c->length)
		return 0;
	if (mprotect(c->base, c->length, PROT_READ))
		return crpm_fail(-errno, "cannot write-protect the container: %s", strerror(errno));
	return 0;
}

/* ---- write faults ---- */

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr;
	struct crpm_container *c = a - filter_lo < filter_span ? find_ctr(a) : NULL;
	if (c && c->tracking != CRPM_TRACK_HOOKS && c->tracking != CRPM_TRACK_PAGES) {
		uint32_t k = (uint32_t)((a - (uintptr_t)c->base) >> c->seg_shift);
		if (__atomic_load_n(&c->seg_state[k], __ATOMIC_ACQUIRE) == SEG_CLEAN)
			prepare(c, k, SEG_FAULTED);
		return; /* the store is restarted and now succeeds */
	}
	/* Not ours: hand it to whoever handled SIGSEGV before us, or die of it. */
	if (previous_segv.sa_flags & SA_SIGINFO) {
		previous_segv.sa_sigaction(sig, si, uc);
	} else if (previous_segv.sa_handler != SIG_DFL && previous_segv.sa_handler != SIG_IGN) {
		previous_segv.sa_handler(sig);
	} else {
		signal(SIGSEGV, SIG_DFL); /* the faulting instruction runs again and kills us */
	}
}

static int install_handler(void)
{
	if (handler_installed)
		return 0;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, &previous_segv))
		return crpm_fail(-errno, "cannot install the write-fault handler: %s", strerror(errno));
	handler_installed = 1;
	return 0;
}

/* ---- the registry of open containers ---- */

static void recompute_filter(void)
{
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	for (int i = 0; i < MAX_OPEN; i++) {
		struct crpm_container *c = open_ctrs[i];
		if (!c)
			continue;
		if ((uintptr_t)c->base < lo)
			lo = (uintptr_t)c->base;
		if ((uintptr_t)c->base + c->capacity > hi)
			hi = (uintptr_t)c->base + c->capacity;
	}
	/* Span first to 0 so a concurrent hook never sees a new low bound with an old span. */
	__atomic_store_n(&filter_span, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&filter_lo, hi ? lo : 0, __ATOMIC_RELEASE);
	__atomic_store_n(&filter_span, hi ? hi - lo : 0, __ATOMIC_RELEASE);
}

int crpm_track_register(struct crpm_container *c)
{
	pthread_mutex_lock(&reg_lock);
	int rc = c->tracking == CRPM_TRACK_AUTO || c->tracking == CRPM_TRACK_PROTECT ? install_handler() : 0;
	int slot = -1;
	for (int i = 0; i < MAX_OPEN && slot < 0; i++)
		if (!open_ctrs[i])
			slot = i;
	if (!rc && slot < 0)
		rc = crpm_fail(-EMFILE, "more than %d containers open", MAX_OPEN);
	if (!rc) {
		__atomic_store_n(&open_ctrs[slot], c, __ATOMIC_RELEASE);
		recompute_filter();
		c->registered = 1;
	}
	pthread_mutex_unlock(&reg_lock);
	return rc;
}

void crpm_track_unregister(struct crpm_container *c)
{
	if (!c->registered)
		return;
	pthread_mutex_lock(&reg_lock);
	for (int i = 0; i < MAX_OPEN; i++)
		if (open_ctrs[i] == c)
			__atomic_store_n(&open_ctrs[i], NULL, __ATOMIC_RELEASE);
	__atomic_store_n(&last_hit, NULL, __ATOMIC_RELAXED);
	recompute_filter();
	c->registered = 0;
	pthread_mutex_unlock(&reg_lock);
}

/* ---- hooks ---- */

void crpm__hook_slow(uintptr_t a, size_t n)
{
	struct crpm_container *c = find_ctr(a);
	if (c && c->tracking != CRPM_TRACK_PROTECT)
		crpm_note_write(c, (void *)a, n);
}

#define HOOK(a, n) CRPM_HOOK(a, n)

void crpm_annotate(void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr;
	if (!len || a - filter_lo >= filter_span)
		return;
	struct crpm_container *c = find_ctr(a);
	if (c && a + len - (uintptr_t)c->base <= c->length) {
		crpm_note_write(c, addr, len);
		return;
	}
	/* A range may start before or span several containers: note each part. */
	for (int i = 0; i < MAX_OPEN; i++) {
		struct crpm_container *c = __atomic_load_n(&open_ctrs[i], __ATOMIC_ACQUIRE);
		if (!c)
			continue;
		uintptr_t lo = (uintptr_t)c->base, hi = lo + c->length;
		uintptr_t s = a > lo ? a : lo, e = a + len < hi ? a + len : hi;
		if (s < e)
			crpm_note_write(c, (void *)s, e - s);
	}
}

/* For lib/crpm/stdcxx.c: prepare a range before an uninstrumented routine may write it, and
 * mark afterwards only what it really changed. */
void crpm__prepare(void *addr, size_t len)
{
	struct crpm_container *c = (uintptr_t)addr - filter_lo < filter_span ? find_ctr((uintptr_t)addr) : NULL;
	if (c && c->tracking != CRPM_TRACK_PROTECT)
		note(c, addr, len, 0);
}

void crpm__mark(void *addr, size_t len) { crpm_annotate(addr, len); }

void __sanitizer_cov_store1(void *p) { HOOK(p, 1); }
void __sanitizer_cov_store2(void *p) { HOOK(p, 2); }
void __sanitizer_cov_store4(void *p) { HOOK(p, 4); }
void __sanitizer_cov_store8(void *p) { HOOK(p, 8); }
void __sanitizer_cov_store16(void *p) { HOOK(p, 16); }
/* Loads are not traced, but a program built with other coverage flags may reference these. */
void __sanitizer_cov_load1(void *p) { (void)p; }
void __sanitizer_cov_load2(void *p) { (void)p; }
void __sanitizer_cov_load4(void *p) { (void)p; }
void __sanitizer_cov_load8(void *p) { (void)p; }
void __sanitizer_cov_load16(void *p) { (void)p; }

/* ---- memory functions of instrumented programs (prosper-cc links with --wrap=NAME) ---- */

void *__wrap_memcpy(void *d, const void *s, size_t n)
{
	crpm_annotate(d, n);
	return memcpy(d, s, n);
}
void *__wrap_memmove(void *d, const void *s, size_t n)
{
	crpm_annotate(d, n);
	return memmove(d, s, n);
}
void *__wrap_memset(void *d, int v, size_t n)
{
	crpm_annotate(d, n);
	return memset(d, v, n);
}
void *__wrap___memcpy_chk(void *d, const void *s, size_t n, size_t dn)
{
	if (n > dn)
		abort();
	return __wrap_memcpy(d, s, n);
}
void *__wrap___memmove_chk(void *d, const void *s, size_t n, size_t dn)
{
	if (n > dn)
		abort();
	return __wrap_memmove(d, s, n);
}
void *__wrap___memset_chk(void *d, int v, size_t n, size_t dn)
{
	if (n > dn)
		abort();
	return __wrap_memset(d, v, n);
}
