/* hwmodel.c -- the Prosper tracker model (see include/prosper/hwmodel.h).  No libc. */
#include "prosper/hwmodel.h"
#include "prosper/stackckpt.h"

void prosper_hw_config_default(struct prosper_hw_config *cfg)
{
	cfg->table_entries = 16;
	cfg->hwm = 24;
	cfg->lwm = 8;
	cfg->log_gran = 3;
	cfg->seed = 0xACE1;
}

int prosper_hw_init(struct prosper_hw *hw, const struct prosper_hw_config *cfg,
		    const struct prosper_hw_bitmap_ops *ops)
{
	if (cfg->table_entries < 1 || cfg->table_entries > PROSPER_HW_MAX_ENTRIES || cfg->hwm < 1 ||
	    cfg->hwm > 32 || cfg->lwm > 32 || cfg->log_gran < 3 || cfg->log_gran > 7 || !ops->load32 ||
	    !ops->store32)
		return -1;
	unsigned char *p = (unsigned char *)hw;
	for (unsigned long i = 0; i < sizeof *hw; i++)
		p[i] = 0;
	hw->cfg = *cfg;
	hw->ops = *ops;
	hw->rng = cfg->seed ? cfg->seed : 0xACE1;
	hw->min_seen = UINT64_MAX;
	hw->track_min = UINT64_MAX;
	return 0;
}

void prosper_hw_set_range(struct prosper_hw *hw, uint64_t start, uint64_t end) { hw->track_start = start; hw->track_end = end; }
void prosper_hw_set_dirtymap(struct prosper_hw *hw, uint64_t addr) { hw->dirtymap_addr = addr; }

void prosper_hw_set_gran(struct prosper_hw *hw, uint32_t log_gran)
{
	hw->log_gran = log_gran >= 3 && log_gran <= 7 ? log_gran : 0;
}

uint64_t prosper_hw_bitmap_bytes(uint64_t bytes, uint32_t log_gran)
{
	uint64_t granules = (bytes + (1ull << log_gran) - 1) >> log_gran;
	return (granules + 63) / 64 * 8;
}

/* write_out -- load + OR + store-if-changed of one entry; frees it. */
static void write_out(struct prosper_hw *hw, struct prosper_hw_entry *e)
{
	hw->issued_loads++;
	uint32_t old = hw->ops.load32(hw->ops.ctx, e->word_addr);
	hw->completed_loads++;
	hw->c.bitmap_loads++;
	uint32_t v = old | e->bits;
	if (v != old) {
		hw->issued_stores++;
		hw->ops.store32(hw->ops.ctx, e->word_addr, v);
		hw->completed_stores++;
		hw->c.bitmap_stores++;
	} else {
		hw->c.redundant_stores++;
	}
	e->count = 0;
	e->bits = 0;
}

/* 16-bit Fibonacci LFSR (taps 16,14,13,11), as the artifact's random source */
static uint32_t lfsr_next(struct prosper_hw *hw)
{
	uint32_t s = (uint32_t)hw->rng & 0xFFFF;
	uint32_t bit = ((s >> 0) ^ (s >> 2) ^ (s >> 3) ^ (s >> 5)) & 1;
	s = (s >> 1) | (bit << 15);
	if (!s)
		s = 0xACE1;
	hw->rng = s;
	return s;
}

static struct prosper_hw_entry *make_room(struct prosper_hw *hw)
{
	uint32_t n = hw->cfg.table_entries;
	struct prosper_hw_entry *free_e = 0;
	for (uint32_t i = 0; i < n; i++)
		if (hw->table[i].count == 0)
			return &hw->table[i];
	/* Full: evict every entry at or below LWM. */
	for (uint32_t i = 0; i < n; i++) {
		if (hw->table[i].count <= hw->cfg.lwm) {
			write_out(hw, &hw->table[i]);
			hw->c.lwm_evictions++;
			if (!free_e)
				free_e = &hw->table[i];
		}
	}
	if (free_e)
		return free_e;
	struct prosper_hw_entry *victim = &hw->table[lfsr_next(hw) % n];
	write_out(hw, victim);
	hw->c.random_evictions++;
	return victim;
}

static void mark_granule(struct prosper_hw *hw, uint64_t bit)
{
	uint64_t word = hw->dirtymap_addr + 4 * (bit >> 5);
	uint32_t mask = 1u << (bit & 31);
	hw->c.granules_marked++;
	uint32_t n = hw->cfg.table_entries;
	struct prosper_hw_entry *e = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (hw->table[i].count && hw->table[i].word_addr == word) {
			e = &hw->table[i];
			break;
		}
	}
	if (e) {
		hw->c.hits++;
		if (e->bits & mask)
			return;
		e->bits |= mask;
		e->count++;
	} else {
		hw->c.misses++;
		e = make_room(hw);
		e->word_addr = word;
		e->bits = mask;
		e->count = 1;
	}
	if (e->count >= hw->cfg.hwm) {
		write_out(hw, e);
		hw->c.hwm_writeouts++;
	}
}

void prosper_hw_store(struct prosper_hw *hw, uint64_t addr, uint64_t size)
{
	hw->c.stores_seen++;
	if (!hw->log_gran || size == 0)
		return;
	uint64_t from, first, last;
	if (!prosper_store_granules(addr, size, hw->track_start, hw->track_end, hw->log_gran, &from, &first, &last))
		return;
	hw->c.stores_tracked++;
	if (from < hw->min_seen)
		hw->min_seen = from;
	for (uint64_t b = first; b <= last; b++)
		mark_granule(hw, b);
}

void prosper_hw_flush(struct prosper_hw *hw)
{
	hw->c.flushes++;
	hw->track_min = hw->min_seen;
	hw->min_seen = UINT64_MAX;
	for (uint32_t i = 0; i < hw->cfg.table_entries; i++) {
		if (hw->table[i].count) {
			write_out(hw, &hw->table[i]);
			hw->c.flush_writeouts++;
		}
	}
}

int prosper_hw_sync(const struct prosper_hw *hw)
{
	return hw->issued_loads == hw->completed_loads && hw->issued_stores == hw->completed_stores;
}
