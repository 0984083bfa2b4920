/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sanitize.c - masking what identifies a machine in a saved tree. */
#include "sanitize.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

void dm_sanitizer_init(struct dm_sanitizer *s)
{
	s->host[0] = '\0';
	if (gethostname(s->host, sizeof(s->host) - 1) < 0)
		s->host[0] = '\0';
	s->host[sizeof(s->host) - 1] = '\0';
	if (strlen(s->host) < 2 || strcasecmp(s->host, "localhost") == 0)
		s->host[0] = '\0';
}

bool dm_sanitize_is_identifier(const char *name)
{
	/* serial numbers, asset tags, UUIDs; link-layer, WWN and GUID
	 * addresses (network, Bluetooth, Fibre Channel, InfiniBand, NVMe) */
	static const char *const ids[] = {
		"address",	 "board_asset_tag", "board_serial",   "chassis_asset_tag",
		"chassis_serial", "duid",	     "eui",	       "fabric_name",
		"node_guid",	 "node_name",	     "nguid",	       "perm_addr",
		"phys_port_id",	 "phys_switch_id",  "port_guid",      "port_name",
		"product_serial", "product_uuid",    "serial",	       "serial_number",
		"sys_image_guid", "unique_id",	     "uuid",	       "wwid",
		"wwn",
	};
	const char *base = strrchr(name, '/');
	base = base ? base + 1 : name;
	if (strncmp(base, "sysfs:", 6) == 0)
		base += 6;
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		if (strcmp(base, ids[i]) == 0)
			return true;
	return false;
}

struct out {
	char *buf;
	size_t len, cap;
	bool failed;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->failed)
		return;
	if (o->len + n + 1 > o->cap) {
		size_t cap = o->cap ? o->cap : 64;
		while (cap < o->len + n + 1)
			cap *= 2;
		char *b = realloc(o->buf, cap);
		if (!b) {
			o->failed = true;
			return;
		}
		o->buf = b;
		o->cap = cap;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
	o->buf[o->len] = '\0';
}

/* Whether the byte before @at (in @s) and the one at @end leave the match
 * between them whole: no letter, digit, or @joins character around it. */
static bool bounded(const char *s, size_t at, size_t end, size_t len, const char *joins)
{
	unsigned char before = at ? (unsigned char)s[at - 1] : 0;
	unsigned char after = end < len ? (unsigned char)s[end] : 0;
	return !(before && (isalnum(before) || strchr(joins, before))) &&
	       !(after && (isalnum(after) || strchr(joins, after)));
}

/* The length of a link-layer address at @s: six or more pairs of hex
 * digits joined by ':' (or six by '-'); 0 when there is none. */
static size_t mac_at(const char *s, size_t len)
{
	size_t pairs = 0, i = 0;
	char sep = 0;
	while (i + 2 <= len && isxdigit((unsigned char)s[i]) && isxdigit((unsigned char)s[i + 1])) {
		pairs++;
		i += 2;
		if (i < len && (s[i] == ':' || s[i] == '-') && (!sep || s[i] == sep) &&
		    i + 2 < len && isxdigit((unsigned char)s[i + 1]) &&
		    isxdigit((unsigned char)s[i + 2])) {
			sep = s[i];
			i++;
			continue;
		}
		break;
	}
	return pairs >= 6 && sep ? i : 0;
}

/* The length of a UUID at @s (8-4-4-4-12 hex digits), else 0. */
static size_t uuid_at(const char *s, size_t len)
{
	static const int groups[] = { 8, 4, 4, 4, 12 };
	size_t i = 0;
	for (size_t g = 0; g < 5; g++) {
		for (int k = 0; k < groups[g]; k++, i++)
			if (i >= len || !isxdigit((unsigned char)s[i]))
				return 0;
		if (g < 4) {
			if (i >= len || s[i] != '-')
				return 0;
			i++;
		}
	}
	return i;
}

char *dm_sanitize_text(const struct dm_sanitizer *s, const char *name, const char *value,
		       size_t len, size_t *ret_len)
{
	struct out o = { 0 };
	if (dm_sanitize_is_identifier(name) && len) {
		/* the value, less its newline, is the identifier */
		put(&o, DM_SANITIZED, sizeof(DM_SANITIZED) - 1);
		if (value[len - 1] == '\n')
			put(&o, "\n", 1);
	} else {
		size_t host = strlen(s->host);
		for (size_t i = 0; i < len;) {
			size_t n = 0;
			if (isxdigit((unsigned char)value[i])) {
				n = mac_at(value + i, len - i);
				if (n && !bounded(value, i, i + n, len, ":-"))
					n = 0;
				if (!n) {
					n = uuid_at(value + i, len - i);
					if (n && !bounded(value, i, i + n, len, "-"))
						n = 0;
				}
			}
			if (!n && host && len - i >= host && strncasecmp(value + i, s->host, host) == 0 &&
			    bounded(value, i, i + host, len, "-_"))
				n = host;
			if (n) {
				put(&o, DM_SANITIZED, sizeof(DM_SANITIZED) - 1);
				i += n;
			} else {
				put(&o, value + i, 1);
				i++;
			}
		}
		put(&o, "", 0);
	}
	if (o.failed || !o.buf) {
		free(o.buf);
		return NULL;
	}
	*ret_len = o.len;
	return o.buf;
}
