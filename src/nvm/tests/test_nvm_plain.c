/* test_nvm_plain -- libprosper-nvm without the supervisor: plain anonymous memory behind the same
 * calls (include/prosper/nvm.h).  Under `prosper run` the same library is exercised by
 * tests/e2e/test_nvm_alloc.py. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "prosper/nvm.h"

static int failures;
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #c); failures++; } } while (0)

int main(void)
{
	errno = 0;
	CHECK(prosper_nvm_alloc(0) == NULL && errno == EINVAL);
	errno = 0;
	CHECK(prosper_nvm_alloc(SIZE_MAX - 100) == NULL && errno == ENOMEM);

	/* zeroed, page-aligned, writable, independent allocations */
	uint8_t *a = prosper_nvm_alloc(1), *b = prosper_nvm_alloc(3 << 20);
	CHECK(a && b && a != b);
	CHECK((uintptr_t)a % 4096 == 0 && (uintptr_t)b % 4096 == 0);
	size_t zero = 0;
	for (size_t i = 0; i < (3u << 20); i++)
		zero += b[i] == 0;
	CHECK(zero == 3u << 20);
	a[0] = 7;
	memset(b, 0xab, 3u << 20);
	CHECK(a[0] == 7 && b[(3u << 20) - 1] == 0xab);

	CHECK(prosper_nvm_free(NULL) == 0);
	errno = 0;
	CHECK(prosper_nvm_free(b + 1) == -1 && errno == EINVAL);
	CHECK(prosper_nvm_free(a) == 0);
	CHECK(prosper_nvm_free(b) == 0);
	if (failures)
		fprintf(stderr, "%d failure(s)\n", failures);
	return failures != 0;
}
