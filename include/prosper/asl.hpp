// asl.hpp -- asynchronous semantic logging (Pronto): durable data structures from volatile ones.
//
// A persistent object is an ordinary C++ object that lives in the runtime's heap (heap.hpp) and
// brackets each update method with op_begin<&C::method>(args...) / op_commit().  op_begin hands
// (object, method, copy of the arguments) to a logger thread, which appends and persists a log
// entry while the method runs; op_commit waits for that entry and persists a commit id.  When
// that hand-off costs the thread more than writing the entry itself, op_commit instead writes
// the entry with its commit id in one persist (a sealed entry; docs/asl.md).  Read-only
// methods are untouched.  Periodic snapshots copy the heap's pages to files; after a crash the
// newest complete snapshot is loaded and each object's committed entries after its snapshot
// position are replayed in commit-id order (docs/asl.md).
//
// Invariants the caller relies on
//   - When op_commit returns, the operation survives a crash; an operation whose op_commit has
//     not returned is either entirely present after recovery or entirely absent.
//   - For objects shared by threads, call op_commit while still holding the lock that orders the
//     operation: commit order is then a valid linearization and replay reproduces it.
//   - Update methods must be deterministic functions of the object's state and their arguments.
//   - get_object<T>(name) returns the same object (same address) in every run.
#ifndef PROSPER_ASL_HPP
#define PROSPER_ASL_HPP
#include <array>
#include <cstdint>
#include <memory>
#include <tuple>
#include <type_traits>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <typeinfo>
#include <utility>
#include <vector>
#include "prosper/asl/codec.hpp"
#include "prosper/asl/heap.hpp"

namespace prosper::asl {

struct Options {
	uintptr_t heap_base = 0x500000000000ull; // fixed address of the heap in every run (clear of ASan's allocator at 0x6000...)
	size_t heap_reserve = size_t(1) << 30;   // virtual bytes reserved for the heap
	size_t log_capacity = size_t(16) << 20;  // bytes of each object's circular log (multiple of 4 KiB)
	bool sync_logging = false;               // Pronto-Sync: the foreground writes its own entry
	unsigned loggers = 0;                    // logger threads; 0 = one per two cores, at least one
	unsigned snapshot_threads = 2;           // copy threads of a snapshot's asynchronous phase
	int granularity = -1;                    // prosper_granularity; -1 = PMEM2_FORCE_GRANULARITY or PAGE
	double auto_snapshot_fill = 0.5;         // a log this full requests a snapshot (0 = never)
};

struct SnapshotStats {
	uint64_t seq = 0;          // 0: none taken in this run
	double sync_ms = 0;        // updates blocked
	double async_ms = 0;       // copy while updates run
	uint64_t bytes = 0;        // heap bytes saved
	uint64_t fault_chunks = 0; // chunks copied early because an update wrote them
};

struct LogStats {
	uint64_t capacity = 0;
	uint64_t used = 0;      // bytes after the latest complete snapshot's position
	uint64_t max_used = 0;  // the most ever used in this run
	uint64_t appended = 0;  // bytes appended in this run
};

struct LoggingStats {
	uint64_t by_logger = 0;     // entries a logger thread wrote while the operation ran
	uint64_t by_foreground = 0; // entries the operation's own thread wrote: sealed at op_commit
				    // (when handing off costs it more, docs/asl.md), taken over at
				    // op_commit because no logger had started them, or, with
				    // sync_logging, all of them before the method ran
};

struct RecoveryStats {
	uint64_t snapshot_seq = 0; // 0: started from an empty heap
	uint64_t snapshot_bytes = 0;
	double load_ms = 0;        // snapshot read into the heap
	double scan_ms = 0;        // logs scanned for committed entries
	uint64_t replayed = 0;     // entries replayed so far (objects replay when first attached)
	double replay_ms = 0;
};

class Runtime;

namespace detail {
struct ObjectState;
struct RuntimeImpl;
struct OpContext {
	std::vector<char> args; // encoded arguments of the operation being published
};
// Foreground entry points (runtime.cpp / logger.cpp).
OpContext *op_enter(ObjectState *st);          // nullptr: replaying or nested, nothing to log
void op_publish(ObjectState *st, OpContext *ctx, uint16_t tag);
void op_commit(ObjectState *st);
void op_abort(ObjectState *st) noexcept;
using replay_fn = void (*)(void *obj, uint16_t tag, const char *args, size_t len);
struct Attach {
	ObjectState *state;
	void *existing; // the object in the heap, or nullptr when it must be constructed
	bool loaded;    // existing came from a snapshot and is attached for the first time
};
struct ReplayJob {
	ObjectState *state;
	void *obj;
	replay_fn fn;
};
// Attaching holds the gate exclusively from attach_lock to attach_unlock.
void attach_lock(RuntimeImpl *rt);
void attach_unlock(RuntimeImpl *rt) noexcept;
Attach attach_find(RuntimeImpl *rt, std::string_view name, uint64_t type_hash);
void attach_constructed(RuntimeImpl *rt, ObjectState *st, void *obj);
void attach_replay(RuntimeImpl *rt, const ReplayJob *jobs, size_t n); // in parallel when n > 1
uint64_t type_hash_of(const char *mangled);
} // namespace detail

// Base of every persistent object.  Derived classes list their update methods with
// PROSPER_ASL_UPDATES(&C::a, &C::b) and call op_begin<&C::a>(args...) ... op_commit().
class PersistentObject {
public:
	PersistentObject() = default;
	PersistentObject(const PersistentObject &) = delete;
	PersistentObject &operator=(const PersistentObject &) = delete;
	uint64_t asl_object_id() const { return asl_id_; }

protected:
	template <auto Method, class... A> void op_begin(const A &...args)
	{
		using C = typename detail::method_traits<decltype(Method)>::cls;
		constexpr uint16_t tag = C::asl_methods::template index_of<Method>();
		detail::OpContext *ctx = detail::op_enter(asl_state_);
		if (!ctx)
			return;
		ctx->args.clear();
		detail::encode_args<Method>(ctx->args, args...);
		detail::op_publish(asl_state_, ctx, tag);
	}
	void op_commit() { detail::op_commit(asl_state_); }
	// Ends an operation that failed (threw) after op_begin: its entry stays uncommitted, so
	// recovery skips it; the object must be as before the operation (strong exception safety).
	void op_abort() noexcept { detail::op_abort(asl_state_); }

	// op_begin + body() + op_commit, or op_abort if body throws: the usual shape of an update.
	template <auto Method, class F, class... A> auto logged(F &&body, const A &...args)
	{
		op_begin<Method>(args...);
		struct Abort {
			PersistentObject *o;
			bool armed = true;
			~Abort()
			{
				if (armed)
					o->op_abort();
			}
		} guard{this};
		if constexpr (std::is_void_v<std::invoke_result_t<F>>) {
			body();
			guard.armed = false;
			op_commit();
		} else {
			auto r = body();
			guard.armed = false;
			op_commit();
			return r;
		}
	}

private:
	friend class Runtime;
	uint64_t asl_id_ = 0;
	detail::ObjectState *asl_state_ = nullptr; // volatile; set again each time the object is attached
};

class Runtime {
public:
	explicit Runtime(detail::RuntimeImpl *impl) : impl_(impl) {}
	~Runtime();
	Runtime(const Runtime &) = delete;
	Runtime &operator=(const Runtime &) = delete;

	// The object called name: recovered (snapshot + replay of its committed operations) if it
	// exists, else constructed from ctor_args.  Same T every time, or std::runtime_error.
	template <class T, class... A> T &get_object(std::string_view name, A &&...ctor_args)
	{
		detail::attach_lock(impl_);
		try {
			detail::ReplayJob job = prepare<T>(name, std::forward<A>(ctor_args)...);
			detail::attach_replay(impl_, &job, 1);
		} catch (...) {
			detail::attach_unlock(impl_);
			throw;
		}
		detail::attach_unlock(impl_);
		return *static_cast<T *>(lookup_attached(name));
	}

	// Several objects at once (default-constructed if new); their logs replay in parallel.
	//   auto [m, v] = rt->get_objects<pmap<long, std::string>, pvector<int>>({"m", "v"});
	template <class... T> std::tuple<T &...> get_objects(const std::array<std::string_view, sizeof...(T)> &names)
	{
		for (size_t a = 0; a < names.size(); a++)
			for (size_t b = a + 1; b < names.size(); b++)
				if (names[a] == names[b])
					throw std::invalid_argument("prosper::asl: get_objects names an object twice");
		detail::attach_lock(impl_);
		try {
			std::array<detail::ReplayJob, sizeof...(T)> jobs;
			[&]<size_t... I>(std::index_sequence<I...>) {
				((jobs[I] = prepare<T>(names[I])), ...);
			}(std::index_sequence_for<T...>{});
			detail::attach_replay(impl_, jobs.data(), jobs.size());
		} catch (...) {
			detail::attach_unlock(impl_);
			throw;
		}
		detail::attach_unlock(impl_);
		return [&]<size_t... I>(std::index_sequence<I...>) {
			return std::tuple<T &...>{*static_cast<T *>(lookup_attached(names[I]))...};
		}(std::index_sequence_for<T...>{});
	}

	void snapshot();       // sync + async phase; returns when the snapshot is complete
	void snapshot_async(); // returns after the sync phase; the copy goes on in the background
	bool snapshot_running() const; // a snapshot is requested or being taken
	SnapshotStats last_snapshot() const;
	LogStats log_stats(std::string_view name) const;
	RecoveryStats recovery() const;
	LoggingStats logging() const; // since open
	void close(); // waits for a running snapshot; open objects become invalid

private:
	// Finds or constructs the object (gate held); its replay is left to attach_replay.
	template <class T, class... A> detail::ReplayJob prepare(std::string_view name, A &&...ctor_args)
	{
		static_assert(std::is_base_of_v<PersistentObject, T>, "persistent objects derive from PersistentObject");
		detail::Attach a = detail::attach_find(impl_, name, detail::type_hash_of(typeid(T).name()));
		T *obj;
		if (a.existing) {
			obj = static_cast<T *>(a.existing);
		} else {
			void *mem = detail::heap_allocate(sizeof(T), alignof(T));
			try {
				obj = new (mem) T(std::forward<A>(ctor_args)...);
			} catch (...) {
				detail::heap_free(mem);
				throw;
			}
		}
		obj->asl_state_ = a.state;
		if (!a.existing)
			detail::attach_constructed(impl_, a.state, obj);
		else if constexpr (requires(T &t) { t.asl_loaded(); })
			if (a.loaded)
				obj->asl_loaded(); // from a snapshot: reset what means nothing across runs (locks)
		return {a.state, obj, [](void *o, uint16_t tag, const char *p, size_t n) {
				T::asl_methods::dispatch(*static_cast<T *>(o), tag, p, n);
			}};
	}
	void *lookup_attached(std::string_view name) const;

	detail::RuntimeImpl *impl_;
};

// Open (creating if needed) the runtime stored in directory dir.  Throws std::runtime_error with
// the reason on failure.  One runtime per process at a time.
std::unique_ptr<Runtime> open(const std::string &dir, const Options &opts = {});

} // namespace prosper::asl

#include "prosper/asl/containers.hpp"
#include "prosper/asl/concurrent_hash_map.hpp"
#endif
