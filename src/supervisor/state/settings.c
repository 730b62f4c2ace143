/* settings.c -- the checkpoint options of a run, kept in its pool (settings.h). */
#include "settings.h"
#include "poolfile.h"
#include <stddef.h>
#include <string.h>
#include "metalog.h"

#define SETTINGS_MAGIC 0x53474E4954544553ull /* "SETTINGS" */
#define SETTINGS_VERSION 2

/* The record (little-endian host layout, as every record of the pool's blobs).  Version 1 ended
 * before max_overhead_pct: a pool made by it is read with the fixed cadence it ran with. */
struct settings_record {
	uint64_t magic;
	uint32_t version, bytes;
	double interval_ms, durable_every_s;
	int32_t copy_mode, stack_mode, heap_mode, meta_mode;
	uint32_t stack_gran, heap_gran;
	double max_overhead_pct;
};
#define SETTINGS_V1_BYTES offsetof(struct settings_record, max_overhead_pct)

static struct settings_record record_of(const struct sup_config *cfg)
{
	struct settings_record r;
	memset(&r, 0, sizeof r);
	r.magic = SETTINGS_MAGIC;
	r.version = SETTINGS_VERSION;
	r.bytes = sizeof r;
	r.interval_ms = cfg->interval_ms;
	r.durable_every_s = cfg->durable_every_s;
	r.copy_mode = cfg->copy_mode;
	r.stack_mode = cfg->stack_mode;
	r.heap_mode = cfg->heap_mode;
	r.meta_mode = cfg->meta_mode;
	r.stack_gran = cfg->stack_gran;
	r.heap_gran = cfg->heap_gran;
	r.max_overhead_pct = cfg->max_overhead_pct;
	return r;
}

int settings_save(prosper_pool *pool, const struct sup_config *cfg)
{
	struct settings_record r = record_of(cfg);
	return poolfile_record_put(pool, SETTINGS_REGION_NAME, &r, sizeof r);
}

static int granularity_ok(uint32_t g) { return g >= 8 && g <= 4096 && !(g & (g - 1)); }

static int tracker_ok(int32_t m) { return m == TRACK_MODE_PAGE || m == TRACK_MODE_DIFF || m == TRACK_MODE_FULL; }

int settings_load(prosper_pool *pool, struct sup_config *cfg, unsigned given, const char **why)
{
	struct settings_record r;
	memset(&r, 0, sizeof r);
	size_t len = sizeof r;
	int got = poolfile_record_get(pool, SETTINGS_REGION_NAME, &r, len);
	if (got < 0) { /* a version 1 record? */
		memset(&r, 0, sizeof r);
		len = SETTINGS_V1_BYTES;
		got = poolfile_record_get(pool, SETTINGS_REGION_NAME, &r, len);
	}
	if (got > 0)
		return 0;
	if (got < 0) {
		*why = "its record of the run's options has the wrong size";
		return -1;
	}
	if (r.magic != SETTINGS_MAGIC || r.bytes != len) {
		*why = "its record of the run's options is not one";
		return -1;
	}
	if (r.version != (len == sizeof r ? SETTINGS_VERSION : 1)) {
		*why = "its record of the run's options is of another version";
		return -1;
	}
	if (!(r.interval_ms >= 0.1 && r.interval_ms <= 3600e3) ||
	    !(r.durable_every_s == -1 || (r.durable_every_s >= 0 && r.durable_every_s <= 3600)) ||
	    (r.copy_mode != COPY_STOP && r.copy_mode != COPY_PRECOPY) || !tracker_ok(r.stack_mode) ||
	    !tracker_ok(r.heap_mode) || (r.meta_mode != META_LOG && r.meta_mode != META_REWRITE) ||
	    !granularity_ok(r.stack_gran) || !granularity_ok(r.heap_gran) ||
	    !(r.max_overhead_pct >= 0 && r.max_overhead_pct <= 100)) {
		*why = "its record of the run's options holds a value no option gives";
		return -1;
	}
	if (!(given & GIVEN_INTERVAL))
		cfg->interval_ms = r.interval_ms;
	if (!(given & GIVEN_DURABLE))
		cfg->durable_every_s = r.durable_every_s;
	if (!(given & GIVEN_COPY))
		cfg->copy_mode = r.copy_mode;
	if (!(given & GIVEN_STACK_TRACKER))
		cfg->stack_mode = r.stack_mode;
	if (!(given & GIVEN_HEAP_TRACKER))
		cfg->heap_mode = r.heap_mode;
	if (!(given & GIVEN_STACK_GRAN))
		cfg->stack_gran = r.stack_gran;
	if (!(given & GIVEN_HEAP_GRAN))
		cfg->heap_gran = r.heap_gran;
	if (!(given & GIVEN_METADATA))
		cfg->meta_mode = r.meta_mode;
	if (!(given & GIVEN_MAX_OVERHEAD))
		cfg->max_overhead_pct = r.max_overhead_pct;
	return 1;
}
