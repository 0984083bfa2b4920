/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* base64.h - RFC 4648 base64 (the standard alphabet, padded), for the
 * binary values of a snapshot (docs/snapshot.md). */
#ifndef DM_SNAPSHOT_BASE64_H
#define DM_SNAPSHOT_BASE64_H

#include <stddef.h>

/* @len bytes of @data encoded, NUL-terminated, newly allocated; NULL when
 * out of memory. */
char *dm_base64_encode(const void *data, size_t len);

/* The @len characters of @text decoded into a new buffer (*ret, *ret_len;
 * one NUL after the bytes). -EINVAL for anything but canonical, padded
 * base64 without whitespace, -ENOMEM. */
int dm_base64_decode(const char *text, size_t len, char **ret, size_t *ret_len);

#endif
