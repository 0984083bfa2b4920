/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * helper.h - the hotplug helper: the administrator's naming policy, outside
 * the daemon (DESIGN.md section 8). A program run for each add, remove and
 * change of a device, after the model was updated, with the hook
 * environment (hookenv.h) plus ACTION and SEQNUM. Calls for one device run
 * in order, one at a time; calls for different devices run concurrently on
 * a few threads; each has a timeout; a failure is logged, and nothing waits
 * for a helper: not the filesystem, not the hotplug monitor.
 */
#ifndef DM_HELPER_H
#define DM_HELPER_H

#include <stdint.h>

struct dm_helper;

/* Called after each run with the device's devpath, the action and the run's
 * -errno (0: success). */
typedef void (*dm_helper_done_fn)(const char *action, const char *devpath, int result, void *data);

/* @cmdline: the program (an absolute path) and its arguments, split like a
 * hook's. -EINVAL for an empty or relative one, -EBADMSG for bad quoting. */
int dm_helper_new(const char *cmdline, int timeout_ms, dm_helper_done_fn done, void *data,
		  struct dm_helper **ret);
/* Queues a run with @env (a NULL-terminated environment it takes over). */
void dm_helper_queue(struct dm_helper *h, const char *action, const char *devpath, char **env);
/* Waits for the runs under way, drops the queued ones, frees. NULL is fine. */
void dm_helper_free(struct dm_helper *h);

#endif
