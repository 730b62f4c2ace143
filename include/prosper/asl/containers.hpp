// containers.hpp -- ready-made persistent STL containers: pvector, pmap, punordered_map,
// ppriority_queue.  Each wraps the std container (with asl::allocator, strings stored as
// pstring) and logs its update methods; read-only methods read the container directly.
//
// Invariants
//   - Only the methods listed in PROSPER_ASL_UPDATES change the container, each through
//     logged(): op_begin, the std container's operation, op_commit -- or op_abort if it threw
//     (the std operations used give the strong guarantee, so the container is unchanged and the
//     uncommitted entry is skipped by recovery).  Everything public that is not listed is const.
//   - Iterators and references handed out are const: a write through them would not be logged.
//   - Update methods take user-facing types (std::string) and convert to stored types inside, so
//     replay calls them with exactly the arguments the original call had.
#ifndef PROSPER_ASL_CONTAINERS_HPP
#define PROSPER_ASL_CONTAINERS_HPP
#include <functional>
#include <map>
#include <queue>
#include <unordered_map>
#include <vector>

namespace prosper::asl {

template <class T> class pvector : public PersistentObject {
public:
	using value_type = stored_t<T>;
	using const_iterator = typename std::vector<value_type, allocator<value_type>>::const_iterator;

	void push_back(const T &v)
	{
		logged<&pvector::push_back>([&] { v_.push_back(to_stored<value_type>(v)); }, v);
	}
	void emplace_back(const T &v) { push_back(v); }
	void pop_back()
	{
		logged<&pvector::pop_back>([&] {
			if (!v_.empty())
				v_.pop_back();
		});
	}
	void set(size_t i, const T &v)
	{
		logged<&pvector::set>([&] {
			if (i < v_.size())
				v_[i] = to_stored<value_type>(v);
		}, i, v);
	}
	void resize(size_t n)
	{
		logged<&pvector::resize>([&] { v_.resize(n); }, n);
	}
	void clear()
	{
		logged<&pvector::clear>([&] { v_.clear(); });
	}
	PROSPER_ASL_UPDATES(&pvector::push_back, &pvector::pop_back, &pvector::set, &pvector::resize, &pvector::clear);

	size_t size() const { return v_.size(); }
	bool empty() const { return v_.empty(); }
	const value_type &operator[](size_t i) const { return v_[i]; }
	const value_type &at(size_t i) const { return v_.at(i); }
	const value_type &front() const { return v_.front(); }
	const value_type &back() const { return v_.back(); }
	const_iterator begin() const { return v_.cbegin(); }
	const_iterator end() const { return v_.cend(); }

private:
	std::vector<value_type, allocator<value_type>> v_;
};

template <class K, class V> class pmap : public PersistentObject {
public:
	using key_type = stored_t<K>;
	using mapped_type = stored_t<V>;
	using map_type = std::map<key_type, mapped_type, std::less<>, allocator<std::pair<const key_type, mapped_type>>>;
	using const_iterator = typename map_type::const_iterator;

	// Inserts if absent (like std::map::insert); returns whether it inserted.
	bool insert(const K &k, const V &v)
	{
		return logged<&pmap::insert>([&] { return m_.emplace(to_stored<key_type>(k), to_stored<mapped_type>(v)).second; },
					    k, v);
	}
	bool emplace(const K &k, const V &v) { return insert(k, v); }
	void insert_or_assign(const K &k, const V &v)
	{
		logged<&pmap::insert_or_assign>([&] { m_.insert_or_assign(to_stored<key_type>(k), to_stored<mapped_type>(v)); }, k,
						v);
	}
	size_t erase(const K &k)
	{
		return logged<&pmap::erase>([&] { return erase_key(k); }, k);
	}
	void clear()
	{
		logged<&pmap::clear>([&] { m_.clear(); });
	}
	PROSPER_ASL_UPDATES(&pmap::insert, &pmap::insert_or_assign, &pmap::erase, &pmap::clear);

	size_t size() const { return m_.size(); }
	bool empty() const { return m_.empty(); }
	template <class Q> size_t count(const Q &k) const { return m_.count(lookup_key(k)); }
	template <class Q> bool contains(const Q &k) const { return m_.find(lookup_key(k)) != m_.end(); }
	template <class Q> const_iterator find(const Q &k) const { return m_.find(lookup_key(k)); }
	template <class Q> const mapped_type &at(const Q &k) const
	{
		auto it = m_.find(lookup_key(k));
		if (it == m_.end())
			throw std::out_of_range("prosper::asl::pmap::at");
		return it->second;
	}
	const_iterator begin() const { return m_.cbegin(); }
	const_iterator end() const { return m_.cend(); }

private:
	template <class Q> static decltype(auto) lookup_key(const Q &k)
	{
		if constexpr (std::is_same_v<key_type, pstring>)
			return std::string_view(k);
		else
			return (k);
	}
	size_t erase_key(const K &k)
	{
		auto it = m_.find(lookup_key(k));
		if (it == m_.end())
			return 0;
		m_.erase(it);
		return 1;
	}
	map_type m_;
};

template <class K, class V> class punordered_map : public PersistentObject {
public:
	using key_type = stored_t<K>;
	using mapped_type = stored_t<V>;
	using map_type = std::unordered_map<key_type, mapped_type, stable_hash, stable_equal,
					    allocator<std::pair<const key_type, mapped_type>>>;
	using const_iterator = typename map_type::const_iterator;

	bool insert(const K &k, const V &v)
	{
		return logged<&punordered_map::insert>(
			[&] { return m_.emplace(to_stored<key_type>(k), to_stored<mapped_type>(v)).second; }, k, v);
	}
	bool emplace(const K &k, const V &v) { return insert(k, v); }
	void insert_or_assign(const K &k, const V &v)
	{
		logged<&punordered_map::insert_or_assign>(
			[&] { m_.insert_or_assign(to_stored<key_type>(k), to_stored<mapped_type>(v)); }, k, v);
	}
	size_t erase(const K &k)
	{
		return logged<&punordered_map::erase>([&]() -> size_t {
			auto it = find(k);
			if (it == m_.end())
				return 0;
			m_.erase(it);
			return 1;
		}, k);
	}
	void clear()
	{
		logged<&punordered_map::clear>([&] { m_.clear(); });
	}
	PROSPER_ASL_UPDATES(&punordered_map::insert, &punordered_map::insert_or_assign, &punordered_map::erase,
			    &punordered_map::clear);

	size_t size() const { return m_.size(); }
	bool empty() const { return m_.empty(); }
	template <class Q> const_iterator find(const Q &k) const
	{
		if constexpr (std::is_same_v<key_type, pstring>)
			return m_.find(std::string_view(k)); // heterogeneous: no temporary in the heap
		else
			return m_.find(k);
	}
	template <class Q> size_t count(const Q &k) const { return find(k) == m_.end() ? 0 : 1; }
	template <class Q> bool contains(const Q &k) const { return find(k) != m_.end(); }
	template <class Q> const mapped_type &at(const Q &k) const
	{
		auto it = find(k);
		if (it == m_.end())
			throw std::out_of_range("prosper::asl::punordered_map::at");
		return it->second;
	}
	const_iterator begin() const { return m_.cbegin(); }
	const_iterator end() const { return m_.cend(); }

private:
	map_type m_;
};

template <class T, class Compare = std::less<stored_t<T>>> class ppriority_queue : public PersistentObject {
public:
	using value_type = stored_t<T>;

	void push(const T &v)
	{
		logged<&ppriority_queue::push>([&] { q_.push(to_stored<value_type>(v)); }, v);
	}
	void emplace(const T &v) { push(v); }
	void pop()
	{
		logged<&ppriority_queue::pop>([&] {
			if (!q_.empty())
				q_.pop();
		});
	}
	PROSPER_ASL_UPDATES(&ppriority_queue::push, &ppriority_queue::pop);

	const value_type &top() const { return q_.top(); }
	size_t size() const { return q_.size(); }
	bool empty() const { return q_.empty(); }

private:
	std::priority_queue<value_type, std::vector<value_type, allocator<value_type>>, Compare> q_;
};

} // namespace prosper::asl
#endif
