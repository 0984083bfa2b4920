/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "monitor.h"

#include "buses/sources.h"
#include "buses/udev.h"
#include "core/thread.h"
#include "drivers/hookenv.h"
#include "drivers/persist.h"
#include "helper.h"
#include "util/log.h"

#include <errno.h>
#include <libudev.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#define GAP_GRACE_MS 500
#define GAP_MAX_MISSING 64
/* the most events recorded at once */
#define RUN_MAX 256

/* The actions the metrics file counts events by: the kernel's, and "other"
 * for any a uevent may claim (its text is not a label). */
static const char *const action_names[] = {
	"add", "remove", "change", "move", "bind", "unbind", "online", "offline", "other",
};
#define N_ACTIONS (sizeof(action_names) / sizeof(action_names[0]))
enum { RESCAN_OVERRUN, RESCAN_SEQNUM_GAP, N_RESCANS };
static const char *const rescan_names[N_RESCANS] = { "overrun", "seqnum_gap" };

static size_t action_index(const char *action)
{
	for (size_t i = 0; i < N_ACTIONS - 1; i++)
		if (strcmp(action, action_names[i]) == 0)
			return i;
	return N_ACTIONS - 1;
}

struct dm_monitor {
	struct dm_model *model;
	/* what a rescan runs (all) and what completes a run's records
	 * (fillers); the caller's, for the monitor's life */
	const struct dm_scan_sources *sources;
	dm_monitor_done_fn done;
	void *data;
	struct udev *udev;
	struct udev_monitor *mon;
	/* the hwdb, mapped once for the monitor's life, not per run (a
	 * rescan maps it again: it also catches up with an updated database) */
	struct dm_source_cache cache;
	int wake_fd;
	pthread_t thread;
	bool running;
	struct dm_helper *helper;
	/* Lost events. udevd's workers run in parallel, so its events may come
	 * out of order: a seqnum skipped is only lost when it has not come
	 * within GAP_GRACE_MS. Too many at once, or an overrun of the socket
	 * (ENOBUFS), and the rescan comes at once. */
	uint64_t last_seqnum; /* the highest seen; 0 before the first */
	uint64_t missing[GAP_MAX_MISSING];
	size_t n_missing;
	bool lost; /* rescan without waiting */
	uint64_t gap_deadline_ms; /* when the missing ones are given up */
	uint64_t first_missing; /* for the report */
	/* events applied and not reported yet, with their references: a run
	 * of events is reported at once (one wait for the mount, one
	 * notification) */
	struct udev_device *pending[RUN_MAX];
	size_t n_pending;
	/* the metrics file (dm_monitor_metrics()): written on the monitor's
	 * thread, read by any */
	atomic_uint_fast64_t events[N_ACTIONS];
	atomic_uint_fast64_t rescans[N_RESCANS];
	atomic_uint_fast64_t rescanned[3]; /* devices added, removed, changed */
};

void dm_monitor_set_helper(struct dm_monitor *mon, struct dm_helper *helper)
{
	mon->helper = helper;
}

void dm_helper_queue_device(struct dm_helper *helper, struct dm_device *dev, const char *action,
			    uint64_t seqnum)
{
	char seq[40], **env;
	snprintf(seq, sizeof(seq), "SEQNUM=%llu", (unsigned long long)seqnum);
	const char *extra[] = { seq, NULL };
	dm_model_read_lock(dm_device_get_model(dev));
	struct dm_driver *drv = dm_driver_ref(dm_device_get_driver_locked(dev));
	dm_model_unlock(dm_device_get_model(dev));
	int r = dm_hook_env(dev, action, drv ? dm_driver_get_name(drv) : NULL, extra, &env);
	dm_driver_unref(drv);
	if (r < 0) {
		log_warn("hotplug helper %s %s: %s; not run", action, dm_device_get_name(dev),
			 strerror(-r));
		return;
	}
	dm_helper_queue(helper, action, dm_device_get_devpath(dev) ? dm_device_get_devpath(dev)
								  : dm_device_get_name(dev), env);
}

static void apply_remove(struct dm_monitor *mon, const char *devpath, uint64_t seqnum)
{
	struct dm_device *dev = dm_model_find_devpath(mon->model, devpath);
	if (!dev)
		return; /* not ours, or gone with its parent already */
	/* the helper learns what the device was: read it before it goes */
	if (mon->helper)
		dm_helper_queue_device(mon->helper, dev, "remove", seqnum);
	dm_device_del(dev);
	dm_device_unref(dev);
	/* a devlink device's removal takes its link (a device's own went
	 * with it) */
	if (strncmp(devpath, "/devices/virtual/devlink/", 25) == 0)
		(void)dm_scan_sync_links(mon->model);
}

/*
 * bind/unbind: the kernel driver changed. A bind ends a user driver's claim
 * made under another kernel driver at once (nothing may write behind the
 * new one) and offers the device again. An unbind does not: the kernel
 * sends one at an admin's unbind and at every removal of a bound device
 * alike (a PCI hot-unplug unbinds before device_del(), in
 * pci_stop_and_remove_bus_device(); device_del() unbinds what is still
 * bound), the same event with the same sysfs, the remove following when
 * it does. So the claim is kept, stale (DM_DEV_F_CLAIM_STALE), until the
 * kernel's next word on the device: its remove (the one remove(), as the
 * device goes) or a bind (ended here, or holding again when it is the
 * driver it was made under); and whatever acts through it first (a
 * suspend, the end of a binding transaction) ends it before acting
 * (docs/design.md §9.1).
 */
static void apply_binding(struct dm_monitor *mon, struct udev_device *d, const char *devpath,
			  bool unbind)
{
	struct dm_device *dev = dm_model_find_devpath(mon->model, devpath);
	if (!dev)
		return;
	int r = dm_scan_set_kernel_driver(dev, unbind ? NULL : udev_device_get_driver(d));
	if (r < 0)
		log_warn("%s: kernel driver: %s", devpath, strerror(-r));
	/* the kernel's uevent text gained or lost DRIVER= */
	r = dm_udev_refresh_uevent(dev, d);
	if (r < 0)
		log_warn("%s: uevent: %s", devpath, strerror(-r));
	if (unbind) {
		if (dm_device_claim_is_stale(dev))
			log_debug("%s: the kernel unbound its driver: its user driver's claim is "
				  "kept until the device's next event", devpath);
	} else if (dm_device_recheck_claim(dev) > 0) {
		log_info("%s: the kernel's binding changed: its user driver let it go", devpath);
	}
	dm_device_unref(dev);
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Notes @seqnum and the ones it skipped; a late one is crossed off. */
static void seqnum_track(struct dm_monitor *mon, uint64_t seqnum)
{
	if (seqnum == 0)
		return; /* a sender without seqnums */
	if (mon->last_seqnum == 0 || seqnum == mon->last_seqnum + 1) {
		mon->last_seqnum = seqnum;
		return;
	}
	if (seqnum > mon->last_seqnum) {
		if (mon->n_missing == 0 && !mon->lost) {
			mon->gap_deadline_ms = now_ms() + GAP_GRACE_MS;
			mon->first_missing = mon->last_seqnum + 1;
		}
		for (uint64_t s = mon->last_seqnum + 1; s < seqnum && !mon->lost; s++) {
			if (mon->n_missing == GAP_MAX_MISSING)
				mon->lost = true;
			else
				mon->missing[mon->n_missing++] = s;
		}
		mon->last_seqnum = seqnum;
		return;
	}
	for (size_t i = 0; i < mon->n_missing; i++) {
		if (mon->missing[i] == seqnum) {
			mon->missing[i] = mon->missing[--mon->n_missing];
			break;
		}
	}
}

static void rescan_device(struct dm_device *dev, const char *action, void *data)
{
	struct dm_monitor *mon = data;
	if (mon->helper)
		dm_helper_queue_device(mon->helper, dev, action, 0);
}

/* Events were lost: the tree is reconciled with sysfs as a whole. */
static void rescan(struct dm_monitor *mon, const char *why, int reason)
{
	struct dm_scan_report rep = { .device = rescan_device, .data = mon };
	atomic_fetch_add_explicit(&mon->rescans[reason], 1, memory_order_relaxed);
	log_info("hotplug: %s; rescanning", why);
	int r = dm_scan_reconcile(mon->model, mon->sources, &rep);
	if (r < 0)
		log_err("hotplug: rescan: %s; the tree may be stale", strerror(-r));
	mon->n_missing = 0;
	mon->lost = false;
	char what[160];
	snprintf(what, sizeof(what), "%s added=%zu removed=%zu changed=%zu", why, rep.added,
		 rep.removed, rep.changed);
	log_info("hotplug: rescan: %zu added, %zu removed, %zu changed", rep.added, rep.removed,
		 rep.changed);
	atomic_fetch_add_explicit(&mon->rescanned[0], rep.added, memory_order_relaxed);
	atomic_fetch_add_explicit(&mon->rescanned[1], rep.removed, memory_order_relaxed);
	atomic_fetch_add_explicit(&mon->rescanned[2], rep.changed, memory_order_relaxed);
	struct dm_hotplug_event ev = { "rescan", what, mon->last_seqnum };
	if (mon->done)
		mon->done(&ev, 1, mon->data);
}

/* remove, bind and unbind are applied one by one; the rest is recorded
 * again, runs of them at once (apply_records). */
static bool is_recorded(const char *action)
{
	return strcmp(action, "remove") != 0 && strcmp(action, "bind") != 0 &&
	       strcmp(action, "unbind") != 0;
}

/* Reports the events applied so far, in their order, and drops them. */
static void report_pending(struct dm_monitor *mon)
{
	struct dm_hotplug_event evs[RUN_MAX];
	for (size_t i = 0; i < mon->n_pending; i++) {
		struct udev_device *d = mon->pending[i];
		evs[i] = (struct dm_hotplug_event){ udev_device_get_action(d),
						    udev_device_get_devpath(d),
						    udev_device_get_seqnum(d) };
		log_debug("hotplug: %s %s", evs[i].action, evs[i].devpath);
	}
	if (mon->done && mon->n_pending)
		mon->done(evs, mon->n_pending, mon->data);
	for (size_t i = 0; i < mon->n_pending; i++)
		udev_device_unref(mon->pending[i]);
	mon->n_pending = 0;
}

/* @d was applied: it is reported with the rest of its run. Takes the
 * reference. */
static void report(struct dm_monitor *mon, struct udev_device *d)
{
	if (mon->n_pending == RUN_MAX)
		report_pending(mon);
	mon->pending[mon->n_pending++] = d;
}

/*
 * add, change, move, online, offline: the devices are recorded again, all
 * of a run of such events at once (a burst costs one pass of each source,
 * not one per event), then each event is queued for the report in its
 * order. Takes the references.
 */
static void apply_records(struct dm_monitor *mon, struct udev_device **ds, size_t *n)
{
	if (*n == 0)
		return;
	int r = dm_udev_scan_devices(mon->model, ds, *n, mon->sources, &mon->cache);
	if (r < 0)
		log_warn("hotplug: %zu events not applied: %s", *n, strerror(-r));
	for (size_t i = 0; i < *n; i++) {
		const char *action = udev_device_get_action(ds[i]);
		bool add = strcmp(action, "add") == 0;
		struct dm_device *dev = add || (mon->helper && strcmp(action, "change") == 0)
						? dm_model_find_devpath(mon->model,
									udev_device_get_devpath(ds[i]))
						: NULL;
		if (dev && mon->helper)
			dm_helper_queue_device(mon->helper, dev, action, udev_device_get_seqnum(ds[i]));
		/* the kernel bound its own driver before the event: a binding
		 * persisted for the device is applied again, by the persist
		 * worker (persist.h) */
		if (dev && add)
			dm_persist_device_added(dev);
		if (dev)
			dm_device_unref(dev);
		report(mon, ds[i]);
	}
	*n = 0;
}

/* remove, bind, unbind. Takes the reference. */
static void apply(struct dm_monitor *mon, struct udev_device *d)
{
	const char *action = udev_device_get_action(d);
	const char *devpath = udev_device_get_devpath(d);
	if (strcmp(action, "remove") == 0)
		apply_remove(mon, devpath, udev_device_get_seqnum(d));
	else
		apply_binding(mon, d, devpath, strcmp(action, "unbind") == 0);
	report(mon, d);
}

/* Applies what the socket holds, in order, until it is empty, and reports
 * it. Returns -ENOBUFS when it overran. */
static int receive_all(struct dm_monitor *mon)
{
	struct udev_device *run[RUN_MAX];
	size_t n = 0;
	for (;;) {
		errno = 0;
		struct udev_device *d = udev_monitor_receive_device(mon->mon);
		if (!d)
			break;
		const char *action = udev_device_get_action(d);
		if (!action || !udev_device_get_devpath(d) || !udev_device_get_syspath(d)) {
			udev_device_unref(d);
			continue;
		}
		seqnum_track(mon, udev_device_get_seqnum(d));
		atomic_fetch_add_explicit(&mon->events[action_index(action)], 1,
					  memory_order_relaxed);
		/* a renamed device (a network interface): the old path goes first */
		const char *old = udev_device_get_property_value(d, "DEVPATH_OLD");
		if (strcmp(action, "move") == 0 && old) {
			apply_records(mon, run, &n);
			apply_remove(mon, old, udev_device_get_seqnum(d));
		}
		/* a driver registered or unregistered (a module loaded or
		 * unloaded): no device, its proxy follows */
		if (strncmp(udev_device_get_devpath(d), "/bus/", 5) == 0) {
			apply_records(mon, run, &n);
			if (strcmp(action, "add") == 0 || strcmp(action, "remove") == 0) {
				int r = dm_scan_driver_event(mon->model, udev_device_get_devpath(d),
							     action[0] == 'a');
				if (r < 0 && r != -ESTALE)
					log_warn("hotplug: %s %s: %s", action,
						 udev_device_get_devpath(d), strerror(-r));
			}
			report(mon, d);
			continue;
		}
		if (is_recorded(action)) {
			run[n++] = d;
			if (n == RUN_MAX)
				apply_records(mon, run, &n);
			continue;
		}
		apply_records(mon, run, &n);
		apply(mon, d);
	}
	int r = errno == ENOBUFS ? -ENOBUFS : 0;
	apply_records(mon, run, &n);
	report_pending(mon);
	return r;
}

static void *monitor_thread(void *data)
{
	struct dm_monitor *mon = data;
	struct pollfd fds[2] = {
		{ .fd = udev_monitor_get_fd(mon->mon), .events = POLLIN },
		{ .fd = mon->wake_fd, .events = POLLIN },
	};
	for (;;) {
		int timeout = -1;
		if (mon->n_missing) {
			uint64_t now = now_ms();
			timeout = now >= mon->gap_deadline_ms ? 0 : (int)(mon->gap_deadline_ms - now);
		}
		int n = poll(fds, 2, timeout);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			log_err("hotplug: poll: %s; no more live updates", strerror(errno));
			break;
		}
		if (fds[1].revents)
			break;
		if (receive_all(mon) == -ENOBUFS) {
			/* the socket overran: what was lost is unknown */
			rescan(mon, "overrun", RESCAN_OVERRUN);
			mon->last_seqnum = 0; /* the next event starts the count again */
		} else if (mon->lost || (mon->n_missing && now_ms() >= mon->gap_deadline_ms)) {
			char why[64];
			snprintf(why, sizeof(why), "seqnum-gap %llu", (unsigned long long)mon->first_missing);
			rescan(mon, why, RESCAN_SEQNUM_GAP);
		}
	}
	return NULL;
}

#define DEFAULT_BUFFER (128 * 1024 * 1024)

int dm_monitor_new(struct dm_model *m, const struct dm_scan_sources *sources,
		   const struct dm_monitor_config *cfg, dm_monitor_done_fn done, void *data,
		   struct dm_monitor **ret)
{
	struct dm_monitor *mon = calloc(1, sizeof(*mon));
	if (!mon)
		return -ENOMEM;
	*mon = (struct dm_monitor){ .model = m, .sources = sources, .done = done, .data = data,
				    .wake_fd = -1 };
	int r = -ENOMEM, size = cfg && cfg->buffer > 0 ? cfg->buffer : DEFAULT_BUFFER;
	mon->udev = udev_new();
	if (!mon->udev)
		goto out_free;
	mon->mon = udev_monitor_new_from_netlink(mon->udev, cfg && cfg->kernel ? "kernel" : "udev");
	if (!mon->mon) {
		r = -errno ?: -EIO;
		goto out_udev;
	}
	/* a burst must not overflow the socket (a lost event costs a rescan) */
	r = udev_monitor_set_receive_buffer_size(mon->mon, size);
	if (r < 0)
		log_warn("hotplug: receive buffer of %d bytes: %s", size, strerror(-r));
	r = udev_monitor_enable_receiving(mon->mon);
	if (r < 0)
		goto out_mon;
	mon->cache.hwdb = udev_hwdb_new(mon->udev); /* NULL: the sources open their own */
	mon->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (mon->wake_fd < 0) {
		r = -errno;
		goto out_mon;
	}
	*ret = mon;
	return 0;

out_mon:
	udev_hwdb_unref(mon->cache.hwdb);
	udev_monitor_unref(mon->mon);
out_udev:
	udev_unref(mon->udev);
out_free:
	free(mon);
	return r;
}

int dm_monitor_run(struct dm_monitor *mon)
{
	int r = dm_thread_start(&mon->thread, 0, monitor_thread, mon);
	if (r == 0)
		mon->running = true;
	return r;
}

void dm_monitor_metrics(struct dm_metrics *w, void *data)
{
	struct dm_monitor *mon = data;
	dm_metrics_family(w, "driverfsd_hotplug_events_total", "counter",
			  "Uevents received, by action (other: an action the kernel does not send).");
	for (size_t i = 0; i < N_ACTIONS; i++)
		dm_metrics_sample(w, "driverfsd_hotplug_events_total",
				  (double)atomic_load_explicit(&mon->events[i], memory_order_relaxed),
				  "action", action_names[i], NULL);
	dm_metrics_family(w, "driverfsd_hotplug_rescans_total", "counter",
			  "Whole-tree rescans after lost uevents, by cause (a socket overrun, "
			  "a sequence number that did not come).");
	for (size_t i = 0; i < N_RESCANS; i++)
		dm_metrics_sample(w, "driverfsd_hotplug_rescans_total",
				  (double)atomic_load_explicit(&mon->rescans[i], memory_order_relaxed),
				  "reason", rescan_names[i], NULL);
	static const char *const changes[3] = { "added", "removed", "changed" };
	dm_metrics_family(w, "driverfsd_hotplug_rescanned_devices_total", "counter",
			  "Devices the rescans found added, removed or changed.");
	for (size_t i = 0; i < 3; i++)
		dm_metrics_sample(w, "driverfsd_hotplug_rescanned_devices_total",
				  (double)atomic_load_explicit(&mon->rescanned[i],
							       memory_order_relaxed),
				  "change", changes[i], NULL);
}

void dm_monitor_free(struct dm_monitor *mon)
{
	if (!mon)
		return;
	if (mon->running) {
		uint64_t one = 1;
		if (write(mon->wake_fd, &one, sizeof(one)) < 0)
			log_warn("hotplug: cannot wake the monitor: %s", strerror(errno));
		pthread_join(mon->thread, NULL);
	}
	close(mon->wake_fd);
	udev_hwdb_unref(mon->cache.hwdb);
	udev_monitor_unref(mon->mon);
	udev_unref(mon->udev);
	free(mon);
}
