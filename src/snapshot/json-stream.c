/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* json-stream.c - the snapshot loader's JSON reader, one value at a time. */
#include "json-stream.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int dm_snapshot_fail(char *err, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, size, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

char dm_json_peek(struct dm_json_reader *r)
{
	while (r->pos < r->len && strchr(" \t\r\n", r->buf[r->pos]))
		r->pos++;
	return r->pos < r->len ? r->buf[r->pos] : '\0';
}

int dm_json_expect(struct dm_json_reader *r, char c)
{
	if (dm_json_peek(r) != c)
		return dm_snapshot_fail(r->err, r->err_size,
					"%s: not JSON ('%c' expected at byte %zu)", r->file, c, r->pos);
	r->pos++;
	return 0;
}

json_object *dm_json_read_value(struct dm_json_reader *r)
{
	dm_json_peek(r);
	json_tokener_reset(r->tok);
	size_t left = r->len - r->pos;
	json_object *o = json_tokener_parse_ex(r->tok, r->buf + r->pos, left > INT_MAX ? INT_MAX
											: (int)left);
	if (!o) {
		enum json_tokener_error e = json_tokener_get_error(r->tok);
		dm_snapshot_fail(r->err, r->err_size, "%s: not JSON (%s at byte %zu)", r->file,
				 e == json_tokener_continue ? "unexpected end"
							    : json_tokener_error_desc(e),
				 r->pos + json_tokener_get_parse_end(r->tok));
		return NULL;
	}
	r->pos += json_tokener_get_parse_end(r->tok);
	return o;
}

int dm_json_walk_devices(struct dm_json_reader *r,
			 int (*take)(json_object *o, size_t i, void *data), void *data)
{
	int ret = dm_json_expect(r, '[');
	if (ret == 0 && dm_json_peek(r) == ']') {
		r->pos++;
		return 0;
	}
	for (size_t i = 0; ret == 0; i++) {
		json_object *o = dm_json_read_value(r);
		if (!o)
			return -EINVAL;
		if (!json_object_is_type(o, json_type_object)) {
			json_object_put(o);
			return dm_snapshot_fail(r->err, r->err_size, "devices[%zu]: not an object",
						i);
		}
		ret = take(o, i, data);
		if (ret > 0)
			return 0;
		if (ret == 0 && dm_json_peek(r) == ']') {
			r->pos++;
			break;
		}
		if (ret == 0)
			ret = dm_json_expect(r, ',');
	}
	return ret;
}
