/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * modules.h - the kernel modules that could drive a device, for the why of
 * its binding (docs/design.md §7.5): its modalias looked up with libkmod in
 * the modules directory's indexes (what modprobe would load for it), each
 * with whether it is loaded, built in, or not loaded.
 */
#ifndef DM_MODULES_H
#define DM_MODULES_H

#include <stddef.h>

/* The modules directory (/lib/modules/<release> unless a test points it
 * elsewhere: driverfsd --modules-dir). Copied; call before the first
 * lookup. */
void dm_modules_set_dir(const char *dir);

/*
 * The candidate modules of @modalias, as "NAME (loaded), NAME (not
 * loaded)" into @buf; their number, 0 when none matches, -ENOENT when the
 * modules directory has no index to look in, -EINVAL for a modalias that is
 * not one (a device's text: checked before libkmod sees it), -ENOMEM.
 */
int dm_modules_candidates(const char *modalias, char *buf, size_t size);

#endif
