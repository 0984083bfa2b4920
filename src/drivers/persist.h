/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * persist.h - bindings kept across boots and replugs (docs/design.md §7.5).
 *
 * A request made with "persist" (driverfsctl bind --persist) that succeeds
 * is recorded in the state file (driverfsd.conf's [Binding] PersistFile=,
 * default DM_PERSIST_FILE), by bus and device name (the place: a PCI
 * slot, a USB port's interface) and by the identity of the device there:
 * one "BUS NAME DRIVER IDENTITY" line each, DRIVER "none" for a device
 * kept unbound, IDENTITY "pci:VVVV:DDDD:SVVV:SDDD" (vendor, device,
 * subsystem vendor and device) or "usb:VVVV:PPPP[:SERIAL]" (the USB
 * device's idVendor, idProduct and serial, an interface's being its
 * device's; no serial: vendor and product alone), the serial encoded
 * (bytes other than letters, digits, '.', '_' and '-' as %XX). A device of
 * another bus has no identity, nor does an older "BUS NAME DRIVER" line
 * (which an older reader still takes, and which rejects the four-word
 * lines rather than apply them to whatever device is there): such a
 * record names whatever device is at its place, and takes that device's
 * identity the first time it is found in force there (applied or bound
 * so already), the file rewritten then. "default persist" removes the
 * line. The file is rewritten whole (a temporary file renamed over it) at
 * each change, and read at start, where it must be root's (trust.h).
 *
 * A record is applied only to the device it names: another device at its
 * place (another identity, or one that cannot be read) is left as the
 * kernel bound it, logged once, and the bindings file says
 * "other-device". At start each recorded device present is applied by
 * the start's thread, before the mount is served; when a recorded device
 * appears (hotplug add: the kernel has bound its own driver by then), the
 * monitor hands it to the persist worker (its own thread, started at the
 * first such add), so the monitor's next events do not wait for the
 * transaction, in-use checks included (a refusal is logged). The worker
 * holds a reference to each device queued; one removed before its turn is
 * skipped; a place queued again (a device that replugs in a loop) keeps
 * one entry, its newest device.
 */
#ifndef DM_PERSIST_H
#define DM_PERSIST_H

#include "binding.h"
#include "core/model.h"

#define DM_PERSIST_FILE "/var/lib/driverfsd/bindings"

struct dm_persist;

/* Persistence on top of binding: the records of the state file @path
 * (NULL: the default), applied through @b (at start, on hotplug), which
 * tells persistence of each request made with "persist" (its observer,
 * set here: binding never calls persistence). @b NULL: records kept and
 * written, none applied (the unit tests). The hotplug monitor's adds and
 * the bindings file find it through the model's binder. 0 or -ENOMEM. */
int dm_persist_new(struct dm_binder *b, const char *path, struct dm_persist **ret);
/* Stops the worker, unregisters the observer, frees; NULL is nothing. */
void dm_persist_free(struct dm_persist *ps);

/* Reads the state file (its records replace those held). A missing file
 * is none. Bad lines are logged (FILE:LINE) and skipped. 0 or -errno (a
 * file anyone but root could change: -EPERM). */
int dm_persist_load(struct dm_persist *ps);

/* Records @driver ("none": kept unbound) for the device @dev, @name of
 * @bus, with its identity, or with @driver NULL forgets it; rewrites the
 * file (dm_replace_file(): what is not a regular file is refused). 0 or
 * -errno, its reason in @msg (@size bytes). */
int dm_persist_set(struct dm_persist *ps, struct dm_device *dev, const char *bus, const char *name,
		   const char *driver, char *msg, size_t size);

/* Records @numvfs VFs on @driver (NULL: the kernel's own probe) for the
 * PCI PF @pf named @name, with its identity: a "sriov pci NAME N DRIVER
 * IDENTITY" line, applied (dm_sriov_request()) where the binding records
 * are, after the PF's own. 0 or -errno, its reason in @msg. */
int dm_persist_set_sriov(struct dm_persist *ps, struct dm_device *pf, const char *name, int numvfs,
			 const char *driver, char *msg, size_t size);
/* Forgets the VFs recorded for the PF @name. 0 or -errno. */
int dm_persist_forget_sriov(struct dm_persist *ps, const char *name, char *msg, size_t size);

/* Applies every recorded binding whose device is in @m and bound
 * otherwise, and every PF's recorded VFs not in force. */
void dm_persist_apply_all(struct dm_persist *ps, struct dm_model *m);

/* A device appeared (hotplug add): its recorded binding, if any, is
 * queued for the worker, which applies it if the device is still there
 * and is the one the record names. */
void dm_persist_device_added(struct dm_device *dev);

/* Stops the worker (waiting for an apply under way) and drops what was
 * queued; nothing is queued after. At exit, the monitor stopped first. */
void dm_persist_stop(struct dm_persist *ps);

/* A serial's most bytes kept in an identity (the rest is not compared),
 * and an identity's size with its NUL. */
#define DM_PERSIST_SERIAL_MAX 256
#define DM_PERSIST_ID_MAX (16 + 3 * DM_PERSIST_SERIAL_MAX)

/* The identity of @dev, on @bus, into @buf (DM_PERSIST_ID_MAX bytes): 1,
 * 0 when it has none (another bus, or ids unreadable or not ids), -ENODEV
 * when it was removed. */
int dm_persist_identity(struct dm_device *dev, const char *bus, char *buf, size_t size);
/* @len bytes of @s (at most DM_PERSIST_SERIAL_MAX) encoded into @buf of
 * @size bytes, NUL-terminated, as an identity has a serial; its length. */
size_t dm_persist_encode_serial(const char *s, size_t len, char *buf, size_t size);
/* Whether @id is an identity as a state file may have it; its one
 * spelling into @buf (DM_PERSIST_ID_MAX bytes) then. */
bool dm_persist_normalize_id(const char *id, char *buf, size_t size);

/* the bindings file (0444): "BUS NAME DRIVER STATE" per recorded binding,
 * STATE "in-force", "absent", "bound-to:X", or "other-device" (a device
 * the record does not name is at its place). */
extern const struct dm_attribute_group dm_persist_root_group;

#endif
