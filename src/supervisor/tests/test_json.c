/* test_json -- the supervisor's JSON writer escapes what messages carry (quotes, backslashes,
 * control characters) and writes each number with the format its key names. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "json.h"

static int failures;

static void expect(const char *got, const char *want, const char *what)
{
	if (strcmp(got, want)) {
		fprintf(stderr, "FAIL %s:\n  got  %s\n  want %s\n", what, got, want);
		failures++;
	}
}

int main(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct json j;
	json_begin(&j, f);
	json_str(&j, "disabled", "checkpoint failed: \"x\\y\"\n\ttab \x01 end");
	json_str(&j, "none", NULL);
	json_u64(&j, "n", 18446744073709551615ull);
	json_int(&j, "code", -3);
	json_bool(&j, "resumed", 1);
	json_num(&j, "ms", "%.4f", 1.5);
	json_num(&j, "iv", "%g", 10.0);
	json_num(&j, "nan", "%.3f", NAN);
	json_end(&j);
	fclose(f);
	expect(buf,
	       "{\"disabled\": \"checkpoint failed: \\\"x\\\\y\\\"\\n\\ttab \\u0001 end\", \"none\": null, "
	       "\"n\": 18446744073709551615, \"code\": -3, \"resumed\": true, \"ms\": 1.5000, \"iv\": 10, \"nan\": null}\n",
	       "one object");
	free(buf);
	if (!failures)
		printf("json: all cases passed\n");
	return failures != 0;
}
