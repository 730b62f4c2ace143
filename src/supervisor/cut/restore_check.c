/* restore_check.c -- the checks of a resume that need no process: files, kernel, CPU (the first
 * invariant of restore.c: everything that can refuse is checked before anything changes). */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "fdkind.h"
#include "sup.h"
#include "tree_image.h"
#include "restore.h"

/* Is every mapping of path in the checkpoint shared and writable?  *needs: the file length they
 * reach (offset + length of the farthest). */
static int shared_writable_only(const struct img *im, const char *path, uint64_t *needs)
{
	int any = 0;
	for (uint32_t i = 0; i < im->h->nvmas; i++) {
		const struct img_vma *v = &im->vmas[i];
		const char *p = img_s(im, v->path);
		if (!p || strcmp(p, path))
			continue;
		if (v->perms[1] != 'w' || v->perms[3] != 's')
			return 0;
		any = 1;
		if (v->offset + (v->end - v->start) > *needs)
			*needs = v->offset + (v->end - v->start);
	}
	return any;
}

/* The kernel and the CPU the checkpoint was taken on. */
static enum refusal machine_check(const struct img *im, char *why, size_t whylen)
{
#define REFUSE(r, ...) do { snprintf(why, whylen, __VA_ARGS__); return r; } while (0)
	const char *rel = kernel_release();
	const char *was = img_s(im, im->h->kernel_str);
	if (was && strcmp(was, rel))
		REFUSE(REFUSE_KERNEL_CHANGED, "the kernel changed (%s, checkpoint taken under %s): refusing to resume", rel, was);
	if (im->h->xcr0 != cpu_xcr0())
		REFUSE(REFUSE_CPU_CHANGED, "the CPU's extended-state features differ from the checkpoint's (XCR0 %#llx vs %#llx)",
		     (unsigned long long)cpu_xcr0(), (unsigned long long)im->h->xcr0);
	return 0;
#undef REFUSE
}

enum refusal sup_restore_check_no_files(const struct img *im, const struct tree_view *tv, char *why, size_t whylen)
{
	enum refusal r = machine_check(im, why, whylen);
	return r ? r : fd_check_no_files(im, tv, why, whylen);
}

enum refusal sup_restore_check(const struct img *im, const struct tree_view *tv, int32_t pid, char *why, size_t whylen)
{
#define REFUSE(r, ...) do { snprintf(why, whylen, __VA_ARGS__); return r; } while (0)
	for (uint32_t i = 0; i < im->h->nfiles; i++) {
		const struct img_file *f = &im->files[i];
		const char *path = img_s(im, f->path);
		struct file_id now;
		if (tree_shm_named(tv, path) >= 0)
			continue; /* shared memory with a name: made again if gone, else as it is (sharedmem.h) */
		if (file_identity(path, &now) != 0)
			REFUSE(REFUSE_FILE_GONE, "%s is gone: the checkpoint needs it", path);
		/* A file mapped only shared and writable is data the program writes through the mapping
		 * (a JVM's hsperfdata counters), not rolled back (docs/limitations.md): it is mapped
		 * again as it is now, so it only has to be long enough for its mappings. */
		uint64_t needs = 0;
		if (shared_writable_only(im, path, &needs)) {
			if (now.size < needs)
				REFUSE(REFUSE_FILE_CHANGED, "%s is shorter than the checkpoint maps it (%llu < %llu bytes): refusing to resume",
				       path, (unsigned long long)now.size, (unsigned long long)needs);
			continue;
		}
		if (now.size != f->size || now.mtime_ns != f->mtime_ns || now.build_id_len != f->build_id_len ||
		    memcmp(now.build_id, f->build_id, f->build_id_len))
			REFUSE(REFUSE_FILE_CHANGED, "%s changed since the checkpoint (size, mtime or build-id): refusing to resume", path);
	}
	enum refusal r = machine_check(im, why, whylen);
	if (r)
		return r;
	for (uint32_t i = 0; i < im->h->nvmas; i++) {
		const char *p = img_s(im, im->vmas[i].path);
		if (p && p[0] == '/' && strstr(p, " (deleted)") && tree_shm_at(tv, pid, im->vmas[i].start) < 0)
			REFUSE(REFUSE_MAPPED_DELETED, "the checkpoint maps a deleted file (%s)", p);
	}
	return fd_check(im, tv, why, whylen); /* each fd by its kind (fdkind.h) */
#undef REFUSE
}
