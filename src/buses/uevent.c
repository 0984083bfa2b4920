/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* uevent.c - device-reported text to model values (uevent.h). */
#include "uevent.h"

#include <stdio.h>
#include <string.h>

void dm_uevent_trim(char *buf, size_t size, const char *value)
{
	if (size == 0)
		return;
	snprintf(buf, size, "%s", value);
	size_t len = strlen(buf);
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		buf[--len] = '\0';
}

void dm_uevent_device_string(char *buf, size_t size, const char *value)
{
	if (size == 0)
		return;
	size_t len = strcspn(value, "\n");
	snprintf(buf, size, "%.*s", len < size ? (int)len : (int)size - 1, value);
}

bool dm_uevent_append(char *buf, size_t size, size_t *len, const char *key, const char *value)
{
	if (*len >= size)
		return false;
	int n = snprintf(buf + *len, size - *len, "%s%s=%s", *len ? "\n" : "", key, value);
	if (n < 0 || (size_t)n >= size - *len) {
		buf[*len] = '\0';
		return false;
	}
	*len += (size_t)n;
	return true;
}

int dm_uevent_interface(const char *devtype, const char *devnode, char *buf, size_t size)
{
	if (devtype && *devtype) {
		snprintf(buf, size, "%s", devtype);
		return 0;
	}
	const char *base = strrchr(devnode, '/');
	base = base ? base + 1 : devnode;
	size_t len = strlen(base);
	while (len > 0 && base[len - 1] >= '0' && base[len - 1] <= '9')
		len--;
	bool letters = false;
	for (size_t i = 0; i < len; i++)
		letters |= (base[i] >= 'a' && base[i] <= 'z') || (base[i] >= 'A' && base[i] <= 'Z');
	if (!letters) {
		if (size)
			buf[0] = '\0';
		return 1;
	}
	snprintf(buf, size, "%.*s", (int)len, base);
	return 0;
}
