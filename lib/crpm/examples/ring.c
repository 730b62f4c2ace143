/* ring.c -- a complete crpm program using only the C API: a ring of the last RING records.
 *
 *   ring PATH default|buffered run     add record n+1, checkpoint, print n+1; forever
 *   ring PATH default|buffered check   verify the recovered ring, print its n
 *
 * Step i frees the record i - RING and allocates record i (size varies with i) holding i in
 * its first word and the byte i & 0xFF after it.  A checkpointed ring with n records is
 * therefore fully determined by n, so `check` can tell a recovered state that is exactly one
 * checkpoint from anything else.  Build: cc ring.c $(pkg-config --cflags --libs prosper-crpm),
 * or with prosper-cc for store hooks instead of write faults.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "prosper/crpm.h"

#define RING 64

struct root {
	uint64_t n;
	unsigned char *rec[RING];
};

static size_t rec_size(uint64_t i) { return 8 + (size_t)(i * 37 % 700); }

static int check(struct root *r)
{
	for (uint64_t j = r->n > RING ? r->n - RING + 1 : 1; j <= r->n; j++) {
		unsigned char *p = r->rec[j % RING];
		uint64_t w;
		if (!p)
			return 0;
		memcpy(&w, p, 8);
		if (w != j)
			return 0;
		for (size_t k = 8; k < rec_size(j); k++)
			if (p[k] != (unsigned char)(j & 0xFF))
				return 0;
	}
	return 1;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s PATH default|buffered run|check\n", argv[0]);
		return 2;
	}
	crpm_option_t opt;
	crpm_init_option(&opt);
	opt.capacity = 64u << 20;
	opt.mode = strcmp(argv[2], "buffered") ? CRPM_MODE_DEFAULT : CRPM_MODE_BUFFERED;
	crpm_t *c = crpm_open(argv[1], &opt);
	if (!c) {
		fprintf(stderr, "ring: %s\n", crpm_errormsg());
		return 1;
	}
	struct root *r = crpm_get_root(c, 0);
	if (!r) {
		r = crpm_malloc(c, sizeof *r);
		memset(r, 0, sizeof *r);
		crpm_set_root(c, 0, r);
		crpm_checkpoint(c, 1);
	}
	if (!strcmp(argv[3], "check")) {
		int ok = check(r);
		printf("%llu %s\n", (unsigned long long)r->n, ok ? "consistent" : "CORRUPT");
		crpm_close(c);
		return ok ? 0 : 1;
	}
	for (;;) {
		uint64_t i = r->n + 1;
		crpm_free(c, r->rec[i % RING]);
		unsigned char *p = crpm_malloc(c, rec_size(i));
		if (!p) {
			fprintf(stderr, "ring: %s\n", crpm_errormsg());
			return 1;
		}
		memcpy(p, &i, 8);
		memset(p + 8, (int)(i & 0xFF), rec_size(i) - 8);
		r->rec[i % RING] = p;
		r->n = i;
		if (crpm_checkpoint(c, 1)) {
			fprintf(stderr, "ring: %s\n", crpm_errormsg());
			return 1;
		}
		printf("%llu\n", (unsigned long long)i);
		fflush(stdout);
	}
}
