// pagetable.cc -- the radix page-table model (assumptions in pagetable.h).
#include "pagetable.h"

namespace prosper::sim {

namespace {
bool bit(const PageTable::Table &t, unsigned i) { return (t.bits[i / 64] >> (i % 64)) & 1; }
void set_bit(PageTable::Table &t, unsigned i, bool on)
{
	uint64_t m = 1ull << (i % 64);
	t.bits[i / 64] = on ? t.bits[i / 64] | m : t.bits[i / 64] & ~m;
	t.present += on ? 1 : -1;
}
}  // namespace

PageTable::PageTable()
{
	std::vector<PtOp> unused;
	alloc(0, kPtLevels, unused);  // the root exists with the process
}

uint32_t PageTable::new_frame()
{
	if (free_frames_.empty())
		return next_frame_++;
	uint32_t f = free_frames_.back();
	free_frames_.pop_back();
	return f;
}

PageTable::Table &PageTable::alloc(uint64_t va, unsigned level, std::vector<PtOp> &ops)
{
	Table &t = t_[level - 1][key(va, level)];
	t.frame = new_frame();
	ops.push_back(PtOp{PtOp::kAlloc, static_cast<uint8_t>(level), 0, t.frame, false, 0});
	return t;
}

bool PageTable::touch(uint64_t va, std::vector<PtOp> &ops)
{
	Table *t = &root();
	for (unsigned level = kPtLevels; level > 1; level--) {
		uint16_t i = slot(va, level);
		if (bit(*t, i)) {
			t = &t_[level - 2].find(key(va, level - 1))->second;
			continue;
		}
		Table &child = alloc(va, level - 1, ops);
		ops.push_back(PtOp{PtOp::kWrite, static_cast<uint8_t>(level), i, t->frame, true, 0});
		set_bit(*t, i, true);
		t = &child;
	}
	uint16_t i = slot(va, 1);
	if (bit(*t, i))
		return false;
	uint64_t page = va >> kPageShift << kPageShift;
	ops.push_back(PtOp{PtOp::kWrite, 1, i, t->frame, true, page});
	set_bit(*t, i, true);
	pages_++;
	return true;
}

uint64_t PageTable::unmap(uint64_t start, uint64_t end, std::vector<PtOp> &ops)
{
	uint64_t removed = 0;
	auto &leaves = t_[0];
	// every PTE table overlapping the range, in address order
	for (auto it = leaves.lower_bound(key(start, 1)); it != leaves.end() && (it->first << 21) < end;) {
		uint64_t base = it->first << 21;
		Table &t = it->second;
		for (unsigned i = 0; i < kPtEntries && t.present; i++) {
			uint64_t page = base + (static_cast<uint64_t>(i) << kPageShift);
			if (page < start || page >= end || !bit(t, i))
				continue;
			ops.push_back(PtOp{PtOp::kWrite, 1, static_cast<uint16_t>(i), t.frame, false, page});
			set_bit(t, i, false);
			removed++;
		}
		++it;
		if (t.present)
			continue;
		// free empty tables upward; the root stays
		for (unsigned level = 1; level < kPtLevels; level++) {
			auto &maps = t_[level - 1];
			auto self = maps.find(key(base, level));
			if (self->second.present)
				break;
			Table &parent = level + 1 == kPtLevels ? root() : t_[level].find(key(base, level + 1))->second;
			uint16_t i = slot(base, level + 1);
			ops.push_back(PtOp{PtOp::kWrite, static_cast<uint8_t>(level + 1), i, parent.frame, false, 0});
			set_bit(parent, i, false);
			ops.push_back(PtOp{PtOp::kFree, static_cast<uint8_t>(level), 0, self->second.frame, false, 0});
			free_frames_.push_back(self->second.frame);
			maps.erase(self);  // `it` already points past it: still valid
		}
	}
	pages_ -= removed;
	return removed;
}

bool PageTable::walk(uint64_t va, std::array<uint32_t, kPtLevels> &frame, std::array<uint16_t, kPtLevels> &index) const
{
	const Table *t = &t_[kPtLevels - 1].begin()->second;  // the root
	for (unsigned level = kPtLevels;; level--) {
		uint16_t i = slot(va, level);
		if (!bit(*t, i))
			return false;
		frame[kPtLevels - level] = t->frame;
		index[kPtLevels - level] = i;
		if (level == 1)
			return true;
		t = &t_[level - 2].find(key(va, level - 1))->second;
	}
}

bool PageTable::present(uint64_t va) const
{
	auto it = t_[0].find(key(va, 1));
	return it != t_[0].end() && bit(it->second, slot(va, 1));
}

uint64_t PageTable::table_pages() const
{
	uint64_t n = 0;
	for (auto &m : t_)
		n += m.size();
	return n;
}

}  // namespace prosper::sim
