/* disable.c -- checkpointing stopped, the first reason kept (disable.h). */
#include "disable.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>

void sup_disable(struct sup *s, const char *why)
{
	if (!s->tree->enabled)
		return;
	s->tree->enabled = 0;
	/* copied: callers pass buffers of their own, and --stats-json reads it at the end of the run */
	snprintf(s->tree->disabled_reason, sizeof s->tree->disabled_reason, "%s", why);
	fprintf(stderr, "%s: %s; checkpointing stopped, the last checkpoint (epoch %llu) is kept\n", sup_command(), why,
		(unsigned long long)(s->tree->pool ? prosper_pool_epoch(s->tree->pool) : 0));
}

void sup_checkpoint_failed(struct sup *s, int rc, const char *why)
{
	char said[700];
	/* a full pool says what to do: each saved mapping takes two copies' room (a 4 GiB program in
	 * the default 8 GiB pool stopped at its first checkpoint with only "No space left on device") */
	const char *full = rc == -ENOSPC && !(why && why[0])
				   ? " (the pool is full: it holds about half its --capacity of written memory; run "
				     "with a larger --capacity, in MiB)"
				   : "";
	if (why && why[0])
		snprintf(said, sizeof said, "checkpoint failed: %s (%s)", strerror(-rc), why);
	else
		snprintf(said, sizeof said, "checkpoint failed: %s%s", strerror(-rc), full);
	sup_disable(s, said);
}
