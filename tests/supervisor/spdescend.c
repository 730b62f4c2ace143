/* spdescend -- the stack grows over bytes that were written while dead, in the page that held SP,
 * without writing that page again (x86-64).
 *
 * Per round: bytes just below SP (beyond the red zone) are written while dead; a busy loop that
 * touches no memory lets checkpoints land with SP's page holding them below SP - 128; then SP
 * drops by two pages with no store (a frame reserved, not yet written) and another busy loop lets
 * checkpoints land with those bytes live.  Every checkpoint must hold the live stack exactly
 * (`prosper run --verify`).  usage: spdescend [ROUNDS] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* About `n` iterations of a loop on registers only (no memory, no calls). */
#define SPIN "mov %[n], %%rcx\n1: dec %%rcx\n jnz 1b\n"

static uint64_t round_trip(uint64_t pattern, uint64_t n)
{
	uint64_t sum;
	__asm__ volatile(
	    /* 512 words at [SP - 136 - 4096, SP - 136): dead the moment they are written */
	    "mov $-512, %%rcx\n"
	    "mov %[p], %%rax\n"
	    "0: mov %%rax, -136(%%rsp, %%rcx, 8)\n"
	    "add %[p], %%rax\n"
	    "inc %%rcx\n"
	    "jnz 0b\n"
	    SPIN
	    "sub $8192, %%rsp\n" /* the frame grows over them, nothing stored */
	    SPIN
	    /* read them back (the program's view) and leave the frame */
	    "xor %%rax, %%rax\n"
	    "mov $-512, %%rcx\n"
	    "2: add 8192-136(%%rsp, %%rcx, 8), %%rax\n"
	    "inc %%rcx\n"
	    "jnz 2b\n"
	    "add $8192, %%rsp\n"
	    "mov %%rax, %[s]\n"
	    : [s] "=r"(sum)
	    : [p] "r"(pattern), [n] "r"(n)
	    : "rax", "rcx", "memory", "cc");
	return sum;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 20;
	uint64_t total = 0;
	for (long r = 0; r < rounds; r++)
		total += round_trip((uint64_t)(r + 1) * 0x9E3779B97F4A7C15ull, 20000000);
	printf("rounds %ld sum 0x%016llx\n", rounds, (unsigned long long)total);
	return 0;
}
