/* nvmuser -- a program that keeps part of its state in NVM-resident memory (prosper_nvm_alloc)
 * and part in DRAM, for the kill -9 / resume tests and the NVM-vs-DRAM benchmark.
 *
 * usage: nvmuser mixed MIB ROUNDS    state split between MIB MiB of NVM and MIB MiB of DRAM that
 *                                    depend on each other; a second NVM allocation is made and
 *                                    freed midway (and one writes NVM through memset/memcpy);
 *                                    every round first checks that the NVM round counter equals
 *                                    the DRAM one (a checkpoint whose NVM and DRAM parts came from
 *                                    different instants prints INCONSISTENT and exits 3)
 *        nvmuser threads MIB ROUNDS  two threads write their own halves of one NVM area and of
 *                                    one DRAM area, each checking its halves agree, round by round
 *        nvmuser fork MIB ROUNDS     NVM memory written before and after a fork (checkpoints
 *                                    wait for the child; the allocation after it is NVM too)
 *        nvmuser shuffled MIB ROUNDS  every round writes every 64 KiB segment of MIB MiB of NVM, in
 *                                    an order shuffled anew each round (no segment follows the
 *                                    one written before it), mixing in DRAM state; the round
 *                                    counters in NVM and DRAM are checked as in `mixed`
 *        nvmuser nvm|dram MIB ROUNDS [SEGS]
 *                                    the benchmark: MIB MiB in NVM or in DRAM (calloc); each round
 *                                    writes 64 random words into each of SEGS 64 KiB pieces of it
 *                                    (default all; fewer: the next ones at each round) and sleeps 2 ms
 * Prints progress lines and a final checksum of both memories; the output does not depend on
 * where the memory lives or on interruptions. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "prosper/nvm.h"

static uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 0x100000001B3ull; }

static uint64_t lcg(uint64_t *x)
{
	*x = *x * 6364136223846793005ull + 1442695040888963407ull;
	return *x >> 17;
}

static uint64_t fold(const uint64_t *a, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = mix(h, a[i]);
	return h;
}

static void *must(void *p, const char *what)
{
	if (!p) {
		perror(what);
		exit(2);
	}
	return p;
}

static int mixed(size_t words, int rounds)
{
	uint64_t *nvm = must(prosper_nvm_alloc(words * 8), "prosper_nvm_alloc");
	uint64_t *dram = must(calloc(words, 8), "calloc");
	uint64_t *extra = NULL, dram_round = 0, x = 42;
	for (int r = 0; r < rounds; r++) {
		if (nvm[0] != dram_round) {
			printf("INCONSISTENT round %d: nvm %llu dram %llu\n", r, (unsigned long long)nvm[0],
			       (unsigned long long)dram_round);
			return 3;
		}
		for (int j = 0; j < 3000; j++) {
			size_t a = 1 + lcg(&x) % (words - 1), b = lcg(&x) % words;
			nvm[a] = mix(nvm[a], dram[b] + (uint64_t)r);
			dram[b] = mix(dram[b], nvm[a]);
		}
		if (r == rounds / 3)
			extra = must(prosper_nvm_alloc(1u << 20), "prosper_nvm_alloc");
		if (extra) {
			memset(extra + (r % 64) * 2048, r & 0xff, 2048 * 8);
			memcpy(extra + ((r + 7) % 64) * 2048, dram, 4096);
			nvm[1] = mix(nvm[1], fold(extra, 1u << 17));
		}
		if (r == 2 * rounds / 3 && extra) {
			if (prosper_nvm_free(extra) != 0) {
				perror("prosper_nvm_free");
				return 2;
			}
			extra = NULL;
		}
		nvm[0] = ++dram_round;
		if (r % 50 == 0)
			printf("round %d nvm %016llx dram %016llx\n", r, (unsigned long long)fold(nvm, words),
			       (unsigned long long)fold(dram, words));
	}
	printf("end nvm %016llx dram %016llx\n", (unsigned long long)fold(nvm, words),
	       (unsigned long long)fold(dram, words));
	return prosper_nvm_free(nvm) == 0 ? 0 : 2;
}

static int bench(int in_nvm, size_t words, int rounds, size_t segs)
{
	uint64_t *m = in_nvm ? must(prosper_nvm_alloc(words * 8), "prosper_nvm_alloc") : must(calloc(words, 8), "calloc");
	uint64_t x = 7;
	size_t nsegs = (words + 8191) / 8192, next = 0;
	struct timespec pause = { 0, 2 * 1000 * 1000 };
	if (!segs || segs > nsegs)
		segs = nsegs;
	for (int r = 0; r < rounds; r++) {
		for (size_t i = 0; i < segs; i++, next = (next + 1) % nsegs)
			for (int j = 0; j < 64; j++) {
				size_t a = next * 8192 + lcg(&x) % 8192;
				if (a < words)
					m[a] = mix(m[a], (uint64_t)r + 1); /* never a silent store */
			}
		nanosleep(&pause, NULL);
	}
	printf("end %016llx\n", (unsigned long long)fold(m, words));
	return 0;
}

static int shuffled(size_t words, int rounds)
{
	size_t nsegs = words / 8192;
	uint64_t *nvm = must(prosper_nvm_alloc(words * 8), "prosper_nvm_alloc");
	uint64_t *dram = must(calloc(nsegs, 8), "calloc"), dram_round = 0, x = 99;
	size_t *order = must(malloc(nsegs * sizeof *order), "malloc");
	struct timespec pause = { 0, 1000 * 1000 };
	for (size_t i = 0; i < nsegs; i++)
		order[i] = i;
	for (int r = 0; r < rounds; r++) {
		if (nvm[0] != dram_round) {
			printf("INCONSISTENT round %d: nvm %llu dram %llu\n", r, (unsigned long long)nvm[0],
			       (unsigned long long)dram_round);
			return 3;
		}
		for (size_t i = nsegs - 1; i > 0; i--) {
			size_t j = lcg(&x) % (i + 1), t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
		for (size_t i = 0; i < nsegs; i++) {
			size_t k = order[i];
			for (int j = 0; j < 16; j++) {
				size_t a = k * 8192 + 1 + lcg(&x) % 8191;
				nvm[a] = mix(nvm[a], dram[k] + (uint64_t)r);
			}
			dram[k] = mix(dram[k], nvm[k * 8192 + 1 + (size_t)r % 8191]);
		}
		nvm[0] = ++dram_round;
		if (r % 50 == 0)
			printf("round %d nvm %016llx dram %016llx\n", r, (unsigned long long)fold(nvm, words),
			       (unsigned long long)fold(dram, nsegs));
		nanosleep(&pause, NULL);
	}
	printf("end nvm %016llx dram %016llx\n", (unsigned long long)fold(nvm, words),
	       (unsigned long long)fold(dram, nsegs));
	free(order);
	return prosper_nvm_free(nvm) == 0 ? 0 : 2;
}

/* threads: each worker owns half of nvm and dram; its round counter lives in both halves. */
struct half {
	uint64_t *nvm, *dram;
	size_t words;
	uint64_t seed;
	int rounds, bad;
};

static void *worker(void *arg)
{
	struct half *h = arg;
	uint64_t x = h->seed;
	for (int r = 0; r < h->rounds && !h->bad; r++) {
		if (h->nvm[0] != h->dram[0]) {
			h->bad = 1;
			break;
		}
		for (int j = 0; j < 2000; j++) {
			size_t a = 1 + lcg(&x) % (h->words - 1);
			h->nvm[a] = mix(h->nvm[a], h->dram[a] + (uint64_t)r);
			h->dram[a] = mix(h->dram[a], h->nvm[a]);
		}
		h->nvm[0]++;
		h->dram[0]++;
	}
	return NULL;
}

static int threaded(size_t words, int rounds)
{
	uint64_t *nvm = must(prosper_nvm_alloc(words * 8), "prosper_nvm_alloc");
	uint64_t *dram = must(calloc(words, 8), "calloc");
	struct half h[2] = { { nvm, dram, words / 2, 11, rounds, 0 },
			     { nvm + words / 2, dram + words / 2, words / 2, 12, rounds, 0 } };
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, worker, &h[i]) != 0)
			return 2;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	if (h[0].bad || h[1].bad) {
		printf("INCONSISTENT\n");
		return 3;
	}
	printf("end nvm %016llx dram %016llx\n", (unsigned long long)fold(nvm, words), (unsigned long long)fold(dram, words));
	return prosper_nvm_free(nvm) == 0 ? 0 : 2;
}

static int forked(size_t words, int rounds)
{
	uint64_t *a = must(prosper_nvm_alloc(words * 8), "prosper_nvm_alloc"), x = 3;
	struct timespec pause = { 0, 1000 * 1000 };
	for (int r = 0; r < rounds; r++) {
		for (int j = 0; j < 1000; j++)
			a[lcg(&x) % words] += (uint64_t)r;
		nanosleep(&pause, NULL);
	}
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	for (size_t i = 0; i < words; i++)
		a[i] = mix(a[i], i);
	uint64_t *b = must(prosper_nvm_alloc(1u << 20), "prosper_nvm_alloc");
	for (size_t i = 0; i < (1u << 17); i++)
		b[i] = a[i % words] + i;
	printf("end a %016llx b %016llx\n", (unsigned long long)fold(a, words), (unsigned long long)fold(b, 1u << 17));
	return prosper_nvm_free(b) == 0 && prosper_nvm_free(a) == 0 ? 0 : 2;
}

int main(int argc, char **argv)
{
	if (argc < 4 || argc > 5 || atoi(argv[2]) < 1 || atoi(argv[3]) < 1) {
		fprintf(stderr, "usage: nvmuser mixed|threads|fork|shuffled|nvm|dram MIB ROUNDS [SEGS]\n");
		return 2;
	}
	size_t words = (size_t)atoi(argv[2]) << 17;
	int rounds = atoi(argv[3]);
	if (!strcmp(argv[1], "mixed"))
		return mixed(words, rounds);
	if (!strcmp(argv[1], "threads"))
		return threaded(words, rounds);
	if (!strcmp(argv[1], "fork"))
		return forked(words, rounds);
	if (!strcmp(argv[1], "shuffled"))
		return shuffled(words, rounds);
	if (!strcmp(argv[1], "nvm") || !strcmp(argv[1], "dram"))
		return bench(argv[1][0] == 'n', words, rounds, argc == 5 ? (size_t)atoi(argv[4]) : 0);
	fprintf(stderr, "usage: nvmuser mixed|threads|fork|shuffled|nvm|dram MIB ROUNDS [SEGS]\n");
	return 2;
}
