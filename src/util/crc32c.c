/* crc32c.c -- CRC-32C, slicing-by-8 in portable C (no libc, no CPU feature dispatch).
 *
 * Tables are built on first use; building them twice from two threads writes the same
 * values, so the race is benign.  ~1-2 GB/s, enough for metadata (data blocks are not
 * checksummed: the commit protocol, not a checksum, makes them consistent).
 */
#include "prosper/crc32c.h"

static uint32_t table[8][256];
static volatile int table_ready;

static void build_tables(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
		table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xFF];
	__atomic_store_n(&table_ready, 1, __ATOMIC_RELEASE);
}

uint32_t prosper_crc32c(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	if (!__atomic_load_n(&table_ready, __ATOMIC_ACQUIRE))
		build_tables();
	crc = ~crc;
	while (len && ((uintptr_t)p & 7)) {
		crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xFF];
		len--;
	}
	while (len >= 8) {
		uint32_t lo = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
		uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
		lo ^= crc;
		crc = table[7][lo & 0xFF] ^ table[6][(lo >> 8) & 0xFF] ^ table[5][(lo >> 16) & 0xFF] ^
		      table[4][lo >> 24] ^ table[3][hi & 0xFF] ^ table[2][(hi >> 8) & 0xFF] ^
		      table[1][(hi >> 16) & 0xFF] ^ table[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xFF];
	return ~crc;
}
