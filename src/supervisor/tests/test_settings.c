/* test_settings.c -- the run's checkpoint options kept in the pool (settings.h): what a run saves
 * a resume reads back, options a resume is given win, a pool without the record changes nothing,
 * and a record that is not one is refused, never guessed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "settings.h"
#include "metalog.h"

static int failures;
#define MUST(c) do { if (!(c)) { fprintf(stderr, "FAIL %s:%d: %s (%s)\n", __FILE__, __LINE__, #c, prosper_pool_errormsg()); exit(1); } } while (0)
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); failures++; } } while (0)

static char path[64];

static prosper_pool *fresh_pool(void)
{
	struct prosper_pool_config cfg;
	prosper_pool_config_default(&cfg);
	cfg.capacity = 16u << 20;
	cfg.seg_size = 64u << 10;
	unlink(path);
	prosper_pool *p = NULL;
	MUST(prosper_pool_create(path, &cfg, &p) == 0);
	return p;
}

static prosper_pool *committed_and_reopened(prosper_pool *p)
{
	MUST(prosper_pool_commit(p, "blob", 4) == 0);
	MUST(prosper_pool_close(&p) == 0);
	MUST(prosper_pool_open(path, &p) == 0);
	return p;
}

static struct sup_config defaults(void)
{
	return (struct sup_config){ .interval_ms = 10, .durable_every_s = -1, .copy_mode = COPY_STOP,
				    .stack_mode = TRACK_MODE_DIFF, .heap_mode = TRACK_MODE_DIFF, .stack_gran = 8,
				    .heap_gran = 256, .meta_mode = META_LOG };
}

/* Overwrite the record's bytes at off with len bytes of v, in a new epoch. */
static prosper_pool *damaged(prosper_pool *p, size_t off, const void *v, size_t len)
{
	struct prosper_region_info info;
	int at = prosper_pool_region_find(p, SETTINGS_REGION_NAME);
	MUST(at >= 0 && prosper_pool_region_get(p, at, &info) == 0);
	MUST(prosper_pool_write(p, info.id, off, v, len) == 0);
	return committed_and_reopened(p);
}

int main(void)
{
	snprintf(path, sizeof path, "/tmp/prosper-test-settings-%d.pool", (int)getpid());
	const char *why = NULL;

	/* a run's options come back whole */
	struct sup_config run = defaults();
	run.interval_ms = 250, run.durable_every_s = 0.5, run.copy_mode = COPY_PRECOPY, run.stack_mode = TRACK_MODE_PAGE;
	run.heap_mode = TRACK_MODE_FULL, run.stack_gran = 64, run.heap_gran = 4096, run.meta_mode = META_REWRITE;
	run.max_overhead_pct = 7.5;
	prosper_pool *p = fresh_pool();
	MUST(settings_save(p, &run) == 0);
	p = committed_and_reopened(p);
	struct sup_config got = defaults();
	CHECK(settings_load(p, &got, 0, &why) == 1);
	CHECK(got.interval_ms == 250 && got.durable_every_s == 0.5 && got.copy_mode == COPY_PRECOPY);
	CHECK(got.stack_mode == TRACK_MODE_PAGE && got.heap_mode == TRACK_MODE_FULL);
	CHECK(got.stack_gran == 64 && got.heap_gran == 4096 && got.meta_mode == META_REWRITE);
	CHECK(got.max_overhead_pct == 7.5);

	/* what the command line gave stays; the rest is the run's */
	got = defaults();
	got.interval_ms = 40, got.copy_mode = COPY_STOP;
	CHECK(settings_load(p, &got, GIVEN_INTERVAL | GIVEN_COPY, &why) == 1);
	CHECK(got.interval_ms == 40 && got.copy_mode == COPY_STOP && got.heap_mode == TRACK_MODE_FULL && got.stack_gran == 64);

	/* saved again (a resume given other options): one region, the new values */
	got.heap_mode = TRACK_MODE_DIFF;
	MUST(settings_save(p, &got) == 0);
	int regions = prosper_pool_region_count(p);
	p = committed_and_reopened(p);
	CHECK(prosper_pool_region_count(p) == regions);
	struct sup_config again = defaults();
	CHECK(settings_load(p, &again, 0, &why) == 1 && again.interval_ms == 40 && again.heap_mode == TRACK_MODE_DIFF);

	/* damaged records are refused and leave cfg alone */
	static const struct { size_t off; uint64_t v; size_t len; const char *says; } bad[] = {
		{ 0, 0x1234, 8, "is not one" },                 /* magic */
		{ 8, 3, 4, "another version" },                  /* version */
		{ 56, 0xbff0000000000000ull, 8, "no option gives" }, /* max overhead -1 % */
		{ 16, 0, 8, "no option gives" },                 /* interval 0 ms */
		{ 32, 7, 4, "no option gives" },                 /* copy mode */
	};
	for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
		MUST(settings_save(p, &run) == 0);
		p = damaged(p, bad[k].off, &bad[k].v, bad[k].len);
		struct sup_config c = defaults();
		why = NULL;
		CHECK(settings_load(p, &c, 0, &why) == -1 && why && strstr(why, bad[k].says));
		CHECK(c.interval_ms == 10 && c.copy_mode == COPY_STOP && c.heap_mode == TRACK_MODE_DIFF);
	}
	MUST(prosper_pool_close(&p) == 0);

	/* a version 1 record (before --max-overhead): read with the fixed cadence it ran with, and
	 * saved again as this version */
	p = fresh_pool();
	struct { uint64_t magic; uint32_t version, bytes; double interval_ms, durable_every_s;
		 int32_t copy_mode, stack_mode, heap_mode, meta_mode; uint32_t stack_gran, heap_gran; } v1 = {
		0x53474E4954544553ull, 1, 56, 30, -1, COPY_STOP, TRACK_MODE_DIFF, TRACK_MODE_PAGE, META_LOG, 8, 256 };
	MUST(sizeof v1 == 56);
	int id = prosper_pool_region_add(p, SETTINGS_REGION_NAME, PROSPER_KIND_OTHER, PROSPER_REGION_REDO, 0, sizeof v1, 0);
	MUST(id >= 0 && prosper_pool_write(p, (uint32_t)id, 0, &v1, sizeof v1) == 0);
	p = committed_and_reopened(p);
	got = defaults();
	got.max_overhead_pct = 5;
	CHECK(settings_load(p, &got, 0, &why) == 1 && got.interval_ms == 30 && got.heap_mode == TRACK_MODE_PAGE &&
	      got.max_overhead_pct == 0);
	got.max_overhead_pct = 3;
	MUST(settings_save(p, &got) == 0);
	p = committed_and_reopened(p);
	again = defaults();
	CHECK(settings_load(p, &again, 0, &why) == 1 && again.interval_ms == 30 && again.max_overhead_pct == 3);
	MUST(prosper_pool_close(&p) == 0);

	/* a pool made before the record existed: nothing to take */
	p = committed_and_reopened(fresh_pool());
	got = defaults();
	CHECK(settings_load(p, &got, 0, &why) == 0 && got.interval_ms == 10 && got.meta_mode == META_LOG);
	MUST(prosper_pool_close(&p) == 0);
	unlink(path);
	if (failures)
		return 1;
	printf("settings: ok\n");
	return 0;
}
