/* undo_log.c -- the undo-log baseline of libcrpm's evaluation (§2.2.2, Table 1b), linked into
 * the kv_crpm_undo build only.  The program is compiled with trace-stores, and these hooks
 * replace crpm's: the data structure lives in NVM (a default-mode container used as plain
 * persistent memory, never checkpointed by crpm), and the first store to each 256 B block in
 * an epoch first appends the block's old bytes to a persistent undo log and makes that entry
 * durable (clwb of its lines, sfence) -- one fence per entry, as in the paper's Undo-log.
 * The end of an epoch flushes the written blocks, fences, truncates the log, fences.
 * Recovery (not needed to measure) would copy the entries back.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define BLOCK 256
#define ENTRY (BLOCK + 64) /* {block index, pad} then the old bytes, cache-line aligned */
#define LOG_BYTES (4ull << 30)

static uintptr_t lo, span;
static uint64_t *logged;   /* one bit per block of [lo, lo + span) */
static uint64_t *touched;  /* blocks logged this epoch */
static uint64_t ntouched, cap_touched;
static uint8_t *log_area;  /* entries; word 0 of the area = entries valid (the truncation point) */

/* The link wraps mem* (--wrap), this file included: the real ones are __real_*. */
void *__real_memcpy(void *, const void *, size_t);
void *__real_memmove(void *, const void *, size_t);
void *__real_memset(void *, int, size_t);

static inline void clwb(const void *p) { __asm__ volatile(".byte 0x66, 0x0f, 0xae, 0x30" ::"a"(p) : "memory"); }
static inline void sfence(void) { __asm__ volatile("sfence" ::: "memory"); }

void undo_start(void *base, uint64_t capacity)
{
	lo = (uintptr_t)base;
	logged = calloc(capacity / BLOCK / 64 + 1, 8);
	cap_touched = 1 << 20;
	touched = malloc(cap_touched * 8);
	char path[64];
	snprintf(path, sizeof path, "/dev/shm/undo-log-%d", (int)getpid());
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)LOG_BYTES)) {
		perror("undo log");
		exit(1);
	}
	log_area = mmap(NULL, LOG_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	unlink(path);
	close(fd);
	if (log_area == MAP_FAILED || !logged || !touched) {
		perror("undo log");
		exit(1);
	}
	span = capacity; /* from here on the hooks log */
}

static void log_block(uint64_t b)
{
	uint64_t *w = &logged[b / 64], m = 1ull << (b % 64);
	if (*w & m)
		return;
	if (64 + (ntouched + 1) * ENTRY > LOG_BYTES) {
		fprintf(stderr, "undo log full\n");
		exit(1);
	}
	uint8_t *e = log_area + 64 + ntouched * ENTRY;
	__real_memcpy(e, &b, 8);
	__real_memcpy(e + 64, (const void *)(lo + b * BLOCK), BLOCK);
	for (int i = 0; i < ENTRY; i += 64)
		clwb(e + i);
	sfence();
	*w |= m;
	if (ntouched == cap_touched) {
		cap_touched *= 2;
		touched = realloc(touched, cap_touched * 8);
	}
	touched[ntouched++] = b;
}

static inline void hook(uintptr_t a, size_t n)
{
	if (a - lo >= span)
		return;
	uint64_t b0 = (a - lo) / BLOCK, b1 = (a - lo + n - 1) / BLOCK;
	for (uint64_t b = b0; b <= b1; b++)
		log_block(b);
}

void undo_epoch_end(uint64_t *bytes, uint64_t *fences)
{
	for (uint64_t i = 0; i < ntouched; i++) {
		uint64_t b = touched[i];
		for (int k = 0; k < BLOCK; k += 64)
			clwb((const void *)(lo + b * BLOCK + k));
		logged[b / 64] = 0;
	}
	sfence();
	*(volatile uint64_t *)log_area = 0; /* truncate the log */
	clwb(log_area);
	sfence();
	*bytes = ntouched * BLOCK;
	*fences = ntouched + 2;
	ntouched = 0;
}

void __sanitizer_cov_store1(void *p) { hook((uintptr_t)p, 1); }
void __sanitizer_cov_store2(void *p) { hook((uintptr_t)p, 2); }
void __sanitizer_cov_store4(void *p) { hook((uintptr_t)p, 4); }
void __sanitizer_cov_store8(void *p) { hook((uintptr_t)p, 8); }
void __sanitizer_cov_store16(void *p) { hook((uintptr_t)p, 16); }
void crpm_annotate(void *p, size_t n)
{
	if (n)
		hook((uintptr_t)p, n);
}
/* libstdc++'s node writers (lib/crpm/stdcxx.c): blocks they changed are logged after the
 * call -- the same entries and fences as logging before, which is what this baseline counts. */
void crpm__prepare(void *p, size_t n) { (void)p, (void)n; }
void crpm__mark(void *p, size_t n) { crpm_annotate(p, n); }
void *__wrap_memcpy(void *d, const void *s, size_t n)
{
	crpm_annotate(d, n);
	return __real_memcpy(d, s, n);
}
void *__wrap_memmove(void *d, const void *s, size_t n)
{
	crpm_annotate(d, n);
	return __real_memmove(d, s, n);
}
void *__wrap_memset(void *d, int v, size_t n)
{
	crpm_annotate(d, n);
	return __real_memset(d, v, n);
}
