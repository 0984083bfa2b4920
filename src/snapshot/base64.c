/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* base64.c - RFC 4648 base64, encoded and decoded strictly: one text for
 * each byte string, so a snapshot saved again is the same file. */
#include "base64.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *dm_base64_encode(const void *data, size_t len)
{
	const unsigned char *s = data;
	if (len > (SIZE_MAX - 1) / 4 * 3 - 2)
		return NULL;
	char *out = malloc((len + 2) / 3 * 4 + 1), *o = out;
	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16;
		if (i + 1 < len)
			v |= (uint32_t)s[i + 1] << 8;
		if (i + 2 < len)
			v |= s[i + 2];
		*o++ = alphabet[v >> 18 & 63];
		*o++ = alphabet[v >> 12 & 63];
		*o++ = i + 1 < len ? alphabet[v >> 6 & 63] : '=';
		*o++ = i + 2 < len ? alphabet[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

/* The six bits @c stands for, or -1. */
static int sextet(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

int dm_base64_decode(const char *text, size_t len, char **ret, size_t *ret_len)
{
	if (len % 4)
		return -EINVAL;
	char *out = malloc(len / 4 * 3 + 1);
	if (!out)
		return -ENOMEM;
	size_t n = 0;
	for (size_t i = 0; i < len; i += 4) {
		int pad = text[i + 3] == '=' ? text[i + 2] == '=' ? 2 : 1 : 0;
		if (pad && i + 4 != len)
			goto bad; /* padding only at the end */
		int a = sextet(text[i]), b = sextet(text[i + 1]);
		int c = pad == 2 ? 0 : sextet(text[i + 2]), d = pad ? 0 : sextet(text[i + 3]);
		if (a < 0 || b < 0 || c < 0 || d < 0)
			goto bad;
		uint32_t v = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6 | (uint32_t)d;
		/* canonical: the bits the padding leaves out are zero */
		if ((pad == 2 && (v & 0xffff)) || (pad == 1 && (v & 0xff)))
			goto bad;
		out[n++] = (char)(v >> 16);
		if (pad < 2)
			out[n++] = (char)(v >> 8 & 0xff);
		if (pad < 1)
			out[n++] = (char)(v & 0xff);
	}
	out[n] = '\0';
	*ret = out;
	*ret_len = n;
	return 0;
bad:
	free(out);
	return -EINVAL;
}
