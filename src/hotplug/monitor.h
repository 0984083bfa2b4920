/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * monitor.h - hotplug: the udev monitor keeps the model live. On its own
 * thread (never in a library callback), each event is applied to the model:
 *   add      the device (and any ancestor the model lacks) is recorded and
 *            added, its pci/usb values filled, drivers probed;
 *   change   its values are read again;
 *   bind, unbind  it moves between kernel driver proxies;
 *   remove   its subtree is removed, children first, with remove() hooks.
 * Events are reported to @done once applied, in their order, a run of them
 * (what the socket held at once, up to 256) in one call (the daemon then
 * waits for the mount's invalidations and reports the run).
 *
 * No state is lost: when the socket overruns (ENOBUFS) or a seqnum does not
 * come (a gap that later events do not fill within half a second: udevd may
 * deliver out of order), the whole tree is reconciled with sysfs
 * (dm_scan_reconcile()) and @done is called with one event, the action
 * "rescan" and, in place of the devpath, "<why> added=N removed=N
 * changed=N".
 */
#ifndef DM_MONITOR_H
#define DM_MONITOR_H

#include "core/metrics.h"
#include "scan/scan.h"

struct dm_monitor;

struct dm_hotplug_event {
	const char *action;
	const char *devpath;
	uint64_t seqnum; /* 0: none */
};

/* Valid during the call only. */
typedef void (*dm_monitor_done_fn)(const struct dm_hotplug_event *events, size_t n, void *data);

/* Which uevents the monitor hears, on which socket. */
struct dm_monitor_config {
	/* the kernel's own uevents, for a system without udevd; false:
	 * udevd's, once its rules ran */
	bool kernel;
	/* the socket's receive buffer in bytes (as root beyond
	 * net.core.rmem_max; the kernel doubles it); 0: 128 MiB, so that a
	 * burst does not overrun it */
	int buffer;
};

/* Starts listening at once (call it before the first enumeration, so no
 * event falls between the two) and applying events once dm_monitor_run()
 * is called: a run's devices recorded by the udev source and completed by
 * @sources' fillers, a rescan by all of @sources (dm_sources_pick()'s,
 * kept by the caller for the monitor's life). @cfg may be NULL (the
 * defaults). */
int dm_monitor_new(struct dm_model *m, const struct dm_scan_sources *sources,
		   const struct dm_monitor_config *cfg, dm_monitor_done_fn done, void *data,
		   struct dm_monitor **ret);
int dm_monitor_run(struct dm_monitor *mon);
struct dm_helper;
/* Runs @helper (which the monitor does not own) for each add, change and
 * remove, once the model was updated (for a remove: with what the device
 * was, taken before). Set it before dm_monitor_run(). */
void dm_monitor_set_helper(struct dm_monitor *mon, struct dm_helper *helper);
/* Queues the helper's call for @dev (its environment read now). */
void dm_helper_queue_device(struct dm_helper *helper, struct dm_device *dev, const char *action,
			    uint64_t seqnum);
/* the metrics file's source (a dm_metrics_fn, @data the monitor): uevents by
 * action, rescans by cause and what they found. */
void dm_monitor_metrics(struct dm_metrics *w, void *data);
/* Stops the thread and frees. NULL is fine. */
void dm_monitor_free(struct dm_monitor *mon);

#endif
