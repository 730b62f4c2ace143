/* crash_workload.h -- a deterministic random workload on a container, and its DRAM model.
 *
 * Epoch e of seed s is a fixed list of operations on NSLOTS object slots (allocate and fill,
 * free, overwrite a sub-range), chosen by a generator seeded with (s, e).  A child process runs
 * epochs on a container, checkpointing after each and counting them in the container; after a
 * SIGKILL the parent replays the same epochs on a DRAM model and demands that the recovered
 * container equal the model after exactly the number of epochs it says it holds.
 *
 * write_bytes() is the only way the workload writes the container: in an instrumented build
 * the compiler adds the hooks; with CRPM_TRACK_HOOKS in a plain build it annotates by hand.
 */
#ifndef CRASH_WORKLOAD_H
#define CRASH_WORKLOAD_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "prosper/crpm.h"

#define NSLOTS 192

struct wl_state { /* root 0 of the container */
	uint64_t epochs_done;
	uint64_t seed;
	unsigned char *obj[NSLOTS];
	uint32_t size[NSLOTS];
};

struct wl_model {
	unsigned char *obj[NSLOTS];
	uint32_t size[NSLOTS];
};

static inline uint64_t wl_next(uint64_t *x)
{
	uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static int wl_annotate; /* CRPM_TRACK_HOOKS in an uninstrumented build */

static inline void write_bytes(void *dst, int byte, size_t n)
{
	if (wl_annotate)
		crpm_annotate(dst, n);
	memset(dst, byte, n);
}

static inline void write_word(void *dst, const void *src, size_t n)
{
	if (wl_annotate)
		crpm_annotate(dst, n);
	memcpy(dst, src, n);
}

static inline uint32_t wl_size(uint64_t r)
{
	switch (r % 4) {
	case 0: return 1 + (uint32_t)(r >> 8) % 200;
	case 1: return 1 + (uint32_t)(r >> 8) % 4096;
	case 2: return 1 + (uint32_t)(r >> 8) % 30000;
	default: return 1 + (uint32_t)(r >> 8) % 400000;
	}
}

/* One epoch, on the container (c != NULL, s in it) or on the model (c == NULL). */
static inline int wl_epoch(crpm_t *c, struct wl_state *s, struct wl_model *m, uint64_t seed, uint64_t e)
{
	uint64_t x = seed * 1000003u + e;
	int nops = 1 + (int)(wl_next(&x) % 40);
	for (int i = 0; i < nops; i++) {
		uint64_t r = wl_next(&x);
		unsigned k = (unsigned)(r % NSLOTS);
		uint64_t r2 = wl_next(&x);
		int byte = (int)(r2 & 0xFF);
		unsigned char *o = c ? s->obj[k] : m->obj[k];
		uint32_t size = c ? s->size[k] : m->size[k];
		if (!o) {
			uint32_t n = wl_size(r2 >> 8);
			if (c) {
				o = crpm_malloc(c, n);
				if (!o)
					return -1;
				write_word(&s->obj[k], &o, sizeof o);
				write_word(&s->size[k], &n, sizeof n);
			} else {
				o = malloc(n);
				m->obj[k] = o;
				m->size[k] = n;
			}
			write_bytes(o, byte, n);
		} else if (r2 % 3 == 0) {
			unsigned char *none = NULL;
			uint32_t zero = 0;
			if (c) {
				crpm_free(c, o);
				write_word(&s->obj[k], &none, sizeof none);
				write_word(&s->size[k], &zero, sizeof zero);
			} else {
				free(o);
				m->obj[k] = NULL;
				m->size[k] = 0;
			}
		} else {
			uint64_t r3 = wl_next(&x);
			uint32_t from = (uint32_t)(r3 % size), len = 1 + (uint32_t)((r3 >> 32) % (size - from));
			write_bytes(o + from, byte, len);
		}
	}
	return 0;
}
#endif
