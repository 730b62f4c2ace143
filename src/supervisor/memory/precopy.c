/* precopy.c -- the pre-copy pass: most of a cut's bytes read while the program runs, before the stop (precopy.h). */
#include "precopy.h"
#include <time.h>
#include "stage.h"
#include "stopclock.h"
#include "mapfollow.h"

int stage_precopy(struct sup *s)
{
	struct batch *bt = &s->cut.batch;
	if (bt->npre || s->exited || s->vforked || s->untracked || s->track.pagemap_fd < 0 ||
	    s->track.kind != PROSPER_TRACK_PAGE || s->cfg.heap_mode == TRACK_MODE_FULL)
		return 0;
	double t0 = stopclock_now();
	stage_forget(s);
	int rc = 0;
	for (int i = 0; i < s->nvmas && !rc; i++) {
		struct vma *v = &s->vmas[i];
		if (v->sp)
			continue; /* a stack: at the stop, from its SP */
		if (v->pre_skip > 0) {
			v->pre_skip--;
			continue;
		}
		long k;
		if (v->copy_whole) {
			/* dense: protected again, read whole; the stop reads what is written after */
			if (!v->pre_armed && prosper_track_rearm(&s->track, v->start, v->end) != 0)
				continue; /* unmapped meanwhile: the stop copies it whole as it would have */
			v->pre_armed = 1;
			s->cut.ranges[0] = (struct prosper_range){ v->start, v->end };
			k = 1;
		} else if ((k = prosper_track_collect_live(&s->track, v->start, v->end, s->cut.ranges, MAX_RANGES)) < 0) {
			/* the process ended or executed another program under the pass, or the scan failed
			 * part way (what it had re-protected is lost to the tracker): the stop copies this
			 * mapping whole and protects it again, as it does a dense one's last time */
			v->copy_whole = 1;
			s->track.err[0] = 0;
			continue;
		}
		for (long j = 0; j < k && !rc; j++)
			rc = stage(s, v, s->cut.ranges[j].start, s->cut.ranges[j].end, 0);
	}
	if (!rc) /* after the loop above: a mapping is staged once per pass */
		rc = sup_adopt_new_maps(s);
	uint64_t bytes = 0;
	char unused[300];
	if (read_staged(s, s->pid, &bytes, 0, 1, unused, sizeof unused) != 0) {
		bt->pre_stale = 1; /* a mapping went away under the pass: the stop reads them again */
		s->tree->stats.precopy.stale++;
	}
	bt->npre = bt->nchunks;
	s->tree->stats.precopy.passes++;
	s->tree->stats.precopy.bytes += bytes;
	s->tree->stats.precopy.seconds += stopclock_now() - t0;
	return rc;
}
