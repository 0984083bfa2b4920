/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * sysfs-pm.h - a device's pm/ directory: the kernel's runtime-PM controls
 * of its sysfs power/ directory, passed through. Reads are live; writes are
 * checked first (EINVAL, nothing written, for a bad value) and then written
 * to sysfs through the runner:
 *   pm/control               "auto" | "on"
 *   pm/autosuspend_delay_ms  an integer (milliseconds; negative: never)
 *   pm/wakeup                "enabled" | "disabled"
 *   pm/runtime_status        read-only
 * Each file is there only when sysfs has it.
 */
#ifndef DM_SYSFS_PM_H
#define DM_SYSFS_PM_H

#include "core/model.h"

extern const struct dm_attribute_group dm_sysfs_pm_group;

#endif
