// heap.cpp -- the allocator of the persistent heap: power-of-two size classes with free lists,
// and a bump pointer, all kept in the heap's header (so a snapshot of the pages captures it).
//
// Invariants
//   - Classes 5..10 are blocks of 2^c bytes (up to 1 KiB).  From 1 KiB to 64 KiB each power of
//     two is split into eight steps (class 192 + 8 (e - 10) + k - 1 is 2^e + k 2^e / 8 bytes,
//     e = 10..15): a 4 KiB string with its tag takes 4.5 KiB, not 8 -- half the memory to fault
//     in, snapshot and load.  Above 64 KiB four steps (class 64 + 4 (e - 16) + k - 1 is
//     2^e + k 2^e / 4 bytes), so a large vector wastes at most a quarter.  Step blocks start
//     64-byte aligned; power-of-two blocks of 4 KiB and more page-aligned.
//   - Class numbers are stored (block tags, free lists in the header, so in snapshots) and keep
//     their meaning forever: classes 11..16, which heaps of earlier versions used for 1..64 KiB,
//     are still freed to their lists and still hold 2^c bytes, only no longer chosen.
//   - The 16 bytes before each pointer handed out hold {class, offset from block start, guard};
//     heap_free checks the guard, so a pointer from elsewhere aborts instead of corrupting lists.
//   - Every change happens under RuntimeImpl::heap_mu; the snapshot's sync phase takes the same
//     lock, so a snapshot never sees a half-linked free list.
//   - HeapAhead only makes pages present (MADV_POPULATE_WRITE writes nothing a program can see):
//     what a page holds is the allocator's business alone.  It may populate a page a snapshot
//     has write-protected since (the bump pointer passed it); the snapshot's fault thread then
//     saves its chunk first, as for any write.  So it must stop before the snapshotter does.
#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <sys/mman.h>
#include <stdexcept>
#include "internal.hpp"

namespace prosper::asl::detail {

namespace {
struct BlockTag {
	uint32_t cls;
	uint32_t offset; // from the block's start to the user pointer
	uint64_t guard;
};
static_assert(sizeof(BlockTag) == 16);
constexpr uint64_t kGuard = 0xA51C0FFEE0DDF00Dull;
constexpr unsigned kMinClass = 5;

HeapHeader *header_of(char *base) { return reinterpret_cast<HeapHeader *>(base); }

constexpr unsigned kPow2Top = 10;  // 1 KiB: the largest class chosen as a plain power of two
constexpr unsigned kEighthTop = 16; // 64 KiB: the largest block of the eighth steps
constexpr unsigned kEighthBase = 192, kQuarterBase = 64; // quarter classes end at 187 (e = 46)

// The smallest class whose blocks hold `need` bytes, and that class's block size.
unsigned class_of(uint64_t need, uint64_t &block_size)
{
	unsigned c = std::max<unsigned>(kMinClass, static_cast<unsigned>(std::bit_width(need - 1)));
	if (c <= kPow2Top) {
		block_size = uint64_t(1) << c;
		return c;
	}
	unsigned e = c - 1; // 2^e < need <= 2^(e+1)
	unsigned steps = c <= kEighthTop ? 8 : 4;
	uint64_t step = (uint64_t(1) << e) / steps;
	uint64_t k = (need - (uint64_t(1) << e) + step - 1) / step; // 1..steps
	block_size = (uint64_t(1) << e) + k * step;
	if (c <= kEighthTop)
		return kEighthBase + 8 * (e - kPow2Top) + static_cast<unsigned>(k - 1);
	return kQuarterBase + 4 * (e - kEighthTop) + static_cast<unsigned>(k - 1);
}
} // namespace

void heap_format(char *base)
{
	HeapHeader *h = header_of(base);
	std::memset(h, 0, sizeof *h);
	h->magic = kHeapMagic;
	h->base = reinterpret_cast<uint64_t>(base);
	h->bump = h->base + kHeapHeaderBytes;
}

size_t heap_used_bytes(const char *base)
{
	const HeapHeader *h = reinterpret_cast<const HeapHeader *>(base);
	uint64_t used = h->bump - h->base;
	return (used + kPage - 1) & ~(kPage - 1);
}

// ---- the pages ahead of the bump pointer --------------------------------------------------------
// Fresh memory is the dearest thing a heap update touches here: a virtual machine's page its host
// took back costs 3.7-4.6 us to touch again (docs/asl.md), a 2 MiB huge page's first touch
// milliseconds -- and the thread that touches it may hold a bucket's or the log's lock the other
// threads wait for.  Two threads inserting into the concurrent hash map ran 1.7-5.6 us an insert
// with 0.07-0.63 s of system time, 1.5-1.8 us with 0.05 when the heap's pages were present
// beforehand.  A window of 16 MiB, extended when the bump pointer is half-way into it, keeps
// the helper ahead of a 1 KiB-insert stream (~0.7 GB/s) while it waits up to ~10 ms for a core;
// it costs a program at most that much resident memory it has not used yet.
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
namespace {
constexpr uint64_t kAheadBytes = 16 << 20;
constexpr uint64_t kAheadChunk = 2 << 20; // a huge page: one madvise each, and the stop is checked between
} // namespace

HeapAhead::HeapAhead(char *heap, uint64_t reserve)
    : heap_(heap), limit_(reinterpret_cast<uint64_t>(heap) + reserve)
{
	uint64_t bump = header_of(heap)->bump; // no allocation yet: the runtime is still being opened
	want_ = wanted(bump);
	uint64_t present = (bump + kAheadChunk - 1) & ~(kAheadChunk - 1); // the bump's own page is present
	thread_ = std::thread([this, present] { run(present); });
}

HeapAhead::~HeapAhead()
{
	{
		std::lock_guard<std::mutex> g(mu_);
		stop_ = true;
	}
	cv_.notify_one();
	thread_.join();
}

uint64_t HeapAhead::wanted(uint64_t bump)
{
	if (bump < trigger_)
		return 0;
	uint64_t end = std::min(limit_, (bump + kAheadBytes + kAheadChunk - 1) & ~(kAheadChunk - 1));
	trigger_ = end >= limit_ ? UINT64_MAX : end - kAheadBytes / 2;
	return end;
}

void HeapAhead::extend(uint64_t end)
{
	{
		std::lock_guard<std::mutex> g(mu_);
		want_ = std::max(want_, end);
	}
	cv_.notify_one();
}

void HeapAhead::run(uint64_t done)
{
	const HeapHeader *h = header_of(heap_);
	std::unique_lock<std::mutex> lk(mu_);
	for (;;) {
		cv_.wait(lk, [&] { return stop_ || want_ > done; });
		if (stop_)
			return;
		uint64_t to = want_;
		lk.unlock();
		while (done < to) {
			uint64_t n = std::min(kAheadChunk - done % kAheadChunk, to - done);
			// a range the allocator has handed out meanwhile was faulted in by its user
			if (done + n > __atomic_load_n(&h->bump, __ATOMIC_RELAXED) &&
			    madvise(reinterpret_cast<void *>(done), n, MADV_POPULATE_WRITE) != 0 && errno != EINTR) {
				lk.lock();
				stop_ = true; // an old kernel, or no memory to spare: leave faults to the allocating threads
				return;
			}
			done += n;
			std::lock_guard<std::mutex> g(mu_);
			if (stop_)
				return;
		}
		lk.lock();
	}
}

void *heap_allocate(size_t bytes, size_t align)
{
	RuntimeImpl *rt = g_rt.load(std::memory_order_acquire);
	if (!rt)
		throw std::logic_error("prosper::asl: allocation without an open runtime");
	if (align < 16)
		align = 16;
	if (bytes > (size_t(1) << 46))
		throw std::bad_alloc();
	size_t need = bytes + sizeof(BlockTag) + (align > 16 ? align - 16 : 0);
	uint64_t block_size;
	unsigned cls = class_of(need, block_size);
	uint64_t block, ahead = 0;
	{
		std::lock_guard<SpinLock> g(rt->heap_mu);
		HeapHeader *h = header_of(rt->heap);
		if (h->free_heads[cls]) {
			block = h->free_heads[cls];
			h->free_heads[cls] = *reinterpret_cast<uint64_t *>(block);
		} else {
			uint64_t at = h->bump;
			if (block_size >= kPage && std::has_single_bit(block_size))
				at = (at + kPage - 1) & ~uint64_t(kPage - 1);
			else if (cls >= kEighthBase)
				at = (at + 63) & ~uint64_t(63);
			if (at + block_size > h->base + rt->opt.heap_reserve)
				throw std::bad_alloc();
			block = at;
			h->bump = at + block_size;
			if (rt->heap_ahead)
				ahead = rt->heap_ahead->wanted(h->bump);
		}
	}
	if (ahead)
		rt->heap_ahead->extend(ahead);
	uint64_t user = (block + sizeof(BlockTag) + align - 1) & ~uint64_t(align - 1);
	BlockTag *t = reinterpret_cast<BlockTag *>(user - sizeof(BlockTag));
	t->cls = cls;
	t->offset = static_cast<uint32_t>(user - block);
	t->guard = kGuard;
	return reinterpret_cast<void *>(user);
}

void heap_free(void *p) noexcept
{
	if (!p)
		return;
	RuntimeImpl *rt = g_rt.load(std::memory_order_acquire);
	if (!rt)
		return; // the runtime was closed: its heap is gone with everything in it
	BlockTag *t = reinterpret_cast<BlockTag *>(static_cast<char *>(p) - sizeof(BlockTag));
	if (t->guard != kGuard || t->cls < kMinClass || t->cls >= kHeapClasses) {
		std::fprintf(stderr, "prosper::asl: free of a pointer that is not from the heap: %p\n", p);
		std::abort();
	}
	uint64_t block = reinterpret_cast<uint64_t>(p) - t->offset;
	unsigned cls = t->cls;
	t->guard = 0;
	std::lock_guard<SpinLock> g(rt->heap_mu);
	HeapHeader *h = header_of(rt->heap);
	*reinterpret_cast<uint64_t *>(block) = h->free_heads[cls];
	h->free_heads[cls] = block;
}

} // namespace prosper::asl::detail
