// runtime.cpp -- opening (recovery), attaching objects (replay), the operation path
// (op_enter / op_publish / op_commit) and closing.
//
// Invariants
//   - Recovery = newest complete snapshot into the heap + for each object, its committed entries
//     after the snapshot's position for it, in commit-id order.  Objects replay when first
//     attached (get_object), because only then is their type known.
//   - An operation: reserve log space (may wait for a snapshot, holding no share of the gate),
//     take a share of the gate, hand the entry to a logger (or write it, Pronto-Sync), run, wait
//     for the entry, persist a fresh commit id, release the share.
//   - Commit ids come from one counter for all objects, starting above every id in the logs.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include "internal.hpp"
#include "loggers.hpp"
#include "pool_store.hpp"
#include "snapshot.hpp"

namespace prosper::asl::detail {

std::atomic<RuntimeImpl *> g_rt{nullptr};

namespace {
using clock_type = std::chrono::steady_clock;
double ms_since(clock_type::time_point t0)
{
	return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

// The three ways an operation's entry gets written (the log's two kinds of entry, log.hpp):
//   handoff  a logger writes it while the body runs; op_commit waits, then persists the commit word
//   before   this thread writes it before the body (Options::sync_logging, Pronto-Sync); then the same
//   sealed   this thread writes it at op_commit, commit word included: one persist instead of two
enum class Way : uint8_t { handoff, before, sealed };

// Recent durations of operations logged one way: the median of the last complete batch of 8
// (a preempted operation or an odd body does not move it; a mean or a minimum would be pulled
// by the noisier way).  0 = no batch yet.
struct Durations {
	uint64_t batch[8];
	uint32_t n = 0;
	uint64_t median = 0;
	void add(uint64_t d)
	{
		batch[n++] = d;
		if (n < 8)
			return;
		std::sort(batch, batch + 8);
		median = batch[3] / 2 + batch[4] / 2;
		n = 0;
	}
};

// What the calling thread is doing.
struct ThreadOp {
	ObjectState *st = nullptr;
	int depth = 0;         // > 1: an update method called from inside another
	bool replaying = false; // this thread is replaying a log: nothing is logged
	Way way = Way::handoff; // how this operation's entry is written
	uint16_t tag = 0;
	uint64_t lsn = 0;
	Slot *slot = nullptr;
	OpContext ctx;
	// The hand-off chooser (choose_handoff): how long this thread's operations have recently
	// taken each way, op_begin to the end of op_commit, in TSC ticks.
	Durations handoff_cost;
	Durations sealed_cost;
	uint64_t begin_ticks = 0;   // when op_begin started
	uint64_t last_probe = 0; // when the other way was last tried
	uint32_t probe_left = 0; // counted operations of the current probe still to go
	bool probe_handoff = false;
	bool handing_off = false; // the way of the previous operation
	uint32_t warming = 1;     // operations after a switch of way that are not counted (see count_cost)
	bool counted = true;      // this operation's duration is a sample of its way
};
thread_local ThreadOp t_op;

inline uint64_t ticks() { return __builtin_ia32_rdtsc(); }

// The threads that began an operation lately: those of the current or the previous epoch of
// about a millisecond, whichever counted more.  Each thread counts itself once an epoch (one
// atomic add a millisecond a thread); the words are otherwise only read, so their line stays
// shared between the cores.  Epochs are TSC ticks: a thread's first operation after an idle
// spell starts a new one if the old one is over.  Approximate (a thread counted in the instant an
// epoch turns may be lost to it; the previous epoch's count covers it): a heuristic, never a
// question of correctness -- either way of writing an entry is durable by its commit.
constexpr uint64_t kEpochTicks = 3'000'000; // ~1-1.5 ms at the usual 2-3 GHz time-stamp counter
struct alignas(64) ActiveThreads {
	std::atomic<uint64_t> epoch{0}; // the current epoch's number
	std::atomic<uint64_t> start{0}; // when it began (TSC)
	std::atomic<uint32_t> now{0}, before{0};
} g_active;
thread_local uint64_t t_epoch = UINT64_MAX; // the epoch this thread last counted itself in

unsigned logging_threads()
{
	uint64_t e = g_active.epoch.load(std::memory_order_acquire), t = ticks();
	uint64_t began = g_active.start.load(std::memory_order_relaxed);
	if (t - began > kEpochTicks && g_active.epoch.compare_exchange_strong(e, e + 1, std::memory_order_acq_rel)) {
		g_active.before.store(g_active.now.exchange(0, std::memory_order_relaxed), std::memory_order_relaxed);
		g_active.start.store(t, std::memory_order_relaxed);
		e++;
	}
	if (t_epoch != e) {
		t_epoch = e;
		g_active.now.fetch_add(1, std::memory_order_relaxed);
	}
	return std::max(g_active.now.load(std::memory_order_relaxed), g_active.before.load(std::memory_order_relaxed));
}

// Hand the entry to a logger, or write it sealed at op_commit?  The hand-off pays only when a
// logger has a core and the body is long enough to hide the entry: on a machine whose cores are
// busy (the loggers then rarely run) or for short bodies it costs more than the write it saves
// (measured in docs/asl.md, "Where the time goes").  Its costs are not all in one place -- the
// wake-up of a sleeping logger, the argument buffer's lines coming back from the logger's core
// at the next op_begin, the body running slower beside a busy logger, the wait at op_commit --
// so each thread times whole operations, op_begin to the end of op_commit, each way, keeps the
// median of a recent batch of each (Durations) and uses the faster way, trying the other one
// for a batch of operations about every 10 ms (by time, not by
// count: a probe may wake a sleeping logger, which then spins a while) so that a change -- a
// core frees up, bodies get longer -- is noticed.  After a switch of way the first operations
// are not counted: they pay for the switch (a logger waking up is not yet there to take the
// entries; see count_cost).  Either way the entry is persistent no later than its commit.
constexpr uint64_t kProbeTicks = 20'000'000; // ~7-10 ms at the usual 2-3 GHz time-stamp counter
constexpr uint32_t kProbeOps = 8;
constexpr uint32_t kWarmHandoffs = 32; // at most this many hand-offs wait for the logger to wake
bool choose_handoff()
{
	// test hook: PROSPER_ASL_LOGGING=handoff|sealed fixes the way (testable build only)
	const char *forced = test_switch("PROSPER_ASL_LOGGING");
	if (forced)
		return std::strcmp(forced, "sealed") != 0;
	bool handoff;
	if (t_op.probe_left) {
		handoff = t_op.probe_handoff;
		if (!t_op.warming)
			t_op.probe_left--;
	} else if (!t_op.handoff_cost.median) {
		handoff = true;
	} else if (!t_op.sealed_cost.median) {
		handoff = false;
	} else {
		bool cheaper = t_op.handoff_cost.median <= t_op.sealed_cost.median;
		uint64_t now = ticks();
		handoff = cheaper;
		if (now - t_op.last_probe > kProbeTicks) {
			t_op.last_probe = now;
			t_op.probe_handoff = handoff = !cheaper;
			t_op.probe_left = kProbeOps;
		}
	}
	if (handoff != t_op.handing_off) {
		t_op.handing_off = handoff;
		t_op.warming = handoff ? kWarmHandoffs : 1;
		(handoff ? t_op.handoff_cost : t_op.sealed_cost).n = 0; // a batch is one stretch of time
	}
	return handoff;
}

// A sample of this operation's way of logging.  While warming up after a switch it is not
// counted; a hand-off's warm-up ends once a logger wrote an entry (it is awake), or after
// kWarmHandoffs operations (it is not coming: then the samples say so).
void count_cost(Durations &d, uint64_t sample, bool by_logger)
{
	if (!t_op.counted)
		return;
	if (t_op.warming) {
		t_op.warming = by_logger ? 0 : t_op.warming - 1;
		return;
	}
	d.add(sample);
}

inline void cpu_relax() { __builtin_ia32_pause(); }

int pick_granularity(int requested)
{
	if (requested >= PROSPER_GRAN_BYTE && requested <= PROSPER_GRAN_PAGE)
		return requested;
	const char *env = getenv("PMEM2_FORCE_GRANULARITY");
	if (env && (!strcasecmp(env, "CACHE_LINE") || !strcasecmp(env, "CL")))
		return PROSPER_GRAN_CACHE_LINE;
	if (env && !strcasecmp(env, "BYTE"))
		return PROSPER_GRAN_BYTE;
	return PROSPER_GRAN_PAGE;
}

[[noreturn]] void fail(const std::string &what)
{
	throw std::runtime_error("prosper::asl: " + what + (errno ? std::string(": ") + std::strerror(errno) : ""));
}

constexpr uint64_t kHugePage = 2 << 20;
} // namespace

// ---- the gate ----------------------------------------------------------------------------
void RuntimeImpl::enter_shared()
{
	for (;;) {
		uint32_t b;
		while ((b = blocked.load(std::memory_order_seq_cst)) != 0)
			blocked.wait(b);
		in_flight.fetch_add(1, std::memory_order_seq_cst);
		if (blocked.load(std::memory_order_seq_cst) == 0)
			return;
		leave_shared(); // a blocker came in between: let it drain us
	}
}

void RuntimeImpl::leave_shared()
{
	if (in_flight.fetch_sub(1, std::memory_order_seq_cst) == 1 && blocked.load(std::memory_order_seq_cst))
		in_flight.notify_all();
}

void RuntimeImpl::block()
{
	exclusive_mu.lock();
	blocked.store(1, std::memory_order_seq_cst);
	uint32_t n;
	while ((n = in_flight.load(std::memory_order_seq_cst)) != 0)
		in_flight.wait(n);
}

void RuntimeImpl::unblock()
{
	blocked.store(0, std::memory_order_seq_cst);
	blocked.notify_all();
	exclusive_mu.unlock();
}

// ---- the operation path --------------------------------------------------------------------
uint64_t append_entry(ObjectState *st, uint16_t tag, const std::vector<char> &args, bool by_logger, uint64_t sealed_commit)
{
	std::lock_guard<SpinLock> g(st->append_mu);
	uint64_t lsn = st->log->append(tag, args.data(), static_cast<uint32_t>(args.size()), sealed_commit);
	st->appended += Log::entry_size(args.size());
	(by_logger ? st->by_logger : st->by_thread)++;
	return lsn;
}

OpContext *op_enter(ObjectState *st)
{
	if (!st)
		throw std::logic_error("prosper::asl: update on an object not obtained from get_object");
	if (t_op.replaying)
		return nullptr;
	if (t_op.depth > 0) {
		t_op.depth++;
		return nullptr;
	}
	t_op.depth = 1;
	t_op.st = st;
	t_op.begin_ticks = ticks();
	return &t_op.ctx;
}

static void reserve_space(RuntimeImpl *rt, ObjectState *st, uint64_t size)
{
	uint64_t cap = st->log->capacity();
	bool want_snapshot = false;
	{
		std::unique_lock<SpinLock> lk(st->space_mu);
		while (st->reserved + size > st->reclaimed + cap) {
			lk.unlock();
			rt->snap->request_if_idle();
			lk.lock();
			st->space_cv.wait_for(lk, std::chrono::milliseconds(50), [&] { return st->reserved + size <= st->reclaimed + cap; });
		}
		st->reserved += size;
		uint64_t used = st->reserved - st->reclaimed;
		st->max_used = std::max(st->max_used, used);
		want_snapshot = rt->opt.auto_snapshot_fill > 0 && used > rt->opt.auto_snapshot_fill * static_cast<double>(cap);
	}
	if (want_snapshot)
		rt->snap->request_if_idle();
}

void op_publish(ObjectState *st, OpContext *ctx, uint16_t tag)
{
	RuntimeImpl *rt = st->rt;
	uint64_t size = Log::entry_size(ctx->args.size());
	if (size > st->log->capacity() || ctx->args.size() > UINT32_MAX) {
		t_op.depth = 0;
		throw std::length_error("prosper::asl: operation's arguments do not fit in the object's log");
	}
	reserve_space(rt, st, size);
	rt->enter_shared();
	t_op.tag = tag;
	if (rt->opt.sync_logging) {
		t_op.way = Way::before;
		try {
			t_op.lsn = append_entry(st, tag, ctx->args, false);
		} catch (...) {
			rt->leave_shared();
			t_op.depth = 0;
			throw;
		}
		return;
	}
	// Operations in flight on every core, or as many threads logging as there are cores: no
	// logger can run beside them without taking a core from one of them, so no hand-off (and no
	// sample: this says nothing about either way when a core is free).  The second test sees
	// what an operation's own time cannot: a logger run in a gap of one thread's operations
	// slows the other threads (Fig 8, two threads on two cores: 0.54-0.57 M inserts/s with
	// hand-offs, 0.62-0.67 without; docs/asl.md).
	unsigned logging = logging_threads(); // every operation counts its thread, whatever is chosen
	t_op.counted = rt->in_flight.load(std::memory_order_relaxed) < rt->cores && logging < rt->cores;
	if (!t_op.counted || !choose_handoff()) {
		t_op.way = Way::sealed; // written by op_commit
		return;
	}
	t_op.way = Way::handoff;
	if (!t_op.slot)
		t_op.slot = Loggers::acquire_slot();
	Slot *s = t_op.slot;
	s->st = st;
	s->tag = tag;
	s->args = &ctx->args;
	rt->loggers->publish(s);
}

// Waits until the entry of the calling thread's operation is persistent (or writes it itself
// when no logger has started it; *mine tells).  Returns the slot's final state.
static uint32_t await_entry(Slot *s, bool *mine = nullptr)
{
	uint32_t state = s->state.load(std::memory_order_acquire);
	bool wrote = state == SLOT_PUBLISHED && log_slot(*s, false);
	if (mine)
		*mine = wrote;
	for (unsigned spins = 0; (state = s->state.load(std::memory_order_acquire)) == SLOT_LOGGING; spins++) {
		if (spins < 256)
			cpu_relax();
		else
			std::this_thread::yield();
	}
	return state;
}

void op_abort(ObjectState *st) noexcept
{
	if (t_op.replaying || t_op.depth == 0)
		return;
	if (t_op.depth > 1) {
		t_op.depth--;
		return;
	}
	if (t_op.way == Way::handoff) {
		await_entry(t_op.slot); // the entry must not be written after the share is gone
		t_op.slot->state.store(SLOT_IDLE, std::memory_order_relaxed);
	}
	st->rt->leave_shared(); // no commit word (or, sealed, no entry): recovery skips it
	t_op.depth = 0;
}

void op_commit(ObjectState *st)
{
	if (t_op.replaying)
		return;
	if (t_op.depth > 1) {
		t_op.depth--;
		return;
	}
	if (t_op.depth == 0)
		throw std::logic_error("prosper::asl: op_commit without op_begin");
	RuntimeImpl *rt = st->rt;
	struct Release { // the share of the gate goes when op_commit ends, by return or throw
		RuntimeImpl *rt;
		~Release()
		{
			rt->leave_shared();
			t_op.depth = 0;
		}
	} release{rt};
	if (t_op.way == Way::sealed) {
		// The commit id is taken while the caller still holds its lock (commit order is a
		// linearization); entry and commit word become durable together.
		uint64_t cid = rt->next_commit.fetch_add(1, std::memory_order_relaxed);
		append_entry(st, t_op.tag, t_op.ctx.args, false, cid);
		count_cost(t_op.sealed_cost, ticks() - t_op.begin_ticks, false);
		return;
	}
	uint64_t lsn = t_op.lsn;
	bool mine = true;
	if (t_op.way == Way::handoff) {
		Slot *s = t_op.slot;
		// If the logger has not even started the entry by now, it is not running (busy cores):
		// waiting would add a scheduler round trip, so the entry is written here (same work).
		uint32_t state = await_entry(s, &mine);
		s->state.store(SLOT_IDLE, std::memory_order_relaxed);
		if (state == SLOT_FAILED)
			throw std::runtime_error(s->error);
		lsn = s->lsn;
	}
	uint64_t cid = rt->next_commit.fetch_add(1, std::memory_order_relaxed);
	st->log->commit(lsn, cid);
	if (t_op.way == Way::handoff)
		count_cost(t_op.handoff_cost, ticks() - t_op.begin_ticks, !mine);
}

// ---- objects ---------------------------------------------------------------------------------
uint64_t type_hash_of(const char *mangled)
{
	uint64_t h = 0xcbf29ce484222325ull; // FNV-1a
	for (const char *p = mangled; *p; p++)
		h = (h ^ static_cast<unsigned char>(*p)) * 0x100000001b3ull;
	return h;
}

static HeapHeader *heap_header(RuntimeImpl *rt) { return reinterpret_cast<HeapHeader *>(rt->heap); }

void attach_lock(RuntimeImpl *rt)
{
	if (t_op.depth > 0)
		throw std::logic_error("prosper::asl: get_object inside an update method");
	rt->block();
}

void attach_unlock(RuntimeImpl *rt) noexcept { rt->unblock(); }

Attach attach_find(RuntimeImpl *rt, std::string_view name, uint64_t type_hash)
{
	std::lock_guard<std::mutex> g(rt->objects_mu);
	auto it = rt->objects.find(name);
	if (it != rt->objects.end()) {
		ObjectState *st = it->second.get();
		if (st->log->type_hash() != type_hash)
			throw std::runtime_error("prosper::asl: object \"" + std::string(name) + "\" has another type");
		if (st->attached)
			return {st, st->obj, false};
		HeapHeader *h = heap_header(rt);
		for (uint64_t i = 0; i < h->nobjects; i++)
			if (h->objs[i].id == st->id)
				return {st, reinterpret_cast<void *>(h->objs[i].ptr), true};
		return {st, nullptr, false}; // created after the snapshot: construct, then replay all
	}
	if (heap_header(rt)->nobjects >= kMaxObjects)
		throw std::runtime_error("prosper::asl: too many objects");
	auto st = std::make_unique<ObjectState>();
	st->rt = rt;
	st->name = std::string(name);
	st->id = rt->next_object_id++;
	st->type_hash = type_hash;
	st->log = Log::create(rt->dir, st->id, st->name, type_hash, rt->opt.log_capacity, &rt->pp);
	ObjectState *raw = st.get();
	rt->objects.emplace(st->name, std::move(st));
	return {raw, nullptr, false};
}

void attach_constructed(RuntimeImpl *rt, ObjectState *st, void *obj)
{
	HeapHeader *h = heap_header(rt);
	for (uint64_t i = 0; i < h->nobjects; i++)
		if (h->objs[i].id == st->id) {
			h->objs[i].ptr = reinterpret_cast<uint64_t>(obj);
			return;
		}
	h->objs[h->nobjects] = {st->id, reinterpret_cast<uint64_t>(obj), st->type_hash};
	h->nobjects++;
}

// Replays one object's committed entries in commit-id order, on the calling thread.
static void replay_one(const ReplayJob &job)
{
	ObjectState *st = job.state;
	if (st->attached)
		return;
	t_op.replaying = true;
	try {
		std::vector<char> args;
		for (const Log::Committed &e : st->to_replay) {
			uint16_t tag;
			st->log->read(e.lsn, tag, args);
			job.fn(job.obj, tag, args.data(), args.size());
		}
	} catch (...) {
		t_op.replaying = false;
		throw;
	}
	t_op.replaying = false;
}

void attach_replay(RuntimeImpl *rt, const ReplayJob *jobs, size_t n)
{
	auto t0 = clock_type::now();
	// Objects are independent (an update touches only its own object): each replays on its own
	// thread, as many at once as there are cores.
	unsigned width = std::max(1u, std::thread::hardware_concurrency());
	std::exception_ptr error;
	std::mutex error_mu;
	std::atomic<size_t> next{0};
	auto worker = [&] {
		for (size_t i; (i = next.fetch_add(1)) < n;) {
			try {
				replay_one(jobs[i]);
			} catch (...) {
				std::lock_guard<std::mutex> g(error_mu);
				if (!error)
					error = std::current_exception();
			}
		}
	};
	std::vector<std::thread> helpers;
	for (size_t t = 1; t < std::min<size_t>(n, width); t++)
		helpers.emplace_back(worker);
	worker();
	for (auto &h : helpers)
		h.join();
	if (error)
		std::rethrow_exception(error);
	for (size_t i = 0; i < n; i++) {
		ObjectState *st = jobs[i].state;
		if (st->attached)
			continue;
		rt->rec.replayed += st->to_replay.size();
		st->to_replay.clear();
		st->to_replay.shrink_to_fit();
		st->obj = jobs[i].obj;
		st->attached = true;
	}
	rt->rec.replay_ms += ms_since(t0);
}

// ---- open / close ----------------------------------------------------------------------------
RuntimeImpl::~RuntimeImpl()
{
	heap_ahead.reset(); // before the snapshotter: its populating may wait on a write-protect fault
	snap.reset();    // finishes a running snapshot
	loggers.reset(); // joins the loggers
	pool.reset();
	objects.clear();
	if (heap)
		munmap(heap, opt.heap_reserve);
	if (lock_fd >= 0)
		close(lock_fd); // releases the flock
}

static void close_impl(RuntimeImpl *rt)
{
	rt->heap_ahead.reset();
	rt->snap.reset();
	rt->loggers.reset();
	RuntimeImpl *expected = rt;
	g_rt.compare_exchange_strong(expected, nullptr); // frees from now on are no-ops
	delete rt;
}

static std::unique_ptr<RuntimeImpl> open_impl(const std::string &path, const Options &opt)
{
	errno = 0;
	if (opt.log_capacity < 64 * 1024 || opt.log_capacity % kPage != 0)
		throw std::invalid_argument("prosper::asl: log_capacity must be a multiple of 4 KiB, at least 64 KiB");
	if (opt.heap_reserve < 2 * kHeapHeaderBytes || opt.heap_reserve % kPage != 0 || opt.heap_base % kPage != 0)
		throw std::invalid_argument("prosper::asl: heap_base/heap_reserve must be page multiples");
	auto rt = std::make_unique<RuntimeImpl>();
	rt->opt = opt;
	rt->cores = std::max(1u, std::thread::hardware_concurrency());
	// A path naming a pool (an existing file, or a new name ending in ".pool") keeps snapshots
	// in that pool and the logs in the directory beside it; any other path is a directory.
	struct stat sb;
	bool pool_mode = (stat(path.c_str(), &sb) == 0 && S_ISREG(sb.st_mode)) ||
			 (path.size() > 5 && path.compare(path.size() - 5, 5, ".pool") == 0);
	std::string dir = pool_mode ? path + ".logs" : path;
	rt->dir = dir;
	if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
		fail("cannot create " + dir);
	rt->lock_fd = ::open((dir + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (rt->lock_fd < 0)
		fail("cannot open " + dir + "/lock");
	if (flock(rt->lock_fd, LOCK_EX | LOCK_NB) != 0)
		fail(dir + " is open in another process");
	rt->pp.granularity = pick_granularity(opt.granularity);

	// 1. Newest complete snapshot.
	auto hdr = std::make_unique<SnapHeader>();
	int snap_index = -1;
	uint64_t snap_seq;
	if (pool_mode) {
		rt->pool = std::make_unique<PoolStore>(path, opt);
		snap_seq = rt->pool->newest(*hdr);
		if (snap_seq && (hdr->heap_base != opt.heap_base || hdr->heap_bytes > opt.heap_reserve))
			throw std::runtime_error("prosper::asl: the pool's snapshot was taken with another heap_base/heap_reserve");
	} else {
		snap_seq = find_newest_snapshot(dir, opt, *hdr, snap_index);
	}

	// 2. The heap at its fixed address, filled from the snapshot.
	void *p = mmap(reinterpret_cast<void *>(opt.heap_base), opt.heap_reserve, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
	if (p == MAP_FAILED || p != reinterpret_cast<void *>(opt.heap_base)) {
		if (p != MAP_FAILED)
			munmap(p, opt.heap_reserve);
		fail("cannot map the heap at its fixed address");
	}
	rt->heap = static_cast<char *>(p);
	// Transparent huge pages where the system allows them, for the heap's growth: a heap that
	// grows by a 4 KiB value per update otherwise takes a page fault per update, and a
	// snapshot's sync phase write-protects 512 page-table entries per GiB instead of 262144.
	// Not for the part a snapshot is loaded into: reading into huge pages was measured slower
	// than into small ones (docs/asl.md).  Advice only.
	uint64_t loaded = snap_seq ? (hdr->heap_bytes + kHugePage - 1) & ~(kHugePage - 1) : 0;
	if (loaded)
		madvise(p, std::min<uint64_t>(loaded, opt.heap_reserve), MADV_NOHUGEPAGE);
	if (loaded < opt.heap_reserve)
		madvise(rt->heap + loaded, opt.heap_reserve - loaded, MADV_HUGEPAGE);
	auto t0 = clock_type::now();
	if (snap_seq) {
		if (rt->pool)
			rt->pool->load(rt->heap, hdr->heap_bytes);
		else
			load_snapshot(dir, snap_index, rt->heap, hdr->heap_bytes, std::max(2u, std::thread::hardware_concurrency()));
		HeapHeader *h = reinterpret_cast<HeapHeader *>(rt->heap);
		if (h->magic != kHeapMagic || h->base != opt.heap_base)
			throw std::runtime_error("prosper::asl: snapshot holds no heap");
		rt->next_commit = hdr->next_commit;
	} else {
		heap_format(rt->heap);
	}
	rt->rec.snapshot_seq = snap_seq;
	rt->rec.snapshot_bytes = snap_seq ? hdr->heap_bytes : 0;
	rt->rec.load_ms = ms_since(t0);

	// 3. Logs: every object that ever existed has one; scan from its snapshot position.
	auto t1 = clock_type::now();
	DIR *d = opendir(dir.c_str());
	if (!d)
		fail("cannot list " + dir);
	std::vector<std::string> logs;
	while (struct dirent *e = readdir(d))
		if (!strncmp(e->d_name, "log.", 4))
			logs.push_back(dir + "/" + e->d_name);
	closedir(d);
	uint64_t max_commit = 0;
	for (const std::string &log_path : logs) {
		auto st = std::make_unique<ObjectState>();
		st->rt = rt.get();
		st->log = Log::open(log_path, &rt->pp);
		st->id = st->log->id();
		st->name = st->log->name();
		st->type_hash = st->log->type_hash();
		uint64_t from = 0;
		for (uint64_t i = 0; i < (snap_seq ? hdr->nobj : 0); i++)
			if (hdr->objs[i].id == st->id)
				from = hdr->objs[i].pos;
		st->log->scan(from, st->to_replay, max_commit);
		std::sort(st->to_replay.begin(), st->to_replay.end(),
			  [](const Log::Committed &a, const Log::Committed &b) { return a.commit < b.commit; });
		st->reclaimed = from;
		st->reserved = st->log->tail();
		rt->next_object_id = std::max(rt->next_object_id, st->id + 1);
		if (rt->objects.count(st->name))
			throw std::runtime_error("prosper::asl: two logs for object \"" + st->name + "\"");
		rt->objects.emplace(st->name, std::move(st));
	}
	rt->next_commit = std::max<uint64_t>(rt->next_commit.load(), max_commit + 1);
	rt->rec.scan_ms = ms_since(t1);

	// 4. Threads.
	unsigned loggers = opt.loggers ? opt.loggers : std::max(1u, std::thread::hardware_concurrency() / 2);
	rt->loggers = std::make_unique<Loggers>(loggers, &rt->in_flight);
	rt->snap = std::make_unique<Snapshotter>(rt.get(), snap_seq, snap_index);
	if (const char *ahead = test_switch("PROSPER_ASL_HEAP_AHEAD"); !(ahead && *ahead == '0'))
		rt->heap_ahead = std::make_unique<HeapAhead>(rt->heap, opt.heap_reserve);
	return rt;
}

} // namespace prosper::asl::detail

namespace prosper::asl {

std::unique_ptr<Runtime> open(const std::string &dir, const Options &opts)
{
	detail::RuntimeImpl *expected = nullptr;
	// Claim the one-runtime slot with a placeholder first so two opens cannot both map the heap.
	static detail::RuntimeImpl *const kOpening = reinterpret_cast<detail::RuntimeImpl *>(1);
	if (!detail::g_rt.compare_exchange_strong(expected, kOpening))
		throw std::logic_error("prosper::asl: a runtime is already open in this process");
	std::unique_ptr<detail::RuntimeImpl> rt;
	try {
		rt = detail::open_impl(dir, opts);
	} catch (...) {
		detail::g_rt.store(nullptr);
		throw;
	}
	detail::g_rt.store(rt.get());
	return std::make_unique<Runtime>(rt.release());
}

Runtime::~Runtime() { close(); }

void Runtime::close()
{
	if (impl_)
		detail::close_impl(impl_);
	impl_ = nullptr;
}

void Runtime::snapshot() { impl_->snap->take(true); }
void Runtime::snapshot_async() { impl_->snap->take(false); }
bool Runtime::snapshot_running() const { return impl_->snap->busy(); }
SnapshotStats Runtime::last_snapshot() const { return impl_->snap->last(); }
RecoveryStats Runtime::recovery() const { return impl_->rec; }
LoggingStats Runtime::logging() const
{
	LoggingStats s;
	std::lock_guard<std::mutex> g(impl_->objects_mu);
	for (auto &[name, st] : impl_->objects) {
		std::lock_guard<detail::SpinLock> a(st->append_mu);
		s.by_logger += st->by_logger;
		s.by_foreground += st->by_thread;
	}
	return s;
}

void *Runtime::lookup_attached(std::string_view name) const
{
	std::lock_guard<std::mutex> g(impl_->objects_mu);
	auto it = impl_->objects.find(name);
	return it == impl_->objects.end() ? nullptr : it->second->obj;
}

LogStats Runtime::log_stats(std::string_view name) const
{
	std::lock_guard<std::mutex> g(impl_->objects_mu);
	auto it = impl_->objects.find(name);
	if (it == impl_->objects.end())
		throw std::out_of_range("prosper::asl: no object called " + std::string(name));
	detail::ObjectState *st = it->second.get();
	LogStats s;
	s.capacity = st->log->capacity();
	{
		std::lock_guard<detail::SpinLock> a(st->append_mu);
		s.appended = st->appended;
		std::lock_guard<detail::SpinLock> sp(st->space_mu);
		s.used = st->log->tail() - st->reclaimed;
		s.max_used = st->max_used;
	}
	return s;
}

} // namespace prosper::asl
