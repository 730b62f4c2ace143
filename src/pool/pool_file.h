/* pool_file.h -- the pool file: creation, mapping through libpmem2, space reservation. */
#ifndef PROSPER_POOL_FILE_H
#define PROSPER_POOL_FILE_H
#include <stddef.h>
#include <stdint.h>

struct pool_file {
	int fd;
	void *map;          /* struct pmem2_map * */
	uint8_t *base;
	size_t size;
	int granularity;    /* enum prosper_granularity the mapping gave */
	int in_memory;      /* on tmpfs/ramfs: no device behind the page cache */
};

/* Create path (O_EXCL, 0600, no symlinks) of `size` bytes, reserve [0, reserve) now. */
int pool_file_create(const char *path, uint64_t size, uint64_t reserve, int force_gran, struct pool_file *f);
/* Open an existing pool file read-write after checking it is a regular file we own. */
int pool_file_open(const char *path, struct pool_file *f);
/* Check the file we are about to read: exists, regular, ours, not empty; fills size. */
int pool_file_check(int fd, const char *path, uint64_t *size);
int pool_file_reserve(int fd, uint64_t off, uint64_t len);
int pool_file_close(struct pool_file *f);
#endif
