/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* log.h - the daemon's log: stderr, or syslog (the journal) when asked. */
#ifndef DM_LOG_H
#define DM_LOG_H

#include <syslog.h>

void dm_log_setup(int max_level, int use_syslog);
void dm_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_err(...) dm_log(LOG_ERR, __VA_ARGS__)
#define log_warn(...) dm_log(LOG_WARNING, __VA_ARGS__)
#define log_info(...) dm_log(LOG_INFO, __VA_ARGS__)
#define log_debug(...) dm_log(LOG_DEBUG, __VA_ARGS__)

#endif
