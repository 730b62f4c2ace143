/* json.c -- the JSON object writer (json.h). */
#include "json.h"
#include <math.h>

static void put_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", f);
		else if (*p == '\t')
			fputs("\\t", f);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

static void key(struct json *j, const char *k)
{
	if (j->n++)
		fputs(", ", j->f);
	put_string(j->f, k);
	fputs(": ", j->f);
}

void json_begin(struct json *j, FILE *f)
{
	j->f = f;
	j->n = 0;
	fputc('{', f);
}

void json_str(struct json *j, const char *k, const char *v)
{
	key(j, k);
	if (v)
		put_string(j->f, v);
	else
		fputs("null", j->f);
}

void json_u64(struct json *j, const char *k, uint64_t v)
{
	key(j, k);
	fprintf(j->f, "%llu", (unsigned long long)v);
}

void json_int(struct json *j, const char *k, long long v)
{
	key(j, k);
	fprintf(j->f, "%lld", v);
}

void json_bool(struct json *j, const char *k, int v)
{
	key(j, k);
	fputs(v ? "true" : "false", j->f);
}

void json_num(struct json *j, const char *k, const char *fmt, double v)
{
	key(j, k);
	if (isfinite(v))
		fprintf(j->f, fmt, v);
	else
		fputs("null", j->f);
}

void json_end(struct json *j)
{
	fputs("}\n", j->f);
	fflush(j->f);
}
