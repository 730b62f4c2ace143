// test_asl_crash.cpp -- the acceptance test: a child applies random inserts/erases to
// get_object<pmap<long, std::string>>("m") and reports each operation once op_commit returned;
// the parent SIGKILLs it at a random instant, reopens the runtime and compares the map with a
// reference model: it must equal the model after exactly the reported operations, or after one
// more (the one in flight may have committed).  The next child continues from there.  Small
// logs make auto snapshots and log wrap-around happen while children are killed.
//
// Also: a crash in the middle of a snapshot's asynchronous copy falls back to the previous
// snapshot and loses no committed operation.  All of it on the page path and on the cache-line
// path, with entries handed to loggers and with sealed entries (main()).
#include <csignal>
#include <cstring>
#include <map>
#include <string>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "check.hpp"
#include "prosper/asl.hpp"

namespace asl = prosper::asl;
using Model = std::map<long, std::string>;

// Small logs (the default) wrap every few thousand operations and request snapshots when half
// full; big logs without automatic snapshots make snapshot numbers predictable.
static asl::Options crash_options(bool big_log = false)
{
	asl::Options o;
	o.heap_reserve = size_t(256) << 20;
	o.log_capacity = big_log ? size_t(16) << 20 : size_t(256) << 10;
	o.auto_snapshot_fill = big_log ? 0 : 0.5;
	return o;
}

// Operation i of run `seed`: deterministic, so parent and child agree without talking.
struct Op {
	int kind; // 0 insert_or_assign, 1 insert, 2 erase
	long key;
	std::string value;
};
static Op op_of(uint64_t seed, uint64_t i, size_t max_len)
{
	Rng r(seed * 1000003 + i);
	Op op;
	uint64_t x = r.below(10);
	op.kind = x < 6 ? 0 : x < 8 ? 1 : 2;
	op.key = static_cast<long>(r.below(512));
	if (op.kind != 2) {
		op.value = std::to_string(i) + ":";
		op.value.append(r.below(max_len), static_cast<char>('a' + i % 26));
	}
	return op;
}
static void apply_op(Model &m, const Op &op)
{
	if (op.kind == 0)
		m[op.key] = op.value;
	else if (op.kind == 1)
		m.emplace(op.key, op.value);
	else
		m.erase(op.key);
}
static void apply_op(asl::pmap<long, std::string> &m, const Op &op)
{
	if (op.kind == 0)
		m.insert_or_assign(op.key, op.value);
	else if (op.kind == 1)
		m.insert(op.key, op.value);
	else
		m.erase(op.key);
}

static bool same(const asl::pmap<long, std::string> &m, const Model &model)
{
	if (m.size() != model.size())
		return false;
	auto it = m.begin();
	for (auto &[k, v] : model) {
		if (it->first != k || std::string_view(it->second) != v)
			return false;
		++it;
	}
	return true;
}

// Child (big logs when max_len >= 1000): operations start.. forever (or until `stop`), each reported on fd `report` after it
// committed; a snapshot every `snap_every` operations.
static int child(const char *dir, uint64_t seed, uint64_t start, uint64_t stop, uint64_t snap_every, size_t max_len,
		 int report)
{
	auto rt = asl::open(dir, crash_options(max_len >= 1000));
	auto &m = rt->get_object<asl::pmap<long, std::string>>("m");
	for (uint64_t i = start; i < stop; i++) {
		apply_op(m, op_of(seed, i, max_len));
		uint64_t done = i + 1;
		if (write(report, &done, sizeof done) != sizeof done)
			return 3;
		if (snap_every && done % snap_every == 0)
			rt->snapshot();
	}
	return 0;
}

static pid_t spawn(const std::string &dir, uint64_t seed, uint64_t start, uint64_t stop, uint64_t snap_every,
		   size_t max_len, int &read_fd, const char *crash_env = nullptr)
{
	int p[2];
	if (pipe(p) != 0)
		std::exit(2);
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		if (crash_env)
			setenv("PROSPER_ASL_CRASH_IN_SNAPSHOT", crash_env, 1);
		std::string a[] = {std::to_string(seed), std::to_string(start), std::to_string(stop), std::to_string(snap_every),
				   std::to_string(max_len), std::to_string(p[1])};
		execl("/proc/self/exe", "test_asl_crash", "child", dir.c_str(), a[0].c_str(), a[1].c_str(), a[2].c_str(),
		      a[3].c_str(), a[4].c_str(), a[5].c_str(), (char *)nullptr);
		_exit(127);
	}
	close(p[1]);
	read_fd = p[0];
	return pid;
}

// Reads every report; returns the last count (or `start` if none).
static uint64_t drain_reports(int fd, uint64_t start)
{
	uint64_t last = start, v;
	ssize_t n;
	while ((n = read(fd, &v, sizeof v)) == sizeof v)
		last = v;
	close(fd);
	return last;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
	nanosleep(&ts, nullptr);
}

static void test_random_kills(int rounds, bool pool)
{
	std::string dir = scratch_dir("crash");
	std::string where = pool ? dir + "/rt.pool" : dir; // a pool keeps the snapshots
	uint64_t seed = static_cast<uint64_t>(time(nullptr));
	std::printf("random kills%s: seed %llu, %d rounds\n", pool ? " (pool)" : "", (unsigned long long)seed, rounds);
	Rng rng(seed);
	Model model;
	uint64_t applied = 0, ambiguous_in = 0, max_used = 0;
	for (int round = 0; round < rounds; round++) {
		int fd;
		pid_t pid = spawn(where, seed, applied, UINT64_MAX, 500 + rng.below(3000), 300, fd);
		sleep_ms(5 + static_cast<long>(rng.below(60)));
		kill(pid, SIGKILL);
		int status;
		waitpid(pid, &status, 0);
		CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
		uint64_t reported = drain_reports(fd, applied);
		for (; applied < reported; applied++)
			apply_op(model, op_of(seed, applied, 300));
		auto rt = asl::open(where, crash_options());
		auto &m = rt->get_object<asl::pmap<long, std::string>>("m");
		if (same(m, model)) {
			// the in-flight operation did not commit
		} else {
			Model next = model;
			apply_op(next, op_of(seed, applied, 300));
			bool ok = same(m, next);
			CHECK(ok);
			if (!ok) {
				std::printf("round %d: state matches neither %llu nor %llu operations\n", round,
					    (unsigned long long)applied, (unsigned long long)applied + 1);
				break;
			}
			model = std::move(next);
			applied++;
			ambiguous_in++;
		}
		max_used = std::max(max_used, rt->log_stats("m").max_used);
	}
	std::printf("random kills: %llu operations survived, %llu in-flight ones had committed\n",
		    (unsigned long long)applied, (unsigned long long)ambiguous_in);
	CHECK(applied > 0);
	remove_dir(dir);
}

static void test_crash_in_snapshot(bool pool)
{
	std::string top = scratch_dir("snapcrash");
	std::string dir = pool ? top + "/rt.pool" : top;
	uint64_t seed = 42;
	// Child 1: 400 ops, snapshot 1 completes at 400 (snap_every), stops at 700: a clean exit.
	int fd;
	pid_t pid = spawn(dir, seed, 0, 700, 400, 3000, fd);
	int status;
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(drain_reports(fd, 0) == 700);
	// Child 2: continues; its first snapshot (seq 2, at op 800) kills the process mid-copy.
	pid = spawn(dir, seed, 700, 2000, 100, 3000, fd, "2");
	waitpid(pid, &status, 0);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	uint64_t reported = drain_reports(fd, 700);
	CHECK(reported == 800);
	Model model;
	for (uint64_t i = 0; i < reported; i++)
		apply_op(model, op_of(seed, i, 3000));
	{
		auto rt = asl::open(dir, crash_options(true));
		auto &m = rt->get_object<asl::pmap<long, std::string>>("m");
		CHECK(rt->recovery().snapshot_seq == 1);
		CHECK(rt->recovery().replayed == 400);
		CHECK(same(m, model));
		std::printf("crash in snapshot%s: recovered from snapshot %llu (%llu bytes), replayed %llu\n",
			    pool ? " (pool)" : "", (unsigned long long)rt->recovery().snapshot_seq,
			    (unsigned long long)rt->recovery().snapshot_bytes,
			    (unsigned long long)rt->recovery().replayed);
		// the interrupted file is overwritten by the next snapshot, and that one is used next time
		rt->snapshot();
		m.insert_or_assign(-1, "after");
		model[-1] = "after";
	}
	{
		auto rt = asl::open(dir, crash_options(true));
		auto &m = rt->get_object<asl::pmap<long, std::string>>("m");
		CHECK(same(m, model));
		CHECK(rt->recovery().snapshot_seq == 2);
		CHECK(rt->recovery().replayed == 1);
	}
	remove_dir(top);
}

// A crash just before each persist step of a snapshot (clearing the old mark, every chunk, the
// drain, the header, the new mark): recovery uses whichever snapshot is complete and replays the
// rest; no committed operation is lost, none appears twice.
static void test_crash_at_every_snapshot_step(bool pool)
{
	uint64_t seed = 43;
	Model model;
	for (uint64_t i = 0; i < 800; i++)
		apply_op(model, op_of(seed, i, 3000));
	int steps = 0, fell_back = 0;
	for (int step = 1; step < 200; step++) {
		std::string top = scratch_dir("snapstep");
		std::string dir = pool ? top + "/rt.pool" : top;
		int fd, status;
		pid_t pid = spawn(dir, seed, 0, 700, 400, 3000, fd);
		waitpid(pid, &status, 0);
		drain_reports(fd, 0);
		std::string env = "2:" + std::to_string(step);
		pid = spawn(dir, seed, 700, 800, 100, 3000, fd, env.c_str());
		waitpid(pid, &status, 0);
		uint64_t reported = drain_reports(fd, 700);
		bool crashed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
		CHECK(reported == 800 && (crashed || (WIFEXITED(status) && WEXITSTATUS(status) == 0)));
		{
			auto rt = asl::open(dir, crash_options(true));
			auto &m = rt->get_object<asl::pmap<long, std::string>>("m");
			bool ok = same(m, model);
			CHECK(ok);
			if (!ok)
				std::printf("crash before snapshot step %d: wrong state\n", step);
			fell_back += rt->recovery().snapshot_seq == 1;
		}
		remove_dir(top);
		if (!crashed)
			break; // past the last step
		steps++;
	}
	std::printf("crash at every snapshot step%s: %d steps, %d recoveries fell back to the previous snapshot\n",
		    pool ? " (pool)" : "", steps, fell_back);
	CHECK(steps >= (pool ? 4 : 7) && fell_back >= 1 && fell_back < steps);
}

int main(int argc, char **argv)
{
	if (argc == 9 && !strcmp(argv[1], "child"))
		return child(argv[2], std::strtoull(argv[3], nullptr, 10), std::strtoull(argv[4], nullptr, 10),
			     std::strtoull(argv[5], nullptr, 10), std::strtoull(argv[6], nullptr, 10),
			     std::strtoull(argv[7], nullptr, 10), atoi(argv[8]));
	const char *long_mode = getenv("PROSPER_LONG");
	bool long_run = long_mode && *long_mode == '1';
	// Each persist path and each way of writing entries, under the same kills (the children
	// inherit the environment): the page path; the cache-line path (non-temporal entries and
	// snapshot copies) with entries handed to the loggers, and with sealed entries.
	struct Pass {
		const char *granularity, *logging;
	} passes[] = {{"PAGE", nullptr}, {"CACHE_LINE", "handoff"}, {"CACHE_LINE", "sealed"}};
	for (const Pass &p : passes) {
		std::printf("pass: granularity %s, entries %s\n", p.granularity, p.logging ? p.logging : "as chosen");
		setenv("PMEM2_FORCE_GRANULARITY", p.granularity, 1);
		if (p.logging)
			setenv("PROSPER_ASL_LOGGING", p.logging, 1);
		else
			unsetenv("PROSPER_ASL_LOGGING");
		for (bool pool : {false, true}) {
			test_crash_in_snapshot(pool);
			test_crash_at_every_snapshot_step(pool);
			test_random_kills(long_run ? 300 : pool ? 10 : 25, pool);
		}
	}
	return report("test_asl_crash");
}
