/* inspect_cost -- measure the unit costs of the checkpoint-time model of the tracker
 * experiments on this machine: one empty 64-bit bitmap word through the real inspection code,
 * one emitted run (alternating bits, minus the scan part), one byte copied (memcpy of 4 KiB
 * blocks).  Prints one JSON object. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "prosper/stackckpt.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t sink;
static void emit(void *ctx, uint64_t off, uint64_t len) { sink += off ^ len; }

int main(void)
{
	enum { WORDS = 1 << 16, REPS = 200 };
	uint64_t *bm = calloc(WORDS, 8);
	double t = now();
	for (int r = 0; r < REPS; r++)
		prosper_stack_inspect(bm, WORDS, 0, (uint64_t)WORDS * 64 * 8, 3, 0, UINT64_MAX, emit, NULL, NULL);
	double scan = (now() - t) / ((double)REPS * WORDS);
	double t_runs = 0;
	for (int r = 0; r < REPS; r++) {
		for (int i = 0; i < WORDS; i++)
			bm[i] = 0x5555555555555555ull; /* 32 runs per word */
		t = now();
		prosper_stack_inspect(bm, WORDS, 0, (uint64_t)WORDS * 64 * 8, 3, 0, UINT64_MAX, emit, NULL, NULL);
		t_runs += now() - t;
	}
	double run = (t_runs / REPS - scan * WORDS) / (WORDS * 32.0);
	size_t n = 64 << 20;
	char *a = malloc(n), *b = malloc(n);
	memset(a, 1, n);
	memset(b, 2, n);
	t = now();
	for (int r = 0; r < 4; r++)
		for (size_t o = 0; o < n; o += 4096)
			memcpy(b + o, a + o, 4096);
	double copy = (now() - t) / (4.0 * n);
	printf("{\"scan_ns_per_word\": %.4f, \"run_ns\": %.4f, \"copy_ns_per_byte\": %.5f, \"sink\": %llu}\n",
	       scan * 1e9, run * 1e9, copy * 1e9, (unsigned long long)(sink & 1) + (unsigned long long)(b[4097] == 9));
	return 0;
}
