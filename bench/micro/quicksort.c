/* quicksort -- Prosper Table III "Quicksort": 10,000 u32 on the heap sorted 10 times per round;
 * the stack is used only by the recursion.  usage: quicksort [ROUNDS] */
#include "common.h"

static void qs(uint32_t *v, long lo, long hi)
{
	while (lo < hi) {
		uint32_t pivot = v[lo + (hi - lo) / 2];
		long i = lo, j = hi;
		while (i <= j) {
			while (v[i] < pivot) i++;
			while (v[j] > pivot) j--;
			if (i <= j) { uint32_t t = v[i]; v[i] = v[j]; v[j] = t; i++; j--; }
		}
		if (j - lo < hi - i) { qs(v, lo, j); lo = i; } else { qs(v, i, hi); hi = j; }
	}
}

int main(int argc, char **argv)
{
	long rounds = scale(argc, argv, 150);
	uint32_t *v = malloc(10000 * sizeof *v);
	for (long r = 0; r < rounds; r++)
		for (int s = 0; s < 10; s++) {
			for (int i = 0; i < 10000; i++)
				v[i] = lfsr() * 65536u + lfsr();
			qs(v, 0, 9999);
			mix(v[0] ^ v[5000] ^ v[9999]);
		}
	free(v);
	return finish();
}
