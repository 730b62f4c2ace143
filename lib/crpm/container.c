/* container.c -- opening, recovering, closing containers; roots; the collective checkpoint.
 *
 * A container file is a pool (pool.h) holding one region named "crpm".  Creating one is: the
 * pool file, the region (one segment), the heap header, then a first checkpoint, so that from
 * epoch 1 on the container exists and is well formed.  A crash before that first checkpoint
 * leaves a pool without the region; opening it with `create` starts over.
 *
 * Opening an existing container runs the pool's recovery (prosper_pool_open), which brings the
 * main slots back to the committed epoch (C1); the region is then mapped at the address it
 * records (C3).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "prosper/internal/crpm_internal.h"

#define REGION_NAME "crpm"

void crpm_init_option(crpm_option_t *o)
{
	memset(o, 0, sizeof *o);
	o->create = 1;
	o->capacity = 1ull << 30;
	o->fixed_base_address = CRPM_DEFAULT_BASE;
	o->mode = CRPM_MODE_DEFAULT;
	o->tracking = CRPM_TRACK_AUTO;
}

static int log2u(uint64_t x)
{
	int n = 0;
	while ((1ull << n) < x)
		n++;
	return n;
}

/* setup_tables -- DRAM bookkeeping sized for the reservation. */
static int setup_tables(struct crpm_container *c)
{
	c->seg_shift = (uint32_t)log2u(c->seg_size);
	c->block_shift = (uint32_t)log2u(c->block_size);
	c->nsegs_max = (uint32_t)(c->capacity / c->seg_size);
	c->seg_state = calloc(c->nsegs_max, 1);
	c->dirty = calloc((c->capacity >> c->block_shift) / 64 + 1, 8);
	c->scratch = malloc(c->seg_size);
	c->ahead = malloc(CRPM_AHEAD_MAX * sizeof *c->ahead);
	if (!c->seg_state || !c->dirty || !c->scratch || !c->ahead)
		return crpm_fail(-ENOMEM, "out of memory for the container's tables");
	return 0;
}

static void destroy(struct crpm_container *c)
{
	crpm_track_unregister(c);
	crpm_pages_close(c);
	crpm_map_release(c);
	if (c->pool)
		prosper_pool_close(&c->pool);
	if (c->fd >= 0)
		close(c->fd);
	free(c->seg_state);
	free(c->dirty);
	free(c->scratch);
	free(c->ahead);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->heap_lock);
	pthread_mutex_destroy(&c->bar_lock);
	pthread_cond_destroy(&c->bar_cond);
	free(c);
}

static uint64_t round_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

void crpm_pool_config(const crpm_option_t *o, uint32_t seg_size, struct prosper_pool_config *cfg)
{
	prosper_pool_config_default(cfg);
	cfg->seg_size = seg_size;
	cfg->max_regions = 4;
	/* Both copies of every segment may be in use at once: main + backup (default mode, every
	 * segment written in one epoch) or the two buffered copies. */
	cfg->capacity = 2 * round_up(o->capacity, seg_size) + 2ull * seg_size;
	cfg->max_backups = o->backup_segments;
}

static int create_pool(const char *path, const crpm_option_t *o, prosper_pool **pool)
{
	struct prosper_pool_config cfg;
	crpm_pool_config(o, CRPM_SEGMENT_SIZE, &cfg);
	int rc = prosper_pool_create(path, &cfg, pool);
	if (rc)
		return crpm_fail(rc, "%s", prosper_pool_errormsg());
	return 0;
}

static int start_pages(struct crpm_container *c)
{
	if (c->tracking != CRPM_TRACK_PAGES)
		return 0;
	int rc = crpm_pages_open(c);
	return rc ? rc : crpm_pages_add(c, 0, c->length);
}

/* start_new -- the region, its header and the first checkpoint. */
static int start_new(struct crpm_container *c, const crpm_option_t *o)
{
	c->base = (uint8_t *)(uintptr_t)o->fixed_base_address;
	c->capacity = round_up(o->capacity, c->seg_size);
	if ((uintptr_t)c->base % c->seg_size)
		return crpm_fail(-EINVAL, "fixed_base_address must be a multiple of %u", c->seg_size);
	int rc = setup_tables(c);
	if (rc)
		return rc;
	rc = prosper_pool_region_add(c->pool, REGION_NAME, PROSPER_KIND_CRPM,
				     c->mode == CRPM_MODE_DEFAULT ? PROSPER_REGION_DIRECT : PROSPER_REGION_BUFFERED,
				     (uint64_t)(uintptr_t)c->base, c->seg_size, PROT_READ | PROT_WRITE);
	if (rc < 0)
		return crpm_fail(rc, "%s", prosper_pool_errormsg());
	c->region = (uint32_t)rc;
	if ((rc = crpm_map_reserve(c)) || (rc = crpm_map_existing(c, c->seg_size)) || (rc = crpm_track_register(c)) ||
	    (rc = start_pages(c)))
		return rc;
	crpm_heap_format(c);
	return crpm_commit(c);
}

/* open_existing -- map the committed region at its address. */
static int open_existing(struct crpm_container *c, const crpm_option_t *o, int idx)
{
	struct prosper_region_info ri;
	int rc = prosper_pool_region_get(c->pool, idx, &ri);
	if (rc)
		return crpm_fail(rc, "%s", prosper_pool_errormsg());
	int mode = ri.mode == PROSPER_REGION_DIRECT ? CRPM_MODE_DEFAULT : CRPM_MODE_BUFFERED;
	if (ri.kind != PROSPER_KIND_CRPM || (ri.mode != PROSPER_REGION_DIRECT && ri.mode != PROSPER_REGION_BUFFERED))
		return crpm_fail(-EINVAL, "the pool's region \"crpm\" is not a container");
	if (mode != o->mode)
		return crpm_fail(-EINVAL, "the container was created in %s mode, not %s",
				 mode == CRPM_MODE_DEFAULT ? "default" : "buffered",
				 o->mode == CRPM_MODE_DEFAULT ? "default" : "buffered");
	c->mode = mode;
	c->region = ri.id;
	struct crpm_hdr h;
	if (ri.length < CRPM_HDR_BYTES || ri.length % c->seg_size ||
	    prosper_pool_region_read(c->pool, ri.id, 0, &h, sizeof h) || h.magic != CRPM_MAGIC)
		return crpm_fail(-EINVAL, "the container's header is not valid");
	if (h.version != CRPM_VERSION)
		return crpm_fail(-EINVAL, "container version %u, this library reads %u", h.version, CRPM_VERSION);
	if (h.base != ri.vaddr || h.capacity < ri.length || h.capacity % c->seg_size)
		return crpm_fail(-EINVAL, "the container's header disagrees with its region");
	c->base = (uint8_t *)(uintptr_t)h.base;
	c->capacity = h.capacity;
	if ((rc = setup_tables(c)) || (rc = crpm_map_reserve(c)) || (rc = crpm_map_existing(c, ri.length)) ||
	    (rc = crpm_track_register(c)) || (rc = start_pages(c)))
		return rc;
	return crpm_protect_all(c);
}

/* options -- *opt or the defaults, checked and completed; NULL if they are not valid. */
static crpm_option_t *options(const crpm_option_t *opt, crpm_option_t *o)
{
	if (opt)
		*o = *opt;
	else
		crpm_init_option(o);
	if (o->mode != CRPM_MODE_DEFAULT && o->mode != CRPM_MODE_BUFFERED)
		return crpm_fail_null("unknown mode %d", o->mode);
	if (o->tracking < CRPM_TRACK_AUTO || o->tracking > CRPM_TRACK_PAGES)
		return crpm_fail_null("unknown tracking %d", o->tracking);
	if (!o->capacity)
		o->capacity = 1ull << 30;
	if (!o->fixed_base_address)
		o->fixed_base_address = CRPM_DEFAULT_BASE;
	return o;
}

static struct crpm_container *container_new(const crpm_option_t *o)
{
	struct crpm_container *c = calloc(1, sizeof *c);
	if (!c)
		return crpm_fail_null("out of memory");
	c->fd = -1;
	c->mode = o->mode;
	c->tracking = o->tracking;
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->heap_lock, NULL);
	pthread_mutex_init(&c->bar_lock, NULL);
	pthread_cond_init(&c->bar_cond, NULL);
	return c;
}

/* attach -- c has its pool and the file descriptor of the pool's media: recover the container
 * it holds, or (create) start one. */
static int attach(struct crpm_container *c, const crpm_option_t *o, int fresh)
{
	uint32_t seg_size, block_size;
	prosper_pool_geometry(c->pool, &seg_size, &block_size);
	c->seg_size = seg_size;
	c->block_size = block_size;
	/* The DRAM tables hold a segment's dirty bits in whole 64-bit words. */
	if (seg_size / block_size % 64)
		return crpm_fail(-EINVAL, "pool segments of %u bytes hold fewer than 64 blocks", seg_size);
	int idx = prosper_pool_region_find(c->pool, REGION_NAME);
	if (idx >= 0 && !fresh)
		return open_existing(c, o, idx);
	if (o->create)
		return start_new(c, o);
	return crpm_fail(-ENOENT, "the pool file holds no container");
}

int crpm_open_pool(prosper_pool *pool, int fd, const crpm_option_t *opt, crpm_t **out)
{
	crpm_option_t o;
	struct crpm_container *c = options(opt, &o) ? container_new(&o) : NULL;
	*out = c;
	if (!c)
		return -EINVAL;
	c->pool = pool;
	c->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	int rc = c->fd < 0 ? crpm_fail(-errno, "%s", strerror(errno)) : attach(c, &o, 0);
	if (rc) {
		char reason[256];
		snprintf(reason, sizeof reason, "%s", crpm_errormsg());
		crpm_detach(c);
		*out = NULL;
		return crpm_fail(rc, "%s", reason);
	}
	return 0;
}

prosper_pool *crpm_detach(crpm_t *c)
{
	prosper_pool *p = c->pool;
	c->pool = NULL;
	destroy(c);
	return p;
}

crpm_t *crpm_open(const char *path, const crpm_option_t *opt)
{
	crpm_option_t o;
	if (!path)
		return crpm_fail_null("no path");
	if (!options(opt, &o))
		return NULL;
	struct crpm_container *c = container_new(&o);
	if (!c)
		return NULL;

	if (o.truncate && unlink(path) && errno != ENOENT) {
		crpm_fail(-errno, "cannot remove %s: %s", path, strerror(errno));
		goto fail;
	}
	int rc = prosper_pool_open(path, &c->pool);
	int fresh = 0;
	if (rc == -ENOENT && o.create) {
		if (create_pool(path, &o, &c->pool))
			goto fail;
		fresh = 1;
	} else if (rc) {
		crpm_fail(rc, "%s", prosper_pool_errormsg());
		goto fail;
	}
	c->fd = open(path, O_RDWR | O_CLOEXEC);
	if (c->fd < 0) {
		crpm_fail(-errno, "cannot open %s: %s", path, strerror(errno));
		goto fail;
	}
	if (attach(c, &o, fresh))
		goto fail;
	fresh = fresh || c->checkpoints;
	if (o.verbose)
		fprintf(stderr, "crpm: %s %s: %s mode at %p, %llu of %llu bytes mapped, epoch %llu\n",
			fresh ? "created" : "recovered", path, c->mode == CRPM_MODE_DEFAULT ? "default" : "buffered",
			(void *)c->base, (unsigned long long)c->length, (unsigned long long)c->capacity,
			(unsigned long long)prosper_pool_epoch(c->pool));
	return c;
fail:;
	char reason[256];
	snprintf(reason, sizeof reason, "%s", crpm_errormsg());
	destroy(c);
	return crpm_fail_null("%s", reason);
}

int crpm_close(crpm_t *c)
{
	if (!c)
		return crpm_fail(-EINVAL, "no container");
	destroy(c);
	return 0;
}

void crpm_set_root(crpm_t *c, unsigned idx, void *ptr)
{
	if (!c || idx >= CRPM_MAX_ROOTS) {
		crpm_fail(-EINVAL, "root index %u out of range", idx);
		return;
	}
	uint64_t *r = &crpm_hdr(c)->roots[idx];
	crpm_note_write(c, r, sizeof *r);
	*r = (uint64_t)(uintptr_t)ptr;
}

void *crpm_get_root(crpm_t *c, unsigned idx)
{
	if (!c || idx >= CRPM_MAX_ROOTS)
		return crpm_fail_null("root index %u out of range", idx);
	return (void *)(uintptr_t)crpm_hdr(c)->roots[idx];
}

uint64_t crpm_epoch(const crpm_t *c) { return c ? prosper_pool_epoch(c->pool) : 0; }

int crpm_protect(crpm_t *c, unsigned idx, void *ptr, size_t len)
{
	if (!c || idx >= CRPM_MAX_PROTECT || !ptr || !len)
		return crpm_fail(-EINVAL, "crpm_protect: index must be < %d, and a non-empty variable", CRPM_MAX_PROTECT);
	struct crpm_hdr *h = crpm_hdr(c);
	if (h->protect[idx].off && h->protect[idx].len == len) {
		memcpy(ptr, c->base + h->protect[idx].off, len); /* restore the checkpointed value */
	} else {
		if (h->protect[idx].off)
			crpm_free(c, c->base + h->protect[idx].off);
		uint8_t *copy = crpm_malloc(c, len);
		if (!copy)
			return crpm_fail(-ENOSPC, "crpm_protect: %s", crpm_errormsg());
		crpm_note_write(c, copy, len);
		memcpy(copy, ptr, len);
		crpm_note_write(c, &h->protect[idx], sizeof h->protect[idx]);
		h->protect[idx].off = (uint64_t)(copy - c->base);
		h->protect[idx].len = len;
	}
	c->protect_ptr[idx] = ptr;
	return 0;
}

/* save_protected -- the DRAM variables into their copies (before c->lock: it writes). */
static void save_protected(struct crpm_container *c)
{
	struct crpm_hdr *h = crpm_hdr(c);
	for (int i = 0; i < CRPM_MAX_PROTECT; i++) {
		if (!c->protect_ptr[i])
			continue;
		uint8_t *copy = c->base + h->protect[i].off;
		if (memcmp(copy, c->protect_ptr[i], h->protect[i].len)) {
			crpm_note_write(c, copy, h->protect[i].len);
			memcpy(copy, c->protect_ptr[i], h->protect[i].len);
		}
	}
}

int crpm_checkpoint_commit(struct crpm_container *c)
{
	save_protected(c);
	pthread_mutex_lock(&c->lock);
	int rc = crpm_commit(c);
	if (!rc && CRPM_MUTANT(CRPM_MUT_AHEAD_EARLY))
		rc = crpm_prepare_ahead(c);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int crpm_checkpoint_ahead(struct crpm_container *c)
{
	pthread_mutex_lock(&c->lock);
	int rc = crpm_prepare_ahead(c);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

static int checkpoint_now(struct crpm_container *c)
{
	int rc = crpm_checkpoint_commit(c);
	return rc ? rc : crpm_checkpoint_ahead(c);
}

int crpm_checkpoint(crpm_t *c, unsigned nr_threads)
{
	if (!c)
		return crpm_fail(-EINVAL, "no container");
	if (nr_threads <= 1)
		return checkpoint_now(c);
	/* A barrier whose last arrival checkpoints while the others wait: nobody writes. */
	pthread_mutex_lock(&c->bar_lock);
	uint64_t gen = c->bar_generation;
	if (++c->bar_waiting == nr_threads) {
		c->bar_result = checkpoint_now(c);
		c->bar_waiting = 0;
		c->bar_generation++;
		pthread_cond_broadcast(&c->bar_cond);
	} else {
		while (gen == c->bar_generation)
			pthread_cond_wait(&c->bar_cond, &c->bar_lock);
	}
	int rc = c->bar_result;
	pthread_mutex_unlock(&c->bar_lock);
	return rc;
}

void crpm_get_stats(const crpm_t *c, struct crpm_stats *out)
{
	struct prosper_pool_stats ps;
	prosper_pool_stats_get(c->pool, &ps);
	memset(out, 0, sizeof *out);
	out->checkpoints = c->checkpoints;
	out->checkpoint_bytes = c->ckpt_bytes;
	out->cow_bytes = ps.cow_bytes;
	out->write_faults = c->faults;
	out->allocated_bytes = crpm_hdr(c)->allocated_bytes;
	out->mapped_bytes = c->length;
	out->persist_fences = prosper_persist_drain_count();
	out->backup_steals = ps.steals;
}

int crpm_rollback(const char *path, uint64_t epoch)
{
	int rc = prosper_pool_rollback(path, epoch);
	return rc ? crpm_fail(rc, "%s", prosper_pool_errormsg()) : 0;
}
