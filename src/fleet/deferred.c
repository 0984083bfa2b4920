/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* deferred.c - the kernel's deferred probes (deferred.h). */
#include "deferred.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* @len bytes of @s into @out (of at least @len * 4 + 1 bytes), each byte
 * that is not printable ASCII as \xNN. */
static void escape(const char *s, size_t len, char *out)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c < 0x7f)
			*out++ = (char)c;
		else
			out += sprintf(out, "\\x%02x", c);
	}
	*out = '\0';
}

int dm_deferred_parse(const char *text, size_t len,
		      int (*fn)(const char *name, const char *reason, void *data), void *data)
{
	size_t lines = 0;
	for (const char *p = text, *end = text + len; p < end && lines < DM_DEFERRED_LINES_MAX;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			break; /* cut by the read's bound */
		const char *line = p;
		p = nl + 1;
		lines++;
		const char *tab = memchr(line, '\t', (size_t)(nl - line));
		size_t name_len = tab ? (size_t)(tab - line) : 0;
		if (!tab || name_len == 0 || name_len > DM_DEFERRED_NAME_MAX)
			continue;
		const char *reason = tab + 1;
		size_t reason_len = (size_t)(nl - reason);
		bool cut = reason_len > DM_DEFERRED_REASON_MAX;
		if (cut)
			reason_len = DM_DEFERRED_REASON_MAX;
		char name_esc[DM_DEFERRED_NAME_SIZE], reason_esc[DM_DEFERRED_REASON_SIZE];
		escape(line, name_len, name_esc);
		escape(reason, reason_len, reason_esc);
		if (cut)
			strcat(reason_esc, "...");
		int r = fn(name_esc, reason_esc, data);
		if (r)
			return r;
	}
	return 0;
}
