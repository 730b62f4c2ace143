/* layout.h -- on-media structures of a pool (format version 1, layout version 2).  docs/pool-format.md is the
 * authoritative description; keep both in step.  All integers little-endian (the magic shows
 * a byte-order mismatch); every structure is checksummed with CRC-32C.
 */
#ifndef PROSPER_POOL_LAYOUT_H
#define PROSPER_POOL_LAYOUT_H
#include <stdint.h>

#define POOL_MAGIC            0x4C4F4F5053525050ull /* bytes "PPRSPOOL" on a little-endian host */
#define POOL_MAGIC_SWAPPED    0x50505253504F4F4Cull /* what a big-endian reader sees */
#define POOL_FORMAT_VERSION   1u  /* the superblock and the placement of areas */
#define POOL_LAYOUT_VERSION   2u  /* records inside a metadata slot; 2: region records name a
				     * redo log (redo mode).  A version-1 pool is refused. */
#define POOL_PAGE             4096u
#define POOL_META_MAGIC       0x4154454D52505350ull /* "PSPRMETA" */
#define POOL_SLOT_NONE        0xFFFFFFFFu
#define POOL_EPOCH_BITS       40
#define POOL_EPOCH_MAX        ((1ull << POOL_EPOCH_BITS) - 1)

/* Superblock, offset 0, immutable after creation. */
struct pool_sb {
	uint64_t magic;
	uint32_t format_version;
	uint32_t layout_version;
	uint32_t sb_bytes;        /* sizeof(struct pool_sb) */
	uint32_t flags;           /* none defined: must be 0 */
	uint8_t uuid[16];         /* salts every checksum: a block from another pool never validates */
	uint64_t file_bytes;      /* total size of the pool */
	uint32_t seg_size;
	uint32_t block_size;
	uint32_t nslots;          /* data slots of seg_size bytes */
	uint32_t max_regions;
	uint32_t max_backups;     /* 0 = no limit */
	uint32_t meta_bytes;      /* bytes of ONE metadata slot */
	uint64_t commit_off[2];   /* commit word A, B: 8 bytes each, in different pages */
	uint64_t meta_off;        /* metadata slot 0; slot 1 at meta_off + meta_bytes */
	uint64_t state_off;       /* state array 0; array 1 follows; nslots u64 each */
	uint64_t bind_off;        /* nslots u64 */
	uint64_t data_off;        /* slot i at data_off + i * seg_size */
	uint64_t created_unix;
	char creator[32];
	uint32_t reserved[23];
	uint32_t crc;             /* CRC-32C of all bytes before this field */
};

/* Commit word: bits 0..39 epoch, bits 40..63 the low 24 bits of
 * crc32c(epoch as 8 LE bytes || uuid). */

/* Segment-state entry (array p, slot i): bits 0..7 value, bits 8..31 zero,
 * bits 32..63 crc32c(value as u32 || i as u32 || p as u32 || uuid). */
enum { ST_NONE = 0, ST_INIT = 1, ST_MAIN = 2, ST_BACK = 3 };

/* Backup-binding entry (slot b): bits 0..31 = main slot + 1 (0 = unbound),
 * bits 32..63 crc32c(value || b || 0xB1D || uuid).  All-zero = unbound, never written. */

/* Metadata slot (epoch e lives in slot e & 1). */
struct pool_meta_hdr {
	uint64_t magic;
	uint64_t epoch;
	uint32_t bytes;           /* header + regions + segments + blob */
	uint32_t crc;             /* CRC-32C of all `bytes` with this field zero, salted with uuid */
	uint32_t nregions;
	uint32_t nsegs;
	uint32_t blob_bytes;
	uint32_t next_region_id;
};

struct pool_region_rec {
	char name[48];
	uint32_t id;
	uint32_t kind;
	uint32_t mode;
	uint32_t prot;
	uint64_t vaddr;
	uint64_t length;
	uint32_t first_seg;       /* index into the segment records */
	uint32_t nsegs;
	/* Redo mode: the log of this epoch lives in data slots [log_slot, log_slot + log_slots)
	 * (one contiguous run) and holds a sealed stack log (stackckpt.h) whose checksum is
	 * log_crc.  Other modes: POOL_SLOT_NONE, 0, 0. */
	uint32_t log_slot;
	uint32_t log_slots;
	uint32_t log_crc;
	uint32_t reserved;        /* 0 */
};

struct pool_seg_rec {
	uint32_t main_slot;
	uint32_t back_slot;       /* buffered: the second copy; direct, redo: POOL_SLOT_NONE */
};

_Static_assert(sizeof(struct pool_sb) == 256, "superblock size");
_Static_assert(sizeof(struct pool_meta_hdr) == 40, "meta header size");
_Static_assert(sizeof(struct pool_region_rec) == 104, "region record size");
#endif
