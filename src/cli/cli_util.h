/* cli_util.h -- what the subcommands of prosper-pool share: the one-line refusal (exit 2), a
 * monotonic clock, and strict parsing of whole numbers. */
#ifndef PROSPER_CLI_UTIL_H
#define PROSPER_CLI_UTIL_H
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline int die(const char *cmd, const char *msg)
{
	fprintf(stderr, "prosper %s: %s\n", cmd, msg);
	return 2;
}

static inline double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* parse_u64 -- a whole number, or -1 */
static inline int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-')
		return -1;
	*out = v;
	return 0;
}

int cmd_crashtest(int argc, char **argv);
#endif
