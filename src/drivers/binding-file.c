/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * binding-file.c - a device's binding file (docs/design.md §7.5): a root
 * write is a request the transaction runs (binding.c); a read says why the
 * device is bound as it is, then the report of its last request.
 */
#include "binding.h"
#include "binding-private.h"

#include "modules.h"
#include "runner.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bind_store(struct dm_device *dev, const struct dm_attribute *attr, const char *buf,
		      size_t len)
{
	(void)attr;
	char copy[512];
	struct dm_bind_request req;
	if (len >= sizeof(copy))
		return -EINVAL;
	memcpy(copy, buf, len);
	copy[len] = '\0';
	struct dm_binder *b = dm_binder_of(dev);
	if (!b)
		return -EOPNOTSUPP;
	int r = dm_bind_parse(copy, &req);
	return r < 0 ? r : dm_bind_device(b, dev, &req);
}

/* Why @dev is bound as it is, a line or three, into @buf. */
static int why(struct dm_binder *b, struct dm_device *dev, char *buf, size_t size)
{
	const char *devpath = dm_device_get_devpath(dev);
	char devdir[PATH_MAX], path[PATH_MAX + 32], now[256], ovr[256] = "";
	snprintf(devdir, sizeof(devdir), "%s%.4000s", dm_binder_sysfs(b), devpath ? devpath : "");
	dm_binding_driver_of(devdir, now, sizeof(now));
	snprintf(path, sizeof(path), "%s/driver_override", devdir);
	if (dm_run_read(path, ovr, sizeof(ovr)) < 0 || strcmp(ovr, "(null)") == 0)
		ovr[0] = '\0';
	char authorized[8] = "";
	snprintf(path, sizeof(path), "%s/authorized", devdir);
	bool deauth = dm_run_read(path, authorized, sizeof(authorized)) >= 0 &&
		      strcmp(authorized, "0") == 0;
	bool done = false, failed = false;
	char left[64] = "";
	(void)dm_binding_last_outcome(b, devpath, &done, &failed, left, sizeof(left));
	/* a request's binding holds while the kernel's stays the one it left */
	bool by_request = done && strcmp(left, now) == 0;
	int n;
	if (now[0])
		n = snprintf(buf, size, "bound to %s %s\n", now,
			     by_request ? "by a request through driverfsd" : "by the kernel");
	else
		n = snprintf(buf, size, "no driver: %s\n",
			     strcmp(ovr, "none") == 0 ? "driver_override is none"
			     : deauth ? "deauthorized (its authorized is 0: no driver probes it, "
					"and no program can claim it through usbfs)"
			     : by_request	      ? "unbound by a request through driverfsd"
			     : failed ? "the last request failed (below)"
				      : "no driver took it (none matches, or its module is not "
					"loaded)");
	if (n >= 0 && (size_t)n < size && ovr[0])
		n += snprintf(buf + n, size - (size_t)n, "driver_override: %s\n", ovr);
	/* what modprobe would load for it (its modalias, through libkmod) */
	char alias[520], modules[512];
	snprintf(path, sizeof(path), "%s/modalias", devdir);
	if (n >= 0 && (size_t)n < size && dm_run_read(path, alias, sizeof(alias)) > 0) {
		/* kept for the model's generation, a while (modules.h) */
		int c = dm_modules_candidates_kept(
			dm_binder_modules(b), alias, dm_model_generation(dm_device_get_model(dev)), modules,
			sizeof(modules));
		if (c >= 0)
			n += snprintf(buf + n, size - (size_t)n, "candidate modules: %s\n",
				      c ? modules : "none (no module's alias matches its modalias)");
	}
	struct dm_model *m = dm_device_get_model(dev);
	dm_model_read_lock(m);
	struct dm_driver *drv = dm_device_get_driver_locked(dev);
	/* (driverfsd's vfio-pci stands for the kernel's: no word of it) */
	if (n >= 0 && (size_t)n < size && drv && dm_driver_get_kind(drv) == DM_DRIVER_USER &&
	    strcmp(dm_driver_get_name(drv), now) != 0)
		n += snprintf(buf + n, size - (size_t)n, "held by user driver %s\n",
			      dm_driver_get_name(drv));
	dm_model_unlock(m);
	return n < 0 ? 0 : (size_t)n >= size ? (int)size - 1 : n;
}

/* Why the device is bound as it is, then the report of the last request. */
static int status_show(struct dm_device *dev, const struct dm_attribute *attr, char **ret,
		       size_t *ret_len)
{
	(void)attr;
	struct dm_binder *b = dm_binder_of(dev);
	if (!b)
		return -EOPNOTSUPP;
	size_t size = DM_BINDING_REPORT_MAX + 1024;
	char *buf = malloc(size);
	if (!buf)
		return -ENOMEM;
	int n = why(b, dev, buf, size);
	char *report = buf + n + 64;
	unsigned long seq;
	/* room left for the heading */
	/* who uses the device (other users' processes, the daemon's mount
	 * points) for root's eyes alone: a file root opened */
	int m = dm_binding_status(b, dev, dm_attr_reader() == 0, report, size - (size_t)n - 64,
				  &seq);
	if (m > 0) {
		/* numbered: a reader (driverfsctl) tells its own request's
		 * report from the one before */
		char head[64];
		int h = snprintf(head, sizeof(head), "last request (#%lu):\n", seq);
		memmove(buf + n + h, report, (size_t)m);
		memcpy(buf + n, head, (size_t)h);
		n += h + m;
	}
	*ret = buf;
	*ret_len = (size_t)n;
	return 0;
}

/* read: the report of the last request; write: a request */
static const struct dm_attribute binding_attr = {
	.name = "binding", .mode = 0644, .flags = DM_ATTR_LIVE,
	.show_alloc = status_show, .store = bind_store,
};
static const struct dm_attribute *const binding_attrs[] = { &binding_attr, NULL };

/* On the devices of a bus the kernel has drivers for (the lock is held:
 * one stat of sysfs per bus, the first time, as the group contract allows). */
static bool binding_visible(struct dm_device *dev, const struct dm_attribute *attr)
{
	(void)attr;
	struct dm_bus *bus = dm_device_get_bus_locked(dev);
	struct dm_binder *b = dm_binder_of_locked(dev);
	return b && dm_device_get_devpath(dev) && bus &&
	       dm_binder_bus_has_drivers(b, dm_bus_get_name(bus));
}

const struct dm_attribute_group dm_binding_group = {
	.attrs = binding_attrs,
	.is_visible = binding_visible,
};
