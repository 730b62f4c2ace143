/* json.h -- a small JSON object writer for the supervisor's statistics and refusals.
 *
 * One flat object per json_begin/json_end, written as it goes; strings are escaped (quote,
 * backslash, control characters as \uXXXX), so any message -- a path, a system error -- stays
 * valid JSON.  Numbers are written with the format the caller names, so a key's precision is
 * chosen once, where the key is.
 */
#ifndef PROSPER_SUP_JSON_H
#define PROSPER_SUP_JSON_H
#include <stdint.h>
#include <stdio.h>

struct json {
	FILE *f;
	int n; /* members written so far */
};

void json_begin(struct json *j, FILE *f);
void json_str(struct json *j, const char *key, const char *value); /* NULL: null */
void json_u64(struct json *j, const char *key, uint64_t value);
void json_int(struct json *j, const char *key, long long value);
void json_bool(struct json *j, const char *key, int value);
/* A number printed with printf format fmt (e.g. "%.4f", "%g"); NaN and infinities become null. */
void json_num(struct json *j, const char *key, const char *fmt, double value);
void json_end(struct json *j); /* "}\n" */

#endif
