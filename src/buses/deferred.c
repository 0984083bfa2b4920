/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* deferred.c - the mount's devices_deferred (deferred.h). */
#include "deferred.h"

#include "fleet/deferred.h"
#include "util/readall.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int put_line(const char *name, const char *reason, void *data)
{
	return fprintf(data, "%s\t%s\n", name, reason) < 0 ? -ENOMEM : 0;
}

static int deferred_show(struct dm_device *root, const struct dm_attribute *attr, char **ret,
			 size_t *ret_len)
{
	(void)root;
	(void)attr;
	char *text = malloc(DM_DEFERRED_READ_MAX);
	if (!text)
		return -ENOMEM;
	/* not there, or not ours to read: nothing known */
	ssize_t len = 0;
	int fd = dm_open_value_file(DM_DEFERRED_FILE);
	if (fd >= 0) {
		len = dm_pread_all(fd, text, DM_DEFERRED_READ_MAX, 0);
		close(fd);
		if (len < 0)
			len = 0;
	}
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);
	int r = f ? dm_deferred_parse(text, (size_t)len, put_line, f) : -ENOMEM;
	free(text);
	if (f && fclose(f) != 0 && r == 0)
		r = -ENOMEM;
	if (r < 0) {
		free(buf);
		return r;
	}
	*ret = buf;
	*ret_len = size;
	return 0;
}

static const struct dm_attribute deferred_attr = {
	.name = "devices_deferred", .mode = 0400, .flags = DM_ATTR_LIVE | DM_ATTR_UNBOUNDED,
	.show_alloc = deferred_show,
};
static const struct dm_attribute *const root_attrs[] = { &deferred_attr, NULL };

const struct dm_attribute_group dm_deferred_root_group = {
	.attrs = root_attrs,
};
