/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * modules.h - the kernel modules that could drive a device, for the why of
 * its binding (docs/design.md §7.5): its modalias looked up with libkmod in
 * the modules directory's indexes (what modprobe would load for it), each
 * with whether it is loaded, built in, or not loaded. The libkmod context,
 * its directory and the answers kept are one object's (struct dm_modules),
 * its binder's (binding.h, dm_binder_modules()).
 */
#ifndef DM_MODULES_H
#define DM_MODULES_H

#include <stddef.h>
#include <stdint.h>

struct dm_modules;

/* Lookups in the modules directory @dir (NULL: /lib/modules/<release>;
 * driverfsd --modules-dir, a test's; copied), the context made at the
 * first. 0 or -ENOMEM. */
int dm_modules_new(const char *dir, struct dm_modules **ret);
/* Frees @mo, its context and the answers kept (no lookup may run). NULL is
 * nothing. */
void dm_modules_free(struct dm_modules *mo);

/*
 * The candidate modules of @modalias, as "NAME (loaded), NAME (not
 * loaded)" into @buf; their number, 0 when none matches, -ENOENT when the
 * modules directory has no index to look in, -EINVAL for a modalias that is
 * not one (a device's text: checked before libkmod sees it), -ENOMEM.
 */
int dm_modules_candidates(struct dm_modules *mo, const char *modalias, char *buf, size_t size);

/* What libkmod knows of a module for a kernel driver's name @driver. */
enum dm_module_state {
	DM_MODULE_NOT_LOADED,
	DM_MODULE_LOADED, /* loaded, loading or unloading */
	DM_MODULE_BUILTIN,
};

/*
 * The module modprobe would load for the kernel driver @driver (its name
 * looked up as a module's name, dashes and underscores alike, or as an
 * alias, as modprobe @driver does; no modprobe.d), its name into @buf and
 * its state into *ret_state: 1, 0 when no module is known by that name,
 * -ENOENT when the modules directory has no index to look in, -EINVAL for
 * a name that is not a driver's (plain: letters, digits, - _ .), -ENOMEM.
 * The first of several (an alias some modules share).
 */
int dm_modules_of_driver(struct dm_modules *mo, const char *driver, char *buf, size_t size,
			 enum dm_module_state *ret_state);

/*
 * The same, kept: the answer for @modalias is looked up once and given
 * again while @gen (the model's generation: a module that binds a device
 * moves it) is the same and for DM_MODULES_KEEP_SEC at most (a module
 * loaded or unloaded that binds nothing, whose state then shows late), so
 * that reads of binding files do not each take the one libkmod lock. At
 * most DM_MODULES_KEPT answers are kept (all dropped past it).
 */
#define DM_MODULES_KEEP_SEC 2
#define DM_MODULES_KEPT 1024
int dm_modules_candidates_kept(struct dm_modules *mo, const char *modalias, uint64_t gen,
			       char *buf, size_t size);
/* How many lookups @mo's libkmod made, for the daemon's stats (NULL: 0). */
uint64_t dm_modules_count_lookups(struct dm_modules *mo);
/* Drops every answer @mo kept. */
void dm_modules_forget(struct dm_modules *mo);

#endif
