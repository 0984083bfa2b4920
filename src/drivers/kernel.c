/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "kernel.h"

#include "drivers/runner.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a suspend changed, to put back on resume. */
struct saved_pm {
	char control[32];
	char delay[32]; /* "" when the device has no autosuspend delay */
};

/* As the transition record keeps it (dm_device_keep_pm_state()):
 * "control=on" or "control=on,delay=2000". */
static int saved_format(const struct saved_pm *saved, char *buf, size_t size)
{
	int n = snprintf(buf, size, "control=%s%s%s", saved->control, saved->delay[0] ? ",delay=" : "",
			 saved->delay);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static int saved_parse(const char *state, struct saved_pm *saved)
{
	*saved = (struct saved_pm){ 0 };
	const char *comma = strchr(state, ',');
	size_t len = comma ? (size_t)(comma - state) : strlen(state);
	if (strncmp(state, "control=", 8) != 0 || len == 8 || len - 8 >= sizeof(saved->control))
		return -EINVAL;
	memcpy(saved->control, state + 8, len - 8);
	if (!comma)
		return 0;
	if (strncmp(comma, ",delay=", 7) != 0 || !comma[7] || strlen(comma + 7) >= sizeof(saved->delay))
		return -EINVAL;
	strcpy(saved->delay, comma + 7);
	return 0;
}

static int pm_path(struct dm_device *dev, const char *file, char *buf, size_t size)
{
	const char *devpath = dm_device_get_devpath(dev);
	if (!devpath)
		return -ENOENT;
	int n = snprintf(buf, size, "/sys%s/power/%s", devpath, file);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static int kernel_suspend(struct dm_device *dev, void *data)
{
	(void)data;
	char control[4096], delay[4096], label[300], state[DM_PM_STATE_MAX];
	struct saved_pm saved = { 0 };
	int r;

	if (pm_path(dev, "control", control, sizeof(control)) < 0 ||
	    dm_run_read(control, saved.control, sizeof(saved.control)) < 0)
		return 0; /* no runtime PM: nothing to do */
	if (pm_path(dev, "autosuspend_delay_ms", delay, sizeof(delay)) < 0 ||
	    dm_run_read(delay, saved.delay, sizeof(saved.delay)) < 0)
		saved.delay[0] = '\0';

	/* in the transition record first: a daemon killed from now on
	 * leaves the restart what to put back */
	r = saved_format(&saved, state, sizeof(state));
	if (r == 0)
		r = dm_device_keep_pm_state(dev, state);
	if (r < 0)
		return r;
	struct saved_pm *keep = malloc(sizeof(*keep));
	if (!keep)
		return -ENOMEM;
	*keep = saved;
	snprintf(label, sizeof(label), "suspend %s", dm_device_get_name(dev));
	if (saved.delay[0]) {
		r = dm_run_write(label, delay, "0", DM_KERNEL_PM_TIMEOUT_MS);
		if (r < 0)
			goto out_free;
	}
	r = dm_run_write(label, control, "auto", DM_KERNEL_PM_TIMEOUT_MS);
	if (r < 0) {
		if (saved.delay[0])
			dm_run_write(label, delay, saved.delay, DM_KERNEL_PM_TIMEOUT_MS);
		goto out_free;
	}
	free(dm_device_get_driver_data(dev));
	dm_device_set_driver_data(dev, keep);
	return 0;

out_free:
	free(keep);
	return r;
}

static int kernel_resume(struct dm_device *dev, void *data)
{
	(void)data;
	struct saved_pm *saved = dm_device_get_driver_data(dev), kept;
	char path[4096], label[300], state[DM_PM_STATE_MAX];
	int r = 0, r2;
	/* not suspended by this run: by an earlier one, killed since, that
	 * kept what it saved in the transition record? */
	if (!saved && dm_device_get_kept_pm_state(dev, state, sizeof(state)) == 0 &&
	    saved_parse(state, &kept) == 0) {
		saved = malloc(sizeof(*saved));
		if (!saved)
			return -ENOMEM;
		*saved = kept;
	}
	if (!saved)
		return 0; /* this driver did not suspend it */
	snprintf(label, sizeof(label), "resume %s", dm_device_get_name(dev));
	if (saved->delay[0] && pm_path(dev, "autosuspend_delay_ms", path, sizeof(path)) == 0)
		r = dm_run_write(label, path, saved->delay, DM_KERNEL_PM_TIMEOUT_MS);
	/* control last: "on" resumes the device at once */
	r2 = pm_path(dev, "control", path, sizeof(path));
	if (r2 == 0)
		r2 = dm_run_write(label, path, saved->control, DM_KERNEL_PM_TIMEOUT_MS);
	dm_device_set_driver_data(dev, NULL);
	free(saved);
	return r2 < 0 ? r2 : r;
}

static void kernel_remove(struct dm_device *dev, void *data)
{
	(void)data;
	free(dm_device_get_driver_data(dev));
	dm_device_set_driver_data(dev, NULL);
}

static const struct dm_driver_ops kernel_ops = {
	.remove = kernel_remove,
	.suspend = kernel_suspend,
	.resume = kernel_resume,
};

int dm_kernel_driver_new(const char *name, struct dm_driver **ret)
{
	return dm_driver_new(name, DM_DRIVER_KERNEL, 0, &kernel_ops, NULL, NULL, ret);
}
