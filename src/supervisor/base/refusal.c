/* refusal.c -- the refusal table and its printer (refusal.h). */
#include "refusal.h"
#include <stdarg.h>
#include <stdio.h>
#include "json.h"

static const char *const codes[REFUSAL_COUNT] = {
	[REFUSE_USAGE] = "usage",
	[REFUSE_NO_POOL] = "no-pool",
	[REFUSE_POOL_MISSING] = "pool-missing",
	[REFUSE_POOL_BUSY] = "pool-busy",
	[REFUSE_NOT_A_POOL] = "not-a-pool",
	[REFUSE_HAS_CHECKPOINT] = "has-checkpoint",
	[REFUSE_POOL_CORRUPT] = "pool-corrupt",
	[REFUSE_POOL_CREATE] = "pool-create",
	[REFUSE_FINISHED] = "finished",
	[REFUSE_NO_CHECKPOINT] = "no-checkpoint",
	[REFUSE_FILE_GONE] = "file-gone",
	[REFUSE_FILE_CHANGED] = "file-changed",
	[REFUSE_MAPPED_DELETED] = "mapped-file-deleted",
	[REFUSE_FD_GONE] = "fd-file-gone",
	[REFUSE_FD_SHORTER] = "fd-file-shorter",
	[REFUSE_KERNEL_CHANGED] = "kernel-changed",
	[REFUSE_CPU_CHANGED] = "cpu-changed",
	[REFUSE_NOT_BUILT] = "not-built",
	[REFUSE_SETUP] = "setup",
	[REFUSE_LAUNCH] = "launch",
	[REFUSE_NO_USERFAULTFD] = "no-userfaultfd",
	[REFUSE_RESTORE] = "restore",
	[REFUSE_FD_UNSUPPORTED] = "fd-unsupported",
	[REFUSE_FILES_UNTRACKED] = "files-untracked",
	[REFUSE_FILE_NOT_UNDOABLE] = "file-not-undoable",
	[REFUSE_FILE_CHANGED_OUTSIDE] = "file-changed-outside",
	[REFUSE_PTRACE_DENIED] = "ptrace-denied",
	[REFUSE_NO_PID_NAMESPACE] = "no-pid-namespace",
	[REFUSE_SETUID_PROGRAM] = "setuid-program",
	[REFUSE_ADDRESS_UNAVAILABLE] = "address-unavailable",
};

static const char *command = "prosper run";
static int as_json;

const char *refusal_code(enum refusal r)
{
	return r > 0 && r < REFUSAL_COUNT && codes[r] ? codes[r] : "unknown";
}

void refusal_setup(const char *cmd, int json)
{
	command = cmd;
	as_json = json;
}

const char *sup_command(void)
{
	return command;
}

static int vrefuse(enum refusal r, int with_exit, int exit_code, const char *fmt, va_list ap)
{
	char msg[1024];
	vsnprintf(msg, sizeof msg, fmt, ap);
	fprintf(stderr, "%s: %s\n", command, msg);
	if (as_json) {
		struct json j;
		json_begin(&j, stderr);
		json_str(&j, "refused", refusal_code(r));
		json_str(&j, "message", msg);
		if (with_exit)
			json_int(&j, "exit_code", exit_code);
		json_end(&j);
	}
	return 2;
}

int refuse(enum refusal r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = vrefuse(r, 0, 0, fmt, ap);
	va_end(ap);
	return rc;
}

int refuse_finished(int exit_code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = vrefuse(REFUSE_FINISHED, 1, exit_code, fmt, ap);
	va_end(ap);
	return rc;
}
