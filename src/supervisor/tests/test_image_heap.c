/* test_image_heap -- img_heap() over the ways the kernel shows a heap: one [heap] VMA; a heap in
 * two VMAs whose lower part starts below start_brk (what a resume maps there, next to what brk()
 * grew after it: resuming such a checkpoint once failed because only the last VMA was read);
 * no heap at all. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "image.h"

static int failures;
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__, __LINE__, #c); failures++; } } while (0)

static const char strings[] = "[heap]\0/usr/bin/prog\0[stack]";
enum { S_HEAP = 0, S_PROG = 7, S_STACK = 21 };

static struct img image_of(struct img_hdr *h, const struct img_vma *v, uint32_t n)
{
	memset(h, 0, sizeof *h);
	h->nvmas = n;
	h->start_brk = 0x5000;
	return (struct img){ .h = h, .vmas = v, .strings = strings };
}

int main(void)
{
	struct img_hdr h;
	const struct img_vma *low;
	uint64_t end;

	const struct img_vma one[] = {
		{ .start = 0x1000, .end = 0x4000, .region = 0, .path = S_PROG, .perms = "rw-p" },
		{ .start = 0x4000, .end = 0x9000, .region = 1, .path = S_HEAP, .perms = "rw-p" },
		{ .start = 0x70000, .end = 0x71000, .region = 2, .path = S_STACK, .perms = "rw-p" },
	};
	struct img im = image_of(&h, one, 3);
	CHECK(img_heap(&im, &low, &end) == 0 && low == &one[1] && end == 0x9000);

	/* [0x4000, 0x7000) holds the .bss tail below start_brk (0x5000) and the first brk growth;
	 * [0x7000, 0xc000) grew later and did not merge with it */
	const struct img_vma two[] = {
		{ .start = 0x1000, .end = 0x4000, .region = 0, .path = S_PROG, .perms = "rw-p" },
		{ .start = 0x4000, .end = 0x7000, .region = 1, .path = S_HEAP, .perms = "rw-p" },
		{ .start = 0x7000, .end = 0xc000, .region = 3, .path = S_HEAP, .perms = "rw-p" },
		{ .start = 0x70000, .end = 0x71000, .region = 2, .path = S_STACK, .perms = "rw-p" },
	};
	im = image_of(&h, two, 4);
	CHECK(img_heap(&im, &low, &end) == 0);
	CHECK(low == &two[1] && low->start < h.start_brk); /* the part below start_brk is seen */
	CHECK(end == 0xc000);                               /* the break is the highest end */

	const struct img_vma none[] = {
		{ .start = 0x1000, .end = 0x4000, .region = 0, .path = S_PROG, .perms = "rw-p" },
		{ .start = 0x9000, .end = 0xa000, .region = IMG_NONE, .path = IMG_NONE, .perms = "rw-p" },
	};
	im = image_of(&h, none, 2);
	CHECK(img_heap(&im, &low, &end) == -ENOENT && low == NULL);

	if (failures)
		fprintf(stderr, "test_image_heap: %d failures\n", failures);
	return failures != 0;
}
