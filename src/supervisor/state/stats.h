/* stats.h -- `--stats-json PATH`: what a run measured, as one JSON object (stats.c).  The keys are
 * read by tests, `prosper torture`, `prosper bench` and `prosper demo`: add keys, never rename. */
#ifndef PROSPER_SUP_STATS_H
#define PROSPER_SUP_STATS_H
#include "sup.h"

/* Write the statistics of s to path; 0 or -1 (errno). */
int stats_write(const struct sup *s, const char *path);

#endif
