/* error.c -- the thread-local one-line reason behind the last negative return. */
#include <stdarg.h>
#include <stdio.h>
#include "pool_internal.h"

static __thread char msg[256];

int pool_err(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return code;
}

const char *prosper_pool_errormsg(void)
{
	return msg[0] ? msg : "no error";
}
