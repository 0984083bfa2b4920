/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * deferred.h - the kernel's deferred probes (docs/design.md §6.10): debugfs's
 * devices_deferred, a line per device whose driver's probe asked to be
 * retried later ("DEVNAME\tREASON", the reason "DRIVER: message" when the
 * driver gave one, with its own newline), read one way by driverfsd (the
 * mount's devices_deferred, src/buses/deferred.c) and by driverfsctl health
 * (src/ctl/health.c). Text from the kernel's drivers, taken as hostile:
 * lines bounded in count and length, every byte that is not printable ASCII
 * as \xNN, so that each line the parser hands on is printable ASCII with
 * no tab and the daemon's file parses to itself.
 */
#ifndef DM_FLEET_DEFERRED_H
#define DM_FLEET_DEFERRED_H

#include <stddef.h>

/* where the kernel has it, when debugfs is mounted (root only) */
#define DM_DEFERRED_FILE "/sys/kernel/debug/devices_deferred"
/* the most of it that is read */
#define DM_DEFERRED_READ_MAX (256 * 1024)
/* the most lines taken */
#define DM_DEFERRED_LINES_MAX 1024
/* a longer device name is no sysfs directory's: its line is dropped */
#define DM_DEFERRED_NAME_MAX 255
/* a longer reason is cut there, "..." after it */
#define DM_DEFERRED_REASON_MAX 256
/* the longest escaped name and reason, NUL included */
#define DM_DEFERRED_NAME_SIZE (DM_DEFERRED_NAME_MAX * 4 + 1)
#define DM_DEFERRED_REASON_SIZE (DM_DEFERRED_REASON_MAX * 4 + 4)

/* Calls @fn on each line of @text (@len bytes) that names a device: its
 * name and reason escaped ("" for none; a newline at its end taken off),
 * in the order of the text; stops at, and returns, a non-zero return.
 * Lines with no tab, an empty or overlong name, and a last line with no
 * newline (cut by the read's bound) are skipped, and so is everything
 * past DM_DEFERRED_LINES_MAX lines. */
int dm_deferred_parse(const char *text, size_t len,
		      int (*fn)(const char *name, const char *reason, void *data), void *data);

#endif
