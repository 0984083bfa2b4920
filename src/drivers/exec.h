/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * exec.h - "exec" drivers: user drivers defined in the *.conf files of
 * drivers.d whose hooks are programs (docs/design.md §7).
 *
 *   [Driver]  Name=  Bus=  (required: 1-255 characters, no '/')
 *             Priority= (optional, -1000..1000, default 100; higher is
 *             offered devices first, kernel proxies have 0)
 *   [Match]   <attribute file>=<shell glob>   (all must match; none: every
 *             device on Bus)
 *   [Hooks]   Probe= Remove= Suspend= Resume=   (each optional; a command
 *             line split on whitespace with '...' and "..." quoting, taken
 *             literally, no shell; the program must be an absolute path)
 *             Timeout=<seconds, 1..3600>, for each hook call; default
 *             the main config's [PM] HookTimeout=, else 5
 *
 * Syntax: conffile.h's. A key given twice in a section is an error, and so
 * is an unknown section or key. Files are read in name order; names
 * starting with '.' are skipped. Limits: 1024 files, 64 KiB each, 64 [Match]
 * rules.
 *
 * Hook environment: ACTION (probe, remove, suspend, resume), DRIVERFS_PATH
 * (path under root/), DEVPATH, BUS, CLASS, DRIVER (this driver's name),
 * DEVNAME (the /dev path: the uevent's DEVNAME, else the devnode value),
 * PATH=/usr/sbin:/usr/bin:/sbin:/bin, then the device's uevent properties;
 * nothing else. A variable the device has no value for is left out, and
 * the uevent never sets one of the names above, nor one that steers a
 * loader or shell (hookenv.h). Exit status 0 is success;
 * a Probe that exits non-zero declines the device (a driver without Probe=
 * takes every matching device). Hooks run without the model lock.
 */
#ifndef DM_EXEC_H
#define DM_EXEC_H

#include "core/model.h"

struct dm_needs; /* needs.h */

#include <stdio.h>

#define DM_EXEC_DEFAULT_TIMEOUT_S 5
#define DM_EXEC_TIMEOUT_MAX_S 3600

struct dm_exec_set;

/*
 * Whether @cmdline is a hook's command line: 0; 1 with the reason in @msg
 * (@size bytes); -ENOMEM. For the hotplug helper's too.
 */
int dm_exec_check_command(const char *cmdline, char *msg, size_t size);

/*
 * @default_timeout_s (0: DM_EXEC_DEFAULT_TIMEOUT_S) is the Timeout= of
 * files that give none.
 *
 * Parses every *.conf in @dir (in name order) without changing anything.
 * Each error is written to @errors (may be NULL) as "FILE:LINE: message\n"
 * ("FILE: message\n" for a file that cannot be read at all);
 * returns the number of errors (0: all valid), or -errno when @dir cannot be
 * read (a missing directory is not an error: no drivers). Unknown sections
 * and keys are errors.
 */
int dm_exec_check_dir(const char *dir, int default_timeout_s, FILE *errors);

/*
 * Loads @dir and registers its drivers on @m (creating their buses), only
 * when every file is valid; otherwise registers nothing and returns the
 * number of errors (> 0) after writing them to @errors. A name already
 * taken on its bus counts as an error too, and the drivers registered
 * before it are unregistered again. On success (0) *ret holds what was
 * registered, for dm_exec_unload(); it is untouched otherwise. A driver
 * with KernelDriver= has @needs (needs.h) move each device it takes to
 * that kernel driver (NULL: it takes none); a reload keeps the set's.
 * Registering
 * probes the bus's unbound devices, so Probe hooks run during the call.
 * Call without the model lock.
 */
int dm_exec_load_dir(struct dm_model *m, struct dm_needs *needs, const char *dir,
		     int default_timeout_s, FILE *errors, struct dm_exec_set **ret);
/*
 * Replaces the drivers of *@set by those of @dir, without stopping anything
 * else: when every file of @dir is valid, the old drivers are unregistered
 * (remove() on each device they hold), the new ones registered (offered
 * every unbound device, so Probe hooks run), and the devices the old ones
 * held that no new one took are offered to the other drivers again, as at
 * start. Devices other drivers hold stay with them. Otherwise *@set is
 * kept, registered as it was, and the errors are counted and written as
 * dm_exec_load_dir() does. Returns 0 (and *@set is the new set), the
 * number of errors, or -errno. Call without the model lock, never from a
 * hook.
 */
int dm_exec_reload(struct dm_model *m, struct dm_exec_set **set, const char *dir,
		   int default_timeout_s, FILE *errors);
/* Unregisters (remove() on each bound device) and frees. NULL is fine. */
void dm_exec_unload(struct dm_exec_set *set);

#endif
