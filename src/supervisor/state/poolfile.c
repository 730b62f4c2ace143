/* poolfile.c -- lock, state and finished mark of the pool file (poolfile.h). */
#include "poolfile.h"
#include "tiers.h"
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#define DONE_MAGIC 0x454E4F4450535250ull /* "PRSPDONE": the program finished */
struct done_record {
	uint64_t magic;
	int32_t exit_code;
	uint32_t pad;
};

int poolfile_lock(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		close(fd);
		return -EBUSY;
	}
	return fd; /* held until we exit */
}

int poolfile_finished(const void *blob, size_t len, int *exit_code)
{
	const struct done_record *d = blob;
	if (!d || len != sizeof *d || d->magic != DONE_MAGIC)
		return 0;
	*exit_code = d->exit_code;
	return 1;
}

enum pool_state poolfile_state(const char *path, char *why, size_t whylen, char *fast, size_t fastcap)
{
	*fast = 0;
	int lock = poolfile_lock(path);
	if (lock == -EBUSY)
		return POOL_BUSY;
	prosper_pool *p = NULL;
	if (lock < 0 || prosper_pool_open(path, &p) != 0) {
		snprintf(why, whylen, "%s", lock < 0 ? strerror(-lock) : prosper_pool_errormsg());
		if (lock >= 0)
			close(lock);
		return POOL_FOREIGN;
	}
	/* a fast pool of it holds the newer state (tiers.h, T1) */
	prosper_pool *newest = p, *f = NULL;
	if (tiers_fast_path_of(p, fast, fastcap) && prosper_pool_open(fast, &f) == 0)
		newest = f;
	size_t len = 0;
	int code;
	int done = poolfile_finished(prosper_pool_blob(newest, &len), len, &code);
	int empty = prosper_pool_epoch(newest) == 0;
	prosper_pool_close(&p);
	prosper_pool_close(&f);
	close(lock);
	return done || empty ? POOL_FINISHED : POOL_RESUMABLE;
}

int poolfile_mark_finished(prosper_pool *p, int exit_code)
{
	struct done_record d = { .magic = DONE_MAGIC, .exit_code = exit_code };
	return prosper_pool_commit(p, &d, sizeof d);
}

int poolfile_record_put(prosper_pool *p, const char *name, const void *rec, size_t len)
{
	int at = prosper_pool_region_find(p, name);
	struct prosper_region_info info;
	int id;
	if (at >= 0) {
		if ((id = prosper_pool_region_get(p, at, &info)) != 0)
			return id;
		id = (int)info.id;
		int rc = info.length != len ? prosper_pool_region_resize(p, (uint32_t)id, len) : 0; /* a record of another version */
		if (rc)
			return rc;
	} else if ((id = prosper_pool_region_add(p, name, PROSPER_KIND_OTHER, PROSPER_REGION_REDO, 0, len, 0)) < 0) {
		return id;
	}
	return prosper_pool_write(p, (uint32_t)id, 0, rec, len);
}

int poolfile_record_get(prosper_pool *p, const char *name, void *rec, size_t len)
{
	int at = prosper_pool_region_find(p, name);
	if (at < 0)
		return 1;
	struct prosper_region_info info;
	if (prosper_pool_region_get(p, at, &info) != 0 || info.length != len ||
	    prosper_pool_region_read(p, info.id, 0, rec, len) != 0)
		return -1;
	return 0;
}
