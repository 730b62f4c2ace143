/* fillcopy.c -- UFFDIO_COPY fill of a resume's fresh anonymous mappings, on every core (fillcopy.h). */
#include "fillcopy.h"
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include "sup.h"

/* A chunk is at most this long: small enough that the threads end together, large enough that
 * taking one costs nothing beside its copy. */
#define CHUNK (4ull << 20)
#define MAX_FILL_THREADS 4

struct copy_chunk {
	uint32_t vma;
	uint64_t off, len;
};

struct job {
	struct sup *s;
	int uffd;
	const struct img *im;
	struct copy_chunk *chunks;
	size_t nchunks;
	atomic_size_t next;
	atomic_uchar *failed; /* per mapping */
	atomic_uint_fast64_t bytes;
};

static void *worker(void *arg)
{
	struct job *j = arg;
	uint64_t bytes = 0;
	for (size_t k; (k = atomic_fetch_add(&j->next, 1)) < j->nchunks;) {
		const struct copy_chunk *c = &j->chunks[k];
		const struct img_vma *v = &j->im->vmas[c->vma];
		for (uint64_t off = c->off, end = c->off + c->len; off < end && !atomic_load(&j->failed[c->vma]);) {
			const void *src;
			uint64_t n;
			if (prosper_pool_region_view(j->s->tree->pool, v->region, off, end - off, &src, &n) != 0) {
				atomic_store(&j->failed[c->vma], 1);
				break;
			}
			if (src) {
				struct uffdio_copy cp = { .dst = v->start + off, .src = (uint64_t)(uintptr_t)src, .len = n };
				if (ioctl(j->uffd, UFFDIO_COPY, &cp) != 0) {
					atomic_store(&j->failed[c->vma], 1);
					break;
				}
				bytes += n;
			}
			off += n;
		}
	}
	atomic_fetch_add(&j->bytes, bytes);
	return NULL;
}

int fillcopy_run(struct sup *s, int uffd, const struct img *im, const uint8_t *eligible, uint8_t *done)
{
	int rc = 0;
	uint32_t nv = im->h->nvmas;
	size_t cap = 0;
	for (uint32_t i = 0; i < nv; i++)
		if (eligible[i])
			cap += (im->vmas[i].end - im->vmas[i].start + CHUNK - 1) / CHUNK;
	struct job j = { .s = s, .uffd = uffd, .im = im, .chunks = calloc(cap + 1, sizeof *j.chunks),
			 .failed = calloc(nv + 1u, sizeof *j.failed) };
	uint8_t *registered = calloc(nv + 1u, 1);
	if (!j.chunks || !j.failed || !registered)
		goto out;
	for (uint32_t i = 0; i < nv; i++) {
		const struct img_vma *v = &im->vmas[i];
		struct uffdio_register reg = { .range = { v->start, v->end - v->start }, .mode = UFFDIO_REGISTER_MODE_MISSING };
		if (!eligible[i] || ioctl(uffd, UFFDIO_REGISTER, &reg) != 0)
			continue;
		registered[i] = 1;
		for (uint64_t off = 0, len = v->end - v->start; off < len; off += CHUNK)
			j.chunks[j.nchunks++] = (struct copy_chunk){ i, off, len - off < CHUNK ? len - off : CHUNK };
	}
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	int nthreads = cores < 1 ? 1 : cores > MAX_FILL_THREADS ? MAX_FILL_THREADS : (int)cores;
	if ((size_t)nthreads > j.nchunks)
		nthreads = j.nchunks ? (int)j.nchunks : 1;
	pthread_t helpers[MAX_FILL_THREADS];
	int started = 0;
	for (int t = 1; t < nthreads; t++)
		if (pthread_create(&helpers[started], NULL, worker, &j) == 0)
			started++;
	worker(&j); /* this thread is one of them */
	for (int t = 0; t < started; t++)
		pthread_join(helpers[t], NULL);
	for (uint32_t i = 0; i < nv; i++) {
		if (!registered[i])
			continue;
		struct uffdio_range whole = { im->vmas[i].start, im->vmas[i].end - im->vmas[i].start };
		if (ioctl(uffd, UFFDIO_UNREGISTER, &whole) != 0)
			rc = -1; /* its holes would wait for a reader forever: no resume */
		done[i] = !atomic_load(&j.failed[i]);
	}
	s->tree->stats.restored_bytes += atomic_load(&j.bytes);
	s->tree->stats.restore_copied_bytes += atomic_load(&j.bytes);
out:
	free(j.chunks);
	free((void *)j.failed);
	free(registered);
	return rc;
}
