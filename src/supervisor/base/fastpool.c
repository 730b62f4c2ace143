/* fastpool.c -- the fast pool's name (fastpool.h). */
#include "fastpool.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

int fastpool_dir(char *out, size_t cap, int make)
{
	const char *base = getenv("PROSPER_FAST_DIR");
	if (!base || !*base)
		base = "/dev/shm";
	snprintf(out, cap, "%s/prosper-%u", base, (unsigned)geteuid());
	struct stat st;
	if (lstat(out, &st) != 0 && (!make || errno != ENOENT || mkdir(out, 0700) != 0 || lstat(out, &st) != 0))
		return -1;
	return S_ISDIR(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 077) == 0 ? 0 : -1;
}

int fastpool_path(const uint8_t uuid[16], char *out, size_t cap, int make)
{
	char dir[4096];
	if (fastpool_dir(dir, sizeof dir, make) != 0)
		return -1;
	char hex[33];
	for (int i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", uuid[i]);
	snprintf(out, cap, "%s/%s.prosper", dir, hex);
	return 0;
}
