/* disable.c -- checkpointing stopped, the first reason kept (disable.h). */
#include "disable.h"
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
	char said[600];
	if (why && why[0])
		snprintf(said, sizeof said, "checkpoint failed: %s (%s)", strerror(-rc), why);
	else
		snprintf(said, sizeof said, "checkpoint failed: %s", strerror(-rc));
	sup_disable(s, said);
}
