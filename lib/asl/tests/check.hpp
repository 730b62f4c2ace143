// check.hpp -- the few helpers the asl tests share: CHECK, a scratch directory, a seeded RNG.
#ifndef PROSPER_ASL_TEST_CHECK_HPP
#define PROSPER_ASL_TEST_CHECK_HPP
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

static int g_fails, g_passes;
#define CHECK(c)                                                                  \
	do {                                                                      \
		if (c)                                                            \
			g_passes++;                                               \
		else {                                                            \
			g_fails++;                                                \
			std::printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); \
			std::fflush(stdout);                                      \
		}                                                                 \
	} while (0)

// A fresh directory on a memory file system when there is one (the tests kill processes, they
// do not cut power).
inline std::string scratch_dir(const char *tag)
{
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	std::string tmpl = std::string(base) + "/prosper-asl-" + tag + "-XXXXXX";
	if (!mkdtemp(tmpl.data())) {
		std::perror("mkdtemp");
		std::exit(2);
	}
	return tmpl;
}

inline void remove_dir(const std::string &d)
{
	std::string cmd = "rm -rf '" + d + "'";
	if (std::system(cmd.c_str()) != 0)
		std::fprintf(stderr, "could not remove %s\n", d.c_str());
}

struct Rng {
	uint64_t s;
	explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 1) {}
	uint64_t next()
	{
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		return s;
	}
	uint64_t below(uint64_t n) { return next() % n; }
};

inline int report(const char *name)
{
	std::printf("%s: %d passed, %d failed\n", name, g_passes, g_fails);
	return g_fails ? 1 : 0;
}
#endif
