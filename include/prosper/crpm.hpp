// crpm.hpp -- C++ face of crpm.h: a MemoryPool owning a container, and an STL allocator.
//
//   crpm::MemoryPool pool("/dev/shm/kv.crpm");
//   using Map = std::map<long, long, std::less<long>, crpm::allocator<std::pair<const long, long>>>;
//   Map *m = pool.get_root<Map>(0);
//   if (!m) { m = new (pool.allocate(sizeof(Map))) Map(); pool.set_root(0, m); }
//   ... (*m)[k] = v; ... pool.checkpoint();
//
// crpm::allocator is stateless: it allocates from the process's current pool (the MemoryPool
// constructed last, or crpm::set_current_pool).  Being stateless matters: a container object
// kept IN the container stores its allocator, and a pointer to this run's crpm_t would be stale
// after a restart.  Compile with bin/prosper-c++ so the container's stores are hooked (or
// rely on write protection, crpm.h).
#ifndef PROSPER_CRPM_HPP
#define PROSPER_CRPM_HPP
#include <cstddef>
#include <new>
#include <stdexcept>
#include "prosper/crpm.h"

namespace crpm {

inline crpm_t *&current_pool_slot()
{
	static crpm_t *current = nullptr;
	return current;
}
inline void set_current_pool(crpm_t *c) { current_pool_slot() = c; }
inline crpm_t *current_pool() { return current_pool_slot(); }

class MemoryPool {
public:
	explicit MemoryPool(const char *path, const crpm_option_t *opt = nullptr) : ctr_(crpm_open(path, opt))
	{
		if (!ctr_)
			throw std::runtime_error(crpm_errormsg());
		set_current_pool(ctr_);
	}
	~MemoryPool()
	{
		if (current_pool() == ctr_)
			set_current_pool(nullptr);
		crpm_close(ctr_);
	}
	MemoryPool(const MemoryPool &) = delete;
	MemoryPool &operator=(const MemoryPool &) = delete;

	void *allocate(std::size_t n)
	{
		void *p = crpm_malloc(ctr_, n);
		if (!p)
			throw std::bad_alloc();
		return p;
	}
	void deallocate(void *p) { crpm_free(ctr_, p); }
	template <class T> T *get_root(unsigned idx) { return static_cast<T *>(crpm_get_root(ctr_, idx)); }
	void set_root(unsigned idx, void *p) { crpm_set_root(ctr_, idx, p); }
	// Collective across nr_threads threads; throws if the checkpoint failed.
	void checkpoint(unsigned nr_threads = 1)
	{
		if (crpm_checkpoint(ctr_, nr_threads))
			throw std::runtime_error(crpm_errormsg());
	}
	crpm_t *handle() const { return ctr_; }

private:
	crpm_t *ctr_;
};

template <class T> struct allocator {
	using value_type = T;
	allocator() noexcept = default;
	template <class U> allocator(const allocator<U> &) noexcept {}
	T *allocate(std::size_t n)
	{
		void *p = current_pool() ? crpm_malloc(current_pool(), n * sizeof(T)) : nullptr;
		if (!p)
			throw std::bad_alloc();
		return static_cast<T *>(p);
	}
	void deallocate(T *p, std::size_t) noexcept { crpm_free(current_pool(), p); }
	template <class U> bool operator==(const allocator<U> &) const noexcept { return true; }
	template <class U> bool operator!=(const allocator<U> &) const noexcept { return false; }
};

} // namespace crpm
#endif
