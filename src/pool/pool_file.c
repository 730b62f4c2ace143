/* pool_file.c -- pool files mapped with libpmem2 (docs/architecture.md, "Decisions").
 *
 * We request PAGE store granularity (the coarsest), so any file maps; libpmem2 then tells the
 * granularity it really gave (CACHE_LINE or BYTE on DAX, or as PMEM2_FORCE_GRANULARITY says).
 * Space is reserved with posix_fallocate before a slot is first written: a store into a hole
 * on a full file system is a SIGBUS, a failed posix_fallocate is an error message.
 */
#include <errno.h>
#include <fcntl.h>
#include <libpmem2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>
#include "pool_internal.h"
#include "pool_file.h"

static int map_file(int fd, struct pool_file *f, int force_gran)
{
	struct pmem2_source *src = NULL;
	struct pmem2_config *cfg = NULL;
	struct pmem2_map *map = NULL;
	int rc;
	if ((rc = pmem2_source_from_fd(&src, fd)) != 0)
		goto fail;
	if ((rc = pmem2_config_new(&cfg)) != 0)
		goto fail;
	if ((rc = pmem2_config_set_required_store_granularity(cfg, PMEM2_GRANULARITY_PAGE)) != 0)
		goto fail;
	if ((rc = pmem2_map_new(&map, cfg, src)) != 0)
		goto fail;
	pmem2_config_delete(&cfg);
	pmem2_source_delete(&src);
	f->map = map;
	f->base = pmem2_map_get_address(map);
	f->size = pmem2_map_get_size(map);
	switch (pmem2_map_get_store_granularity(map)) {
	case PMEM2_GRANULARITY_BYTE: f->granularity = PROSPER_GRAN_BYTE; break;
	case PMEM2_GRANULARITY_CACHE_LINE: f->granularity = PROSPER_GRAN_CACHE_LINE; break;
	default: f->granularity = PROSPER_GRAN_PAGE; break;
	}
	struct statfs sf;
	f->in_memory = fstatfs(fd, &sf) == 0 && prosper_fs_is_memory((long)sf.f_type);
	/* A caller may ask for a coarser (never a finer) granularity than the mapping gives. */
	if (force_gran > f->granularity)
		f->granularity = force_gran;
	return 0;
fail:
	if (cfg)
		pmem2_config_delete(&cfg);
	if (src)
		pmem2_source_delete(&src);
	return pool_err(-EIO, "cannot map the pool: %s", pmem2_errormsg());
}

int pool_file_reserve(int fd, uint64_t off, uint64_t len)
{
	if (fd < 0)
		return 0;
	int rc = posix_fallocate(fd, (off_t)off, (off_t)len);
	if (rc)
		return pool_err(-rc, "cannot reserve pool space: %s", strerror(rc));
	return 0;
}

int pool_file_create(const char *path, uint64_t size, uint64_t reserve, int force_gran, struct pool_file *f)
{
	memset(f, 0, sizeof *f);
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return pool_err(-errno, "cannot create %s: %s", path, strerror(errno));
	int rc = 0;
	if (ftruncate(fd, (off_t)size) != 0)
		rc = pool_err(-errno, "cannot size %s: %s", path, strerror(errno));
	if (!rc)
		rc = pool_file_reserve(fd, 0, reserve);
	if (!rc)
		rc = map_file(fd, f, force_gran);
	if (rc) {
		close(fd);
		unlink(path);
		return rc;
	}
	f->fd = fd;
	return 0;
}

int pool_file_check(int fd, const char *path, uint64_t *size)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return pool_err(-errno, "cannot stat %s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return pool_err(-EINVAL, "%s is not a regular file", path);
	if (st.st_uid != geteuid())
		return pool_err(-EPERM, "%s is owned by uid %u, not by you (uid %u)", path,
				(unsigned)st.st_uid, (unsigned)geteuid());
	if (st.st_size == 0)
		return pool_err(-EBADMSG, "%s is empty, not a pool", path);
	*size = (uint64_t)st.st_size;
	return 0;
}

int pool_file_open(const char *path, struct pool_file *f)
{
	memset(f, 0, sizeof *f);
	int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return pool_err(-errno, "cannot open %s: %s", path, strerror(errno));
	uint64_t size;
	struct pool_sb sb;
	int rc = pool_file_check(fd, path, &size);
	/* Validate the superblock before mapping, so the geometry we trust is checked. */
	if (!rc) {
		memset(&sb, 0, sizeof sb);
		ssize_t n = pread(fd, &sb, sizeof sb, 0);
		if (n < 0)
			rc = pool_err(-errno, "cannot read %s: %s", path, strerror(errno));
		else
			rc = sb_validate(&sb, (size_t)n < sizeof sb ? (size_t)n : size);
	}
	if (!rc)
		rc = map_file(fd, f, -1);
	if (rc) {
		close(fd);
		return rc;
	}
	f->fd = fd;
	return 0;
}

int pool_file_close(struct pool_file *f)
{
	int rc = 0;
	if (f->map) {
		struct pmem2_map *m = f->map;
		pmem2_map_delete(&m);
		f->map = NULL;
	}
	if (f->fd >= 0 && close(f->fd) != 0)
		rc = -errno;
	f->fd = -1;
	return rc;
}
