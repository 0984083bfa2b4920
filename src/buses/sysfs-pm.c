/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "sysfs-pm.h"

#include "drivers/kernel.h"
#include "drivers/runner.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int power_path(struct dm_device *dev, const char *name, char *buf, size_t size)
{
	const char *devpath = dm_device_get_devpath(dev);
	if (!devpath)
		return -ENOENT;
	int n = snprintf(buf, size, "/sys%s/power/%s", devpath, name);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static int pm_show(struct dm_device *dev, const struct dm_attribute *attr, char *buf, size_t size)
{
	char path[PATH_MAX];
	int r = power_path(dev, attr->name, path, sizeof(path));
	if (r < 0)
		return r;
	r = dm_run_read(path, buf, size - 1);
	if (r < 0)
		return r;
	buf[r++] = '\n';
	return r;
}

/* A whole word out of @buf (one trailing newline allowed) that is one of
 * @words, NULL-terminated. */
static bool one_of(const char *buf, size_t len, const char *const *words)
{
	for (; *words; words++)
		if (dm_streq(buf, len, *words))
			return true;
	return false;
}

static int pm_write(struct dm_device *dev, const char *name, const char *value)
{
	char path[PATH_MAX], label[300];
	int r = power_path(dev, name, path, sizeof(path));
	if (r < 0)
		return r;
	snprintf(label, sizeof(label), "pm/%s %s", name, dm_device_get_name(dev));
	return dm_run_write(label, path, value, DM_KERNEL_PM_TIMEOUT_MS);
}

static int control_store(struct dm_device *dev, const struct dm_attribute *attr, const char *buf,
			 size_t len)
{
	static const char *const words[] = { "auto", "on", NULL };
	if (!one_of(buf, len, words))
		return -EINVAL;
	return pm_write(dev, attr->name, dm_streq(buf, len, "auto") ? "auto" : "on");
}

static int wakeup_store(struct dm_device *dev, const struct dm_attribute *attr, const char *buf,
			size_t len)
{
	static const char *const words[] = { "enabled", "disabled", NULL };
	if (!one_of(buf, len, words))
		return -EINVAL;
	return pm_write(dev, attr->name, dm_streq(buf, len, "enabled") ? "enabled" : "disabled");
}

static int delay_store(struct dm_device *dev, const struct dm_attribute *attr, const char *buf,
		       size_t len)
{
	char copy[32], *end;
	if (len >= sizeof(copy))
		return -EINVAL;
	memcpy(copy, buf, len);
	copy[len] = '\0';
	if (len > 0 && copy[len - 1] == '\n')
		copy[len - 1] = '\0';
	errno = 0;
	long v = strtol(copy, &end, 10);
	if (end == copy || *end || errno || v < INT_MIN || v > INT_MAX)
		return -EINVAL;
	char value[16];
	snprintf(value, sizeof(value), "%ld", v);
	return pm_write(dev, attr->name, value);
}

static const struct dm_attribute control_attr = {
	.name = "control", .mode = 0644, .flags = DM_ATTR_LIVE,
	.show = pm_show, .store = control_store,
};
static const struct dm_attribute delay_attr = {
	.name = "autosuspend_delay_ms", .mode = 0644, .flags = DM_ATTR_LIVE,
	.show = pm_show, .store = delay_store,
};
static const struct dm_attribute wakeup_attr = {
	.name = "wakeup", .mode = 0644, .flags = DM_ATTR_LIVE,
	.show = pm_show, .store = wakeup_store,
};
static const struct dm_attribute status_attr = {
	.name = "runtime_status", .mode = 0444, .flags = DM_ATTR_LIVE, .show = pm_show,
};

static const struct dm_attribute *const pm_attrs[] = {
	&control_attr, &delay_attr, &wakeup_attr, &status_attr, NULL,
};

/* Called under the model lock: a stat of sysfs, which blocks on nothing.
 * The kernel answers EIO to reads and writes of autosuspend_delay_ms while
 * the device's driver does not use autosuspend: a control that cannot be
 * used is left out rather than failing every `grep -r` of the tree (its
 * read is a field of the device, which blocks on nothing either). */
static bool pm_visible(struct dm_device *dev, const struct dm_attribute *attr)
{
	char path[PATH_MAX], value[32];
	if (power_path(dev, attr->name, path, sizeof(path)) < 0 || access(path, F_OK) < 0)
		return false;
	return attr != &delay_attr || dm_run_read(path, value, sizeof(value)) != -EIO;
}

const struct dm_attribute_group dm_sysfs_pm_group = {
	.name = "pm",
	.attrs = pm_attrs,
	.is_visible = pm_visible,
};
