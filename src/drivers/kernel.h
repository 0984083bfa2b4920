/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kernel.h - proxies for kernel drivers. A device the kernel bound to a
 * driver is bound, in the model, to a "kernel" driver object of the same
 * name. Its suspend lets the kernel runtime-suspend the device: it writes
 * "auto" to the device's power/control (and 0 to power/autosuspend_delay_ms
 * where there is one), after saving both, in memory and in the transition
 * record (dm_device_keep_pm_state()); its resume writes back what it saved,
 * control last, or, after a restart, what the record kept. Devices without
 * runtime-PM files need nothing.
 * Every sysfs access goes through the runner (timed, logged, bounded).
 */
#ifndef DM_KERNEL_DRIVER_H
#define DM_KERNEL_DRIVER_H

#include "core/model.h"

/* The longest kernel driver name driverfsd takes (binding requests,
 * persisted bindings, KernelDriver=): what sysfs's driver directories and
 * module names have, with room to spare (the kernel's module names stop at
 * 55 bytes). */
#define DM_KERNEL_DRIVER_NAME_MAX 64

/* The timeout of each sysfs write, in milliseconds. */
#define DM_KERNEL_PM_TIMEOUT_MS 5000

/* A new, unregistered kernel proxy named @name. */
int dm_kernel_driver_new(const char *name, struct dm_driver **ret);

#endif
