/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hookenv.h - what hooks and helpers are run with.
 *
 * The environment of a call for a device (docs/design.md §7): ACTION,
 * DRIVERFS_PATH (the path under root/), DEVPATH, BUS, CLASS, DRIVER,
 * DEVNAME (a /dev path), PATH, any extra KEY=VALUE given, and the device's
 * uevent properties (only from a text that passes dm_uevent_check(); they
 * never override the others, and never set a variable that changes how a
 * program, its loader, a shell or an interpreter runs: see
 * dm_hook_env_name_is_refused()). Variables the device has no value for are
 * left out.
 * Nothing else: no inherited variable.
 */
#ifndef DM_HOOKENV_H
#define DM_HOOKENV_H

#include "core/model.h"

#include <stdbool.h>
#include <stddef.h>

/* *ret is a NULL-terminated environment; free it with dm_strv_free().
 * Reads the model under its lock; call it without the lock. */
int dm_hook_env(struct dm_device *dev, const char *action, const char *driver,
		const char *const *extra, char ***ret);

/*
 * Whether @key (@klen bytes) is a name the kernel or udev could give a
 * property: upper-case letters, digits and '_', not starting with a digit.
 */
bool dm_uevent_key_is_valid(const char *key, size_t klen);

/*
 * Whether a device's sysfs uevent text can be trusted, before libudev (which
 * parses the same text into properties and its devname) or a hook is given
 * it. The kernel prints device-supplied strings (an input device's NAME=,
 * HID_NAME=) into it unescaped, so a device name with a newline adds lines
 * of its own. The text fails, -EBADMSG, when a line is not KEY=VALUE with
 * a valid key (dm_uevent_key_is_valid()), a value opened with '"' is not
 * closed at the end of its line (or one closed was not opened), a value holds a control character, a key
 * comes twice, or DEVNAME is not a relative path below /dev (absolute, or
 * with a ".." component). When it fails, none of it is trusted: the caller
 * keeps only what a clean source gives (the netlink event, udevd's
 * database) and logs it. The text may end with one newline.
 */
int dm_uevent_check(const char *text);

/*
 * Whether a device's uevent text agrees with its device number @dev (its
 * sysfs "dev" attribute, "MAJOR:MINOR", in which no device string is
 * printed; NULL when the device has none). The kernel writes MAJOR, MINOR
 * and DEVNAME only for a device with a number, so a text that has them and
 * no @dev, or whose MAJOR and MINOR are missing or not @dev, carries lines a
 * device string injected: a name "x\"\nDEVNAME=sda\nY=\"" passes
 * dm_uevent_check() and would give an input device the node /dev/sda.
 * -EBADMSG then (treat the text as one that fails dm_uevent_check()), 0
 * otherwise. Pure; call it on a text that passed dm_uevent_check().
 */
int dm_uevent_check_devt(const char *text, const char *dev);

/* Whether the numbers @major and @minor (decimal, as the kernel writes them
 * in a uevent) are the device number @dev ("MAJOR:MINOR", as its sysfs
 * "dev" attribute, a final newline allowed). NULL for any: false. */
bool dm_uevent_devt_is(const char *major, const char *minor, const char *dev);

/* 0 when @devname is what the kernel gives as DEVNAME: a path relative to
 * /dev with no empty, "." or ".." component; -EINVAL otherwise. */
int dm_uevent_check_devname(const char *devname);

/*
 * The environment of a call, pure: @vars (the daemon's KEY=VALUE, in order;
 * NULL-terminated, may be NULL) and then the properties of @uevent (a
 * device's uevent text, may be NULL) that may join them: none unless the
 * text passes dm_uevent_check(), and of those only a name udev or the
 * kernel could give (upper case, digits, '_') that is not the daemon's
 * (it always wins: ACTION, DEVNAME, DEVPATH, SUBSYSTEM, SEQNUM, ...), not
 * refused (dm_hook_env_name_is_refused()), with a value free of control
 * characters. *ret as for dm_hook_env().
 */
int dm_hook_env_build(const char *const *vars, const char *uevent, char ***ret);

/* Whether a device may not set the variable @key (@klen bytes): one that
 * changes how a program, its loader, a shell or an interpreter runs. The
 * list of names and prefixes, and why, is in hookenv.c. */
bool dm_hook_env_name_is_refused(const char *key, size_t klen);

/* The refused prefixes (@prefixes) or names, *@ret_n of them: for tests. */
const char *const *dm_hook_env_refused_list(bool prefixes, size_t *ret_n);

/* Splits a command line on blanks, honouring '...' and "..." (no escapes,
 * no expansions). -EBADMSG for an unterminated quote. *ret is
 * NULL-terminated, *ret_n words long. */
int dm_split_command(const char *s, char ***ret, size_t *ret_n);

void dm_strv_free(char **v);

#endif
