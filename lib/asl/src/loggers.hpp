// loggers.hpp -- logger threads and the per-thread slots through which foreground threads hand
// them operations.
//
// Invariants
//   - A slot belongs to one foreground thread at a time; its state goes IDLE -> PUBLISHED (by the
//     owner, after filling it) -> LOGGING (by whoever claims the entry with a CAS: its logger, or
//     the owner itself when the logger has not started it by op_commit -- on a machine with
//     fewer free cores than threads the logger may not be running at all) -> DONE (entry
//     persistent) -> IDLE (owner, in op_commit).  Only the claimer writes lsn/error.
//   - Slot i is served by logger i % count, so threads share loggers when cores are few.
//   - A logger spins briefly when idle, then sleeps on a futex that publishers bump.
//   - A logger only helps when it has a core of its own.  When operations in flight (the gate's
//     count) occupy every core, an idle logger sleeps at once instead of spinning, and a
//     publisher does not wake it: the operation's thread writes its own entry at op_commit
//     (as it would anyway, the logger not being scheduled), and neither pays a system call
//     nor loses its core to a spinning logger.
#ifndef PROSPER_ASL_LOGGERS_HPP
#define PROSPER_ASL_LOGGERS_HPP
#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace prosper::asl::detail {

struct ObjectState;

constexpr unsigned kMaxSlots = 256;
enum : uint32_t { SLOT_IDLE = 0, SLOT_PUBLISHED = 1, SLOT_LOGGING = 2, SLOT_DONE = 3, SLOT_FAILED = 4 };

struct alignas(64) Slot {
	std::atomic<uint32_t> state{SLOT_IDLE};
	std::atomic<bool> in_use{false};
	ObjectState *st = nullptr;
	uint16_t tag = 0;
	const std::vector<char> *args = nullptr;
	uint64_t lsn = 0;
	std::string error;
};

// Claims a published slot and writes its entry; false if someone else claimed it first.
bool log_slot(Slot &s, bool by_logger);

class Loggers {
public:
	// busy: operations in flight (RuntimeImpl::in_flight), compared with the number of cores.
	Loggers(unsigned count, const std::atomic<uint32_t> *busy);
	~Loggers(); // stops and joins
	unsigned count() const { return static_cast<unsigned>(workers_.size()); }
	static Slot *acquire_slot(); // for the calling thread, for its lifetime
	void publish(Slot *s);

private:
	struct alignas(64) Worker {
		std::atomic<uint32_t> work{0};
		std::atomic<bool> sleeping{false};
		std::thread thread;
	};
	void run(unsigned index);
	bool cores_taken() const { return busy_->load(std::memory_order_relaxed) >= cores_; }
	std::vector<std::unique_ptr<Worker>> workers_;
	std::atomic<bool> stop_{false};
	const std::atomic<uint32_t> *busy_;
	unsigned cores_;
};

} // namespace prosper::asl::detail
#endif
