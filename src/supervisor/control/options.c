/* options.c -- the command line of `prosper run` and `prosper resume`: parsing, the help text,
 * the default pool.  Every malformed option is a usage refusal (exit 2, one line). */
#include "options.h"
#include "settings.h"
#include "budget.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
	"usage: prosper run [OPTIONS] [--pool PATH] [--fresh] -- PROGRAM [ARGS...]\n"
	"       prosper resume [OPTIONS] [--pool PATH]\n"
	"\n"
	"run: start PROGRAM and checkpoint it every interval into a pool (default ./PROGRAM.prosper).\n"
	"After kill -9 or a crash, resume relaunches it from the last checkpoint (the only *.prosper in\n"
	"this directory if --pool is not given) and keeps checkpointing into the same pool, with the\n"
	"run's checkpoint options (interval, max-overhead, durable-every, copy, trackers, granularities,\n"
	"metadata) unless it is given others, which later resumes keep in turn.  The stack is\n"
	"saved Prosper's way (from SP-128 up, 8-byte granules, two-step redo commit); other memory with\n"
	"libcrpm's protocol.  Exit code: the program's; 2 for refused input, with a one-line reason.\n"
	"Threads, exec and child processes are followed: one checkpoint is one cut of every process\n"
	"of the program.  It runs in a pid namespace of its own, so that a resume gives every process\n"
	"and thread its id back (where the system allows; else they change).\n"
	"\n"
	"  --pool PATH              the pool file.  On a disk (ext4, xfs, ...) checkpoints go into a\n"
	"                           fast pool in memory and are copied into PATH every --durable-every;\n"
	"                           on tmpfs (/dev/shm) every checkpoint goes into PATH and survives the\n"
	"                           program, not a power cut\n"
	"  --durable-every T        on a disk: the longest a power cut can take back, e.g. 1s (default),\n"
	"                           250ms; 0 makes every checkpoint durable (an fdatasync per ordering\n"
	"                           point: slower).  The fast pool lives in $PROSPER_FAST_DIR (default\n"
	"                           /dev/shm)/prosper-UID\n"
	"  --fresh                  (run) discard a checkpoint the pool holds; a file that is not a pool\n"
	"                           is never overwritten\n"
	"  --interval MS            checkpoint interval (default 10): the shortest one\n"
	"  --max-overhead P         the most checkpointing may cost the program, in percent of its time,\n"
	"                           e.g. 5: each checkpoint's cost is measured (its stop, the write\n"
	"                           faults after it, the program's waits for a core while it commits)\n"
	"                           and the interval lengthened to keep within P, never below --interval\n"
	"                           nor above 60 s; it comes back down when the program writes less.\n"
	"                           Default " BUDGET_DEFAULT_TEXT " ($PROSPER_MAX_OVERHEAD when set); 0: every\n"
	"                           --interval, whatever it costs.\n"
	"                           --stats-json reports the intervals taken and the cost measured\n"
	"  --stack-tracker T        page|diff|full for the stack (default diff)\n"
	"  --heap-tracker T         page|diff|full for other memory (default diff)\n"
	"  --stack-granularity G    diff granule of the stack, 8..4096 (default 8)\n"
	"  --heap-granularity G     diff granule of other memory, 8..4096 (default 256)\n"
	"  --capacity MIB           pool data capacity (default 8192; the file is sparse)\n"
	"  --copy C                 when a checkpoint's written memory is read: stop (default: all of\n"
	"                           it while the program is stopped) or precopy (most of it by a pass\n"
	"                           a little before the stop, while the program runs; the stop reads\n"
	"                           only what was written after the pass)\n"
	"  --snapshot S             how a checkpoint's written memory is read: auto (default: a large\n"
	"                           one from a copy-on-write view forked at the stop, when copying would\n"
	"                           stop the program over 50 ms; a small one in the stop), copy (always\n"
	"                           in the stop) or fork (from a view whenever one can be made)\n"
	"  --restore R              (resume) lazy (default: the program runs as soon as its registers,\n"
	"                           map and files are back; its memory is filled from the pool in the\n"
	"                           background, a page it touches first at once; all of it before its\n"
	"                           first system call or checkpoint) or eager (all of it before it runs)\n"
	"  --verify                 commit while stopped and compare the pool with live memory (oracle),\n"
	"                           every --interval (--max-overhead 0 unless given)\n"
	"  --stats-json PATH        write statistics as JSON at the end (stdout is the program's)\n"
	"  --exact-stack-stats      also count the stack's changed 8-byte words (costs a compare)\n"
	"  --metadata M             log: registers, map and fds kept as a redo log of their changes\n"
	"                           (default, Kindle's way); rewrite: written whole every checkpoint\n"
	"  --host-pids              no pid namespace: the program has the system's ids (they change at a\n"
	"                           resume; locks held across it are given the new ids where known).\n"
	"                           Its file changes are not seen: its checkpoints resume only with\n"
	"                           --trust-files\n"
	"  --trust-files            (resume) of a checkpoint whose run did not see the program's file\n"
	"                           changes (--host-pids): resume anyway, the files as they are -- you\n"
	"                           vouch that the program changed none after the checkpoint (see\n"
	"                           docs/run-resume.md, \"Files\")\n"
	"  --external-sync on|off   on (default): what the program writes to a terminal, pipe or socket\n"
	"                           on its stdout/stderr is shown only once the checkpoint that covers\n"
	"                           it has committed (one interval later), so a kill never shows it\n"
	"                           twice nor shows work the resume undoes; off: shown at once (lines\n"
	"                           since the last checkpoint are printed again after a resume)\n"
	"  --json                   a refusal is also one JSON object on stderr, with a stable code:\n"
	"                           {\"refused\": \"finished\", \"message\": ..., \"exit_code\": 0}\n"
	"                           (codes: docs/run-resume.md, \"Refusals\")\n"
	"See docs/run-resume.md.\n"
	"\n"
	"example:\n"
	"  prosper run --pool /dev/shm/pi.prosper -- bc -lq pi.bc > pi.txt    # kill -9 it at any time\n"
	"  prosper resume --pool /dev/shm/pi.prosper >> pi.txt                # ... and it goes on\n";

/* "1s", "250ms", "0.5", "0": seconds, or -1 if malformed or above an hour. */
static double parse_duration(const char *v)
{
	char *end;
	double x = strtod(v, &end);
	if (end == v || x < 0)
		return -1;
	if (!strcmp(end, "ms"))
		x /= 1000;
	else if (*end && strcmp(end, "s"))
		return -1;
	return x <= 3600 ? x : -1;
}

static int tracker_mode(const char *s)
{
	return !strcmp(s, "page") ? TRACK_MODE_PAGE : !strcmp(s, "diff") ? TRACK_MODE_DIFF
	       : !strcmp(s, "full")                 ? TRACK_MODE_FULL
						    : 0;
}

int options_parse(int argc, char **argv, struct opts *o)
{
	*o = (struct opts){ .capacity_mib = 8192,
			    .cfg = { .interval_ms = 10, .durable_every_s = -1, .stack_mode = TRACK_MODE_DIFF, .heap_mode = TRACK_MODE_DIFF,
				     .stack_gran = 8, .heap_gran = 256, .meta_mode = META_LOG, .external_sync = 1,
				     .max_overhead_pct = BUDGET_DEFAULT_PERCENT, .snapshot_mode = SNAPSHOT_AUTO } };
	/* the default of --snapshot from the environment: a test suite run with views at every cut,
	 * or none (snapshot.h) */
	const char *snap_env = getenv("PROSPER_SNAPSHOT");
	if (snap_env && !strcmp(snap_env, "fork"))
		o->cfg.snapshot_mode = SNAPSHOT_FORK;
	else if (snap_env && !strcmp(snap_env, "copy"))
		o->cfg.snapshot_mode = SNAPSHOT_COPY;
	if (argc < 2 || (strcmp(argv[1], "run") && strcmp(argv[1], "resume")))
		return refuse(REFUSE_USAGE, "%s", "the first argument is `run` or `resume`");
	o->cfg.resume = !strcmp(argv[1], "resume");
	const char *cmd = o->cfg.resume ? "prosper resume" : "prosper run";
	refusal_setup(cmd, 0);
	/* --json changes how refusals are printed: find it before anything can be refused */
	for (int i = 2; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--json"))
			refusal_setup(cmd, o->cfg.json = 1);
	/* the default of --max-overhead from the environment: a test suite whose kills count on the
	 * fixed cadence (PROSPER_MAX_OVERHEAD=0); refused like the option */
	const char *budget_env = getenv("PROSPER_MAX_OVERHEAD");
	if (budget_env) {
		char *end;
		double pct = strtod(budget_env, &end);
		if (end == budget_env || (*end && strcmp(end, "%")) || !(pct >= 0 && pct <= 100))
			return refuse(REFUSE_USAGE, "%s", "PROSPER_MAX_OVERHEAD is a percentage from 0 to 100 (0: the fixed cadence of --interval)");
		o->cfg.max_overhead_pct = pct;
	}
	long stack_gran = 8, heap_gran = 256;
	int i;
	for (i = 2; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--")) {
			i++;
			break;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage, stdout);
			exit(0);
		} else if (!strcmp(a, "--fresh")) o->fresh = 1;
		else if (!strcmp(a, "--json")) continue;
		else if (!strcmp(a, "--verify")) o->cfg.verify = 1;
		else if (!strcmp(a, "--host-pids")) o->cfg.host_pids = 1;
		else if (!strcmp(a, "--trust-files")) o->cfg.trust_files = 1;
		else if (!strcmp(a, "--exact-stack-stats")) o->cfg.stats_exact = 1;
		else if (!v) return refuse(REFUSE_USAGE, "%s needs a value (see --help)", a);
		else if (!strcmp(a, "--pool")) o->pool = v, i++;
		else if (!strcmp(a, "--stats-json")) o->cfg.stats_path = v, i++;
		else if (!strcmp(a, "--interval")) o->cfg.interval_ms = atof(v), o->cfg.given |= GIVEN_INTERVAL, i++;
		else if (!strcmp(a, "--max-overhead")) {
			char *end;
			o->cfg.max_overhead_pct = strtod(v, &end);
			if (end == v || (*end && strcmp(end, "%")) || !(o->cfg.max_overhead_pct >= 0 && o->cfg.max_overhead_pct <= 100))
				return refuse(REFUSE_USAGE, "%s", "--max-overhead is a percentage from 0 to 100 (0: the fixed cadence of --interval)");
			o->cfg.given |= GIVEN_MAX_OVERHEAD;
			i++;
		}
		else if (!strcmp(a, "--capacity")) o->capacity_mib = strtoull(v, NULL, 10), i++;
		else if (!strcmp(a, "--durable-every")) {
			if ((o->cfg.durable_every_s = parse_duration(v)) < 0)
				return refuse(REFUSE_USAGE, "--durable-every is a duration: 0, 250ms, 1s, 1.5s (at most 1h)");
			o->cfg.given |= GIVEN_DURABLE;
			i++;
		}
		else if (!strcmp(a, "--stack-granularity")) stack_gran = atol(v), o->cfg.given |= GIVEN_STACK_GRAN, i++;
		else if (!strcmp(a, "--heap-granularity")) heap_gran = atol(v), o->cfg.given |= GIVEN_HEAP_GRAN, i++;
		else if (!strcmp(a, "--stack-tracker")) {
			if (!(o->cfg.stack_mode = tracker_mode(v)))
				return refuse(REFUSE_USAGE, "--stack-tracker is page, diff or full");
			o->cfg.given |= GIVEN_STACK_TRACKER;
			i++;
		} else if (!strcmp(a, "--copy")) {
			if ((o->cfg.copy_mode = !strcmp(v, "stop") ? COPY_STOP : !strcmp(v, "precopy") ? COPY_PRECOPY : -1) < 0)
				return refuse(REFUSE_USAGE, "--copy is stop or precopy");
			o->cfg.given |= GIVEN_COPY;
			i++;
		} else if (!strcmp(a, "--snapshot")) {
			if ((o->cfg.snapshot_mode = !strcmp(v, "auto") ? SNAPSHOT_AUTO : !strcmp(v, "fork") ? SNAPSHOT_FORK
						   : !strcmp(v, "copy") ? SNAPSHOT_COPY : -1) < 0)
				return refuse(REFUSE_USAGE, "--snapshot is auto, fork or copy");
			i++;
		} else if (!strcmp(a, "--restore")) {
			if ((o->cfg.eager_restore = !strcmp(v, "eager") ? 1 : !strcmp(v, "lazy") ? 0 : -1) < 0)
				return refuse(REFUSE_USAGE, "--restore is lazy or eager");
			if (!o->cfg.resume)
				return refuse(REFUSE_USAGE, "--restore is an option of prosper resume");
			i++;
		} else if (!strcmp(a, "--external-sync")) {
			if ((o->cfg.external_sync = !strcmp(v, "on") ? 1 : !strcmp(v, "off") ? 0 : -1) < 0)
				return refuse(REFUSE_USAGE, "--external-sync is on or off");
			i++;
		} else if (!strcmp(a, "--metadata")) {
			if (!(o->cfg.meta_mode = !strcmp(v, "log") ? META_LOG : !strcmp(v, "rewrite") ? META_REWRITE : 0))
				return refuse(REFUSE_USAGE, "--metadata is log or rewrite");
			o->cfg.given |= GIVEN_METADATA;
			i++;
		} else if (!strcmp(a, "--heap-tracker")) {
			if (!(o->cfg.heap_mode = tracker_mode(v)))
				return refuse(REFUSE_USAGE, "--heap-tracker is page, diff or full");
			o->cfg.given |= GIVEN_HEAP_TRACKER;
			i++;
		} else
			return refuse(REFUSE_USAGE, "unknown option %s (see --help)", a);
	}
	o->prog = argv + i;
	o->nprog = argc - i;
	if (!o->cfg.resume && o->nprog < 1)
		return refuse(REFUSE_USAGE, "%s", "no program given: prosper run [OPTIONS] -- PROGRAM [ARGS...]");
	if (o->cfg.resume && o->nprog > 0)
		return refuse(REFUSE_USAGE, "%s", "resume takes no program: it relaunches the one in the pool");
	if (o->cfg.interval_ms < 0.1 || o->cfg.interval_ms > 3600e3)
		return refuse(REFUSE_USAGE, "%s", "--interval is 0.1 ms .. 1 h");
	for (int k = 0; k < 2; k++) {
		long g = k ? heap_gran : stack_gran;
		if (g < 8 || g > 4096 || (g & (g - 1)))
			return refuse(REFUSE_USAGE, "%s", "granularities are powers of two from 8 to 4096");
	}
	o->cfg.stack_gran = (uint32_t)stack_gran;
	o->cfg.heap_gran = (uint32_t)heap_gran;
	if (o->capacity_mib < 16 || o->capacity_mib > (1u << 20))
		return refuse(REFUSE_USAGE, "%s", "--capacity is 16 MiB .. 1 TiB");
	const char *delay = getenv("PROSPER_TEST_COMMIT_DELAY_US");
	o->cfg.commit_delay_us = delay ? strtoull(delay, NULL, 10) : 0;
	return 0;
}

int options_default_pool(const struct opts *o, char *out, size_t cap)
{
	if (!o->cfg.resume) {
		const char *b = strrchr(o->prog[0], '/');
		snprintf(out, cap, "%s.prosper", b ? b + 1 : o->prog[0]);
		return 0;
	}
	DIR *d = opendir(".");
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l > 8 && !strcmp(e->d_name + l - 8, ".prosper") && n++ == 0)
			snprintf(out, cap, "%s", e->d_name);
	}
	if (d)
		closedir(d);
	if (n == 1)
		return 0;
	return refuse(REFUSE_NO_POOL, "%s", n ? "several *.prosper pools here: name one with --pool"
					    : "no pool given and no *.prosper pool here (--pool PATH)");
}
