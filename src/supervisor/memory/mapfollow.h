/* mapfollow.h -- a process's saved regions follow its map (mapfollow.c). */
#ifndef PROSPER_SUP_MAPFOLLOW_H
#define PROSPER_SUP_MAPFOLLOW_H
#include <stdint.h>
#include "procfs.h"

struct sup;
struct known_file;
struct img_buf;

/* The saved mapping that starts at start, or NULL. */
struct vma *map_find_saved(struct sup *s, uint64_t start);
/* s->now (*n mappings, read at this stop) cut where a saved region starts inside a mapping, so
 * that mappings a resume maps as one stay their regions.  0 or a negative errno. */
int map_split_at_saved(struct sup *s, int *n);
/* Regions follow the map: new mappings are added (tracked from now on), changed ones resized,
 * vanished ones removed.  On return s->cut.now[i].seen says whether mapping i is saved. */
int map_follow(struct sup *s, int n, const struct vma *prev, int nprev);
/* Is now[i] shaped like a thread's stack as glibc makes one (a guard page right below it)? */
int map_guarded_like_a_stack(const struct vma *now, int i);

/* blob.c: the epoch's record of process s (nmaps mappings in s->cut.now) into *out.  0 or a negative errno. */
int capture_blob(struct sup *s, struct img_buf *out, int nmaps);

/* The pre-copy pass's part of following the map (stage.h), while the child runs: mappings that
 * appeared since the last stop get their regions, are protected, and their pages are staged,
 * so that the stop does not copy them whole.  0 or a negative errno. */
int sup_adopt_new_maps(struct sup *s);
/* The identity of a mapped file, computed when its path is first seen; NULL if it cannot be read. */
const struct known_file *sup_known_file(struct sup *s, const char *path);
/* ... and taken again at a cut if the file under its path is no longer the one known (another
 * inode, size or modification time): a program that replaces a file it maps (git rewriting its
 * config through a lock file and a rename) maps the new one, and a resume's check compares with
 * the file as it was at the cut -- which the file-undo journal puts back -- not as first seen. */
void sup_known_file_refresh(struct known_file *k);

#endif
