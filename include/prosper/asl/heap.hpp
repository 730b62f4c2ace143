// heap.hpp -- the memory every persistent object must live in, and an STL allocator for it.
//
// Invariants
//   - The heap is one range of virtual memory at a fixed address (Options::heap_base), so the
//     native pointers inside objects stay valid when a snapshot is loaded after a restart.
//   - Everything reachable from a persistent object is inside the heap: containers use
//     asl::allocator, strings are stored as asl::pstring (stored_t<std::string>).
//   - The allocator's own state (free lists, bump pointer) lives in the heap too, so a snapshot
//     of the heap's pages is also a snapshot of the allocator.
//   - One runtime per process: allocate() uses the open runtime's heap; without one it throws.
#ifndef PROSPER_ASL_HEAP_HPP
#define PROSPER_ASL_HEAP_HPP
#include <cstddef>
#include <functional>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>

namespace prosper::asl {

namespace detail {
void *heap_allocate(size_t bytes, size_t align);
void heap_free(void *p) noexcept;
} // namespace detail

// palloc/pfree for code that manages heap memory by hand.
inline void *palloc(size_t bytes) { return detail::heap_allocate(bytes, alignof(std::max_align_t)); }
inline void pfree(void *p) noexcept { detail::heap_free(p); }

template <class T> struct allocator {
	using value_type = T;
	allocator() noexcept = default;
	template <class U> allocator(const allocator<U> &) noexcept {}
	T *allocate(size_t n)
	{
		if (n > SIZE_MAX / sizeof(T))
			throw std::bad_array_new_length();
		return static_cast<T *>(detail::heap_allocate(n * sizeof(T), alignof(T)));
	}
	void deallocate(T *p, size_t) noexcept { detail::heap_free(p); }
	template <class U> bool operator==(const allocator<U> &) const noexcept { return true; }
};

using pstring = std::basic_string<char, std::char_traits<char>, allocator<char>>;

// The type a container keeps for a user-facing type: strings move into the heap.
template <class T> struct stored { using type = T; };
template <> struct stored<std::string> { using type = pstring; };
template <class T> using stored_t = typename stored<T>::type;

template <class S, class T> S to_stored(const T &v)
{
	if constexpr (std::is_same_v<S, pstring>) {
		std::string_view sv(v);
		return S(sv.data(), sv.size());
	} else {
		return S(v);
	}
}

// A hash that is the same in every run (the hash table's layout is part of the snapshot) and
// that hashes every string type alike.
struct stable_hash {
	using is_transparent = void;
	size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
	size_t operator()(const pstring &s) const noexcept { return (*this)(std::string_view(s)); }
	size_t operator()(const std::string &s) const noexcept { return (*this)(std::string_view(s)); }
	template <class T, class = std::enable_if_t<std::is_integral_v<T> || std::is_enum_v<T>>>
	size_t operator()(T v) const noexcept
	{
		// splitmix64 finaliser: deterministic and spreads sequential keys
		unsigned long long x = static_cast<unsigned long long>(v) + 0x9e3779b97f4a7c15ull;
		x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
		x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
		return static_cast<size_t>(x ^ (x >> 31));
	}
};

struct stable_equal {
	using is_transparent = void;
	template <class A, class B> bool operator()(const A &a, const B &b) const
	{
		if constexpr (std::is_convertible_v<const A &, std::string_view> && std::is_convertible_v<const B &, std::string_view>)
			return std::string_view(a) == std::string_view(b);
		else
			return a == b;
	}
};

} // namespace prosper::asl
#endif
