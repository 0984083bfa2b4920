/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * json-stream.h - the snapshot loader's JSON reader; only src/snapshot
 * includes it.
 *
 * The file is read as it is parsed, one top-level member or one device at
 * a time (json-c's tokener parses one value from a buffer and tells where
 * it stopped): json-c's tree of the whole document would take several
 * times the model's memory and most of the load time. Only the structure
 * around the values (braces, brackets, commas, colons) is walked here.
 */
#ifndef DM_SNAPSHOT_JSON_STREAM_H
#define DM_SNAPSHOT_JSON_STREAM_H

#include <json-c/json.h>
#include <stddef.h>

struct dm_json_reader {
	const char *buf;
	size_t len, pos;
	const char *file;
	json_tokener *tok;
	char *err;
	size_t err_size;
};

/* Writes the message into @err (@size bytes); returns -EINVAL. */
int dm_snapshot_fail(char *err, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The next byte after white space, which it skips; '\0' at the end. */
char dm_json_peek(struct dm_json_reader *r);
/* Steps over @c, the next byte after white space; else -EINVAL with the
 * error written. */
int dm_json_expect(struct dm_json_reader *r, char c);
/* The next value, whole; NULL (with the error written) when it is not JSON. */
json_object *dm_json_read_value(struct dm_json_reader *r);

/*
 * Walks the array of devices at the reader's position, parsing one element
 * at a time and handing each object, in order, to @take (which owns it):
 * a negative return is an error, a positive one stops the walk early.
 */
int dm_json_walk_devices(struct dm_json_reader *r,
			 int (*take)(json_object *o, size_t i, void *data), void *data);

#endif
