/* persist.c -- flush, drain and the atomic commit store for every granularity (see persist.h).
 *
 * The cache-line path uses clwb when the CPU has it, else clflushopt, else clflush; the
 * choice is made once.  The page path calls the kernel itself so that an I/O error becomes a
 * return value (libpmem2's own page path aborts the process): on a file, flush starts the
 * write-back of the pages and drain waits for all of them with one fdatasync -- the device
 * flush, ~0.5 ms on an SSD, is then paid once per ordering point instead of once per range.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <cpuid.h>
#include "prosper/persist.h"

#define LINE 64

static const char *const site_names[PSITE_COUNT] = {
	[PSITE_CREATE] = "create",
	[PSITE_SEG_INIT] = "seg_init",
	[PSITE_SEG_CATCHUP] = "seg_catchup",
	[PSITE_DATA] = "data",
	[PSITE_DIRECT_DATA] = "direct_data",
	[PSITE_STATE] = "state",
	[PSITE_META] = "meta",
	[PSITE_COMMIT_A] = "commit_a",
	[PSITE_COMMIT_B] = "commit_b",
	[PSITE_COW_COPY] = "cow_copy",
	[PSITE_COW_STATE] = "cow_state",
	[PSITE_BIND] = "bind",
	[PSITE_STEAL_MARK] = "steal_mark",
	[PSITE_RECOVER_COPY] = "recover_copy",
	[PSITE_RECOVER_STATE] = "recover_state",
	[PSITE_RECOVER_COMMIT] = "recover_commit",
	[PSITE_FALLOC] = "falloc",
	[PSITE_REDO_LOG] = "redo_log",
	[PSITE_REDO_APPLY] = "redo_apply",
	[PSITE_RECOVER_REDO] = "recover_redo",
	[PSITE_ASL_LOG] = "asl_log",
	[PSITE_ASL_COMMIT] = "asl_commit",
	[PSITE_ASL_SNAP_DATA] = "asl_snap_data",
	[PSITE_ASL_SNAP_MARK] = "asl_snap_mark",
};

const char *prosper_persist_site_name(int site)
{
	return site >= 0 && site < PSITE_COUNT && site_names[site] ? site_names[site] : "?";
}

int prosper_fs_is_memory(long f_type)
{
	return (unsigned long)f_type == TMPFS_MAGIC || (unsigned long)f_type == RAMFS_MAGIC;
}

const char *prosper_granularity_name(int g)
{
	switch (g) {
	case PROSPER_GRAN_BYTE: return "byte";
	case PROSPER_GRAN_CACHE_LINE: return "cache_line";
	case PROSPER_GRAN_PAGE: return "page";
	}
	return "?";
}

enum { FLUSH_UNKNOWN, FLUSH_CLWB, FLUSH_CLFLUSHOPT, FLUSH_CLFLUSH };
static int flush_insn = FLUSH_UNKNOWN;

static void pick_flush_insn(void)
{
	unsigned a, b, c, d;
	int insn = FLUSH_CLFLUSH;
	if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
		if (b & (1u << 24))
			insn = FLUSH_CLWB;
		else if (b & (1u << 23))
			insn = FLUSH_CLFLUSHOPT;
	}
	__atomic_store_n(&flush_insn, insn, __ATOMIC_RELAXED);
}

static void flush_lines(const void *addr, size_t len)
{
	uintptr_t p = (uintptr_t)addr & ~(uintptr_t)(LINE - 1), end = (uintptr_t)addr + len;
	if (flush_insn == FLUSH_UNKNOWN)
		pick_flush_insn();
	for (; p < end; p += LINE) {
		switch (flush_insn) {
		case FLUSH_CLWB: __asm__ volatile(".byte 0x66, 0x0f, 0xae, 0x30" :: "a"(p) : "memory"); break;      /* clwb (%rax) */
		case FLUSH_CLFLUSHOPT: __asm__ volatile(".byte 0x66, 0x0f, 0xae, 0x38" :: "a"(p) : "memory"); break; /* clflushopt (%rax) */
		default: __asm__ volatile("clflush (%0)" :: "r"(p) : "memory"); break;
		}
	}
}

static int skipped(const struct prosper_persist *pp, int site)
{
	return (pp->skip_sites >> site) & 1;
}

int prosper_persist_flush(struct prosper_persist *pp, int site, const void *addr, size_t len)
{
	if (len == 0 || skipped(pp, site))
		return 0;
	if (pp->hooks && pp->hooks->on_flush) {
		int rc = pp->hooks->on_flush(pp->hooks->ctx, site, addr, len);
		if (rc < 0) {
			if (!pp->error)
				pp->error = rc;
			return rc;
		}
	}
	if (pp->simulated)
		return 0;
	switch (pp->granularity) {
	case PROSPER_GRAN_BYTE:
		return 0;
	case PROSPER_GRAN_CACHE_LINE:
		flush_lines(addr, len);
		return 0;
	default: {
		long pg = sysconf(_SC_PAGESIZE);
		uintptr_t start = (uintptr_t)addr & ~(uintptr_t)(pg - 1);
		size_t n = (uintptr_t)addr + len - start;
		if (pp->has_file && pp->file_in_memory)
			return 0;
		if (pp->has_file) {
			off_t off = (off_t)(start - (uintptr_t)pp->file_base);
			pp->file_unsynced = 1;
			if (sync_file_range(pp->file_fd, off, (off_t)n, SYNC_FILE_RANGE_WRITE) == 0)
				return 0;
			if (!pp->error)
				pp->error = -errno;
			return -errno;
		}
		while (msync((void *)start, n, MS_SYNC) != 0) {
			if (errno == EINTR)
				continue;
			if (!pp->error)
				pp->error = -errno;
			return -errno;
		}
		return 0;
	}
	}
}

static uint64_t drains; /* prosper_persist_drain_count */
static uint64_t syncs, sync_ns; /* prosper_persist_sync_stats */

void prosper_persist_sync_stats(uint64_t *count, double *seconds)
{
	*count = __atomic_load_n(&syncs, __ATOMIC_RELAXED);
	*seconds = (double)__atomic_load_n(&sync_ns, __ATOMIC_RELAXED) * 1e-9;
}

static uint64_t ns_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t prosper_persist_drain_count(void) { return __atomic_load_n(&drains, __ATOMIC_RELAXED); }

void prosper_persist_drain(struct prosper_persist *pp, int site)
{
	if (skipped(pp, site))
		return;
	if (pp->hooks && pp->hooks->on_drain)
		pp->hooks->on_drain(pp->hooks->ctx, site);
	if (pp->simulated)
		return;
	__atomic_fetch_add(&drains, 1, __ATOMIC_RELAXED);
	if (pp->granularity != PROSPER_GRAN_PAGE)
		__asm__ volatile("sfence" ::: "memory");
	else if (pp->has_file && pp->file_unsynced) {
		pp->file_unsynced = 0;
		uint64_t t0 = ns_now();
		if (fdatasync(pp->file_fd) != 0 && !pp->error)
			pp->error = -errno;
		__atomic_fetch_add(&syncs, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&sync_ns, ns_now() - t0, __ATOMIC_RELAXED);
	}
}

int prosper_persist_range(struct prosper_persist *pp, int site, const void *addr, size_t len)
{
	int rc = prosper_persist_flush(pp, site, addr, len);
	prosper_persist_drain(pp, site);
	return rc;
}

void prosper_persist_store64(struct prosper_persist *pp, int site, uint64_t *dst, uint64_t v)
{
	__atomic_store_n(dst, v, __ATOMIC_RELEASE); /* one aligned 8-byte mov */
	if (pp->hooks && pp->hooks->on_store64)
		pp->hooks->on_store64(pp->hooks->ctx, site, dst);
}
