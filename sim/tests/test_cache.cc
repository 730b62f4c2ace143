// test_cache.cc -- the cache model and the key set against plain reference models: a Cache must
// behave as a true-LRU set-associative cache whatever its lookup shortcuts (tags compared by
// their low 32 bits first, sixteen ways per vector operation, LRU kept as per-way ranks, unused
// lanes padded), and a KeySet as an insertion-ordered
// set whatever its shortcut for a repeated key.
#include <cstdint>
#include <list>
#include <set>
#include <string>
#include <vector>

#include "core/machine.h"
#include "mech/keyset.h"
#include "check.h"

using namespace prosper::sim;

// A reference true-LRU cache: per set, the lines from most to least recently used.
struct ReferenceLru {
	unsigned ways;
	uint64_t sets;
	std::vector<std::list<uint64_t>> order;
	ReferenceLru(uint64_t bytes, unsigned w) : ways(w), sets(bytes / 64 / w), order(sets) {}
	bool find(uint64_t line)  // a hit moves the line to the front
	{
		auto &o = order[line % sets];
		for (auto it = o.begin(); it != o.end(); ++it)
			if (*it == line) {
				o.splice(o.begin(), o, it);
				return true;
			}
		return false;
	}
	// inserts a line that is not present; returns the evicted line + 1, or 0 if a way was free
	uint64_t insert(uint64_t line)
	{
		auto &o = order[line % sets];
		uint64_t victim = 0;
		if (o.size() == ways) {
			victim = o.back() + 1;
			o.pop_back();
		}
		o.push_front(line);
		return victim;
	}
};

// Lines drawn so that many share a set and many share their low 32 bits (the first filter of
// a lookup) while differing above: 64 lines per set (k + j * 2^32, and far above), more than
// any tested associativity holds.
static uint64_t next_line(uint64_t &rng)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	uint64_t r = rng >> 24;
	return (r & 0x3f) * 37 + ((r >> 6) & 0x1f) * (1ull << 32) + ((r >> 11) & 0x1) * (~0ull >> 40);
}

static void test_lru(unsigned ways)
{
	const uint64_t bytes = 64ull * ways * 64;  // 64 sets
	Cache c(bytes, ways, 64);
	ReferenceLru ref(bytes, ways);
	uint64_t rng = ways, hits = 0, evictions = 0;
	for (int i = 0; i < 200000; i++) {
		uint64_t line = next_line(rng);
		bool hit = c.find(line) >= 0;
		CHECK_EQ(hit, ref.find(line));
		if (hit) {
			hits++;
			continue;
		}
		Cache::Victim v = c.insert(line, false, kDram);
		uint64_t expect = ref.insert(line);
		CHECK_EQ(v.valid, expect != 0);
		if (v.valid) {
			evictions++;
			CHECK_EQ(v.line, expect - 1);
		}
		if (failures)
			return;  // one divergence is enough to report
	}
	CHECK(hits > 1000 && evictions > 10000);  // both paths exercised (1 way: ~1/64 hits)
}

static void test_tag_low_bits()
{
	// A line whose tag (line + 1) has zero low 32 bits must not match an empty way, and lines
	// equal in their low 32 bits must not match each other.
	for (unsigned ways : {4u, 8u, 16u}) {
		Cache c(64ull * ways * 16, ways, 64);
		uint64_t zero_low = (1ull << 32) - 1;  // tag 2^32
		CHECK_EQ(c.find(zero_low), -1);
		c.insert(zero_low, false, kDram);
		int a = c.find(zero_low);
		CHECK(a >= 0);
		uint64_t other = zero_low + (1ull << 32);  // same set, same low 32 bits of the tag
		CHECK_EQ(c.find(other), -1);
		c.insert(other, false, kNvm);
		int b = c.find(other);
		CHECK(b >= 0 && b != a);
		CHECK_EQ(c.find(zero_low), a);
		CHECK(c.mem(b) == kNvm && c.mem(a) == kDram);
	}
}

static void test_way_limits()
{
	for (unsigned ways : {0u, Cache::kMaxWays + 1}) {
		bool threw = false;
		try {
			Cache c(64ull * 1024, ways, 64);
		} catch (const ConfigError &e) {
			threw = std::string(e.what()).find("ways") != std::string::npos;
		}
		CHECK(threw);
	}
}

static void test_keyset()
{
	// Insertion order and membership with repeated keys (runs and returns), across table growth
	// and clear().
	KeySet s;
	std::vector<uint64_t> order;
	std::set<uint64_t> seen;
	uint64_t rng = 7, last = 0;
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 5000; i++) {
			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			uint64_t k = (rng >> 33) % (round == 1 ? 300 : 4000);
			for (int rep = 0; rep < 1 + static_cast<int>(rng & 3); rep++) {
				bool fresh = seen.insert(k).second;
				CHECK_EQ(s.insert(k), fresh && rep == 0);
				last = k;
				if (fresh && rep == 0)
					order.push_back(k);
			}
		}
		CHECK(s.keys() == order);
		CHECK_EQ(s.size(), seen.size());
		for (uint64_t k = 0; k < 4100; k++)
			CHECK_EQ(s.contains(k), seen.count(k) == 1);
		s.clear();
		order.clear();
		seen.clear();
		CHECK_EQ(s.size(), 0ull);
		CHECK(!s.contains(last));
		CHECK(s.insert(last));  // the key remembered as the last insert went with clear()
		s.clear();
	}
}

int main()
{
	for (unsigned ways : {1u, 4u, 8u, 12u, 16u})  // lanes past `ways` are padding
		test_lru(ways);
	test_way_limits();
	test_tag_low_bits();
	test_keyset();
	return finish("test_cache");
}
