/* codec.c -- encoding of the self-checksummed words and checksums of the metadata blocks.
 * Every checksum is salted with the pool's uuid, so a block copied from another pool (or an
 * entry moved to another index) never validates. */
#include <string.h>
#include "prosper/crc32c.h"
#include "pool_internal.h"

uint32_t sb_crc(const struct pool_sb *sb)
{
	return prosper_crc32c(0, sb, offsetof(struct pool_sb, crc));
}

static uint32_t salted(const struct pool_sb *sb, const void *buf, size_t len)
{
	return prosper_crc32c(prosper_crc32c(0, buf, len), sb->uuid, sizeof sb->uuid);
}

uint64_t commit_word_encode(const struct pool_sb *sb, uint64_t epoch)
{
	uint8_t le[8];
	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)(epoch >> (8 * i));
	uint64_t check = salted(sb, le, 8) & 0xFFFFFFu;
	return (epoch & POOL_EPOCH_MAX) | check << POOL_EPOCH_BITS;
}

int commit_word_decode(const struct pool_sb *sb, uint64_t w, uint64_t *epoch)
{
	uint64_t e = w & POOL_EPOCH_MAX;
	if (commit_word_encode(sb, e) != w)
		return -1;
	*epoch = e;
	return 0;
}

uint64_t state_encode(const struct pool_sb *sb, int parity, uint32_t slot, uint8_t value)
{
	uint32_t in[3] = { value, slot, (uint32_t)parity };
	return (uint64_t)value | (uint64_t)salted(sb, in, sizeof in) << 32;
}

int state_decode(const struct pool_sb *sb, int parity, uint32_t slot, uint64_t w, uint8_t *value)
{
	uint8_t v = (uint8_t)w;
	if (v < ST_INIT || v > ST_BACK || state_encode(sb, parity, slot, v) != w)
		return -1;
	*value = v;
	return 0;
}

uint64_t bind_encode(const struct pool_sb *sb, uint32_t slot, uint32_t main_slot)
{
	if (main_slot == POOL_SLOT_NONE)
		return 0;
	uint32_t in[3] = { main_slot + 1, slot, 0xB1D };
	return (uint64_t)(main_slot + 1) | (uint64_t)salted(sb, in, sizeof in) << 32;
}

int bind_decode(const struct pool_sb *sb, uint32_t slot, uint64_t w, uint32_t *main_slot)
{
	if (w == 0) {
		*main_slot = POOL_SLOT_NONE;
		return 0;
	}
	uint32_t m = (uint32_t)w;
	if (m == 0 || m - 1 >= sb->nslots || bind_encode(sb, slot, m - 1) != w)
		return -1;
	*main_slot = m - 1;
	return 0;
}

uint32_t meta_crc(const struct pool_sb *sb, const uint8_t *meta, uint32_t bytes)
{
	const size_t at = offsetof(struct pool_meta_hdr, crc);
	uint32_t zero = 0;
	uint32_t c = prosper_crc32c(0, meta, at);
	c = prosper_crc32c(c, &zero, 4);
	c = prosper_crc32c(c, meta + at + 4, bytes - at - 4);
	return prosper_crc32c(c, sb->uuid, sizeof sb->uuid);
}
