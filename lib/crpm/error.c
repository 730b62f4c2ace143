/* error.c -- the thread-local one-line reason behind the last failure of the crpm API. */
#include <stdarg.h>
#include <stdio.h>
#include "prosper/internal/crpm_internal.h"

static __thread char msg[256];

static void vset(const char *fmt, va_list ap) { vsnprintf(msg, sizeof msg, fmt, ap); }

int crpm_fail(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vset(fmt, ap);
	va_end(ap);
	return code;
}

void *crpm_fail_null(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vset(fmt, ap);
	va_end(ap);
	return NULL;
}

const char *crpm_errormsg(void) { return msg[0] ? msg : "no error"; }
