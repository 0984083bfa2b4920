/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * helper.h - the hotplug helper: the administrator's naming policy, outside
 * the daemon (docs/design.md §9.3). A program run for each add, remove and
 * change of a device, after the model was updated, with the hook
 * environment (hookenv.h) plus ACTION and SEQNUM. Calls for one device run
 * in order, one at a time; calls for different devices run concurrently on
 * a few threads; each has a timeout; a failure is logged, and nothing waits
 * for a helper: not the filesystem, not the hotplug monitor.
 *
 * The queue is bounded (a flapping device, a flood of events: memory must
 * not grow without limit). A device has at most one call waiting: a newer
 * event for a device whose call has not started replaces it (its action
 * and environment), so the helper is run for the device's latest state, as
 * after a udev "settle" -- except that a change of a device whose add has
 * not run is run as that add (the helper has not seen the device yet). A
 * call under way is never replaced: the next one waits for it. Past
 * DM_HELPER_MAX_JOBS calls (waiting and running, all devices), an event of
 * a device with no call waiting is dropped, counted and logged.
 */
#ifndef DM_HELPER_H
#define DM_HELPER_H

#include "core/metrics.h"

#include <stddef.h>
#include <stdint.h>

struct dm_helper;

#define DM_HELPER_MAX_JOBS 1024

struct dm_helper_stats {
	size_t jobs;	 /* calls waiting or running now */
	size_t running;	 /* of those, running */
	uint64_t merged;  /* events that replaced a waiting call */
	uint64_t dropped; /* events not run: the queue was full, or no memory */
	uint64_t succeeded, failed; /* runs ended (failed: dm_run_errno() not 0) */
};

/* Called after each run with the device's devpath, the action and the run's
 * -errno (0: success). */
typedef void (*dm_helper_done_fn)(const char *action, const char *devpath, int result, void *data);

/* @cmdline: the program (an absolute path) and its arguments, split like a
 * hook's. -EINVAL for an empty or relative one, -EBADMSG for bad quoting. */
int dm_helper_new(const char *cmdline, int timeout_ms, dm_helper_done_fn done, void *data,
		  struct dm_helper **ret);
/* Queues a run with @env (a NULL-terminated environment it takes over), or
 * merges it into the device's waiting one, or drops it (see above). Never
 * blocks on a run. */
void dm_helper_queue(struct dm_helper *h, const char *action, const char *devpath, char **env);
/* The queue's counters, taken under its lock. */
void dm_helper_get_stats(struct dm_helper *h, struct dm_helper_stats *ret);
/* the metrics file's source (a dm_metrics_fn, @data the helper): its runs by
 * result, events merged and dropped, calls queued. */
void dm_helper_metrics(struct dm_metrics *w, void *data);
/* Waits for the runs under way, drops the queued ones, frees. NULL is fine. */
void dm_helper_free(struct dm_helper *h);

#endif
