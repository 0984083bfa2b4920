/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>

/* Set once at start-up, before any thread exists. */
static int log_max = LOG_INFO;
static int log_syslog;

void dm_log_setup(int max_level, int use_syslog)
{
	log_max = max_level;
	log_syslog = use_syslog;
	if (use_syslog)
		openlog("driverfsd", LOG_PID, LOG_DAEMON);
}

void dm_log(int level, const char *fmt, ...)
{
	if (level > log_max)
		return;
	va_list ap;
	va_start(ap, fmt);
	if (log_syslog) {
		vsyslog(level, fmt, ap);
	} else {
		static const char *const names[] = { "emerg", "alert", "crit", "error",
						     "warning", "notice", "info", "debug" };
		char line[1024];
		vsnprintf(line, sizeof(line), fmt, ap);
		fprintf(stderr, "driverfsd: %s: %s\n", names[level & 7], line);
	}
	va_end(ap);
}
