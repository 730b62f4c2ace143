// loggers.cpp -- logger threads (see loggers.hpp).
#include "loggers.hpp"
#include <algorithm>
#include <memory>
#include <stdexcept>
#include "internal.hpp"

namespace prosper::asl::detail {

namespace {
Slot g_slots[kMaxSlots];
std::atomic<unsigned> g_slots_high{0}; // slots ever handed out: loggers scan [0, high)

// Gives the thread's slot back when the thread ends.
struct SlotHolder {
	Slot *slot = nullptr;
	~SlotHolder()
	{
		if (slot)
			slot->in_use.store(false, std::memory_order_release);
	}
};
thread_local SlotHolder t_slot;

inline void cpu_relax() { __builtin_ia32_pause(); }
// An idle logger polls the slots (no system call for either side) for about kPauseTicks with
// pause, then yields until kIdleTicks, then sleeps.  Long enough to cover the gap between one
// operation's entry and the next one's (up to a few hundred microseconds), short enough that a
// thread that writes its entries sealed (runtime.cpp, choose_handoff) does not keep a logger
// spinning.
constexpr uint64_t kPauseTicks = 100'000, kIdleTicks = 800'000; // ~40 us, ~300 us at 2-3 GHz
} // namespace

bool log_slot(Slot &s, bool by_logger)
{
	uint32_t expected = SLOT_PUBLISHED;
	if (!s.state.compare_exchange_strong(expected, SLOT_LOGGING, std::memory_order_acq_rel))
		return false;
	uint32_t result = SLOT_DONE;
	try {
		s.lsn = append_entry(s.st, s.tag, *s.args, by_logger);
	} catch (const std::exception &e) {
		s.error = e.what();
		result = SLOT_FAILED;
	}
	s.state.store(result, std::memory_order_release);
	return true;
}

Slot *Loggers::acquire_slot()
{
	if (t_slot.slot)
		return t_slot.slot;
	for (unsigned i = 0; i < kMaxSlots; i++) {
		bool expected = false;
		if (g_slots[i].in_use.compare_exchange_strong(expected, true)) {
			g_slots[i].state.store(SLOT_IDLE, std::memory_order_relaxed);
			unsigned high = g_slots_high.load();
			while (high < i + 1 && !g_slots_high.compare_exchange_weak(high, i + 1)) {
			}
			t_slot.slot = &g_slots[i];
			return t_slot.slot;
		}
	}
	throw std::runtime_error("prosper::asl: more than 256 threads log operations");
}

Loggers::Loggers(unsigned count, const std::atomic<uint32_t> *busy)
    : busy_(busy), cores_(std::max(1u, std::thread::hardware_concurrency()))
{
	for (unsigned i = 0; i < count; i++)
		workers_.push_back(std::make_unique<Worker>());
	for (unsigned i = 0; i < count; i++)
		workers_[i]->thread = std::thread([this, i] { run(i); });
}

Loggers::~Loggers()
{
	stop_.store(true);
	for (auto &w : workers_) {
		w->work.fetch_add(1);
		w->work.notify_all();
	}
	for (auto &w : workers_)
		w->thread.join();
}

void Loggers::publish(Slot *s)
{
	s->state.store(SLOT_PUBLISHED, std::memory_order_seq_cst);
	Worker &w = *workers_[(s - g_slots) % workers_.size()];
	w.work.fetch_add(1, std::memory_order_seq_cst);
	if (w.sleeping.load(std::memory_order_seq_cst) && !cores_taken())
		w.work.notify_one();
}

void Loggers::run(unsigned index)
{
	Worker &w = *workers_[index];
	unsigned n = count();
	uint64_t idle_since = 0; // 0: busy
	auto serve = [&]() {
		bool any = false;
		unsigned high = g_slots_high.load(std::memory_order_acquire);
		for (unsigned i = index; i < high; i += n) {
			Slot &s = g_slots[i];
			if (s.state.load(std::memory_order_seq_cst) == SLOT_PUBLISHED && log_slot(s, true))
				any = true;
		}
		return any;
	};
	while (!stop_.load(std::memory_order_relaxed)) {
		if (serve()) {
			idle_since = 0;
			continue;
		}
		uint64_t now = __builtin_ia32_rdtsc();
		if (!idle_since)
			idle_since = now;
		if (now - idle_since < kIdleTicks && !cores_taken()) {
			// pause first (fastest pick-up); then yield, so that on a core shared with the
			// foreground thread an idle logger gives the core back instead of burning it
			if (now - idle_since < kPauseTicks)
				cpu_relax();
			else
				std::this_thread::yield();
			continue;
		}
		uint32_t seen = w.work.load(std::memory_order_seq_cst);
		w.sleeping.store(true, std::memory_order_seq_cst);
		if (!serve() && !stop_.load())
			w.work.wait(seen, std::memory_order_seq_cst);
		w.sleeping.store(false, std::memory_order_relaxed);
		idle_since = 0;
	}
	serve(); // nothing published may be left unanswered
}

} // namespace prosper::asl::detail
