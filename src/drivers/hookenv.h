/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hookenv.h - what hooks and helpers are run with.
 *
 * The environment of a call for a device (DESIGN.md section 6): ACTION,
 * DRIVERFS_PATH (the path under root/), DEVPATH, BUS, CLASS, DRIVER,
 * DEVNAME (a /dev path), PATH, any extra KEY=VALUE given, and the device's
 * uevent properties (which never override the others, and never set a
 * variable that changes how a program, its loader or a shell runs: LD_*,
 * BASH_*, MALLOC_*, GLIBC_*, ENV, IFS, HOME, TMPDIR, PYTHONPATH, ...: see
 * env_is_dangerous()). Variables the device has no value for are left out.
 * Nothing else: no inherited variable.
 */
#ifndef DM_HOOKENV_H
#define DM_HOOKENV_H

#include "core/model.h"

#include <stddef.h>

/* *ret is a NULL-terminated environment; free it with dm_strv_free().
 * Reads the model under its lock; call it without the lock. */
int dm_hook_env(struct dm_device *dev, const char *action, const char *driver,
		const char *const *extra, char ***ret);

/* Splits a command line on blanks, honouring '...' and "..." (no escapes,
 * no expansions). -EBADMSG for an unterminated quote. *ret is
 * NULL-terminated, *ret_n words long. */
int dm_split_command(const char *s, char ***ret, size_t *ret_n);

void dm_strv_free(char **v);

#endif
