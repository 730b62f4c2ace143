// keyset.h -- a set of 64-bit keys (line or page numbers) that remembers insertion order:
// open addressing for membership, a vector for iteration, and the last key inserted (always a
// member while set) so that repeated inserts of one key skip the hash.
#pragma once
#include <cstdint>
#include <algorithm>
#include <vector>

namespace prosper::sim {

class KeySet {
public:
	KeySet() : slots_(1024, kEmpty) {}
	bool insert(uint64_t k)  // true if new
	{
		if (k == last_)  // a run of stores to one line or page: no hashing
			return false;
		if ((keys_.size() + 1) * 2 > slots_.size())
			grow();
		last_ = k;
		size_t i = hash(k) & (slots_.size() - 1);
		while (slots_[i] != kEmpty) {
			if (slots_[i] == k)
				return false;
			i = (i + 1) & (slots_.size() - 1);
		}
		slots_[i] = k;
		keys_.push_back(k);
		return true;
	}
	bool contains(uint64_t k) const
	{
		size_t i = hash(k) & (slots_.size() - 1);
		while (slots_[i] != kEmpty) {
			if (slots_[i] == k)
				return true;
			i = (i + 1) & (slots_.size() - 1);
		}
		return false;
	}
	const std::vector<uint64_t> &keys() const { return keys_; }
	size_t size() const { return keys_.size(); }
	void clear()  // O(capacity): cheap next to the interval's work that filled it
	{
		if (!keys_.empty())
			std::fill(slots_.begin(), slots_.end(), kEmpty);
		keys_.clear();
		last_ = kEmpty;
	}

private:
	static constexpr uint64_t kEmpty = ~0ull;  // not a line or page number of a 64-bit address
	static uint64_t hash(uint64_t k) { return (k * 0x9E3779B97F4A7C15ull) >> 20; }
	void grow()
	{
		std::vector<uint64_t> keys = std::move(keys_);
		slots_.assign(slots_.size() * 2, kEmpty);
		keys_.clear();
		last_ = kEmpty;
		for (uint64_t k : keys)
			insert(k);
	}
	std::vector<uint64_t> slots_, keys_;
	uint64_t last_ = kEmpty;  // the key inserted last (it is in the set)
};

}  // namespace prosper::sim
