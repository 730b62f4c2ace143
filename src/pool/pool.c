/* pool.c -- creating, opening and closing pools; queries of an open pool.
 *
 * A pool object is the committed epoch plus the changes staged for the next one (region.c,
 * commit.c, direct.c).  In the pool's layers (pool_internal.h) it loads a pool through recover.c
 * and is called only by rollback.c, which opens the pool it rolls back, and by users of the API.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "pool_internal.h"
#include "pool_file.h"

/* The pool being created or opened in memory: a simulated crash inside format or recovery
 * jumps out of it, and the crash simulator frees it with pool_loading_abandon(). */
static __thread struct prosper_pool *loading;

void prosper_pool_config_default(struct prosper_pool_config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->capacity = 256ull << 20;
	cfg->seg_size = 2u << 20;
	cfg->block_size = 256;
	cfg->max_regions = 256;
	cfg->granularity = -1;
}

static uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

/* geometry -- fill a superblock's sizes and offsets from a config; 0 or -EINVAL. */
static int geometry(const struct prosper_pool_config *c, struct pool_sb *sb)
{
	memset(sb, 0, sizeof *sb);
	uint32_t seg = c->seg_size, blk = c->block_size;
	if (!seg || (seg & (seg - 1)) || seg < POOL_PAGE || seg > (1u << 30))
		return pool_err(-EINVAL, "segment size must be a power of two between 4 KiB and 1 GiB");
	if (!blk || (blk & (blk - 1)) || blk < 64 || blk > seg)
		return pool_err(-EINVAL, "block size must be a power of two between 64 and the segment size");
	uint64_t nslots = c->capacity / seg;
	if (nslots < 2 || nslots > (1u << 24))
		return pool_err(-EINVAL, "capacity must hold 2 to 16M segments");
	if (c->max_regions == 0 || c->max_regions > 65536)
		return pool_err(-EINVAL, "max_regions must be 1..65536");
	uint64_t meta = c->meta_bytes;
	if (!meta)
		meta = align_up(sizeof(struct pool_meta_hdr) + (uint64_t)c->max_regions * sizeof(struct pool_region_rec) +
				nslots * sizeof(struct pool_seg_rec) + (c->blob_bytes ? c->blob_bytes : 256u << 10), POOL_PAGE);
	if (meta < sizeof(struct pool_meta_hdr) || meta > (1u << 30))
		return pool_err(-EINVAL, "metadata slot size out of range");
	sb->magic = POOL_MAGIC;
	sb->format_version = POOL_FORMAT_VERSION;
	sb->layout_version = POOL_LAYOUT_VERSION;
	sb->sb_bytes = sizeof *sb;
	sb->seg_size = seg;
	sb->block_size = blk;
	sb->nslots = (uint32_t)nslots;
	sb->max_regions = c->max_regions;
	sb->max_backups = c->max_backups;
	sb->meta_bytes = (uint32_t)meta;
	sb->commit_off[0] = POOL_PAGE;
	sb->commit_off[1] = 2 * POOL_PAGE;
	sb->meta_off = 3 * POOL_PAGE;
	sb->state_off = align_up(sb->meta_off + 2 * meta, 64);
	sb->bind_off = align_up(sb->state_off + 2 * nslots * 8, 64);
	sb->data_off = align_up(sb->bind_off + nslots * 8, POOL_PAGE);
	sb->file_bytes = sb->data_off + nslots * seg;
	snprintf(sb->creator, sizeof sb->creator, "prosper pool v%u", POOL_FORMAT_VERSION);
	return 0;
}

int64_t prosper_pool_size_for(const struct prosper_pool_config *cfg)
{
	struct pool_sb sb;
	int rc = geometry(cfg, &sb);
	return rc < 0 ? rc : (int64_t)sb.file_bytes;
}

static void fill_uuid(uint8_t uuid[16])
{
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, uuid, 16) != 16) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)getpid() << 40;
		for (int i = 0; i < 16; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			uuid[i] = (uint8_t)(x >> 56);
		}
	}
	if (fd >= 0)
		close(fd);
}

static struct prosper_pool *pool_new(void *base, size_t size, const struct prosper_persist *pp)
{
	struct prosper_pool *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	p->base = base;
	p->size = size;
	p->fd = -1;
	p->pp = *pp;
	return p;
}

/* format -- write a new, empty pool (epoch 0) into p->base. */
static int format(struct prosper_pool *p, const struct prosper_pool_config *cfg)
{
	int rc = geometry(cfg, &p->sb);
	if (rc)
		return rc;
	if (p->size < p->sb.file_bytes)
		return pool_err(-EINVAL, "buffer of %zu bytes is smaller than the pool (%llu)", p->size,
				(unsigned long long)p->sb.file_bytes);
	fill_uuid(p->sb.uuid);
	p->sb.created_unix = (uint64_t)time(NULL);
	p->sb.crc = sb_crc(&p->sb);
	/* Metadata areas must read as zero except what we write: a recycled buffer is not; a file
	 * made here is (sized by ftruncate), and writing its zeros would cost the metadata slots'
	 * whole room in memory and on disk. */
	if (!p->created_here)
		memset(p->base, 0, p->sb.data_off);
	memcpy(p->base, &p->sb, sizeof p->sb);
	struct pool_meta_hdr h = { .magic = POOL_META_MAGIC, .epoch = 0, .bytes = sizeof h };
	memcpy(meta_slot(p, 0), &h, sizeof h);
	h.crc = meta_crc(&p->sb, meta_slot(p, 0), sizeof h);
	memcpy(meta_slot(p, 0), &h, sizeof h);
	prosper_persist_flush(&p->pp, PSITE_CREATE, p->base, p->sb.data_off);
	prosper_persist_drain(&p->pp, PSITE_CREATE);
	/* The commit words last: until they validate, the file is not a pool. */
	for (int i = 0; i < 2 && !p->pp.error; i++) {
		prosper_persist_store64(&p->pp, PSITE_CREATE, commit_word(p, i), commit_word_encode(&p->sb, 0));
		prosper_persist_range(&p->pp, PSITE_CREATE, commit_word(p, i), 8);
	}
	if (p->pp.error)
		return pool_err(p->pp.error, "cannot persist the new pool: %s", strerror(-p->pp.error));
	return pool_alloc_tables(p);
}

/* mem_pool -- create (cfg given) or open (cfg NULL) a pool over caller memory. */
static int mem_pool(void *base, size_t size, const struct prosper_pool_config *cfg,
		    const struct prosper_persist *pp, prosper_pool **out)
{
	struct prosper_pool *p = pool_new(base, size, pp);
	if (!p)
		return pool_err(-ENOMEM, "out of memory");
	loading = p;
	int rc = cfg ? format(p, cfg) : pool_load(p);
	loading = NULL;
	if (rc) {
		prosper_pool_abandon(&p);
		return rc;
	}
	memset(p->slot_reserved, 1, p->sb.nslots); /* memory needs no reservation */
	*out = p;
	return 0;
}

int prosper_pool_create_mem(void *base, size_t size, const struct prosper_pool_config *cfg,
			    const struct prosper_persist *pp, prosper_pool **out)
{
	return mem_pool(base, size, cfg, pp, out);
}

int prosper_pool_open_mem(void *base, size_t size, const struct prosper_persist *pp, prosper_pool **out)
{
	return mem_pool(base, size, NULL, pp, out);
}

void pool_loading_abandon(void)
{
	prosper_pool_abandon(&loading);
}

void pool_loading_set(struct prosper_pool *p)
{
	loading = p;
}

/* A creator killed while it built `base` in directory `dir` left `.BASE.creating-TAG`: removed
 * once no process holds its lock.  A creator locks its file (flock) from its creation to its link;
 * the lock, not a process id, says whether it lives: ids are reused, and a creator in another pid
 * namespace (an ordinary user's supervisor is always process 2 of its own) has an id that means
 * nothing here. */
static void remove_stale_builds(const char *dir, const char *base)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	size_t bl = strlen(base);
	struct dirent *e;
	while ((e = readdir(d))) {
		const char *n = e->d_name, *tail = ".creating-";
		if (n[0] != '.' || strncmp(n + 1, base, bl) || strncmp(n + 1 + bl, tail, strlen(tail)))
			continue;
		int fd = openat(dirfd(d), n, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue; /* gone already, or someone else's we may not read */
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			unlinkat(dirfd(d), n, 0); /* its creator is gone: nobody else holds it */
		close(fd);
	}
	closedir(d);
}

/* A pool appears under its name only once it is complete: it is built under a temporary name
 * in the same directory and then linked into place (which, like O_EXCL, never replaces an
 * existing file).  A crash during creation leaves no half-made pool under the real name, and
 * what it was building is removed by the next creation of that name. */
int prosper_pool_create(const char *path, const struct prosper_pool_config *cfg, prosper_pool **out)
{
	struct pool_sb sb;
	int rc = geometry(cfg, &sb);
	if (rc)
		return rc;
	struct stat st;
	if (lstat(path, &st) == 0)
		return pool_err(-EEXIST, "cannot create %s: %s", path, strerror(EEXIST));
	char tmp[4096];
	const char *slash = strrchr(path, '/');
	int dirlen = slash ? (int)(slash - path + 1) : 0;
	uint64_t tag = 0;
	if (getrandom(&tag, sizeof tag, 0) != (ssize_t)sizeof tag)
		tag = (uint64_t)getpid() << 32 ^ (uint64_t)time(NULL);
	if (snprintf(tmp, sizeof tmp, "%.*s.%s.creating-%016llx", dirlen, path, slash ? slash + 1 : path,
		     (unsigned long long)tag) >= (int)sizeof tmp)
		return pool_err(-ENAMETOOLONG, "pool path too long");
	char dir[4096];
	snprintf(dir, sizeof dir, "%.*s", dirlen ? dirlen : 1, dirlen ? path : ".");
	remove_stale_builds(dir, slash ? slash + 1 : path);
	struct pool_file f;
	rc = pool_file_create(tmp, sb.file_bytes, sb.data_off, cfg->granularity, &f);
	if (rc)
		return rc;
	flock(f.fd, LOCK_EX); /* ours until linked (remove_stale_builds); no one else has it yet */
	struct prosper_persist pp = { .granularity = f.granularity, .has_file = 1, .file_fd = f.fd, .file_base = f.base,
				      .file_in_memory = f.in_memory };
	struct prosper_pool *p = pool_new(f.base, f.size, &pp);
	if (!p) {
		pool_file_close(&f);
		unlink(tmp);
		return pool_err(-ENOMEM, "out of memory");
	}
	p->fd = f.fd;
	p->pmem2_map = f.map;
	p->created_here = true;
	rc = format(p, cfg);
	if (!rc && link(tmp, path) != 0)
		rc = pool_err(-errno, "cannot create %s: %s", path, strerror(errno));
	unlink(tmp);
	flock(f.fd, LOCK_UN); /* the pool's users lock it by its name (a lock on this file) */
	if (rc) {
		prosper_pool_abandon(&p);
		pool_file_close(&f);
		return rc;
	}
	/* the name itself must survive a power failure */
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	*out = p;
	return 0;
}

int prosper_pool_open(const char *path, prosper_pool **out)
{
	struct pool_file f;
	int rc = pool_file_open(path, &f);
	if (rc)
		return rc;
	struct prosper_persist pp = { .granularity = f.granularity, .has_file = 1, .file_fd = f.fd, .file_base = f.base,
				      .file_in_memory = f.in_memory };
	struct prosper_pool *p = pool_new(f.base, f.size, &pp);
	if (!p) {
		pool_file_close(&f);
		return pool_err(-ENOMEM, "out of memory");
	}
	p->fd = f.fd;
	p->pmem2_map = f.map;
	rc = pool_load(p);
	if (rc) {
		prosper_pool_abandon(&p);
		pool_file_close(&f);
		return rc;
	}
	/* Slots the committed epoch uses have their space, except a buffered segment's and a redo
	 * region's image and log, which may be holes never written (slot_reserve before a write);
	 * the rest on first use. */
	for (uint32_t i = 0; i < p->sb.nslots; i++)
		p->slot_reserved[i] = p->slot_use[i] != SLOT_FREE || p->bound_to[i] != POOL_SLOT_NONE;
	FOR_EACH_SEG(p, r, g)
		if (r->info.mode == PROSPER_REGION_BUFFERED || r->info.mode == PROSPER_REGION_REDO) {
			p->slot_reserved[g->main_slot] = 0;
			if (g->back_slot != POOL_SLOT_NONE)
				p->slot_reserved[g->back_slot] = 0;
		}
	FOR_EACH_REDO(p, r)
		for (uint32_t i = 0; i < r->log_slots; i++)
			p->slot_reserved[r->log_slot + i] = 0;
	*out = p;
	return 0;
}

static void free_regions(struct prosper_pool *p)
{
	for (uint32_t i = 0; i < p->nregions; i++) {
		region_free_segs(&p->regions[i], 0);
		free(p->regions[i].segs);
	}
	free(p->regions);
	p->regions = NULL;
	p->nregions = p->cap_regions = 0;
}

void prosper_pool_abandon(prosper_pool **pool)
{
	struct prosper_pool *p = *pool;
	if (!p)
		return;
	free_regions(p);
	free(p->slot_use);
	free(p->slot_reserved);
	free(p->slot_zero);
	free(p->slot_punch);
	free(p->slot_pending);
	free(p->pending);
	free(p->bound_to);
	free(p->blob);
	free(p);
	*pool = NULL;
}

int prosper_pool_close(prosper_pool **pool)
{
	struct prosper_pool *p = *pool;
	if (!p)
		return 0;
	int rc = p->pp.error;
	if (p->fd >= 0) {
		struct pool_file f = { .fd = p->fd, .map = p->pmem2_map, .base = p->base, .size = p->size };
		int rc2 = pool_file_close(&f);
		if (!rc)
			rc = rc2;
	}
	prosper_pool_abandon(pool);
	return rc;
}

/* ---------------- queries ---------------- */

uint64_t prosper_pool_epoch(const prosper_pool *p) { return p->epoch; }
int prosper_pool_granularity(const prosper_pool *p) { return p->pp.granularity; }
void prosper_pool_uuid(const prosper_pool *p, uint8_t out[16]) { memcpy(out, p->sb.uuid, 16); }
uint64_t prosper_pool_capacity(const prosper_pool *p) { return (uint64_t)p->sb.nslots * p->sb.seg_size; }

void prosper_pool_geometry(const prosper_pool *p, uint32_t *seg_size, uint32_t *block_size)
{
	*seg_size = p->sb.seg_size;
	*block_size = p->sb.block_size;
}

int prosper_pool_region_count(const prosper_pool *p) { return (int)regions_live(p); }

int prosper_pool_region_get(const prosper_pool *p, int idx, struct prosper_region_info *out)
{
	for (uint32_t i = 0; i < p->nregions; i++) {
		if (p->regions[i].removed)
			continue;
		if (idx-- == 0) {
			*out = p->regions[i].info;
			return 0;
		}
	}
	return pool_err(-ENOENT, "no region %d", idx);
}

int prosper_pool_region_find(const prosper_pool *p, const char *name)
{
	int n = region_index(p, name);
	return n >= 0 ? n : pool_err(-ENOENT, "no region named %s", name);
}

const void *prosper_pool_blob(const prosper_pool *p, size_t *len)
{
	*len = p->blob_len;
	return p->blob;
}

void prosper_pool_stats_get(const prosper_pool *p, struct prosper_pool_stats *out) { *out = p->stats; }
