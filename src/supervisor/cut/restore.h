/* restore.h -- the restore of one relaunched process (restore.c, restore_check.c). */
#ifndef PROSPER_SUP_RESTORE_H
#define PROSPER_SUP_RESTORE_H
#include "sup.h"
#include "tree_image.h"

/* restore.c: rebuild the stopped, freshly launched child (stopped in the shim at SIGSTOP) from
 * the committed epoch im; uffd is its userfaultfd (fills memory faster), or -1.  0, or negative
 * with a one-line reason in why. */
struct shim_hello;
int sup_restore(struct sup *s, const struct img *im, const struct shim_hello *hello, int uffd, char *why,
		size_t whylen);
/* restore_check.c: the checks that need no child: files, kernel, CPU.  0, or the refusal with a one-line why.
 * tv (or NULL): the tree blob, whose shared memory the image of process `pid` may map. */
enum refusal sup_restore_check(const struct img *im, const struct tree_view *tv, int32_t pid, char *why, size_t whylen);
/* Those of them that read none of the program's files (kernel, CPU, the fds of kinds that name
 * no file): made before the files are undone, so that such a refusal leaves them as they are. */
enum refusal sup_restore_check_no_files(const struct img *im, const struct tree_view *tv, char *why, size_t whylen);

#endif
