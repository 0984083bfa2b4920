/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * needs.h - the kernel driver an exec driver needs (KernelDriver=,
 * docs/design.md §7.5): a device its [Match] rules take is moved to that
 * kernel driver through the binding transaction, and given back (the
 * binding it had before restored) when the last driver that needed it lets
 * it go (remove, reload, a probe that declined). The moves and give-backs
 * run on a thread of their own: drivers are offered devices under the
 * device mutex, which a transaction takes. Once a move failed, was given
 * back after a declining probe, or found the kernel's binding changed by
 * someone else, the device is not moved again until it is plugged again
 * or the daemon restarts (no fight with root, no loop).
 */
#ifndef DM_NEEDS_H
#define DM_NEEDS_H

#include "binding.h"
#include "core/model.h"

#include <stdbool.h>

/* The moves and give-backs, and the worker that runs them: built on a
 * binder (binding.h), whose transactions they are. The daemon makes one
 * at set-up and hands it to the exec drivers (exec.h). */
struct dm_needs;

/* One on @b, its worker not started. 0 or -ENOMEM. */
int dm_needs_new(struct dm_binder *b, struct dm_needs **ret);
/* Stops it (dm_needs_stop()) and frees it; NULL is nothing. */
void dm_needs_free(struct dm_needs *nd);

/*
 * Called from a probe (device mutex held, model lock not): 0 when @dev is
 * bound to kernel driver @kdriver now (counted as held until
 * dm_needs_release()); -EAGAIN when a move to it was started (the device is
 * offered again when the kernel's uevent comes), -ENODEV when it will not
 * be moved (see the log and the device's binding report), -ENOMEM.
 */
int dm_needs_kernel_driver(struct dm_needs *nd, struct dm_device *dev, const char *kdriver,
			   const char *who);

/* The driver that got 0 above lets @dev go; @declined when its probe did
 * not take the device after all (it is then not moved again). The last
 * one gives the device back. */
void dm_needs_release(struct dm_needs *nd, struct dm_device *dev, bool declined);

/* Moves and give-backs are queued from the start but run only once this
 * was called: the daemon calls it when set up and serving, so no thread of
 * its own writes sysfs while libfuse forks to mount or the main thread
 * sets up (umockdev 0.17's preload, under the tests, saves a thread's
 * signal mask in one global: a thread with every signal blocked trapping a
 * path at the same time as the main thread left the main thread deaf to
 * SIGHUP), and driverfsd --save moves nothing.
 * 0 or -errno (the thread could not start). */
int dm_needs_start(struct dm_needs *nd);

/* While held (a reload: the old drivers go, the new come), no give-back
 * runs: a new driver that needs the same kernel driver keeps the device. */
void dm_needs_hold(struct dm_needs *nd, bool hold);

/* At exit: no more moves or give-backs (the kernel's binding stays as it
 * is, as a persisted one does); waits for the one running. */
void dm_needs_stop(struct dm_needs *nd);

#endif
