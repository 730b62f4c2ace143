/* stacklog.c -- the redo-record log of Prosper's two-step commit (see stackckpt.h).  No libc. */
#include "prosper/crc32c.h"
#include "prosper/stackckpt.h"

struct hdr {
	uint64_t magic;
	uint32_t version, reserved0;
	uint64_t epoch, nrec, used;
	uint32_t crc, reserved1;
	uint8_t pad[16];
};
_Static_assert(sizeof(struct hdr) == PROSPER_STACKLOG_HEADER, "stack log header");

struct rec {
	uint64_t offset;
	uint32_t length, flags;
};
_Static_assert(sizeof(struct rec) == PROSPER_STACKLOG_RECORD, "stack log record");

#define REC_ZERO 1u

/* payload bytes a record carries in the log */
static uint64_t carried(const struct rec *r) { return r->flags & REC_ZERO ? 0 : r->length; }

static void copy(void *dst, const void *src, uint64_t n)
{
	uint8_t *d = dst;
	const uint8_t *s = src;
	while (n--)
		*d++ = *s++;
}

static uint64_t pad8(uint64_t n) { return (n + 7) & ~7ull; }

void prosper_stacklog_init(void *buf, uint64_t cap, uint64_t epoch)
{
	struct hdr h = { .magic = PROSPER_STACKLOG_MAGIC, .version = PROSPER_STACKLOG_VERSION, .epoch = epoch,
			 .used = sizeof h };
	(void)cap;
	copy(buf, &h, sizeof h);
}

/* append -- one record (zero: a ZERO record, src unused); the log is unchanged if it does not
 * fit. */
static int append(void *buf, uint64_t cap, uint64_t offset, const void *src, uint32_t len, int zero)
{
	struct hdr h;
	copy(&h, buf, sizeof h);
	struct rec r = { .offset = offset, .length = len, .flags = zero ? REC_ZERO : 0 };
	uint64_t n = carried(&r), need = sizeof r + pad8(n);
	if (h.used > cap || cap - h.used < need)
		return PROSPER_STACKLOG_ENOSPC;
	uint8_t *at = (uint8_t *)buf + h.used;
	copy(at, &r, sizeof r);
	if (n)
		copy(at + sizeof r, src, n);
	for (uint64_t i = n; i < pad8(n); i++)
		at[sizeof r + i] = 0;
	h.used += need;
	h.nrec++;
	copy(buf, &h, sizeof h);
	return 0;
}

int prosper_stacklog_append(void *buf, uint64_t cap, uint64_t offset, const void *src, uint32_t len)
{
	return append(buf, cap, offset, src, len, 0);
}

int prosper_stacklog_append_zero(void *buf, uint64_t cap, uint64_t offset, uint32_t len)
{
	return append(buf, cap, offset, 0, len, 1);
}

static uint32_t log_crc(const void *buf, const struct hdr *h)
{
	struct hdr z = *h;
	z.crc = 0;
	uint32_t c = prosper_crc32c(0, &z, sizeof z);
	return prosper_crc32c(c, (const uint8_t *)buf + sizeof z, h->used - sizeof z);
}

void prosper_stacklog_seal(void *buf)
{
	struct hdr h;
	copy(&h, buf, sizeof h);
	h.crc = log_crc(buf, &h);
	copy(buf, &h, sizeof h);
}

int prosper_stacklog_check(const void *buf, uint64_t cap, uint64_t *epoch)
{
	struct hdr h;
	if (cap < sizeof h)
		return PROSPER_STACKLOG_EBADMSG;
	copy(&h, buf, sizeof h);
	if (h.magic != PROSPER_STACKLOG_MAGIC || h.version != PROSPER_STACKLOG_VERSION || h.reserved0 || h.reserved1 ||
	    h.used < sizeof h ||
	    h.used > cap || h.used % 8)
		return PROSPER_STACKLOG_EBADMSG;
	for (int i = 0; i < 16; i++)
		if (h.pad[i])
			return PROSPER_STACKLOG_EBADMSG;
	if (log_crc(buf, &h) != h.crc)
		return PROSPER_STACKLOG_EBADMSG;
	/* Records must tile [header, used) exactly. */
	uint64_t at = sizeof h, n = 0;
	while (at < h.used) {
		struct rec r;
		if (h.used - at < sizeof r)
			return PROSPER_STACKLOG_EBADMSG;
		copy(&r, (const uint8_t *)buf + at, sizeof r);
		if ((r.flags & ~REC_ZERO) || h.used - at - sizeof r < pad8(carried(&r)))
			return PROSPER_STACKLOG_EBADMSG;
		at += sizeof r + pad8(carried(&r));
		n++;
	}
	if (n != h.nrec)
		return PROSPER_STACKLOG_EBADMSG;
	if (epoch)
		*epoch = h.epoch;
	return 0;
}

int prosper_stacklog_next(const void *buf, uint64_t *cursor, struct prosper_stacklog_rec *out)
{
	struct hdr h;
	copy(&h, buf, sizeof h);
	uint64_t at = *cursor ? *cursor : sizeof h;
	if (at >= h.used)
		return 0;
	struct rec r;
	copy(&r, (const uint8_t *)buf + at, sizeof r);
	out->offset = r.offset;
	out->length = r.length;
	out->zero = (r.flags & REC_ZERO) != 0;
	out->payload = out->zero ? 0 : (const uint8_t *)buf + at + sizeof r;
	*cursor = at + sizeof r + pad8(carried(&r));
	return 1;
}

int prosper_stacklog_apply(const void *buf, void *image, uint64_t image_len)
{
	struct prosper_stacklog_rec r;
	uint64_t cur = 0;
	/* Validate every record first: nothing is written unless all fit. */
	while (prosper_stacklog_next(buf, &cur, &r))
		if (r.offset > image_len || r.length > image_len - r.offset)
			return PROSPER_STACKLOG_ERANGE;
	cur = 0;
	while (prosper_stacklog_next(buf, &cur, &r)) {
		uint8_t *dst = (uint8_t *)image + r.offset;
		if (r.zero)
			for (uint32_t i = 0; i < r.length; i++)
				dst[i] = 0;
		else
			copy(dst, r.payload, r.length);
	}
	return 0;
}

static struct hdr header(const void *buf)
{
	struct hdr h;
	copy(&h, buf, sizeof h);
	return h;
}

uint64_t prosper_stacklog_bytes(const void *buf) { return header(buf).used; }
uint64_t prosper_stacklog_records(const void *buf) { return header(buf).nrec; }
uint64_t prosper_stacklog_epoch(const void *buf) { return header(buf).epoch; }
uint32_t prosper_stacklog_crc(const void *buf) { return header(buf).crc; }
