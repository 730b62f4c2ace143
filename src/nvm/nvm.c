/* nvm.c -- libprosper-nvm: prosper_nvm_alloc / prosper_nvm_free (include/prosper/nvm.h).
 *
 * Under `prosper run` the preloaded shim defines prosper_shim_nvm_gate, a two-instruction
 * request gate (`int3; ret`) that stops the calling thread for the supervisor, which answers in
 * rax (src/shim/shim_proto.h, src/supervisor/memory/nvm.c).  Without the shim the weak reference is
 * NULL and the memory is plain anonymous memory, as it is when the supervisor answers -ENOSYS
 * (it does not checkpoint).
 *
 * Plain memory carries its mapping length in a header page just below the returned address, so
 * prosper_nvm_free needs only the pointer.  Supervised memory has no header: the supervisor knows
 * its regions by address, and answers -ENOENT for an address that is not one of them (plain
 * memory from a fallback), which is then freed the plain way.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include "prosper/internal/shim_proto.h"
#include "prosper/nvm.h"

long prosper_shim_nvm_gate(long op, long arg) __attribute__((weak));

#define HEADER 4096u

static void *plain_alloc(size_t size)
{
	if (size > SIZE_MAX - 2 * HEADER) {
		errno = ENOMEM;
		return NULL;
	}
	size_t len = (size + HEADER + HEADER - 1) & ~(size_t)(HEADER - 1);
	uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	*(size_t *)p = len;
	return p + HEADER;
}

static int plain_free(void *ptr)
{
	uint8_t *p = (uint8_t *)ptr - HEADER;
	if ((uintptr_t)ptr % HEADER) {
		errno = EINVAL;
		return -1;
	}
	return munmap(p, *(size_t *)p);
}

void *prosper_nvm_alloc(size_t size)
{
	if (!size) {
		errno = EINVAL;
		return NULL;
	}
	if (prosper_shim_nvm_gate) {
		long r = prosper_shim_nvm_gate(SHIM_NVM_ALLOC, (long)size);
		if (r > 0)
			return (void *)r;
		if (r != -ENOSYS) {
			errno = (int)-r;
			return NULL;
		}
	}
	return plain_alloc(size);
}

int prosper_nvm_free(void *ptr)
{
	if (!ptr)
		return 0;
	if (prosper_shim_nvm_gate) {
		long r = prosper_shim_nvm_gate(SHIM_NVM_FREE, (long)(uintptr_t)ptr);
		if (r == 0)
			return 0;
		if (r != -ENOENT && r != -ENOSYS) {
			errno = (int)-r;
			return -1;
		}
	}
	return plain_free(ptr);
}
