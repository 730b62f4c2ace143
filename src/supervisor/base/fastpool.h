/* fastpool.h -- where the fast pool of a pool on a disk lives (tiers.h): its one naming rule,
 * shared by the supervisor and `prosper inspect`.
 *
 *   $PROSPER_FAST_DIR (default /dev/shm) / prosper-<euid> / <uuid of the durable pool>.prosper
 *
 * The directory is made 0700 on first use and must be a real directory owned by the user with
 * no access for others: a name another user could plant is never used.
 */
#ifndef PROSPER_SUP_FASTPOOL_H
#define PROSPER_SUP_FASTPOOL_H
#include <stddef.h>
#include <stdint.h>

/* The directory; make: create it if missing.  0, or -1 if it is missing or not private. */
int fastpool_dir(char *out, size_t cap, int make);
/* The fast pool's path for the durable pool whose uuid is given.  0, or -1 as fastpool_dir. */
int fastpool_path(const uint8_t uuid[16], char *out, size_t cap, int make);
#endif
