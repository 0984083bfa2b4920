/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* report.c - what the requests' reports share (see report.h). */
#include "report.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void dm_report_append(char *buf, size_t size, size_t *len, const char *s)
{
	size_t n = strlen(s);
	if (*len + n > size - 1)
		n = size - 1 - *len;
	memcpy(buf + *len, s, n);
	*len += n;
	buf[*len] = '\0';
}

void dm_report_say(struct dm_report_text *r, const char *fmt, ...)
{
	char line[8192];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n <= 0)
		return;
	dm_report_append(r->text, r->size, &r->len, line);
	dm_report_append(r->pub, r->size, &r->pub_len, line);
}

void dm_report_private(struct dm_report_text *r, const char *full, const char *pub)
{
	dm_report_append(r->text, r->size, &r->len, full);
	dm_report_append(r->pub, r->size, &r->pub_len, pub);
}

void *dm_report_table_find_locked(struct dm_report_table *t, const char *devpath)
{
	return t->ready && devpath ? dm_hashmap_get(&t->map, devpath) : NULL;
}

void *dm_report_table_get_locked(struct dm_report_table *t, const char *devpath)
{
	if (!t->ready) {
		dm_hashmap_init(&t->map, dm_hash_string, dm_cmp_string);
		t->ready = true;
	}
	char **r = dm_hashmap_get(&t->map, devpath);
	if (r)
		return r;
	r = calloc(1, t->size);
	if (!r || !(*r = strdup(devpath)) || dm_hashmap_put(&t->map, *r, r) < 0) {
		if (r)
			free(*r);
		free(r);
		return NULL;
	}
	return r;
}

static int free_record(void *value, void *data)
{
	(void)data;
	char **r = value;
	free(*r);
	free(r);
	return 0;
}

void dm_report_table_clear(struct dm_report_table *t)
{
	pthread_mutex_lock(&t->lock);
	if (t->ready) {
		dm_hashmap_for_each(&t->map, free_record, NULL);
		dm_hashmap_done(&t->map);
		t->ready = false;
	}
	pthread_mutex_unlock(&t->lock);
}
