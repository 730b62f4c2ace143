/* inspect.c -- describe a pool file without changing it (prosper inspect).
 *
 * Reads only the metadata areas (superblock .. bindings; of each metadata slot the bytes it holds)
 * and the redo logs with pread; never
 * maps for writing, never runs recovery.  A file that is not a valid pool yields a negative code and a one-line
 * reason; everything else is reported, including which checksums fail.
 */
#include <errno.h>
#include <fcntl.h>
#include <libpmem2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "prosper/stackckpt.h"
#include "pool_internal.h"
#include "pool_file.h"

/* The metadata areas of the pool file fd (superblock .. bindings) into md, data_off bytes that
 * read as zero (calloc): all of them but for each metadata slot only its header and the bytes it
 * says it holds -- a slot's room (the epoch blob's, which a caller may make large) is mostly
 * never written.  0 or -EIO. */
static int read_metadata(int fd, const struct pool_sb *sb, uint8_t *md)
{
	if (pread(fd, md, sb->meta_off, 0) != (ssize_t)sb->meta_off)
		return -EIO;
	for (int q = 0; q < 2; q++) {
		uint64_t at = sb->meta_off + (uint64_t)q * sb->meta_bytes;
		struct pool_meta_hdr h;
		if (pread(fd, &h, sizeof h, (off_t)at) != (ssize_t)sizeof h)
			return -EIO;
		size_t n = h.bytes >= sizeof h && h.bytes <= sb->meta_bytes ? h.bytes : sizeof h;
		if (pread(fd, md + at, n, (off_t)at) != (ssize_t)n)
			return -EIO;
	}
	size_t rest = sb->data_off - sb->state_off;
	return pread(fd, md + sb->state_off, rest, (off_t)sb->state_off) == (ssize_t)rest ? 0 : -EIO;
}

/* What a redo region's log area holds, as recovery would judge it (redo.c). */
struct log_view {
	const char *state;  /* "committed": re-applied at open; "other_epoch", "invalid": ignored;
			     * "mismatch": a log of the committed epoch that the metadata does not name
			     * (open refuses the pool) */
	uint64_t epoch, records, bytes;
};

static void read_log(int fd, const struct pool_sb *sb, const struct pool_region_rec *r, uint64_t committed,
		     struct log_view *v)
{
	memset(v, 0, sizeof *v);
	v->state = "invalid";
	uint64_t at = sb->data_off + (uint64_t)r->log_slot * sb->seg_size, cap = (uint64_t)r->log_slots * sb->seg_size;
	uint8_t hdr[PROSPER_STACKLOG_HEADER];
	if (pread(fd, hdr, sizeof hdr, (off_t)at) != (ssize_t)sizeof hdr)
		return;
	uint64_t used = prosper_stacklog_bytes(hdr);
	if (used < sizeof hdr || used > cap)
		return;
	uint8_t *log = malloc(used);
	if (!log)
		return;
	uint64_t tag;
	if (pread(fd, log, used, (off_t)at) == (ssize_t)used && prosper_stacklog_check(log, used, &tag) == 0) {
		v->epoch = tag;
		v->records = prosper_stacklog_records(log);
		v->bytes = used;
		v->state = tag != committed ? "other_epoch" : prosper_stacklog_crc(log) == r->log_crc ? "committed" : "mismatch";
	}
	free(log);
}

static const char *state_name(uint8_t s)
{
	switch (s) {
	case ST_INIT: return "INIT";
	case ST_MAIN: return "MAIN";
	case ST_BACK: return "BACK";
	}
	return "CORRUPT";
}

static const char *mode_name(uint32_t m)
{
	return m == PROSPER_REGION_BUFFERED ? "buffered" : m == PROSPER_REGION_DIRECT ? "direct"
	       : m == PROSPER_REGION_REDO   ? "redo"
					   : "?";
}

static const char *kind_name(uint32_t k)
{
	static const char *const n[] = { "other", "stack", "heap", "data", "anon", "crpm", "nvm" };
	return k < sizeof n / sizeof n[0] ? n[k] : "?";
}

static void json_str(FILE *o, const char *s)
{
	fputc('"', o);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(o, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(o, "\\u%04x", c);
		else
			fputc(c, o);
	}
	fputc('"', o);
}

/* granularity -- what libpmem2 would give this file; "unknown" if it cannot be mapped. */
static const char *granularity(const char *path)
{
	int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return "unknown";
	const char *g = "unknown";
	struct pmem2_source *src = NULL;
	struct pmem2_config *cfg = NULL;
	struct pmem2_map *map = NULL;
	if (!pmem2_source_from_fd(&src, fd) && !pmem2_config_new(&cfg) &&
	    !pmem2_config_set_required_store_granularity(cfg, PMEM2_GRANULARITY_PAGE) &&
	    !pmem2_map_new(&map, cfg, src)) {
		switch (pmem2_map_get_store_granularity(map)) {
		case PMEM2_GRANULARITY_BYTE: g = "byte"; break;
		case PMEM2_GRANULARITY_CACHE_LINE: g = "cache_line"; break;
		default: g = "page"; break;
		}
		pmem2_map_delete(&map);
	}
	if (cfg)
		pmem2_config_delete(&cfg);
	if (src)
		pmem2_source_delete(&src);
	close(fd);
	return g;
}

int prosper_pool_inspect_file(const char *path, int json, void *out_)
{
	FILE *o = out_;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return pool_err(-errno, "cannot open %s: %s", path, strerror(errno));
	uint64_t size;
	int rc = pool_file_check(fd, path, &size);
	struct pool_sb sb;
	memset(&sb, 0, sizeof sb);
	if (!rc) {
		ssize_t n = pread(fd, &sb, sizeof sb, 0);
		rc = n < 0 ? pool_err(-errno, "cannot read %s: %s", path, strerror(errno))
			   : sb_validate(&sb, (size_t)n < sizeof sb ? (size_t)n : size);
	}
	uint8_t *md = NULL;
	if (!rc) {
		md = calloc(1, sb.data_off);
		if (!md)
			rc = pool_err(-ENOMEM, "out of memory");
		else if (read_metadata(fd, &sb, md) != 0)
			rc = pool_err(-EIO, "cannot read the metadata of %s", path);
	}
	uint64_t epoch = 0;
	int valid_words = 0;
	if (!rc)
		rc = find_committed(&sb, md, &epoch, &valid_words);
	if (rc) {
		close(fd);
		free(md);
		return rc;
	}
	int q = (int)(epoch & 1);
	const uint8_t *m = md + sb.meta_off + (uint64_t)q * sb.meta_bytes;
	struct pool_meta_hdr h;
	memcpy(&h, m, sizeof h);
	const struct pool_region_rec *rr = (const void *)(m + sizeof h);
	const struct pool_seg_rec *sr = (const void *)(rr + h.nregions);
	int other_meta_ok = meta_validate(&sb, md + sb.meta_off + (uint64_t)(q ^ 1) * sb.meta_bytes,
					  epoch ? epoch - 1 : 0) == 0 && epoch > 0;
	uint64_t w[2], e[2];
	int wok[2];
	for (int i = 0; i < 2; i++) {
		memcpy(&w[i], md + sb.commit_off[i], 8);
		wok[i] = commit_word_decode(&sb, w[i], &e[i]) == 0;
	}
	uint32_t bad_states = 0, bad_binds = 0, bound = 0;
	for (uint32_t b = 0; b < sb.nslots; b++) {
		uint64_t bw;
		uint32_t ms;
		memcpy(&bw, md + sb.bind_off + 8ull * b, 8);
		if (bind_decode(&sb, b, bw, &ms))
			bad_binds++;
		else if (ms != POOL_SLOT_NONE)
			bound++;
	}
	char uuid[33];
	for (int i = 0; i < 16; i++)
		snprintf(uuid + 2 * i, 3, "%02x", sb.uuid[i]);
	const char *gran = granularity(path);
	struct stat fst;
	uint64_t disk_bytes = fstat(fd, &fst) == 0 ? (uint64_t)fst.st_blocks * 512 : 0;

	if (json) {
		fprintf(o, "{\"path\": ");
		json_str(o, path);
		fprintf(o, ", \"magic\": \"0x%016llx\", \"format_version\": %u, \"layout_version\": %u, "
			   "\"uuid\": \"%s\", \"file_bytes\": %llu, \"seg_size\": %u, \"block_size\": %u, "
			   "\"nslots\": %u, \"max_regions\": %u, \"max_backups\": %u, \"meta_bytes\": %u, "
			   "\"created_unix\": %llu, \"granularity\": \"%s\", \"epoch\": %llu, \"disk_bytes\": %llu, ",
			(unsigned long long)sb.magic, sb.format_version, sb.layout_version, uuid,
			(unsigned long long)sb.file_bytes, sb.seg_size, sb.block_size, sb.nslots, sb.max_regions,
			sb.max_backups, sb.meta_bytes, (unsigned long long)sb.created_unix, gran,
			(unsigned long long)epoch, (unsigned long long)disk_bytes);
		fprintf(o, "\"checksums\": {\"superblock\": true, \"commit_a\": %s, \"commit_b\": %s, "
			   "\"meta_committed\": true, \"meta_previous\": %s, \"bindings_corrupt\": %u}, ",
			wok[0] ? "true" : "false", wok[1] ? "true" : "false", other_meta_ok ? "true" : "false", bad_binds);
		fprintf(o, "\"blob_bytes\": %u, \"backups_bound\": %u, \"regions\": [", h.blob_bytes, bound);
	} else {
		fprintf(o, "pool %s\n  format v%u, layout v%u, uuid %s, created %llu\n", path, sb.format_version,
			sb.layout_version, uuid, (unsigned long long)sb.created_unix);
		fprintf(o, "  %llu bytes (%llu on disk): %u slots of %u bytes (blocks of %u), max %u regions, granularity %s\n",
			(unsigned long long)sb.file_bytes, (unsigned long long)disk_bytes, sb.nslots, sb.seg_size,
			sb.block_size, sb.max_regions, gran);
		fprintf(o, "  committed epoch %llu; commit words A %s, B %s; previous metadata %s\n",
			(unsigned long long)epoch, wok[0] ? "ok" : "CORRUPT", wok[1] ? "ok" : "CORRUPT",
			other_meta_ok ? "ok" : "absent or overwritten");
		fprintf(o, "  %u regions, %u segments, blob %u bytes, %u backups bound, %u corrupt bindings\n",
			h.nregions, h.nsegs, h.blob_bytes, bound, bad_binds);
	}
	for (uint32_t i = 0; i < h.nregions; i++) {
		struct pool_region_rec r;
		memcpy(&r, &rr[i], sizeof r);
		if (json) {
			fprintf(o, "%s{\"id\": %u, \"name\": ", i ? ", " : "", r.id);
			json_str(o, r.name);
			fprintf(o, ", \"kind\": \"%s\", \"mode\": \"%s\", \"vaddr\": \"0x%llx\", \"length\": %llu, "
				   "\"prot\": %u, \"segments\": [", kind_name(r.kind), mode_name(r.mode),
				(unsigned long long)r.vaddr, (unsigned long long)r.length, r.prot);
		} else {
			fprintf(o, "  region %u %-20s %-6s %-8s 0x%012llx %12llu bytes  segments:", r.id, r.name,
				kind_name(r.kind), mode_name(r.mode), (unsigned long long)r.vaddr,
				(unsigned long long)r.length);
		}
		for (uint32_t k = 0; k < r.nsegs; k++) {
			struct pool_seg_rec s;
			memcpy(&s, &sr[r.first_seg + k], sizeof s);
			uint64_t sw;
			uint8_t st = ST_NONE;
			memcpy(&sw, md + sb.state_off + 8ull * ((uint64_t)q * sb.nslots + s.main_slot), 8);
			if (state_decode(&sb, q, s.main_slot, sw, &st)) {
				st = ST_NONE;
				bad_states++;
			}
			if (json)
				fprintf(o, "%s{\"main\": %u, \"back\": %d, \"state\": \"%s\"}", k ? ", " : "", s.main_slot,
					s.back_slot == POOL_SLOT_NONE ? -1 : (int)s.back_slot, state_name(st));
			else
				fprintf(o, " %s", state_name(st));
		}
		if (r.mode == PROSPER_REGION_REDO) {
			struct log_view v;
			read_log(fd, &sb, &r, epoch, &v);
			if (json)
				fprintf(o, "], \"log\": {\"slot\": %u, \"slots\": %u, \"state\": \"%s\", \"epoch\": %llu, "
					   "\"records\": %llu, \"bytes\": %llu}}", r.log_slot, r.log_slots, v.state,
					(unsigned long long)v.epoch, (unsigned long long)v.records, (unsigned long long)v.bytes);
			else if (!strcmp(v.state, "invalid"))
				fprintf(o, "\n    redo log in slots %u..%u: no sealed log (the next epoch's being written, or damaged; "
					   "ignored at open)\n", r.log_slot, r.log_slot + r.log_slots - 1);
			else
				fprintf(o, "\n    redo log in slots %u..%u: %s, epoch %llu, %llu records, %llu bytes\n", r.log_slot,
					r.log_slot + r.log_slots - 1,
					!strcmp(v.state, "committed") ? "the committed epoch's (applied again at open)"
					: !strcmp(v.state, "other_epoch") ? "another epoch's (ignored at open)"
									  : "NOT the one the metadata names (open refuses)",
					(unsigned long long)v.epoch, (unsigned long long)v.records, (unsigned long long)v.bytes);
			continue;
		}
		fprintf(o, json ? "]}" : "\n");
	}
	if (json)
		fprintf(o, "], \"states_corrupt\": %u}\n", bad_states);
	else if (bad_states)
		fprintf(o, "  %u segment-state entries are CORRUPT\n", bad_states);
	close(fd);
	free(md);
	return 0;
}

int prosper_pool_peek(const char *path, uint8_t uuid[16], uint64_t *epoch)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return pool_err(-errno, "cannot open %s: %s", path, strerror(errno));
	uint64_t size;
	struct pool_sb sb;
	memset(&sb, 0, sizeof sb);
	int rc = pool_file_check(fd, path, &size);
	if (!rc) {
		ssize_t n = pread(fd, &sb, sizeof sb, 0);
		rc = n < 0 ? pool_err(-errno, "cannot read %s: %s", path, strerror(errno))
			   : sb_validate(&sb, (size_t)n < sizeof sb ? (size_t)n : size);
	}
	uint8_t *md = rc ? NULL : calloc(1, sb.data_off);
	if (!rc && !md)
		rc = pool_err(-ENOMEM, "out of memory");
	if (!rc && read_metadata(fd, &sb, md) != 0)
		rc = pool_err(-EIO, "cannot read the metadata of %s", path);
	int valid_words = 0;
	if (!rc)
		rc = find_committed(&sb, md, epoch, &valid_words);
	if (!rc)
		memcpy(uuid, sb.uuid, 16);
	free(md);
	close(fd);
	return rc;
}
