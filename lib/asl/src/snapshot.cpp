// snapshot.cpp -- sync + asynchronous snapshot phases, the write-protect fault thread, and
// finding/loading the newest complete snapshot (invariants in snapshot.hpp).
#include "snapshot.hpp"
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <functional>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <stdexcept>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "internal.hpp"
#include "fastcopy.hpp"
#include "pool_store.hpp"
#include "prosper/crc32c.h"

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#ifndef UFFD_FEATURE_WP_UNPOPULATED
#define UFFD_FEATURE_WP_UNPOPULATED (1 << 13)
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace prosper::asl::detail {

namespace {
using clock_type = std::chrono::steady_clock;
double ms_since(clock_type::time_point t0)
{
	return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

uint32_t snap_crc(SnapHeader h)
{
	h.crc = 0;
	return prosper_crc32c(0, &h, sizeof h);
}

constexpr int kPreparePriority = 10; // nice value of the helper that allocates a snapshot file

std::string snap_path(const std::string &dir, int index) { return dir + "/snap." + std::to_string(index); }

[[noreturn]] void fail(const std::string &what)
{
	throw std::runtime_error("prosper::asl: " + what + ": " + std::strerror(errno));
}
} // namespace

struct Snapshotter::Copy {
	char *heap = nullptr;
	uint64_t heap_bytes = 0;
	char *data = nullptr; // the file's data area
	size_t nchunks = 0;
	std::unique_ptr<std::atomic<uint32_t>[]> state; // 0 to copy, 1 copying, 2 copied
	std::atomic<size_t> cursor{0};
	std::atomic<uint64_t> fault_chunks{0};
	uint64_t crash_chunk = UINT64_MAX; // test hook: die while copying this chunk
};

uint64_t find_newest_snapshot(const std::string &dir, const Options &opt, SnapHeader &hdr, int &file_index)
{
	uint64_t best = 0;
	file_index = -1;
	for (int idx = 0; idx < 2; idx++) {
		int fd = ::open(snap_path(dir, idx).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		auto h = std::make_unique<SnapHeader>();
		uint64_t mark = 0;
		struct stat sb;
		bool ok = pread(fd, h.get(), sizeof *h, 0) == static_cast<ssize_t>(sizeof *h) &&
			  pread(fd, &mark, sizeof mark, kMarkOffset) == static_cast<ssize_t>(sizeof mark) && fstat(fd, &sb) == 0;
		close(fd);
		ok = ok && h->magic == kSnapMagic && h->version == 1 && h->crc == snap_crc(*h) && mark == (h->seq ^ kMarkKey) &&
		     h->seq != 0 && h->heap_base == opt.heap_base && h->heap_bytes <= opt.heap_reserve && h->nobj <= 1024 &&
		     static_cast<uint64_t>(sb.st_size) >= kDataOffset + h->heap_bytes;
		if (ok && h->seq > best) {
			best = h->seq;
			hdr = *h;
			file_index = idx;
		}
	}
	return best;
}

void load_snapshot(const std::string &dir, int index, char *heap, uint64_t heap_bytes, unsigned threads)
{
	int fd = ::open(snap_path(dir, index).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		fail("cannot open snapshot");
	// Several readers, each over its own slice: most of the time goes into faulting in the heap's
	// fresh pages, which the kernel does in parallel.  The caller keeps huge pages away from
	// this range: reads into huge pages still to be faulted in, or into pages populated in bulk
	// first, were measured slower (docs/asl.md, "Where the time goes").
	threads = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(heap_bytes / (8 << 20)) + 1));
	uint64_t slice = ((heap_bytes / threads) + kPage - 1) & ~uint64_t(kPage - 1);
	std::atomic<int> error{0};
	auto read_slice = [&](uint64_t from, uint64_t to) {
		for (uint64_t done = from; done < to && !error.load();) {
			ssize_t n = pread(fd, heap + done, std::min<uint64_t>(to - done, 64 << 20), static_cast<off_t>(kDataOffset + done));
			if (n <= 0) {
				if (n < 0 && errno == EINTR)
					continue;
				error.store(n < 0 ? errno : EIO);
				return;
			}
			done += static_cast<uint64_t>(n);
		}
	};
	std::vector<std::thread> readers;
	for (unsigned t = 1; t < threads; t++)
		readers.emplace_back(read_slice, std::min(heap_bytes, t * slice), std::min(heap_bytes, (t + 1) * slice));
	read_slice(0, std::min(heap_bytes, slice));
	for (auto &r : readers)
		r.join();
	close(fd);
	if (error.load()) {
		errno = error.load();
		fail("cannot read snapshot");
	}
}

Snapshotter::Snapshotter(RuntimeImpl *rt, uint64_t newest_seq, int newest_index)
    : rt_(rt), next_seq_(newest_seq + 1), newest_index_(newest_index)
{
	const char *force_sync = test_switch("PROSPER_ASL_SYNC_SNAPSHOT");
	if (!(force_sync && *force_sync == '1')) {
		uffd_ = static_cast<int>(syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY));
		if (uffd_ >= 0) {
			struct uffdio_api api = {};
			api.api = UFFD_API;
			api.features = UFFD_FEATURE_PAGEFAULT_FLAG_WP | UFFD_FEATURE_WP_UNPOPULATED;
			struct uffdio_register reg = {};
			reg.range.start = reinterpret_cast<uint64_t>(rt->heap);
			reg.range.len = rt->opt.heap_reserve;
			reg.mode = UFFDIO_REGISTER_MODE_WP;
			if (ioctl(uffd_, UFFDIO_API, &api) != 0 || ioctl(uffd_, UFFDIO_REGISTER, &reg) != 0) {
				// no write-protect faults (WP_UNPOPULATED needs kernel 6.4): copy in the sync phase
				close(uffd_);
				uffd_ = -1;
			}
		}
		stop_fd_ = eventfd(0, EFD_CLOEXEC);
		if (uffd_ >= 0 && stop_fd_ >= 0)
			fault_thread_ = std::thread([this] { fault_loop(); });
		else if (uffd_ >= 0) {
			close(uffd_);
			uffd_ = -1;
		}
	}
	thread_ = std::thread([this] { run(); });
}

Snapshotter::~Snapshotter()
{
	{
		std::lock_guard<std::mutex> g(mu_);
		stop_ = true;
	}
	cv_.notify_all();
	thread_.join();
	if (fault_thread_.joinable()) {
		uint64_t one = 1;
		if (write(stop_fd_, &one, sizeof one) != sizeof one) {
		}
		fault_thread_.join();
	}
	if (uffd_ >= 0)
		close(uffd_);
	if (stop_fd_ >= 0)
		close(stop_fd_);
}

void Snapshotter::take(bool wait_complete)
{
	std::unique_lock<std::mutex> lk(mu_);
	uint64_t ticket = complete_ + (running_ ? 2 : 1); // the first round that starts after now
	pending_ = true;
	cv_.notify_all();
	cv_.wait(lk, [&] { return stop_ || (wait_complete ? complete_ : sync_done_) >= ticket; });
	if (error_seq_ == ticket)
		throw std::runtime_error(error_);
	if (stop_ && (wait_complete ? complete_ : sync_done_) < ticket)
		throw std::runtime_error("prosper::asl: runtime closed before the snapshot was taken");
}

void Snapshotter::request_if_idle()
{
	std::lock_guard<std::mutex> g(mu_);
	if (!pending_ && !running_) {
		pending_ = true;
		cv_.notify_all();
	}
}

bool Snapshotter::busy() const
{
	std::lock_guard<std::mutex> g(mu_);
	return pending_ || running_;
}

SnapshotStats Snapshotter::last() const
{
	std::lock_guard<std::mutex> g(mu_);
	return stats_;
}

void Snapshotter::run()
{
	std::unique_lock<std::mutex> lk(mu_);
	for (;;) {
		cv_.wait(lk, [&] { return stop_ || pending_; });
		if (stop_)
			break;
		pending_ = false;
		running_ = true;
		uint64_t round = complete_ + 1;
		lk.unlock();
		std::string err;
		try {
			snapshot_once();
		} catch (const std::exception &e) {
			err = e.what();
		}
		lk.lock();
		running_ = false;
		if (!err.empty()) {
			error_ = err;
			error_seq_ = round;
		}
		sync_done_ = std::max(sync_done_, round);
		complete_ = round;
		cv_.notify_all();
	}
}

void Snapshotter::write_protect(uint64_t addr, uint64_t len)
{
	struct uffdio_writeprotect wp = {};
	wp.range.start = addr;
	wp.range.len = len;
	wp.mode = UFFDIO_WRITEPROTECT_MODE_WP;
	while (ioctl(uffd_, UFFDIO_WRITEPROTECT, &wp) != 0)
		if (errno != EAGAIN && errno != EINTR)
			fail("cannot write-protect the heap");
}

void Snapshotter::unprotect(uint64_t addr, uint64_t len, bool wake)
{
	struct uffdio_writeprotect wp = {};
	wp.range.start = addr;
	wp.range.len = len;
	wp.mode = wake ? 0 : UFFDIO_WRITEPROTECT_MODE_DONTWAKE;
	while (ioctl(uffd_, UFFDIO_WRITEPROTECT, &wp) != 0)
		if (errno != EAGAIN && errno != EINTR)
			fail("cannot unprotect the heap");
}

void Snapshotter::crash_point()
{
	if (crash_countdown_.load(std::memory_order_relaxed) > 0 && crash_countdown_.fetch_sub(1) == 1)
		raise(SIGKILL);
}

void Snapshotter::copy_chunk(Copy &c, size_t i)
{
	uint32_t expected = 0;
	if (!c.state[i].compare_exchange_strong(expected, 1))
		return;
	if (i == c.crash_chunk)
		raise(SIGKILL); // test hook: a crash in the middle of the asynchronous phase
	uint64_t off = i * kChunkBytes, len = std::min<uint64_t>(kChunkBytes, c.heap_bytes - off);
	crash_point();
	if (rt_->pool) {
		rt_->pool->write(off, c.heap + off, len); // the pool copies (and persists at its commit)
		if (uffd_ >= 0)
			unprotect(reinterpret_cast<uint64_t>(c.heap + off), len, true);
	} else if (can_stream(&rt_->pp, PSITE_ASL_SNAP_DATA)) {
		// One pass at memory speed: non-temporal stores need no flush per line.  The fence is
		// this thread's own (a fence orders only its thread's stores); the snapshot's drain
		// after all copies then finds nothing of this chunk outstanding.
		stream_lines(c.data + off, c.heap + off, len / 64); // len: whole pages
		prosper_persist_drain(&rt_->pp, PSITE_ASL_SNAP_DATA);
		if (uffd_ >= 0)
			unprotect(reinterpret_cast<uint64_t>(c.heap + off), len, true);
	} else {
		std::memcpy(c.data + off, c.heap + off, len);
		if (uffd_ >= 0)
			unprotect(reinterpret_cast<uint64_t>(c.heap + off), len, true);
		prosper_persist_flush(&rt_->pp, PSITE_ASL_SNAP_DATA, c.data + off, len);
	}
	c.state[i].store(2, std::memory_order_release);
	c.state[i].notify_all();
}

void Snapshotter::handle_fault(uint64_t addr)
{
	Copy *c = active_.load(std::memory_order_acquire);
	uint64_t page = addr & ~uint64_t(kPage - 1), base = reinterpret_cast<uint64_t>(rt_->heap);
	if (c && page >= base && page < base + c->heap_bytes) {
		size_t i = (page - base) / kChunkBytes;
		if (c->state[i].load() == 0) {
			copy_chunk(*c, i);
			c->fault_chunks.fetch_add(1, std::memory_order_relaxed);
		}
		uint32_t s;
		while ((s = c->state[i].load(std::memory_order_acquire)) != 2)
			c->state[i].wait(s);
		struct uffdio_range r = {page, kPage};
		ioctl(uffd_, UFFDIO_WAKE, &r); // the copier's unprotect may have woken it already
	} else {
		unprotect(page, kPage, true); // not part of a snapshot: nothing to save first
	}
}

void Snapshotter::fault_loop()
{
	struct pollfd fds[2] = {{uffd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
	for (;;) {
		if (poll(fds, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		if (fds[1].revents)
			return;
		struct uffd_msg msg;
		ssize_t n = read(uffd_, &msg, sizeof msg);
		if (n != sizeof msg)
			continue; // EAGAIN: another wake-up consumed it
		if (msg.event != UFFD_EVENT_PAGEFAULT)
			continue;
		std::lock_guard<std::mutex> g(fault_mu_);
		try {
			handle_fault(msg.arg.pagefault.address);
		} catch (...) {
			// an ioctl failed: the faulting thread would hang; nothing sensible is left to do
			std::abort();
		}
	}
}

// Sync phase: no operation in flight, allocator quiet; record positions, size the target
// (size_target(heap_bytes) may remap it, or decline: then the phase ends at once, having changed
// nothing, and returns -1), write-protect.  Returns its duration in ms.
double Snapshotter::sync_phase(Copy &c, SnapHeader &hdr, std::vector<std::pair<ObjectState *, uint64_t>> &positions,
			       uint64_t seq, const std::function<bool(uint64_t)> &size_target)
{
	RuntimeImpl *rt = rt_;
	auto t0 = clock_type::now();
	rt->block();
	try {
		std::unique_lock<SpinLock> heap_lock(rt->heap_mu);
		c.heap = rt->heap;
		c.heap_bytes = heap_used_bytes(rt->heap);
		if (!size_target(c.heap_bytes)) {
			heap_lock.unlock();
			rt->unblock();
			return -1;
		}
		c.nchunks = (c.heap_bytes + kChunkBytes - 1) / kChunkBytes;
		c.state.reset(new std::atomic<uint32_t>[c.nchunks]);
		for (size_t i = 0; i < c.nchunks; i++)
			c.state[i].store(0, std::memory_order_relaxed);
		if (const char *crash = test_switch("PROSPER_ASL_CRASH_IN_SNAPSHOT");
		    crash && std::strtoull(crash, nullptr, 10) == seq && !std::strchr(crash, ':'))
			c.crash_chunk = c.nchunks / 2;
		{
			std::lock_guard<std::mutex> g(rt->objects_mu);
			for (auto &[name, st] : rt->objects) {
				uint64_t pos;
				if (st->attached) {
					std::lock_guard<SpinLock> a(st->append_mu);
					pos = st->log->tail();
				} else {
					std::lock_guard<SpinLock> sp(st->space_mu);
					pos = st->reclaimed; // not replayed yet: its entries must stay
				}
				hdr.objs[hdr.nobj].id = st->id;
				hdr.objs[hdr.nobj].pos = pos;
				hdr.nobj++;
				positions.emplace_back(st.get(), pos);
			}
		}
		hdr.magic = kSnapMagic;
		hdr.version = 1;
		hdr.seq = seq;
		hdr.heap_base = reinterpret_cast<uint64_t>(rt->heap);
		hdr.heap_bytes = c.heap_bytes;
		hdr.next_commit = rt->next_commit.load();
		if (uffd_ >= 0) {
			write_protect(reinterpret_cast<uint64_t>(rt->heap), c.heap_bytes);
			active_.store(&c, std::memory_order_release);
		} else {
			for (size_t i = 0; i < c.nchunks; i++)
				copy_chunk(c, i);
		}
	} catch (...) {
		rt->unblock();
		throw;
	}
	rt->unblock();
	{
		std::lock_guard<std::mutex> g(mu_);
		sync_done_ = std::max(sync_done_, complete_ + 1);
	}
	cv_.notify_all();
	return ms_since(t0);
}

// Async phase: copy threads race the fault thread for chunks; returns when all are copied.
void Snapshotter::async_copy(Copy &c)
{
	if (uffd_ < 0)
		return; // copied in the sync phase
	unsigned nthreads = std::max(1u, rt_->opt.snapshot_threads);
	std::vector<std::thread> copiers;
	std::exception_ptr error;
	std::mutex error_mu;
	for (unsigned t = 0; t < nthreads; t++)
		copiers.emplace_back([&] {
			try {
				for (size_t i; (i = c.cursor.fetch_add(1)) < c.nchunks;)
					copy_chunk(c, i);
			} catch (...) {
				std::lock_guard<std::mutex> g(error_mu);
				error = std::current_exception();
			}
		});
	for (auto &t : copiers)
		t.join();
	for (size_t i = 0; i < c.nchunks; i++) { // chunks a fault handler claimed
		uint32_t st;
		while ((st = c.state[i].load(std::memory_order_acquire)) != 2)
			c.state[i].wait(st);
	}
	active_.store(nullptr, std::memory_order_release);
	{ std::lock_guard<std::mutex> g(fault_mu_); } // no fault handler still looks at c
	if (error)
		std::rethrow_exception(error);
}

// The snapshot is complete: log space before the recorded positions is free again.
void Snapshotter::finished(const Copy &c, const std::vector<std::pair<ObjectState *, uint64_t>> &positions, uint64_t seq,
			   double sync_ms, double async_ms)
{
	next_seq_ = seq + 1;
	for (auto &[st, pos] : positions) {
		{
			std::lock_guard<SpinLock> sp(st->space_mu);
			st->reclaimed = std::max(st->reclaimed, pos);
		}
		st->space_cv.notify_all();
	}
	std::lock_guard<std::mutex> g(mu_);
	stats_.seq = seq;
	stats_.sync_ms = sync_ms;
	stats_.async_ms = async_ms;
	stats_.bytes = c.heap_bytes;
	stats_.fault_chunks = c.fault_chunks.load();
}

void Snapshotter::arm_crash_steps(uint64_t seq)
{
	// test hook: PROSPER_ASL_CRASH_IN_SNAPSHOT=<seq> dies in the middle of the copy of snapshot
	// seq; <seq>:<n> dies just before its n-th persist step (1 = the first)
	crash_countdown_.store(-1);
	if (const char *crash = test_switch("PROSPER_ASL_CRASH_IN_SNAPSHOT"); crash && std::strtoull(crash, nullptr, 10) == seq)
		if (const char *colon = std::strchr(crash, ':'))
			crash_countdown_.store(std::strtol(colon + 1, nullptr, 10));
}

void Snapshotter::snapshot_once()
{
	if (rt_->pool)
		snapshot_to_pool();
	else
		snapshot_to_files();
}

// Into the pool: chunks are pool writes; one pool commit (header as the epoch's blob) makes the
// snapshot complete -- the pool's protocol keeps the previous one until then.
void Snapshotter::snapshot_to_pool()
{
	RuntimeImpl *rt = rt_;
	uint64_t seq = next_seq_;
	arm_crash_steps(seq);
	auto hdr = std::make_unique<SnapHeader>();
	std::memset(hdr.get(), 0, sizeof *hdr);
	std::vector<std::pair<ObjectState *, uint64_t>> positions;
	Copy c;
	double sync_ms = sync_phase(c, *hdr, positions, seq, [&](uint64_t bytes) {
		rt->pool->begin(bytes, reinterpret_cast<uint64_t>(rt->heap));
		return true;
	});
	auto t1 = clock_type::now();
	async_copy(c);
	hdr->crc = snap_crc(*hdr);
	crash_point();
	rt->pool->commit(*hdr);
	crash_point(); // after the last step: the snapshot is complete
	finished(c, positions, seq, sync_ms, ms_since(t1));
}

void Snapshotter::snapshot_to_files()
{
	RuntimeImpl *rt = rt_;
	int idx = newest_index_ < 0 ? 0 : 1 - newest_index_;
	uint64_t seq = next_seq_;
	std::string path = snap_path(rt->dir, idx);
	int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		fail("cannot open " + path);
	struct FdCloser {
		int fd;
		~FdCloser() { close(fd); }
	} closer{fd};

	// 1. This file is about to stop holding a snapshot: say so durably first.
	if (int rc = posix_fallocate(fd, 0, kDataOffset); rc != 0) {
		errno = rc;
		fail("cannot allocate " + path);
	}
	char *head = static_cast<char *>(mmap(nullptr, kDataOffset, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
	if (head == MAP_FAILED)
		fail("cannot map " + path);
	struct Unmap {
		void *p;
		size_t n;
		~Unmap()
		{
			if (p)
				munmap(p, n);
		}
	} head_map{head, kDataOffset}, data_map{nullptr, 0};
	uint64_t *mark = reinterpret_cast<uint64_t *>(head + kMarkOffset);
	arm_crash_steps(seq);
	crash_point();
	prosper_persist_store64(&rt->pp, PSITE_ASL_SNAP_MARK, mark, 0);
	crash_point();
	prosper_persist_range(&rt->pp, PSITE_ASL_SNAP_MARK, mark, sizeof *mark);

	// populate: build the page tables now, so that the copy takes no fault per page.  Only
	// outside the sync phase; inside it (the heap outgrew the mapping) updates are blocked and
	// a plain mapping is quicker.
	auto map_data = [&](uint64_t bytes, bool populate) {
		if (data_map.n >= bytes)
			return;
		if (data_map.p)
			munmap(data_map.p, data_map.n);
		data_map.p = nullptr;
		uint64_t want = std::max<uint64_t>(bytes + (bytes >> 3), kChunkBytes); // room to grow
		if (int rc = posix_fallocate(fd, 0, static_cast<off_t>(kDataOffset + want)); rc != 0) {
			errno = rc;
			fail("cannot allocate " + path);
		}
		void *p = mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_SHARED | (populate ? MAP_POPULATE : 0), fd, kDataOffset);
		if (p == MAP_FAILED)
			fail("cannot map " + path);
		data_map.p = p;
		data_map.n = want;
	};
	// The mapping is made outside the sync phase, sized for the heap plus what it grew by while
	// the previous try was being made.  The file's first allocation is the costliest part of a
	// snapshot (fresh memory zeroed by the kernel: ~0.3 s for 400 MiB here) and nothing waits
	// for it, so it runs in a helper at a lower priority: on a machine whose cores are all busy
	// it takes idle time instead of the operations' (docs/asl.md, "Where the time goes").  If
	// the heap still outgrew it by the sync phase, the sync phase gives up and the mapping is
	// made again -- on the last try inside the sync phase, without populating.  The sync phase
	// and the copy keep the normal priority: operations wait for them.
	auto prepare = [&](uint64_t bytes) {
		std::exception_ptr err;
		std::thread helper([&] {
			setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), kPreparePriority);
			try {
				map_data(bytes, true);
			} catch (...) {
				err = std::current_exception();
			}
		});
		helper.join();
		if (err)
			std::rethrow_exception(err);
	};

	auto hdr = std::make_unique<SnapHeader>();
	std::memset(hdr.get(), 0, sizeof *hdr);
	std::vector<std::pair<ObjectState *, uint64_t>> positions;
	Copy c;

	// 2. Sync phase, 3. async phase.
	double sync_ms = -1;
	uint64_t growth = 0;
	for (int attempt = 0; sync_ms < 0; attempt++) {
		uint64_t before = heap_used_bytes(rt->heap);
		prepare(before + growth);
		growth = std::max(growth, heap_used_bytes(rt->heap) - before);
		bool last = attempt == 2;
		sync_ms = sync_phase(c, *hdr, positions, seq, [&](uint64_t bytes) {
			if (bytes > data_map.n && !last)
				return false;
			map_data(bytes, false);
			c.data = static_cast<char *>(data_map.p);
			return true;
		});
	}
	auto t1 = clock_type::now();
	async_copy(c);
	crash_point();
	prosper_persist_drain(&rt->pp, PSITE_ASL_SNAP_DATA);
	if (rt->pp.error) {
		errno = -rt->pp.error;
		fail("snapshot data could not be persisted");
	}

	// 4. Header, then the mark: from here on this is the newest complete snapshot.
	hdr->crc = snap_crc(*hdr);
	std::memcpy(head, hdr.get(), sizeof *hdr);
	crash_point();
	prosper_persist_range(&rt->pp, PSITE_ASL_SNAP_MARK, head, sizeof *hdr);
	crash_point();
	prosper_persist_store64(&rt->pp, PSITE_ASL_SNAP_MARK, mark, seq ^ kMarkKey);
	crash_point();
	prosper_persist_range(&rt->pp, PSITE_ASL_SNAP_MARK, mark, sizeof *mark);
	crash_point(); // after the last step: the snapshot is complete
	if (rt->pp.error) {
		errno = -rt->pp.error;
		fail("snapshot header could not be persisted");
	}
	newest_index_ = idx;

	// 5. Log space before the recorded positions is free again.
	finished(c, positions, seq, sync_ms, ms_since(t1));
}
} // namespace prosper::asl::detail
