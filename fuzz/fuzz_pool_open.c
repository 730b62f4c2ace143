/* fuzz_pool_open -- libFuzzer target: arbitrary bytes as a pool image.  Open (validation and
 * recovery, on a private copy) and inspect must either refuse with a reason or succeed and
 * answer queries within bounds; they must never crash, read out of bounds or hang.
 *
 * Inputs shorter than a pool are extended with zeros so the fuzzer can reach past the
 * superblock checks; a seed corpus of real pools is made by gen_corpus (see CMakeLists.txt).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "prosper/pool.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > (4u << 20))
		return 0;
	/* In memory: recovery writes to its copy only; persistence is simulated (no msync). */
	size_t cap = size < (1u << 20) ? (1u << 20) : size;
	uint8_t *buf = calloc(1, cap);
	memcpy(buf, data, size);
	struct prosper_persist pp = { .granularity = PROSPER_GRAN_CACHE_LINE, .simulated = 1 };
	prosper_pool *p = NULL;
	if (prosper_pool_open_mem(buf, size, &pp, &p) == 0) {
		int n = prosper_pool_region_count(p);
		for (int i = 0; i < n; i++) {
			struct prosper_region_info info;
			if (prosper_pool_region_get(p, i, &info) == 0 && info.length) {
				uint8_t tmp[64];
				uint64_t len = info.length < sizeof tmp ? info.length : sizeof tmp;
				prosper_pool_region_read(p, info.id, info.length - len, tmp, len);
			}
		}
		size_t bl;
		prosper_pool_blob(p, &bl);
		prosper_pool_abandon(&p);
	}
	/* The file path of inspect, on the same bytes. */
	char path[64];
	snprintf(path, sizeof path, "/tmp/prosper-fuzz-%d.pool", (int)getpid());
	FILE *f = fopen(path, "wb");
	if (f) {
		fwrite(data, 1, size, f);
		fclose(f);
		FILE *devnull = fopen("/dev/null", "w");
		prosper_pool_inspect_file(path, (int)(size & 1), devnull);
		fclose(devnull);
		unlink(path);
	}
	free(buf);
	return 0;
}
