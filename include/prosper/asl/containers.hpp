// containers.hpp -- ready-made persistent STL containers: pvector, pmap, punordered_map,
// ppriority_queue.  Each wraps the std container (with asl::allocator, strings stored as
// pstring) and logs its update methods; read-only methods read the container directly.
//
// Invariants
//   - Only the methods listed in PROSPER_ASL_UPDATES change the container, each between
//     op_begin and op_commit; everything public that is not listed is const.
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
		op_begin<&pvector::push_back>(v);
		v_.push_back(to_stored<value_type>(v));
		op_commit();
	}
	void emplace_back(const T &v) { push_back(v); }
	void pop_back()
	{
		op_begin<&pvector::pop_back>();
		if (!v_.empty())
			v_.pop_back();
		op_commit();
	}
	void set(size_t i, const T &v)
	{
		op_begin<&pvector::set>(i, v);
		if (i < v_.size())
			v_[i] = to_stored<value_type>(v);
		op_commit();
	}
	void resize(size_t n)
	{
		op_begin<&pvector::resize>(n);
		v_.resize(n);
		op_commit();
	}
	void clear()
	{
		op_begin<&pvector::clear>();
		v_.clear();
		op_commit();
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
		op_begin<&pmap::insert>(k, v);
		bool done = m_.emplace(to_stored<key_type>(k), to_stored<mapped_type>(v)).second;
		op_commit();
		return done;
	}
	bool emplace(const K &k, const V &v) { return insert(k, v); }
	void insert_or_assign(const K &k, const V &v)
	{
		op_begin<&pmap::insert_or_assign>(k, v);
		m_.insert_or_assign(to_stored<key_type>(k), to_stored<mapped_type>(v));
		op_commit();
	}
	size_t erase(const K &k)
	{
		op_begin<&pmap::erase>(k);
		size_t n = erase_key(k);
		op_commit();
		return n;
	}
	void clear()
	{
		op_begin<&pmap::clear>();
		m_.clear();
		op_commit();
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
		op_begin<&punordered_map::insert>(k, v);
		bool done = m_.emplace(to_stored<key_type>(k), to_stored<mapped_type>(v)).second;
		op_commit();
		return done;
	}
	bool emplace(const K &k, const V &v) { return insert(k, v); }
	void insert_or_assign(const K &k, const V &v)
	{
		op_begin<&punordered_map::insert_or_assign>(k, v);
		m_.insert_or_assign(to_stored<key_type>(k), to_stored<mapped_type>(v));
		op_commit();
	}
	size_t erase(const K &k)
	{
		op_begin<&punordered_map::erase>(k);
		size_t n = 0;
		auto it = find(k);
		if (it != m_.end()) {
			m_.erase(it);
			n = 1;
		}
		op_commit();
		return n;
	}
	void clear()
	{
		op_begin<&punordered_map::clear>();
		m_.clear();
		op_commit();
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
		op_begin<&ppriority_queue::push>(v);
		q_.push(to_stored<value_type>(v));
		op_commit();
	}
	void emplace(const T &v) { push(v); }
	void pop()
	{
		op_begin<&ppriority_queue::pop>();
		if (!q_.empty())
			q_.pop();
		op_commit();
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
