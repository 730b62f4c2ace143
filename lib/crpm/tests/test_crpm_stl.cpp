// test_crpm_stl.cpp -- built with bin/prosper-c++: std::map, std::unordered_map and std::list
// through crpm::allocator in a container, SIGKILLed at random, must recover exactly the state
// of the last checkpoint.  Run with CRPM_TRACK_HOOKS (no write protection at all), every store
// must be seen by a hook, a wrapper or the libstdc++ routines of lib/crpm/stdcxx.c: a node
// rebalanced inside libstdc++.so and missed would come back stale.
//
//   test_crpm_stl [--kills N]               parent: default and buffered mode
//   test_crpm_stl victim PATH MODE FD       child: epochs forever, reports each on FD
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <list>
#include <map>
#include <unordered_map>
#include "prosper/crpm.hpp"

template <class K, class V> using PMap = std::map<K, V, std::less<K>, crpm::allocator<std::pair<const K, V>>>;
template <class K, class V>
using PUMap = std::unordered_map<K, V, std::hash<K>, std::equal_to<K>, crpm::allocator<std::pair<const K, V>>>;
template <class T> using PList = std::list<T, crpm::allocator<T>>;

struct Root {
	uint64_t epochs;
	PMap<uint64_t, uint64_t> map;
	PUMap<uint64_t, uint64_t> umap;
	PList<uint64_t> list;
};

struct Model {
	std::map<uint64_t, uint64_t> map;
	std::unordered_map<uint64_t, uint64_t> umap;
	std::list<uint64_t> list;
};

static uint64_t next(uint64_t &x)
{
	uint64_t z = (x += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	return z ^ (z >> 27);
}

// One epoch of operations, the same on the persistent and the DRAM containers.
template <class M, class U, class L> static void epoch(M &map, U &umap, L &list, uint64_t e)
{
	uint64_t x = e * 7777 + 1;
	for (int i = 0; i < 300; i++) {
		uint64_t r = next(x), k = r % 3000;
		switch ((r >> 20) % 6) {
		case 0: case 1: map[k] = r; break;
		case 2: map.erase(k); break;
		case 3: umap[k] = r; break;
		case 4: umap.erase(k); break;
		default:
			list.push_back(r);
			if (list.size() > 200)
				list.pop_front();
		}
	}
}

static crpm_t *open_ctr(const char *path, int mode, int tracking)
{
	crpm_option_t o;
	crpm_init_option(&o);
	o.capacity = 128u << 20;
	o.mode = mode;
	o.tracking = tracking;
	return crpm_open(path, &o);
}

static int victim(const char *path, int mode, int fd)
{
	crpm_t *c = open_ctr(path, mode, CRPM_TRACK_HOOKS);
	if (!c)
		return 1;
	crpm::set_current_pool(c);
	Root *r = static_cast<Root *>(crpm_get_root(c, 0));
	if (!r) {
		r = new (crpm_malloc(c, sizeof(Root))) Root();
		crpm_set_root(c, 0, r);
		crpm_checkpoint(c, 1);
	}
	for (;;) {
		epoch(r->map, r->umap, r->list, r->epochs);
		r->epochs++;
		if (crpm_checkpoint(c, 1))
			return 1;
		uint64_t e = r->epochs;
		if (write(fd, &e, sizeof e) != sizeof e)
			return 1;
	}
}

// verify -- epochs held, or -1 with a reason.
static long verify(const char *path, int mode, uint64_t reported, char *why, size_t n)
{
	crpm_t *c = open_ctr(path, mode, CRPM_TRACK_AUTO);
	if (!c) {
		snprintf(why, n, "reopen: %s", crpm_errormsg());
		return -1;
	}
	crpm::set_current_pool(c);
	Root *r = static_cast<Root *>(crpm_get_root(c, 0));
	long k = r ? (long)r->epochs : 0;
	if (r && (uint64_t)k != reported && (uint64_t)k != reported + 1) {
		snprintf(why, n, "holds %ld epochs, %llu reported", k, (unsigned long long)reported);
		k = -1;
	} else if (r) {
		Model m;
		for (long e = 0; e < k; e++)
			epoch(m.map, m.umap, m.list, (uint64_t)e);
		bool same = m.map.size() == r->map.size() && std::equal(m.map.begin(), m.map.end(), r->map.begin()) &&
			    m.umap.size() == r->umap.size() && m.list.size() == r->list.size() &&
			    std::equal(m.list.begin(), m.list.end(), r->list.begin());
		for (auto &kv : m.umap) {
			auto it = r->umap.find(kv.first);
			same = same && it != r->umap.end() && it->second == kv.second;
		}
		if (!same) {
			snprintf(why, n, "epoch %ld: the containers differ from the replay", k);
			k = -1;
		}
	}
	crpm::set_current_pool(nullptr);
	crpm_close(c);
	return k;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "victim"))
		return victim(argv[2], atoi(argv[3]), atoi(argv[4]));
	int kills = argc == 3 && !strcmp(argv[1], "--kills") ? atoi(argv[2]) : (getenv("PROSPER_LONG") ? 100 : 8);
	const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	srand((unsigned)time(nullptr) ^ (unsigned)getpid());
	for (int mode = 0; mode <= 1; mode++) {
		char path[256];
		snprintf(path, sizeof path, "%s/test-crpm-stl-%d-%d.crpm", dir, (int)getpid(), mode);
		unlink(path);
		uint64_t reported = 0;
		for (int i = 0; i < kills; i++) {
			int pfd[2];
			if (pipe(pfd))
				return 1;
			pid_t pid = fork();
			if (pid == 0) {
				close(pfd[0]);
				char m[8], f[16];
				snprintf(m, sizeof m, "%d", mode);
				snprintf(f, sizeof f, "%d", pfd[1]);
				execl("/proc/self/exe", argv[0], "victim", path, m, f, (char *)nullptr);
				_exit(127);
			}
			close(pfd[1]);
			usleep(2000 + rand() % 80000);
			kill(pid, SIGKILL);
			uint64_t v;
			while (read(pfd[0], &v, sizeof v) == sizeof v)
				reported = v;
			close(pfd[0]);
			waitpid(pid, nullptr, 0);
			char why[256] = "";
			long k = verify(path, mode, reported, why, sizeof why);
			if (k < 0) {
				fprintf(stderr, "%s mode, kill %d: %s\n", mode ? "buffered" : "default", i, why);
				return 1;
			}
			reported = (uint64_t)k;
		}
		printf("%s mode: map, unordered_map, list: %d kills, each recovered exactly (%llu epochs)\n",
		       mode ? "buffered" : "default", kills, (unsigned long long)reported);
		unlink(path);
	}
	return 0;
}
