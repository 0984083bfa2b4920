/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * links.c - the model's device links from the kernel's devlink class
 * devices (/sys/class/devlink/<sbus>:<sdev>--<cbus>:<cdev>/, with supplier
 * and consumer links, status, sync_state_only, runtime_pm;
 * Documentation/ABI/testing/sysfs-class-devlink), made to match them
 * after every scan and hotplug run (see scan.h).
 */
#include "scan.h"

#include "core/array.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A devlink device's link as sysfs has it. */
struct want {
	struct dm_device *object; /* the devlink device (the wants' reference) */
	struct dm_device *supplier, *consumer; /* referenced */
	unsigned flags;
	bool dormant;
	bool found; /* the model has it already */
};

struct wants {
	struct dm_device **devlinks; /* the devlink class devices, referenced */
	size_t n_devlinks, cap_devlinks;
};

static int collect_devlink(struct dm_device *dev, void *data)
{
	struct wants *w = data;
	if (!dm_array_grow((void **)&w->devlinks, &w->cap_devlinks, w->n_devlinks,
			   sizeof(*w->devlinks), 16))
		return -ENOMEM;
	w->devlinks[w->n_devlinks++] = dm_device_ref(dev);
	return 0;
}

static int find_class(struct dm_class *c, void *data)
{
	if (strcmp(dm_class_get_name(c), "devlink") != 0)
		return 0;
	*(struct dm_class **)data = c;
	return 1;
}

/* The devpath a sysfs link of the device at @devpath points to:
 * @target, relative to the device's directory, resolved by its "..", into
 * @buf; -EINVAL when it leaves /devices. */
static int resolve(const char *devpath, const char *target, char *buf, size_t size)
{
	char path[2 * PATH_MAX];
	if (target[0] == '/')
		return -EINVAL;
	snprintf(path, sizeof(path), "%s/%s", devpath, target);
	/* the components, ".." popping the last one */
	char *parts[512];
	size_t n = 0;
	for (char *save = NULL, *p = strtok_r(path, "/", &save); p; p = strtok_r(NULL, "/", &save)) {
		if (strcmp(p, ".") == 0)
			continue;
		if (strcmp(p, "..") == 0) {
			if (n == 0)
				return -EINVAL;
			n--;
		} else if (n < sizeof(parts) / sizeof(parts[0])) {
			parts[n++] = p;
		} else {
			return -EINVAL;
		}
	}
	if (n < 2 || strcmp(parts[0], "devices") != 0)
		return -EINVAL;
	size_t len = 0;
	for (size_t i = 0; i < n; i++) {
		int w = snprintf(buf + len, size - len, "/%s", parts[i]);
		if (w < 0 || (size_t)w >= size - len)
			return -ENAMETOOLONG;
		len += (size_t)w;
	}
	return 0;
}

/* The device a devlink's @which link ("supplier", "consumer") names, or
 * NULL. */
static struct dm_device *link_end(struct dm_model *m, const char *devpath, const char *which)
{
	char link[PATH_MAX], target[PATH_MAX], end[PATH_MAX];
	snprintf(link, sizeof(link), "/sys%s/%s", devpath, which);
	ssize_t n = readlink(link, target, sizeof(target) - 1);
	if (n <= 0)
		return NULL;
	target[n] = '\0';
	if (resolve(devpath, target, end, sizeof(end)) < 0)
		return NULL;
	return dm_model_find_devpath(m, end);
}

/* A small sysfs value of the devlink device, its newline cut ("" when
 * it cannot be read). */
static void read_value(const char *devpath, const char *name, char *buf, size_t size)
{
	char path[PATH_MAX];
	buf[0] = '\0';
	snprintf(path, sizeof(path), "/sys%s/%s", devpath, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return;
	ssize_t k = read(fd, buf, size - 1);
	close(fd);
	buf[k > 0 ? k : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
}

/* The link one devlink device stands for, into @w; false when its ends
 * are not both in the model. */
static bool want_of(struct dm_model *m, struct dm_device *devlink, struct want *w)
{
	const char *devpath = dm_device_get_devpath(devlink);
	if (!devpath)
		return false;
	*w = (struct want){ .object = devlink };
	w->supplier = link_end(m, devpath, "supplier");
	w->consumer = link_end(m, devpath, "consumer");
	if (!w->supplier || !w->consumer) {
		dm_device_unref(w->supplier);
		dm_device_unref(w->consumer);
		return false;
	}
	char status[32], sso[8], rpm[8];
	read_value(devpath, "status", status, sizeof(status));
	read_value(devpath, "sync_state_only", sso, sizeof(sso));
	read_value(devpath, "runtime_pm", rpm, sizeof(rpm));
	dm_scan_link_state(status, sso, rpm, &w->flags, &w->dormant);
	return true;
}

void dm_scan_link_state(const char *status, const char *sync_state_only, const char *runtime_pm,
			unsigned *flags, bool *dormant)
{
	*flags = 0;
	if (strcmp(sync_state_only, "1") == 0)
		*flags |= DM_LINK_SYNC_STATE_ONLY;
	if (strcmp(runtime_pm, "1") == 0)
		*flags |= DM_LINK_PM_RUNTIME;
	/* a stateless link's status is "not tracked" */
	if (strcmp(status, "not tracked") == 0)
		*flags |= DM_LINK_STATELESS;
	*dormant = strcmp(status, "dormant") == 0;
}

struct existing {
	struct want *v;
	size_t n;
	struct dm_device **gone; /* supplier, consumer pairs, referenced */
	size_t n_gone, cap_gone;
	bool failed;
};

/* A link of the model sysfs has too (marked found, its state updated
 * below), or one to remove. */
static int check_link(struct dm_link *l, void *data)
{
	struct existing *e = data;
	for (size_t i = 0; i < e->n; i++)
		if (e->v[i].supplier == dm_link_get_supplier(l) &&
		    e->v[i].consumer == dm_link_get_consumer(l) &&
		    e->v[i].flags == dm_link_get_flags(l)) {
			e->v[i].found = true;
			return 0;
		}
	if (!dm_array_grow((void **)&e->gone, &e->cap_gone, e->n_gone + 1, sizeof(*e->gone), 16)) {
		e->failed = true;
		return 1;
	}
	e->gone[e->n_gone++] = dm_device_ref(dm_link_get_supplier(l));
	e->gone[e->n_gone++] = dm_device_ref(dm_link_get_consumer(l));
	return 0;
}

int dm_scan_sync_links(struct dm_model *m)
{
	struct wants w = { 0 };
	struct dm_class *devlink = NULL;
	dm_model_read_lock(m);
	dm_model_for_each_class_locked(m, find_class, &devlink);
	int r = devlink ? dm_class_for_each_device_locked(devlink, collect_devlink, &w) : 0;
	bool any = dm_model_count_links_locked(m) > 0;
	dm_model_unlock(m);
	if (r < 0 || (!w.n_devlinks && !any)) {
		dm_device_array_free(w.devlinks, w.n_devlinks);
		return r;
	}
	struct want *v = calloc(w.n_devlinks ? w.n_devlinks : 1, sizeof(*v));
	if (!v) {
		dm_device_array_free(w.devlinks, w.n_devlinks);
		return -ENOMEM;
	}
	size_t n = 0;
	for (size_t i = 0; i < w.n_devlinks; i++)
		if (want_of(m, w.devlinks[i], &v[n]))
			n++;

	/* the model's links sysfs has no more go; the state of the others
	 * follows sysfs's */
	struct existing e = { .v = v, .n = n };
	dm_model_read_lock(m);
	dm_model_for_each_link_locked(m, check_link, &e);
	dm_model_unlock(m);
	r = e.failed ? -ENOMEM : 0;
	for (size_t i = 0; i + 1 < e.n_gone; i += 2)
		(void)dm_link_remove(e.gone[i], e.gone[i + 1]); /* or gone meanwhile */
	dm_device_array_free(e.gone, e.n_gone);
	for (size_t i = 0; i < n; i++) {
		int a = v[i].found ? 0 : dm_link_add(v[i].supplier, v[i].consumer, v[i].flags, NULL);
		if (a == -ELOOP)
			log_warn("device link %s -> %s refused: it would make a cycle",
				 dm_device_get_devpath(v[i].supplier),
				 dm_device_get_devpath(v[i].consumer));
		else if (a < 0 && a != -EINVAL && a != -EEXIST)
			r = a;
		if (a == 0) {
			(void)dm_link_set_dormant(v[i].supplier, v[i].consumer, v[i].dormant);
			(void)dm_link_set_object(v[i].supplier, v[i].consumer, v[i].object);
		}
		dm_device_unref(v[i].supplier);
		dm_device_unref(v[i].consumer);
	}
	free(v);
	dm_device_array_free(w.devlinks, w.n_devlinks);
	return r;
}
