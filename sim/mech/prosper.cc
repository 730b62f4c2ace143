// prosper.cc -- Prosper (HPCA 2024): the stack in DRAM, the hardware tracker of src/hwmodel (the
// same code the Valgrind tool runs) marking 8-byte granules in a DRAM bitmap, and the OS
// component of src/stack at the interval end.
//   - Tracker traffic (bitmap load+OR+store write-outs) goes through the caches and memory as
//     background accesses: it competes for cache space and bandwidth, it does not stall the core.
//   - Interval end: tracking off, flush (write out the table), tracking on; the OS inspects the
//     bitmap from the word of SP-128 up (bitmap_word_cycles per word scanned or zeroed), then
//     the two-step commit of the paper: the dirty runs (plus a 16-byte header each) are copied
//     into an NVM redo buffer, sfence, then applied to the NVM stack image, sfence.  The first
//     checkpoint copies the whole active region.  Then the OS's own work around them, as the
//     paper's gemOS pays it: os_checkpoint_ns per checkpoint and os_copy_ns_per_byte per byte
//     copied (timing.conf: fitted to the paper's measured checkpoint times).
//   - Stack only: it needs the traced stack's bounds.
//   - `prosper-track` is the tracker alone (paper Fig 12, tracking overhead): the same stores and
//     bitmap write-outs, and the table flush at each interval end, but no inspection and no copy;
//     the bitmap is cleared for free, as the paper's user-space IPC leaves the OS's work out.
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "log_area.h"
#include "mechanism.h"
#include "prosper/hwmodel.h"
#include "prosper/stackckpt.h"

namespace prosper::sim {
namespace {

class Prosper : public Mechanism {
public:
	Prosper(const Context &c, bool track_only)
		: c_(c), word_cycles_(c.cfg.get("bitmap_word_cycles")), os_(c.cfg), track_only_(track_only)
	{
		if (c.region != trace::kStack || c.stack.end <= c.stack.start)
			throw std::invalid_argument("prosper needs the stack region of a trace (REGION record)");
		prosper_hw_config hc;
		prosper_hw_config_default(&hc);
		hc.table_entries = static_cast<uint32_t>(c.cfg.get("prosper_table"));
		hc.hwm = static_cast<uint32_t>(c.cfg.get("prosper_hwm"));
		hc.lwm = static_cast<uint32_t>(c.cfg.get("prosper_lwm"));
		hc.log_gran = static_cast<uint32_t>(c.cfg.get("prosper_log_gran"));
		prosper_hw_bitmap_ops ops{&Prosper::load32, &Prosper::store32, this};
		if (prosper_hw_init(&hw_, &hc, &ops) != 0)
			throw std::invalid_argument("prosper: tracker configuration out of range (table 1..64, hwm 1..32, "
						    "lwm 0..32, log_gran 3..7)");
		len_ = c.stack.end - c.stack.start;
		bitmap_.assign(prosper_hw_bitmap_bytes(len_, hc.log_gran) / 8, 0);
		prosper_hw_set_range(&hw_, c.stack.start, c.stack.end - 1);
		prosper_hw_set_dirtymap(&hw_, kBitmapArea);
		prosper_hw_set_gran(&hw_, hc.log_gran);
	}
	void access(const trace::Event &e) override
	{
		bool store = e.op == trace::kStore;
		c_.m.access(e.addr, e.size, store, kDram);
		if (store)
			prosper_hw_store(&hw_, e.addr, e.size);
	}
	void interval_end(uint64_t sp) override
	{
		Machine &m = c_.m;
		uint32_t gran = hw_.cfg.log_gran;
		prosper_hw_set_gran(&hw_, 0);
		prosper_hw_flush(&hw_);
		prosper_hw_set_gran(&hw_, gran);
		if (track_only_) {
			std::fill(bitmap_.begin(), bitmap_.end(), 0);
			m.stats.bitmap_loads = hw_.c.bitmap_loads;
			m.stats.bitmap_stores = hw_.c.bitmap_stores;
			return;
		}
		uint64_t base = c_.stack.start;
		uint64_t active_lo = prosper_stack_active_lo(sp, base, c_.stack.end);
		prosper_stack_inspect_stats st{};
		runs_ = 0;
		bytes_ = 0;
		prosper_stack_inspect(bitmap_.data(), bitmap_.size(), base, len_, gran, active_lo, hw_.track_min,
				      &Prosper::emit, this, &st);
		if (first_) {  // a full copy of the active region
			runs_ = 1;
			bytes_ = c_.stack.end - active_lo;
			first_ = false;
		}
		m.compute(word_cycles_ * static_cast<double>(st.words_scanned + st.words_zeroed));
		m.bulk_copy(bytes_ + PROSPER_STACKLOG_RECORD * runs_, kDram, kNvm);  // step 1: redo records
		m.sfence();
		m.bulk_copy(bytes_, kNvm, kNvm);                              // step 2: apply
		m.sfence();
		os_.charge(m, bytes_);
		m.stats.checkpoint_bytes += bytes_;
		m.stats.bitmap_loads = hw_.c.bitmap_loads;
		m.stats.bitmap_stores = hw_.c.bitmap_stores;
	}

private:
	static uint32_t load32(void *ctx, uint64_t addr)
	{
		auto *self = static_cast<Prosper *>(ctx);
		self->c_.m.background_access(addr, 4, false, kDram);
		uint32_t v;
		std::memcpy(&v, reinterpret_cast<uint8_t *>(self->bitmap_.data()) + (addr - kBitmapArea), 4);
		return v;
	}
	static void store32(void *ctx, uint64_t addr, uint32_t v)
	{
		auto *self = static_cast<Prosper *>(ctx);
		self->c_.m.background_access(addr, 4, true, kDram);
		std::memcpy(reinterpret_cast<uint8_t *>(self->bitmap_.data()) + (addr - kBitmapArea), &v, 4);
	}
	static void emit(void *ctx, uint64_t, uint64_t len)
	{
		auto *self = static_cast<Prosper *>(ctx);
		self->runs_++;
		self->bytes_ += round8(len);
	}

	const Context &c_;
	double word_cycles_;
	OsCheckpointCost os_;
	prosper_hw hw_;
	std::vector<uint64_t> bitmap_;
	uint64_t len_, runs_ = 0, bytes_ = 0;
	bool first_ = true;
	bool track_only_;
};

PROSPER_REGISTER_MECHANISM({"prosper", "DRAM stack, HW sub-page dirty tracking, two-step copy at interval end", true,
			    [](const Context &c) { return std::make_unique<Prosper>(c, false); }});
PROSPER_REGISTER_MECHANISM({"prosper-track", "Prosper's tracker alone: bitmap traffic, no checkpoint (Fig 12)", true,
			    [](const Context &c) { return std::make_unique<Prosper>(c, true); }});

}  // namespace
}  // namespace prosper::sim
