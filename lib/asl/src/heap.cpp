// heap.cpp -- the allocator of the persistent heap: power-of-two size classes with free lists,
// and a bump pointer, all kept in the heap's header (so a snapshot of the pages captures it).
//
// Invariants
//   - Classes 5..16 are blocks of 2^c bytes; above 64 KiB each power of two is split into four
//     steps (class 64 + 4 (e - 16) + k - 1 is 2^e + k 2^e / 4 bytes), so a large vector wastes at
//     most a quarter, not half.  Blocks of 4 KiB and more start page-aligned.
//   - The 16 bytes before each pointer handed out hold {class, offset from block start, guard};
//     heap_free checks the guard, so a pointer from elsewhere aborts instead of corrupting lists.
//   - Every change happens under RuntimeImpl::heap_mu; the snapshot's sync phase takes the same
//     lock, so a snapshot never sees a half-linked free list.
#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
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

constexpr unsigned kSmallTop = 16; // 64 KiB: the largest power-of-two-only class

// The smallest class whose blocks hold `need` bytes, and that class's block size.
unsigned class_of(uint64_t need, uint64_t &block_size)
{
	unsigned c = std::max<unsigned>(kMinClass, static_cast<unsigned>(std::bit_width(need - 1)));
	if (c <= kSmallTop) {
		block_size = uint64_t(1) << c;
		return c;
	}
	unsigned e = c - 1; // 2^e < need <= 2^(e+1)
	uint64_t step = (uint64_t(1) << e) / 4;
	uint64_t k = (need - (uint64_t(1) << e) + step - 1) / step; // 1..4
	block_size = (uint64_t(1) << e) + k * step;
	return 64 + 4 * (e - kSmallTop) + static_cast<unsigned>(k - 1);
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
	uint64_t block;
	{
		std::lock_guard<std::mutex> g(rt->heap_mu);
		HeapHeader *h = header_of(rt->heap);
		if (h->free_heads[cls]) {
			block = h->free_heads[cls];
			h->free_heads[cls] = *reinterpret_cast<uint64_t *>(block);
		} else {
			uint64_t at = h->bump;
			if (block_size >= kPage)
				at = (at + kPage - 1) & ~uint64_t(kPage - 1);
			if (at + block_size > h->base + rt->opt.heap_reserve)
				throw std::bad_alloc();
			block = at;
			h->bump = at + block_size;
		}
	}
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
	std::lock_guard<std::mutex> g(rt->heap_mu);
	HeapHeader *h = header_of(rt->heap);
	*reinterpret_cast<uint64_t *>(block) = h->free_heads[cls];
	h->free_heads[cls] = block;
}

} // namespace prosper::asl::detail
