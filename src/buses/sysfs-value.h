/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * sysfs-value.h - a bus source's value that sysfs has too, as the kernel
 * has it (docs/design.md §6.7, "the same value"). The pci and usb sources
 * take each such value from the device's sysfs file, byte for byte, and
 * make it from libpci's or libusb's data only where sysfs has no file of
 * that name. Header only: the two sources share it without a library of
 * its own.
 *
 * A static value is shown as its text and one newline (attr.c), so a sysfs
 * text is stored without its last newline. A text that does not end in one
 * newline (an empty file, a recording that lost its newlines), or that is
 * more than one line where one is expected, or holds a NUL, or does not fit
 * a value, cannot come out of a static value as it is: such a value is not
 * set at all, and the device's sysfs file of that name, passed through
 * (§6.7: it shows where no static value has its name), serves the kernel's
 * bytes instead. Except for a string the device gave (a USB product name):
 * one that runs over lines or past a value's size is its first line, cut
 * to fit, as a value of driverfsd's, never more (one value per file:
 * nothing after a device's newline poses as another line, uevent.h).
 */
#ifndef DM_SYSFS_VALUE_H
#define DM_SYSFS_VALUE_H

#include "scan/scan.h"

#include "uevent.h"
#include "util/readall.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* dm_sysfs_value_set()'s @flags: the text may be several lines (a table
 * the kernel formats, such as PCI "resource"); otherwise it is one. */
#define DM_SYSFS_VALUE_LINES 1u
/* the text is a string the device gave: its first line where it runs over */
#define DM_SYSFS_VALUE_DEVICE_STRING 2u
/* the most a sysfs text attribute holds: a page, of up to 64 KiB */
#define DM_SYSFS_VALUE_READ_MAX 65536

/*
 * Sets the value @name of @rec to the text of the sysfs file @dir/@name
 * without its last newline, or, when that text cannot be a static value
 * (above), leaves @name unset. Returns 1 when sysfs has the file (whether
 * set or left to the file), 0 when it has none (no @dir, no such file, or
 * not a regular file: the caller sets its own value, if any), -ENOMEM.
 */
static inline int dm_sysfs_value_set(struct dm_record *rec, const char *dir, const char *name,
				     unsigned flags)
{
	char path[PATH_MAX];
	if (!dir || snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
		return 0;
	/* O_NONBLOCK: a FIFO where a sysfs file was expected must not hang */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : 1;
	struct stat st;
	char *text = NULL;
	size_t len = 0;
	int r = fstat(fd, &st) < 0 ? -errno : S_ISREG(st.st_mode) ? 0 : -EISDIR;
	if (r == 0)
		r = dm_read_value(fd, DM_SYSFS_VALUE_READ_MAX, &text, &len);
	close(fd);
	if (r == -EISDIR)
		return 0;
	if (r < 0)
		return r == -ENOMEM ? r : 1; /* there, and the kernel's answer is the file's */
	/* one newline at the end, none before it unless it may be lines, no
	 * NUL, shorter than DM_ATTR_MAX without it */
	bool fits = len > 0 && len <= DM_ATTR_MAX && text[len - 1] == '\n' &&
		    memchr(text, '\0', len) == NULL &&
		    ((flags & DM_SYSFS_VALUE_LINES) || memchr(text, '\n', len - 1) == NULL);
	if (fits) {
		text[len - 1] = '\0';
		r = dm_record_set(rec, name, text);
	} else if ((flags & DM_SYSFS_VALUE_DEVICE_STRING) &&
		   (len > DM_ATTR_MAX || memchr(text, '\n', len) != NULL)) {
		char line[DM_ATTR_MAX];
		text[len] = '\0'; /* dm_read_value() leaves room for it */
		dm_uevent_device_string(line, sizeof(line), text);
		r = dm_record_set(rec, name, line);
	}
	free(text);
	return r < 0 ? r : 1;
}

/* The value @name of @rec as sysfs has it (dm_sysfs_value_set(), one
 * line); where sysfs has no such file, @fmt formatted from the library's
 * data. 0 or -ENOMEM. */
static inline int dm_sysfs_value_setf(struct dm_record *rec, const char *dir, const char *name,
				      const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static inline int dm_sysfs_value_setf(struct dm_record *rec, const char *dir, const char *name,
				      const char *fmt, ...)
{
	int r = dm_sysfs_value_set(rec, dir, name, 0);
	if (r != 0)
		return r < 0 ? r : 0;
	char buf[DM_ATTR_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return dm_record_set(rec, name, buf);
}

#endif
