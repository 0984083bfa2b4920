/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * uevent.h - how the udev source turns what a device reports (udev
 * properties and sysfs attribute text) into the model's values. Pure
 * functions, no libudev: the udev source calls them, the fuzz tests too.
 */
#ifndef DM_UEVENT_H
#define DM_UEVENT_H

#include <stdbool.h>
#include <stddef.h>

/* @value with its trailing newlines and blanks dropped, cut to fit @size
 * bytes (a value file holds less than DM_ATTR_MAX), into @buf. */
void dm_uevent_trim(char *buf, size_t size, const char *value);

/*
 * A string a device reports (a USB manufacturer, product or serial, from
 * sysfs or read from the device through libusb) as a value: its first line
 * only, cut to fit @size bytes, into @buf. One value per file: nothing after
 * a newline can pose as another line of a file or of a hook's environment.
 * Other bytes are kept as the device gave them.
 */
void dm_uevent_device_string(char *buf, size_t size, const char *value);

/*
 * Appends "KEY=VALUE" (after a newline unless *@len is 0) to the uevent
 * text in @buf (@size bytes, NUL-terminated, *@len long). Returns false,
 * with @buf unchanged, when it does not fit: the text stays whole lines.
 */
bool dm_uevent_append(char *buf, size_t size, size_t *len, const char *key, const char *value);

/*
 * The interface of a class device with a node (docs/design.md §6.1): the
 * udev DEVTYPE where there is one (@devtype may be NULL), otherwise the
 * node's basename without its trailing number ("event3" -> "event").
 * Returns 1, and @buf empty, for a node named by numbers only
 * (bsg/0:0:0:0): the interface is then the class's own name.
 */
int dm_uevent_interface(const char *devtype, const char *devnode, char *buf, size_t size);

#endif
