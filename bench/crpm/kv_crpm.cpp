// kv_crpm.cpp -- libcrpm's data-structure evaluation (papers/libcrpm-dac2022.txt §5.2.1, Table 1):
// a persistent std::map / std::unordered_map of 8-byte keys and values under YCSB-style
// workloads, checkpointed every epoch (default 128 ms), one variant per run.
//
//   kv_crpm --variant V --struct map|umap [--records N] [--ops N] [--epoch-ms MS] [--dir DIR]
//
// Workloads, in this order on one structure: insert (N uniformly distributed keys into the
// empty structure), A (50% update / 50% read), B (5% update / 95% read), C (read only); A-C
// draw keys from a scrambled Zipfian distribution (theta 0.99) over the N loaded keys.
// Prints one JSON object per workload: throughput, checkpoint bytes per operation (Table 1a),
// persist fences per epoch (Table 1b).
//
// Variants (which binary runs which: bench/CMakeLists.txt, bench/scripts/crpm_bench.sh):
//   volatile        std::allocator in DRAM, no persistence
//   nvm-np          the structure in a default-mode container (pool memory, its allocator),
//                   never checkpointed: the NVM-NP line of the paper
//   default         crpm default mode       } built with prosper-c++: store hooks
//   buffered        crpm buffered mode      }
//   default-wp      crpm default mode       } plain build: segment write faults + block compare
//   buffered-wp     crpm buffered mode      }
//   pages           crpm buffered mode, whole written pages (uffd-wp + PAGEMAP_SCAN)
//   undo            the structure in a default-mode container used as plain NVM; every first
//                   store to a 256 B block in an epoch logs its old bytes with flush+fence
//                   (undo_log.c, linked into the undo build only)
#include <time.h>
#include <unistd.h>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include "prosper/crpm.hpp"

extern "C" {
// undo_log.c in the undo build; weak no-ops elsewhere.
__attribute__((weak)) void undo_start(void *, uint64_t) {}
__attribute__((weak)) void undo_epoch_end(uint64_t *bytes, uint64_t *fences) { *bytes = *fences = 0; }
}

static uint64_t fnv64(uint64_t v)
{
	uint64_t h = 0xCBF29CE484222325ull;
	for (int i = 0; i < 8; i++) {
		h ^= v & 0xFF;
		h *= 0x100000001B3ull;
		v >>= 8;
	}
	return h;
}

static uint64_t key_of(uint64_t item) { return fnv64(item ^ 0x5DEECE66Dull); }

struct Rng {
	uint64_t x;
	uint64_t next()
	{
		uint64_t z = (x += 0x9E3779B97F4A7C15ull);
		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
		z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
		return z ^ (z >> 31);
	}
	double unit() { return (double)(next() >> 11) * (1.0 / 9007199254740992.0); }
};

// YCSB's scrambled Zipfian generator (Gray et al.'s method), theta 0.99.
struct Zipf {
	uint64_t n;
	double theta = 0.99, alpha, zetan, eta, half_pow;
	explicit Zipf(uint64_t items) : n(items)
	{
		zetan = 0;
		for (uint64_t i = 1; i <= n; i++)
			zetan += 1.0 / std::pow((double)i, theta);
		double zeta2 = 1.0 + 1.0 / std::pow(2.0, theta);
		alpha = 1.0 / (1.0 - theta);
		eta = (1.0 - std::pow(2.0 / (double)n, 1.0 - theta)) / (1.0 - zeta2 / zetan);
		half_pow = 1.0 + std::pow(0.5, theta);
	}
	uint64_t rank(Rng &r)
	{
		double u = r.unit(), uz = u * zetan;
		if (uz < 1.0)
			return 0;
		if (uz < half_pow)
			return 1;
		return (uint64_t)((double)n * std::pow(eta * u - eta + 1.0, alpha)) % n;
	}
	uint64_t item(Rng &r) { return fnv64(rank(r)) % n; }
};

using Pair = std::pair<const uint64_t, uint64_t>;
using PMap = std::map<uint64_t, uint64_t, std::less<uint64_t>, crpm::allocator<Pair>>;
using PUMap = std::unordered_map<uint64_t, uint64_t, std::hash<uint64_t>, std::equal_to<uint64_t>, crpm::allocator<Pair>>;
using VMap = std::map<uint64_t, uint64_t>;
using VUMap = std::unordered_map<uint64_t, uint64_t>;

struct Opts {
	std::string variant = "default", structure = "map", dir = "/dev/shm";
	uint64_t records = 2000000, ops = 4000000;
	double epoch_ms = 128;
};

static double now_s()
{
	timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

// The checkpointing side of a run: epochs, and what each one cost.
struct Epochs {
	crpm_t *c = nullptr;
	bool undo = false;
	double period, last;
	uint64_t checkpoints = 0, bytes = 0, fences = 0;
	crpm_stats base{};
	uint64_t fence_base = 0;
	explicit Epochs(crpm_t *ctr, bool u, double ms) : c(ctr), undo(u), period(ms / 1000.0), last(now_s())
	{
		reset();
	}
	void reset()
	{
		checkpoints = bytes = fences = 0;
		if (c)
			crpm_get_stats(c, &base);
		last = now_s();
	}
	void checkpoint()
	{
		if (undo) {
			uint64_t b, f;
			undo_epoch_end(&b, &f);
			bytes += b;
			fences += f;
		} else if (c && crpm_checkpoint(c, 1)) {
			fprintf(stderr, "kv_crpm: checkpoint: %s\n", crpm_errormsg());
			exit(1);
		}
		checkpoints++;
		last = now_s();
	}
	void tick()
	{
		if ((c || undo) && now_s() - last >= period)
			checkpoint();
	}
	void totals(uint64_t *b, uint64_t *f)
	{
		if (undo || !c) {
			*b = bytes;
			*f = fences;
			return;
		}
		crpm_stats s;
		crpm_get_stats(c, &s);
		*b = s.checkpoint_bytes - base.checkpoint_bytes;
		*f = s.persist_fences - base.persist_fences;
	}
};

template <class M> static void run(M &m, Epochs &ep, const Opts &o)
{
	struct W {
		const char *name;
		int update_pct;
	} loads[] = {{"insert", -1}, {"A", 50}, {"B", 5}, {"C", 0}};
	Zipf z(o.records);
	Rng rng{42};
	for (const W &w : loads) {
		ep.reset();
		uint64_t n = w.update_pct < 0 ? o.records : o.ops, hits = 0;
		double t0 = now_s();
		for (uint64_t i = 0; i < n; i++) {
			if (w.update_pct < 0) {
				m.emplace(key_of(i), i);
			} else {
				uint64_t item = z.item(rng);
				if ((int)(rng.next() % 100) < w.update_pct) {
					m[key_of(item)] = i;
				} else {
					auto it = m.find(key_of(item));
					hits += it != m.end();
				}
			}
			if ((i & 255) == 255)
				ep.tick();
		}
		ep.checkpoint(); // the last epoch's changes are part of the cost
		double secs = now_s() - t0;
		uint64_t bytes, fences;
		ep.totals(&bytes, &fences);
		printf("{\"variant\": \"%s\", \"struct\": \"%s\", \"workload\": \"%s\", \"records\": %llu, \"ops\": %llu, "
		       "\"seconds\": %.4f, \"mops\": %.4f, \"checkpoints\": %llu, \"ckpt_bytes_per_op\": %.2f, "
		       "\"fences_per_epoch\": %.1f, \"read_hits\": %llu}\n",
		       o.variant.c_str(), o.structure.c_str(), w.name, (unsigned long long)o.records,
		       (unsigned long long)n, secs, (double)n / secs / 1e6, (unsigned long long)ep.checkpoints,
		       (double)bytes / (double)n, ep.checkpoints ? (double)fences / (double)ep.checkpoints : 0.0,
		       (unsigned long long)hits);
		fflush(stdout);
	}
}

int main(int argc, char **argv)
{
	Opts o;
	for (int i = 1; i + 1 < argc; i += 2) {
		std::string a = argv[i], v = argv[i + 1];
		if (a == "--variant") o.variant = v;
		else if (a == "--struct") o.structure = v;
		else if (a == "--records") o.records = strtoull(v.c_str(), nullptr, 10);
		else if (a == "--ops") o.ops = strtoull(v.c_str(), nullptr, 10);
		else if (a == "--epoch-ms") o.epoch_ms = atof(v.c_str());
		else if (a == "--dir") o.dir = v;
		else {
			fprintf(stderr, "usage: %s --variant V --struct map|umap [--records N] [--ops N] [--epoch-ms MS] [--dir DIR]\n", argv[0]);
			return 2;
		}
	}
	if (o.variant == "volatile") {
		Epochs ep(nullptr, false, o.epoch_ms);
		if (o.structure == "map") {
			VMap m;
			run(m, ep, o);
		} else {
			VUMap m;
			m.reserve(o.records);
			run(m, ep, o);
		}
		return 0;
	}
	crpm_option_t opt;
	crpm_init_option(&opt);
	opt.truncate = 1;
	opt.capacity = std::max<uint64_t>(1ull << 30, o.records * 256);
	std::string v = o.variant;
	opt.mode = v == "buffered" || v == "buffered-wp" || v == "pages" ? CRPM_MODE_BUFFERED : CRPM_MODE_DEFAULT;
	opt.tracking = v == "pages" ? CRPM_TRACK_PAGES : v == "undo" || v == "nvm-np" ? CRPM_TRACK_HOOKS : CRPM_TRACK_AUTO;
	std::string path = o.dir + "/kv_crpm-" + std::to_string(getpid()) + ".crpm";
	crpm::MemoryPool pool(path.c_str(), &opt);
	bool undo = v == "undo";
	if (undo)
		undo_start((void *)(uintptr_t)opt.fixed_base_address, opt.capacity);
	Epochs ep(v == "nvm-np" ? nullptr : pool.handle(), undo, o.epoch_ms);
	if (o.structure == "map") {
		PMap *m = new (pool.allocate(sizeof(PMap))) PMap();
		pool.set_root(0, m);
		run(*m, ep, o);
	} else {
		PUMap *m = new (pool.allocate(sizeof(PUMap))) PUMap();
		m->reserve(o.records);
		pool.set_root(0, m);
		run(*m, ep, o);
	}
	unlink(path.c_str());
	return 0;
}
