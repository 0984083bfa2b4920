/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * report.h - what the requests' reports share (binding.c, sriov.c): a
 * report's text as root and as others read it, built a line at a time,
 * and a table of each device's last report, by devpath.
 */
#ifndef DM_REPORT_H
#define DM_REPORT_H

#include "core/hashmap.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

/* @s appended to @buf (of @size bytes, @len long, NUL-terminated), cut
 * where it is full. */
void dm_report_append(char *buf, size_t size, size_t *len, const char *s);

/* A report being written: @text for root, @pub for others (in-use
 * details left out), each of @size bytes. */
struct dm_report_text {
	char *text, *pub;
	size_t size, len, pub_len;
};

/* A line (or lines) for every reader. */
void dm_report_say(struct dm_report_text *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Lines root reads as @full and others as @pub. */
void dm_report_private(struct dm_report_text *r, const char *full, const char *pub);

/* Each device's record (of @size bytes, its first member the char *
 * devpath it is kept by), made zeroed the first time it is asked for. */
struct dm_report_table {
	pthread_mutex_t lock;
	struct dm_hashmap map;
	bool ready;
	size_t size;
};
#define DM_REPORT_TABLE_INIT(type) { PTHREAD_MUTEX_INITIALIZER, { 0 }, false, sizeof(type) }

/* @devpath's record in @t, made when missing (NULL: no memory); @t's
 * lock held. */
void *dm_report_table_get_locked(struct dm_report_table *t, const char *devpath);
/* @devpath's record, NULL when none; the lock held. */
void *dm_report_table_find_locked(struct dm_report_table *t, const char *devpath);
/* Every record freed (at exit, nothing using @t). */
void dm_report_table_clear(struct dm_report_table *t);

#endif
