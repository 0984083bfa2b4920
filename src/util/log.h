/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * log.h - the daemon's log: stderr, or syslog once in the background.
 * On stderr, when that is the journal's stream (systemd sets
 * JOURNAL_STREAM to its device and inode), each line carries its priority
 * as a "<N>" prefix, which the journal takes for the entry's priority;
 * otherwise lines read "driverfsd: <level>: message".
 */
#ifndef DM_LOG_H
#define DM_LOG_H

#include <stddef.h>
#include <syslog.h>

/* Call before any thread exists. */
void dm_log_setup(int max_level, int use_syslog);
/* Changes the level, from any thread (a reload). */
void dm_log_set_level(int max_level);
/* Logs one line. Control characters of the message (a device's name, a
 * path) are escaped as by dm_escape(): nothing logged can add a line. */
void dm_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Copies @in to @out (@size bytes, NUL included, @size > 0) with newline,
 * tab, return and backslash written as \n \t \r \\ and every other byte
 * below 0x20 and 0x7f as \xHH; what does not fit is cut before an escape,
 * never inside one. For text from outside (devices, users, the bus) in the
 * log and in sd_notify messages, whose lines are their fields. Returns the
 * length written. */
size_t dm_escape(char *out, size_t size, const char *in);

#define log_err(...) dm_log(LOG_ERR, __VA_ARGS__)
#define log_warn(...) dm_log(LOG_WARNING, __VA_ARGS__)
#define log_info(...) dm_log(LOG_INFO, __VA_ARGS__)
#define log_debug(...) dm_log(LOG_DEBUG, __VA_ARGS__)

#endif
