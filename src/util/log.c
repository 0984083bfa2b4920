/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "util/log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The level moves on a reload while other threads log. */
static int log_max = LOG_INFO;
/* Set once at start-up, before any thread exists. */
static int log_syslog;
static bool log_journal;

/* Whether stderr is the stream systemd named in JOURNAL_STREAM
 * ("<device>:<inode>"): a redirected stderr is not. */
static bool stderr_is_journal(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2 || fstat(2, &st) < 0)
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void dm_log_setup(int max_level, int use_syslog)
{
	dm_log_set_level(max_level);
	log_syslog = use_syslog;
	log_journal = !use_syslog && stderr_is_journal();
	if (use_syslog)
		openlog("driverfsd", LOG_PID, LOG_DAEMON);
}

void dm_log_set_level(int max_level)
{
	__atomic_store_n(&log_max, max_level, __ATOMIC_RELAXED);
}

size_t dm_escape(char *out, size_t size, const char *in)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = 0;
	if (!size)
		return 0;
	for (; *in; in++) {
		unsigned char c = (unsigned char)*in;
		char esc[4];
		size_t len = 0;
		if (c == '\n' || c == '\t' || c == '\r' || c == '\\') {
			esc[len++] = '\\';
			esc[len++] = c == '\n' ? 'n' : c == '\t' ? 't' : c == '\r' ? 'r' : '\\';
		} else if (c < 0x20 || c == 0x7f) {
			esc[len++] = '\\';
			esc[len++] = 'x';
			esc[len++] = hex[c >> 4];
			esc[len++] = hex[c & 15];
		} else {
			esc[len++] = (char)c;
		}
		if (n + len >= size)
			break; /* cut before an escape, never inside one */
		memcpy(out + n, esc, len);
		n += len;
	}
	out[n] = '\0';
	return n;
}

void dm_log(int level, const char *fmt, ...)
{
	if (level > __atomic_load_n(&log_max, __ATOMIC_RELAXED))
		return;
	va_list ap;
	char raw[1024], line[1024];
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	/* names, paths and values in messages may come from a device or a
	 * user: a newline of theirs must not start a line of its own */
	dm_escape(line, sizeof(line), raw);
	if (log_syslog) {
		syslog(level, "%s", line);
	} else {
		static const char *const names[] = { "emerg", "alert", "crit", "error",
						     "warning", "notice", "info", "debug" };
		/* one write per line, so threads' lines do not mix */
		if (log_journal)
			fprintf(stderr, "<%d>%s\n", level & 7, line);
		else
			fprintf(stderr, "driverfsd: %s: %s\n", names[level & 7], line);
	}
}
