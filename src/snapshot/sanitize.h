/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * sanitize.h - what --sanitize masks in a saved tree (docs/snapshot.md,
 * "Sanitized snapshots"): the values of files that identify a machine or
 * its owner by their name (serial numbers, MAC, WWN and GUID addresses,
 * UUIDs, asset tags), and in every text value MAC addresses, UUIDs and the
 * machine's host name. driverfsd --save and driverfsctl save use the same
 * rules, so both give the same file. Binary values (whose formats it does
 * not parse: serials hide in PCI capabilities, VPD, EDID) are dropped by
 * the format (format.c), not here.
 */
#ifndef DM_SNAPSHOT_SANITIZE_H
#define DM_SNAPSHOT_SANITIZE_H

#include <stdbool.h>
#include <stddef.h>

/* What a masked value, or a masked part of one, becomes. */
#define DM_SANITIZED "[REMOVED]"

struct dm_sanitizer {
	char host[256]; /* the machine's host name; "" to mask none */
};

/* The rules with this machine's host name (unless it is "localhost" or
 * shorter than 2 characters, which would mask common words). */
void dm_sanitizer_init(struct dm_sanitizer *s);

/* Whether the file @name ("serial", "queue/wwid", "sysfs:serial") holds an
 * identifier: its whole value is masked. */
bool dm_sanitize_is_identifier(const char *name);

/* The text value @value (@len bytes, no NUL) of the file @name, masked:
 * newly allocated, NUL-terminated, its length in *ret_len; NULL when out of
 * memory. */
char *dm_sanitize_text(const struct dm_sanitizer *s, const char *name, const char *value,
		       size_t len, size_t *ret_len);

#endif
