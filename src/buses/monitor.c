/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "monitor.h"

#include "drivers/helper.h"
#include "drivers/hookenv.h"
#include "drivers/kernel.h"
#include "log.h"

#include <errno.h>
#include <libudev.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct dm_monitor {
	struct dm_model *model;
	const struct dm_source_ops *const *fillers;
	dm_monitor_done_fn done;
	void *data;
	struct udev *udev;
	struct udev_monitor *mon;
	int wake_fd;
	pthread_t thread;
	bool running;
	struct dm_helper *helper;
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
}

/* bind/unbind: the kernel driver changed; move the device between proxies
 * (a user driver that holds it keeps it). */
static void apply_binding(struct dm_monitor *mon, struct udev_device *d, const char *devpath)
{
	struct dm_device *dev = dm_model_find_devpath(mon->model, devpath);
	if (!dev)
		return;
	const char *driver = udev_device_get_driver(d);
	dm_model_read_lock(mon->model);
	struct dm_driver *bound = dm_driver_ref(dm_device_get_driver_locked(dev));
	struct dm_bus *bus = dm_device_get_bus_locked(dev);
	dm_model_unlock(mon->model);
	if (bound && dm_driver_get_kind(bound) == DM_DRIVER_KERNEL)
		dm_device_release_driver(dev);
	dm_driver_unref(bound);
	dm_device_set_kernel_driver(dev, driver);
	if (driver && bus) {
		struct dm_driver *drv = dm_bus_find_driver(bus, driver);
		if (!drv && dm_kernel_driver_new(driver, &drv) == 0 &&
		    dm_driver_register(bus, drv) < 0) {
			dm_driver_unref(drv);
			drv = NULL;
		}
		dm_driver_unref(drv);
	}
	dm_device_attach(dev);
	dm_device_unref(dev);
}

static void apply(struct dm_monitor *mon, struct udev_device *d)
{
	const char *action = udev_device_get_action(d);
	const char *devpath = udev_device_get_devpath(d);
	const char *syspath = udev_device_get_syspath(d);
	if (!action || !devpath || !syspath)
		return;
	uint64_t seqnum = udev_device_get_seqnum(d);
	if (strcmp(action, "remove") == 0) {
		apply_remove(mon, devpath, seqnum);
	} else if (strcmp(action, "bind") == 0 || strcmp(action, "unbind") == 0) {
		apply_binding(mon, d, devpath);
	} else {
		/* add, change, move, online, offline: record it again */
		size_t added = 0;
		int r = dm_scan_device(mon->model, syspath, mon->fillers, &added);
		if (r < 0)
			log_warn("%s %s: %s", action, devpath, strerror(-r));
		struct dm_device *dev = mon->helper && (strcmp(action, "add") == 0 ||
							strcmp(action, "change") == 0)
						? dm_model_find_devpath(mon->model, devpath)
						: NULL;
		if (dev) {
			dm_helper_queue_device(mon->helper, dev, action, seqnum);
			dm_device_unref(dev);
		}
	}
	log_debug("hotplug: %s %s", action, devpath);
	if (mon->done)
		mon->done(action, devpath, seqnum, mon->data);
}

static void *monitor_thread(void *data)
{
	struct dm_monitor *mon = data;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL); /* signals are the FUSE loop's */
	struct pollfd fds[2] = {
		{ .fd = udev_monitor_get_fd(mon->mon), .events = POLLIN },
		{ .fd = mon->wake_fd, .events = POLLIN },
	};
	for (;;) {
		if (poll(fds, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			log_err("hotplug: poll: %s; no more live updates", strerror(errno));
			break;
		}
		if (fds[1].revents)
			break;
		struct udev_device *d;
		while ((d = udev_monitor_receive_device(mon->mon))) {
			apply(mon, d);
			udev_device_unref(d);
		}
	}
	return NULL;
}

int dm_monitor_new(struct dm_model *m, const struct dm_source_ops *const *fillers,
		   dm_monitor_done_fn done, void *data, struct dm_monitor **ret)
{
	struct dm_monitor *mon = calloc(1, sizeof(*mon));
	if (!mon)
		return -ENOMEM;
	*mon = (struct dm_monitor){ .model = m, .fillers = fillers, .done = done, .data = data,
				    .wake_fd = -1 };
	int r = -ENOMEM;
	mon->udev = udev_new();
	if (!mon->udev)
		goto out_free;
	mon->mon = udev_monitor_new_from_netlink(mon->udev, "udev");
	if (!mon->mon) {
		r = -errno ?: -EIO;
		goto out_udev;
	}
	/* a burst must not overflow the socket (a lost event costs a rescan) */
	udev_monitor_set_receive_buffer_size(mon->mon, 128 * 1024 * 1024);
	r = udev_monitor_enable_receiving(mon->mon);
	if (r < 0)
		goto out_mon;
	mon->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (mon->wake_fd < 0) {
		r = -errno;
		goto out_mon;
	}
	*ret = mon;
	return 0;

out_mon:
	udev_monitor_unref(mon->mon);
out_udev:
	udev_unref(mon->udev);
out_free:
	free(mon);
	return r;
}

int dm_monitor_run(struct dm_monitor *mon)
{
	int r = -pthread_create(&mon->thread, NULL, monitor_thread, mon);
	if (r == 0)
		mon->running = true;
	return r;
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
	udev_monitor_unref(mon->mon);
	udev_unref(mon->udev);
	free(mon);
}
