/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * logind.h - system sleep: driverfsd holds a logind "delay" inhibitor for
 * sleep; on PrepareForSleep(true) it suspends the whole tree and then
 * releases the inhibitor so the system may sleep; on PrepareForSleep(false)
 * it resumes the tree and takes a new inhibitor.
 *
 * It talks to org.freedesktop.login1 on the system bus (the address in
 * $DBUS_SYSTEM_BUS_ADDRESS when set) through sd-bus, on a thread of its own;
 * the transitions run on that thread, never in a FUSE handler. After each
 * transition it reports through sd_notify STATUS= ("sleep: suspended: 0",
 * "sleep: resumed: 0", with the transition's result as -errno).
 */
#ifndef DM_LOGIND_H
#define DM_LOGIND_H

#include "pm/pm.h"

struct dm_logind;

/* -errno when there is no system bus or no logind: the daemon then runs
 * without system sleep integration. */
int dm_logind_start(struct dm_pm *pm, struct dm_logind **ret);
/* Stops the thread and drops the inhibitor. NULL is fine. */
void dm_logind_stop(struct dm_logind *l);

#endif
