// concurrent_hash_map.hpp -- a thread-safe persistent hash map: Buckets independent
// unordered_maps, each behind its own lock (the paper's Figure 5).
//
// Invariants
//   - An update takes its bucket's lock, runs op_begin .. the change .. op_commit, and only then
//     unlocks: two operations on one key commit in the order they took effect, so replay in
//     commit-id order rebuilds the same map (the commit order is a linearization).
//   - The locks live in the heap with the buckets but mean nothing across runs:
//     asl_loaded() releases them all when the map comes from a snapshot (a thread may have
//     held one, waiting to start an operation, when the snapshot was taken).
//   - Reads take the bucket lock too and return copies, never references into a bucket.
#ifndef PROSPER_ASL_CONCURRENT_HASH_MAP_HPP
#define PROSPER_ASL_CONCURRENT_HASH_MAP_HPP
#include <atomic>
#include <mutex>
#include <optional>
#include <thread>

namespace prosper::asl {

namespace detail {
// A lock that is just a word, so a copy of it in a snapshot is reset by storing 0.
class word_lock {
public:
	void lock() noexcept
	{
		while (w_.exchange(1, std::memory_order_acquire) != 0)
			while (w_.load(std::memory_order_relaxed) != 0)
				std::this_thread::yield();
	}
	void unlock() noexcept { w_.store(0, std::memory_order_release); }
	void reset() noexcept { w_.store(0, std::memory_order_relaxed); }

private:
	std::atomic<uint32_t> w_{0};
};
} // namespace detail

template <class K, class V, size_t Buckets = 64> class pconcurrent_hash_map : public PersistentObject {
public:
	using key_type = stored_t<K>;
	using mapped_type = stored_t<V>;

	// Inserts or overwrites.
	void insert(const K &k, const V &v)
	{
		bucket &b = bucket_of(k);
		std::lock_guard<detail::word_lock> g(b.lock); // released after the commit
		logged<&pconcurrent_hash_map::insert>(
			[&] { b.map.insert_or_assign(to_stored<key_type>(k), to_stored<mapped_type>(v)); }, k, v);
	}
	size_t erase(const K &k)
	{
		bucket &b = bucket_of(k);
		std::lock_guard<detail::word_lock> g(b.lock);
		return logged<&pconcurrent_hash_map::erase>([&]() -> size_t {
			auto it = b.map.find(lookup(k));
			if (it == b.map.end())
				return 0;
			b.map.erase(it);
			return 1;
		}, k);
	}
	PROSPER_ASL_UPDATES(&pconcurrent_hash_map::insert, &pconcurrent_hash_map::erase);

	std::optional<mapped_type> find(const K &k) const
	{
		bucket &b = bucket_of(k);
		b.lock.lock();
		std::optional<mapped_type> r;
		auto it = b.map.find(lookup(k));
		if (it != b.map.end())
			r = it->second;
		b.lock.unlock();
		return r;
	}
	bool contains(const K &k) const { return find(k).has_value(); }
	size_t size() const
	{
		size_t n = 0;
		for (auto &b : buckets_) {
			b.lock.lock();
			n += b.map.size();
			b.lock.unlock();
		}
		return n;
	}
	// Visits every entry, one bucket locked at a time (not a consistent snapshot across buckets).
	template <class F> void for_each(F &&f) const
	{
		for (auto &b : buckets_) {
			b.lock.lock();
			for (auto &kv : b.map)
				f(kv.first, kv.second);
			b.lock.unlock();
		}
	}
	void asl_loaded()
	{
		for (auto &b : buckets_)
			b.lock.reset();
	}

private:
	struct bucket {
		mutable detail::word_lock lock;
		std::unordered_map<key_type, mapped_type, stable_hash, stable_equal,
				   allocator<std::pair<const key_type, mapped_type>>>
			map;
	};
	template <class Q> static decltype(auto) lookup(const Q &k)
	{
		if constexpr (std::is_same_v<key_type, pstring>)
			return std::string_view(k);
		else
			return (k);
	}
	bucket &bucket_of(const K &k) const
	{
		size_t h = stable_hash{}(lookup(k));
		return buckets_[(h >> 7) % Buckets]; // high bits: the bucket's own table uses the low ones
	}
	mutable bucket buckets_[Buckets];
};

} // namespace prosper::asl
#endif
