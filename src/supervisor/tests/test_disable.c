/* test_disable.c -- checkpointing stopped (disable.h): the first reason is the one kept, copied
 * (the caller's buffer may be gone or rewritten by the time --stats-json reads it), said once on
 * stderr; a later failure -- a capture's own reason, a pool error -- changes neither.  A failed
 * checkpoint names its errno and the reason its step gave (why.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "disable.h"

static int failures;
#define MUST(c) do { if (!(c)) { fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); exit(1); } } while (0)
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); failures++; } } while (0)

/* stderr into a file while f runs: how many lines it said */
static int lines_said(void (*f)(struct sup *), struct sup *s)
{
	char path[] = "/tmp/test_disable.XXXXXX";
	int fd = mkstemp(path);
	MUST(fd >= 0);
	fflush(stderr);
	int saved = dup(2);
	MUST(saved >= 0 && dup2(fd, 2) == 2);
	f(s);
	fflush(stderr);
	MUST(dup2(saved, 2) == 2);
	close(saved);
	char b[4096];
	ssize_t n = pread(fd, b, sizeof b, 0);
	close(fd);
	unlink(path);
	int lines = 0;
	for (ssize_t i = 0; i < n; i++)
		lines += b[i] == '\n';
	return lines;
}

static char reason[64];

static void first_then_more(struct sup *s)
{
	snprintf(reason, sizeof reason, "the program made a userfaultfd fail");
	sup_disable(s, reason);
	snprintf(reason, sizeof reason, "rewritten by its caller");
	sup_checkpoint_failed(s, -ESRCH, "process 7 ended during the checkpoint");
	sup_disable(s, "a third reason");
}

static void failed_first(struct sup *s)
{
	char why[64];
	snprintf(why, sizeof why, "the staging area is full");
	sup_checkpoint_failed(s, -ENOSPC, why);
	snprintf(why, sizeof why, "rewritten by its caller");
	sup_checkpoint_failed(s, -EIO, NULL);
}

static struct sup *fresh(void)
{
	struct tree *t = calloc(1, sizeof *t);
	struct sup *s = calloc(1, sizeof *s);
	MUST(t && s);
	t->enabled = 1;
	s->tree = t;
	return s;
}

static void done(struct sup *s)
{
	free(s->tree);
	free(s);
}

int main(void)
{
	struct sup *s = fresh();
	CHECK(lines_said(first_then_more, s) == 1);
	CHECK(!s->tree->enabled);
	CHECK(!strcmp(s->tree->disabled_reason, "the program made a userfaultfd fail"));
	done(s);

	s = fresh();
	CHECK(lines_said(failed_first, s) == 1);
	CHECK(!s->tree->enabled);
	CHECK(strstr(s->tree->disabled_reason, "checkpoint failed: ") == s->tree->disabled_reason);
	CHECK(strstr(s->tree->disabled_reason, strerror(ENOSPC)) != NULL);
	CHECK(strstr(s->tree->disabled_reason, "(the staging area is full)") != NULL);
	done(s);

	s = fresh();
	sup_checkpoint_failed(s, -ENOSPC, NULL); /* the pool's own: said with what to do */
	CHECK(strstr(s->tree->disabled_reason, "run with a larger --capacity") != NULL);
	done(s);
	if (failures)
		return 1;
	printf("disable: ok\n");
	return 0;
}
