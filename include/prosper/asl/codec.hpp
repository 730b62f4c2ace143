// codec.hpp -- how the arguments of an update method become the bytes of a semantic log entry,
// and how replay turns those bytes back into a call of the same method.
//
// Invariants
//   - Arguments are encoded by the *parameter* types of the method named in op_begin<&C::m>, not
//     by the types the caller happened to pass, so encode and decode always agree.
//   - A parameter whose decayed type is string-like (std::basic_string<char, ...> with any
//     allocator, std::string_view) is stored as a 32-bit length and its bytes; every other
//     parameter must be trivially copyable and is stored as its object representation.
//   - A class lists its update methods once: PROSPER_ASL_UPDATES(&C::a, &C::b).  The position in
//     that list is the method's tag in the log; appending methods keeps old logs readable,
//     reordering them does not.
#ifndef PROSPER_ASL_CODEC_HPP
#define PROSPER_ASL_CODEC_HPP
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace prosper::asl::detail {

template <class T> struct is_string_like : std::false_type {};
template <class Tr, class A> struct is_string_like<std::basic_string<char, Tr, A>> : std::true_type {};
template <class Tr> struct is_string_like<std::basic_string_view<char, Tr>> : std::true_type {};
template <class T> inline constexpr bool is_string_like_v = is_string_like<std::remove_cvref_t<T>>::value;

// The class and parameter list of a pointer to member function (const/noexcept variants too).
template <class M> struct method_traits;
template <class R, class C, class... P> struct method_traits<R (C::*)(P...)> {
	using cls = C;
	using params = std::tuple<std::remove_cvref_t<P>...>;
};
template <class R, class C, class... P> struct method_traits<R (C::*)(P...) noexcept> : method_traits<R (C::*)(P...)> {};

template <class D, class A> void encode_one(std::vector<char> &out, const A &a)
{
	if constexpr (is_string_like_v<D>) {
		std::string_view sv(a);
		if (sv.size() > UINT32_MAX)
			throw std::length_error("prosper::asl: argument longer than 4 GiB");
		uint32_t n = static_cast<uint32_t>(sv.size());
		size_t at = out.size();
		out.resize(at + sizeof n + n);
		std::memcpy(out.data() + at, &n, sizeof n);
		if (n)
			std::memcpy(out.data() + at + sizeof n, sv.data(), n);
	} else {
		static_assert(std::is_trivially_copyable_v<D>,
			      "an update method's parameters must be trivially copyable or strings");
		D v(a);
		size_t at = out.size();
		out.resize(at + sizeof v);
		std::memcpy(out.data() + at, &v, sizeof v);
	}
}

template <class Params, class... A, size_t... I>
void encode_all(std::vector<char> &out, std::index_sequence<I...>, const A &...a)
{
	(encode_one<std::tuple_element_t<I, Params>>(out, a), ...);
}

// Append the encoding of args (as Method's parameters) to out.
template <auto Method, class... A> void encode_args(std::vector<char> &out, const A &...a)
{
	using Params = typename method_traits<decltype(Method)>::params;
	static_assert(std::tuple_size_v<Params> == sizeof...(A), "op_begin needs exactly the method's arguments");
	encode_all<Params>(out, std::index_sequence_for<A...>{}, a...);
}

// Reads values back; throws if the entry is shorter than its parameters need (a corrupt log
// entry is caught by its checksum first, so this is a guard against a changed method list).
class reader {
public:
	reader(const char *p, size_t n) : p_(p), end_(p + n) {}
	template <class D> D get()
	{
		if constexpr (is_string_like_v<D>) {
			uint32_t n;
			take(&n, sizeof n);
			need(n);
			std::string_view sv(p_, n);
			p_ += n;
			if constexpr (std::is_same_v<D, std::string_view>)
				return sv;
			else
				return D(sv.data(), sv.size());
		} else {
			D v;
			take(&v, sizeof v);
			return v;
		}
	}

private:
	void need(size_t n)
	{
		if (static_cast<size_t>(end_ - p_) < n)
			throw std::runtime_error("prosper::asl: log entry shorter than the method's parameters");
	}
	void take(void *dst, size_t n)
	{
		need(n);
		std::memcpy(dst, p_, n);
		p_ += n;
	}
	const char *p_, *end_;
};

template <class Obj, auto Method, size_t... I> void call_decoded(Obj &o, reader &r, std::index_sequence<I...>)
{
	using Params = typename method_traits<decltype(Method)>::params;
	// Braced init: arguments are decoded left to right.
	std::tuple<std::tuple_element_t<I, Params>...> args{r.get<std::tuple_element_t<I, Params>>()...};
	(o.*Method)(std::get<I>(std::move(args))...);
}

template <auto> struct value_tag {};

// The list of a class's update methods: tag lookup at compile time, dispatch at replay.
template <auto... Ms> struct method_list {
	static_assert(sizeof...(Ms) < 65535, "too many update methods");
	template <auto M> static constexpr uint16_t index_of()
	{
		constexpr bool hits[] = {std::is_same_v<value_tag<M>, value_tag<Ms>>...};
		for (size_t i = 0; i < sizeof...(Ms); i++)
			if (hits[i])
				return static_cast<uint16_t>(i);
		throw "op_begin names a method missing from PROSPER_ASL_UPDATES"; // compile-time error
	}
	template <class Obj> static void dispatch(Obj &o, uint16_t tag, const char *p, size_t n)
	{
		reader r(p, n);
		uint16_t i = 0;
		bool found = ((tag == i++ ? (call_one<Obj, Ms>(o, r), true) : false) || ...);
		if (!found)
			throw std::runtime_error("prosper::asl: log entry names an unknown method");
	}

private:
	template <class Obj, auto M> static void call_one(Obj &o, reader &r)
	{
		using Params = typename method_traits<decltype(M)>::params;
		call_decoded<Obj, M>(o, r, std::make_index_sequence<std::tuple_size_v<Params>>{});
	}
};

} // namespace prosper::asl::detail

// Inside a class derived from PersistentObject: the update methods, in a fixed order.
#define PROSPER_ASL_UPDATES(...) using asl_methods = ::prosper::asl::detail::method_list<__VA_ARGS__>

#endif
