// ssp_tlb.h -- the TLB whose entries hold SSP's per-page line bitmaps (ssp.cc, ssp_gemos.cc):
// ssp_tlb_entries entries, 4-way set-associative, LRU within a set (an assumption: the paper's gem5
// DTLB is 64 entries; its associativity is not modelled further).  What an entry's eviction costs
// is the caller's: it gets the page evicted.
#pragma once
#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

namespace prosper::sim {

class SspTlb {
public:
	static constexpr uint64_t kNone = ~0ull;
	explicit SspTlb(size_t entries) : sets_(std::bit_floor(std::max<size_t>(4, entries) / 4)), ways_(sets_ * 4) {}
	// Look `page` up, making it the set's most recent.  Returns true on a hit; on a miss the page
	// is put in the set's least recent way and `evicted` is the page it held (kNone if empty).
	bool lookup(uint64_t page, uint64_t &evicted)
	{
		Way *set = &ways_[(page & (sets_ - 1)) * 4];
		Way *victim = set;
		for (int w = 0; w < 4; w++) {
			if (set[w].page == page) {
				set[w].stamp = ++clock_;
				return true;
			}
			if (set[w].stamp < victim->stamp)
				victim = &set[w];
		}
		evicted = victim->page;
		victim->page = page;
		victim->stamp = ++clock_;
		return false;
	}
	template <typename F>
	void for_each(F f) const  // every page held
	{
		for (const Way &w : ways_)
			if (w.page != kNone)
				f(w.page);
	}

private:
	struct Way {
		uint64_t page = kNone, stamp = 0;
	};
	size_t sets_;
	std::vector<Way> ways_;
	uint64_t clock_ = 0;
};

}  // namespace prosper::sim
