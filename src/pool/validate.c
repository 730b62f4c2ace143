/* validate.c -- checks that decide whether bytes are a pool, and which epoch is committed.
 * Used by open (before recovery writes anything) and by inspect (which never writes).
 * Every check names what failed: the reason reaches the user as one line. */
#include <errno.h>
#include <string.h>
#include "pool_internal.h"

static int is_pow2(uint64_t x) { return x && !(x & (x - 1)); }

int sb_validate(const struct pool_sb *sb, size_t file_size)
{
	if (file_size < sizeof *sb)
		return pool_err(-EBADMSG, "file too small to be a pool (%zu bytes)", file_size);
	if (sb->magic == POOL_MAGIC_SWAPPED)
		return pool_err(-EBADMSG, "pool written on a machine of the other byte order");
	if (sb->magic != POOL_MAGIC)
		return pool_err(-EBADMSG, "not a Prosper pool (bad magic)");
	if (sb->format_version != POOL_FORMAT_VERSION)
		return pool_err(-EPROTO, "pool format version %u, this build reads version %u",
				sb->format_version, POOL_FORMAT_VERSION);
	if (sb->crc != sb_crc(sb))
		return pool_err(-EBADMSG, "superblock checksum mismatch");
	if (sb->layout_version != POOL_LAYOUT_VERSION)
		return pool_err(-EPROTO, "pool layout version %u, this build reads version %u",
				sb->layout_version, POOL_LAYOUT_VERSION);
	if (sb->sb_bytes != sizeof *sb || sb->flags != 0)
		return pool_err(-EPROTO, "superblock size or flags unknown to this build");
	if (!is_pow2(sb->seg_size) || sb->seg_size < POOL_PAGE || !is_pow2(sb->block_size) ||
	    sb->block_size < 64 || sb->block_size > sb->seg_size || sb->nslots == 0 ||
	    sb->max_regions == 0 || sb->meta_bytes < sizeof(struct pool_meta_hdr))
		return pool_err(-EBADMSG, "superblock geometry is inconsistent");
	/* Areas must be in order, aligned and inside the file. */
	uint64_t state_bytes = 2ull * sb->nslots * 8, bind_bytes = (uint64_t)sb->nslots * 8;
	if (sb->commit_off[0] % 8 || sb->commit_off[1] % 8 ||
	    sb->commit_off[0] / POOL_PAGE == sb->commit_off[1] / POOL_PAGE ||
	    sb->commit_off[0] < sizeof *sb || sb->commit_off[1] < sizeof *sb ||
	    sb->commit_off[0] + 8 > sb->meta_off || sb->commit_off[1] + 8 > sb->meta_off ||
	    sb->meta_off + 2ull * sb->meta_bytes > sb->state_off || sb->state_off % 8 ||
	    sb->state_off + state_bytes > sb->bind_off || sb->bind_off + bind_bytes > sb->data_off ||
	    sb->data_off % POOL_PAGE ||
	    sb->data_off + (uint64_t)sb->nslots * sb->seg_size != sb->file_bytes)
		return pool_err(-EBADMSG, "superblock area offsets are inconsistent");
	if (file_size < sb->file_bytes)
		return pool_err(-EBADMSG, "pool truncated: %zu of %llu bytes", file_size,
				(unsigned long long)sb->file_bytes);
	return 0;
}

int meta_validate(const struct pool_sb *sb, const uint8_t *meta, uint64_t epoch)
{
	struct pool_meta_hdr h;
	memcpy(&h, meta, sizeof h);
	if (h.magic != POOL_META_MAGIC)
		return pool_err(-EBADMSG, "metadata of epoch %llu: bad magic", (unsigned long long)epoch);
	if (h.epoch != epoch)
		return pool_err(-EBADMSG, "metadata slot holds epoch %llu, commit word says %llu",
				(unsigned long long)h.epoch, (unsigned long long)epoch);
	uint64_t need = sizeof h + (uint64_t)h.nregions * sizeof(struct pool_region_rec) +
			(uint64_t)h.nsegs * sizeof(struct pool_seg_rec) + h.blob_bytes;
	if (h.bytes > sb->meta_bytes || need != h.bytes || h.nregions > sb->max_regions ||
	    h.nsegs > sb->nslots)
		return pool_err(-EBADMSG, "metadata of epoch %llu: sizes inconsistent", (unsigned long long)epoch);
	if (meta_crc(sb, meta, h.bytes) != h.crc)
		return pool_err(-EBADMSG, "metadata of epoch %llu: checksum mismatch", (unsigned long long)epoch);
	/* Records: segments in range, slots in range and distinct. */
	const struct pool_region_rec *rr = (const void *)(meta + sizeof h);
	const struct pool_seg_rec *sr = (const void *)(rr + h.nregions);
	uint64_t segs_seen = 0;
	for (uint32_t i = 0; i < h.nregions; i++) {
		struct pool_region_rec r;
		memcpy(&r, &rr[i], sizeof r);
		uint64_t want = (r.length + sb->seg_size - 1) / sb->seg_size;
		if ((r.mode != PROSPER_REGION_BUFFERED && r.mode != PROSPER_REGION_DIRECT &&
		     r.mode != PROSPER_REGION_REDO) ||
		    r.nsegs != want || r.first_seg != segs_seen || memchr(r.name, 0, sizeof r.name) == NULL ||
		    r.id >= h.next_region_id || r.reserved)
			return pool_err(-EBADMSG, "metadata of epoch %llu: region %u inconsistent",
					(unsigned long long)epoch, i);
		bool redo = r.mode == PROSPER_REGION_REDO;
		/* A redo region's log: a run inside the data slots (it grows as it is written; the
		 * log's own check keeps it within the run).  Other regions have none. */
		if (redo ? r.log_slot >= sb->nslots || r.log_slots > sb->nslots - r.log_slot || r.log_slots == 0
			 : r.log_slot != POOL_SLOT_NONE || r.log_slots || r.log_crc)
			return pool_err(-EBADMSG, "metadata of epoch %llu: redo log of region %u inconsistent",
					(unsigned long long)epoch, i);
		for (uint32_t k = 0; k < r.nsegs; k++) {
			struct pool_seg_rec s;
			memcpy(&s, &sr[r.first_seg + k], sizeof s);
			bool single = r.mode != PROSPER_REGION_BUFFERED; /* direct and redo: main slot only */
			if (s.main_slot >= sb->nslots ||
			    (single ? s.back_slot != POOL_SLOT_NONE : (s.back_slot >= sb->nslots || s.back_slot == s.main_slot)))
				return pool_err(-EBADMSG, "metadata of epoch %llu: segment slot out of range",
						(unsigned long long)epoch);
		}
		segs_seen += r.nsegs;
	}
	if (segs_seen != h.nsegs)
		return pool_err(-EBADMSG, "metadata of epoch %llu: segment count mismatch", (unsigned long long)epoch);
	return 0;
}

/* find_committed -- the committed epoch is the larger valid commit word whose metadata slot
 * validates.  Copy A is written (and made durable) before copy B, so A >= B always; a crash
 * between the two leaves A = B + 1, and both epochs' metadata slots are intact. */
int find_committed(const struct pool_sb *sb, const uint8_t *base, uint64_t *epoch, int *valid_words)
{
	uint64_t e[2];
	int ok[2];
	int nvalid = 0;
	for (int i = 0; i < 2; i++) {
		uint64_t w;
		memcpy(&w, base + sb->commit_off[i], 8);
		ok[i] = commit_word_decode(sb, w, &e[i]) == 0;
		nvalid += ok[i];
	}
	if (valid_words)
		*valid_words = nvalid;
	if (!nvalid)
		return pool_err(-EBADMSG, "both commit words are corrupt");
	if (ok[0] && ok[1] && e[0] != e[1] && e[0] != e[1] + 1)
		return pool_err(-EBADMSG, "commit words disagree (epochs %llu and %llu)",
				(unsigned long long)e[0], (unsigned long long)e[1]);
	/* Candidates, newest first. */
	uint64_t cand[2];
	int n = 0;
	if (ok[0]) cand[n++] = e[0];
	if (ok[1] && (!ok[0] || e[1] != e[0])) cand[n++] = e[1];
	if (n == 2 && cand[1] > cand[0]) { uint64_t t = cand[0]; cand[0] = cand[1]; cand[1] = t; }
	int rc = -EBADMSG;
	for (int i = 0; i < n; i++) {
		rc = meta_validate(sb, base + sb->meta_off + (cand[i] & 1) * (uint64_t)sb->meta_bytes, cand[i]);
		if (rc == 0) {
			*epoch = cand[i];
			return 0;
		}
		/* Only a lone surviving word may fall back: with two valid words the newer one was
		 * committed after its metadata was durable, so a bad slot is corruption. */
		if (ok[0] && ok[1])
			return rc;
	}
	return rc;
}
