/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* utf8.h - telling UTF-8 from other bytes, for what checks text from
 * devices (the snapshot's text values, the metrics file's label values).
 * Header only: the core and the snapshot format share it without linking
 * one another. */
#ifndef DM_UTF8_H
#define DM_UTF8_H

#include <stddef.h>

/* The length of the UTF-8 sequence @s starts (at most @len bytes), or 0
 * when it is not one: overlong forms, surrogates and values past U+10FFFF
 * are not. */
static inline size_t dm_utf8_seq(const unsigned char *s, size_t len)
{
	size_t n;
	unsigned min, cp;
	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, min = 0x80, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, min = 0x800, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, min = 0x10000, cp = s[0] & 0x07;
	else
		return 0;
	if (n > len)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

#endif
