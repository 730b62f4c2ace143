// check.h -- the assertions and scratch directory shared by prosper-sim's test programs.
// A failed CHECK prints file, line and expression and counts; the program's exit code is
// nonzero iff any failed (finish()).
#pragma once
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

inline int failures = 0;
#define CHECK(cond)                                                                   \
	do {                                                                          \
		if (!(cond)) {                                                        \
			std::fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__, __LINE__, #cond); \
			failures++;                                                   \
		}                                                                     \
	} while (0)
#define CHECK_EQ(a, b)                                                                                     \
	do {                                                                                               \
		auto va = (a);                                                                             \
		auto vb = (b);                                                                             \
		if (!(va == vb)) {                                                                         \
			std::fprintf(stderr, "%s:%d: FAILED: %s == %s (%llu vs %llu)\n", __FILE__, __LINE__, #a, #b, \
				     (unsigned long long)va, (unsigned long long)vb);                      \
			failures++;                                                                \
		}                                                                                          \
	} while (0)

inline std::string tmpdir;
inline std::string path(const std::string &name) { return tmpdir + "/" + name; }
inline void write_file(const std::string &f, const std::string &bytes) { std::ofstream(f, std::ios::binary) << bytes; }

// make_tmpdir / finish -- a fresh scratch directory; remove it and report.
inline void make_tmpdir()
{
	char tmpl[] = "/tmp/prosper-sim-test.XXXXXX";
	tmpdir = mkdtemp(tmpl);
}
inline int finish(const char *who)
{
	std::string rm = "rm -rf " + tmpdir;
	if (std::system(rm.c_str()) != 0)
		return 1;
	if (failures)
		std::fprintf(stderr, "%s: %d failures\n", who, failures);
	else
		std::printf("%s: all passed\n", who);
	return failures ? 1 : 0;
}
