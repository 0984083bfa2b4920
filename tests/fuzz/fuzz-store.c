/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz-store.c - every writable attribute's store, through the core's
 * dm_device_store() as the filesystem calls it: `power` (on root and on
 * devices a driver with suspend/resume holds, with the PM engine) and the
 * pm/ controls of src/buses/sysfs-pm.c, which write to a scratch sysfs
 * tree. The first input byte picks the file and the device, the rest is
 * the write. Checked: a write that fails changes nothing (the power state,
 * the sysfs file); one that succeeds leaves a value the file's own parser
 * accepts; every file still reads.
 */
#include "fuzz-util.h"

#include "buses/sysfs-pm.h"
#include "pm/pm.h"
#include "util/log.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct pm_file {
	const char *name;
	const char *initial; /* its content before each write */
	const char *const valid[3]; /* what a store may write; NULL: an integer */
};

static const struct pm_file pm_files[] = {
	{ "control", "auto\n", { "auto", "on", NULL } },
	{ "autosuspend_delay_ms", "2000\n", { NULL } },
	{ "wakeup", "disabled\n", { "enabled", "disabled", NULL } },
	{ "runtime_status", "active\n", { NULL } }, /* read-only: the store must refuse */
};
#define N_PM_FILES (sizeof(pm_files) / sizeof(pm_files[0]))

static struct dm_model *model;
static struct dm_pm *pm;
static struct dm_device *devs[3]; /* root, a device and its child */
static struct dm_driver *driver; /* holds both devices */
static char sysfs[PATH_MAX]; /* the scratch sysfs' /sys */

static int quick_hook(struct dm_device *dev, void *data)
{
	(void)dev, (void)data;
	return 0;
}

static const struct dm_driver_ops fuzz_ops = {
	.suspend = quick_hook,
	.resume = quick_hook,
};

static void mkdirs(const char *path)
{
	char buf[PATH_MAX];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *s = buf + 1; *s; s++)
		if (*s == '/') {
			*s = '\0';
			mkdir(buf, 0755);
			*s = '/';
		}
	if (mkdir(buf, 0755) < 0 && errno != EEXIST)
		abort();
}

/* A device with a pm/ directory in the scratch sysfs. sysfs-pm.c reads
 * "/sys" + devpath, so the devpath climbs out of /sys into it. */
static struct dm_device *add_device(const char *name, struct dm_device *parent,
				    const char *devpath)
{
	struct dm_device *dev;
	char path[PATH_MAX], abs_devpath[PATH_MAX];
	if (snprintf(path, sizeof(path), "%s%s/power", sysfs, devpath) >= (int)sizeof(path) ||
	    snprintf(abs_devpath, sizeof(abs_devpath), "/..%s%s", sysfs, devpath) >=
		    (int)sizeof(abs_devpath))
		abort();
	mkdirs(path);
	struct dm_bus *bus;
	if (dm_device_new(model, name, &dev) < 0 || dm_device_set_devpath(dev, abs_devpath) < 0 ||
	    dm_device_add_group(dev, &dm_sysfs_pm_group) < 0 ||
	    dm_bus_get(model, "fuzz", NULL, &bus) < 0)
		abort();
	dm_device_set_bus(dev, bus);
	if (dm_device_add(dev, parent) < 0)
		abort();
	return dev;
}

static void setup(void)
{
	dm_log_setup(LOG_EMERG, 0); /* the runner logs each sysfs write */
	snprintf(sysfs, sizeof(sysfs), "%s/sys", fuzz_dir());
	if (dm_model_new(&model) < 0 || dm_pm_new(model, &pm) < 0)
		abort();
	devs[0] = dm_model_get_root(model);
	devs[1] = add_device("fuzz0", NULL, "/devices/fuzz0");
	devs[2] = add_device("fuzz1", devs[1], "/devices/fuzz0/fuzz1");
	if (dm_model_add_driver(model, "fuzz", "fuzz", DM_DRIVER_USER, 0, &fuzz_ops, NULL, NULL,
				&driver) < 0)
		abort();
}

/* Whether @s (without its newline) is one of @f's values. */
static bool pm_value_is_valid(const struct pm_file *f, const char *s)
{
	size_t len = strcspn(s, "\n");
	if (!f->valid[0]) {
		char *end;
		if (len == 0)
			return false;
		(void)strtol(s, &end, 10);
		return (size_t)(end - s) == len;
	}
	for (const char *const *v = f->valid; *v; v++)
		if (strlen(*v) == len && strncmp(s, *v, len) == 0)
			return true;
	return false;
}

static void check_power(struct dm_device *dev, const char *buf, size_t len, int r,
			enum dm_power_state before)
{
	enum dm_power_state after = dm_device_get_power(dev);
	if (r < 0)
		FUZZ_CHECK(after == before, "a failed power write (%d) changed the state", r);
	if (r == 0 && dm_streq(buf, len, "suspend"))
		FUZZ_CHECK(after == DM_POWER_SUSPENDED, "suspend succeeded, device on");
	if (r == 0 && dm_streq(buf, len, "resume"))
		FUZZ_CHECK(after == DM_POWER_ON, "resume succeeded, device suspended");
	if (dm_streq(buf, len, "suspend-dry-run") || dm_streq(buf, len, "resume-dry-run"))
		FUZZ_CHECK(after == before, "a dry run changed the state");
	char show[4096];
	int n = dm_device_show(dev, NULL, "power", show, sizeof(show));
	FUZZ_CHECK(n > 0, "power does not read: %d", n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!model)
		setup();
	if (size == 0)
		return 0;
	int d = data[0] % 3;
	int which = (data[0] / 3) % (int)(N_PM_FILES + 1);
	const char *buf = (const char *)data + 1;
	size_t len = size - 1;
	struct dm_device *dev = devs[d];

	if (which == N_PM_FILES || d == 0) {
		/* root has no devpath, hence no pm/: its power file */
		enum dm_power_state before = dm_device_get_power(dev);
		int r = dm_device_store(dev, NULL, "power", buf, len);
		FUZZ_CHECK(r == 0 || r == -EINVAL || r == -EFBIG || r == -EIO,
			   "power store: %d", r);
		check_power(dev, buf, len, r, before);
		/* back to all on for the next input */
		FUZZ_CHECK(dm_pm_resume(pm, NULL, 0) == 0, "resume all failed");
		return 0;
	}

	const struct pm_file *f = &pm_files[which];
	char dir[PATH_MAX], path[PATH_MAX];
	if (snprintf(dir, sizeof(dir), "%s/devices/fuzz0%s/power", sysfs,
		     d == 2 ? "/fuzz1" : "") >= (int)sizeof(dir) ||
	    snprintf(path, sizeof(path), "%s/%s", dir, f->name) >= (int)sizeof(path))
		abort();
	fuzz_write(dir, f->name, f->initial, strlen(f->initial));
	int r = dm_device_store(dev, "pm", f->name, buf, len);
	size_t n;
	char *now = fuzz_read(path, &n);
	if (r < 0) {
		FUZZ_CHECK(strcmp(now, f->initial) == 0, "a failed write (%d) changed %s: '%s'", r,
			   f->name, now);
	} else {
		FUZZ_CHECK(r == 0, "store returned %d", r);
		FUZZ_CHECK(f != &pm_files[3], "runtime_status accepted a write");
		FUZZ_CHECK(pm_value_is_valid(f, now), "%s written as '%s'", f->name, now);
	}
	free(now);
	char show[4096];
	FUZZ_CHECK(dm_device_show(dev, "pm", f->name, show, sizeof(show)) > 0, "%s does not read",
		   f->name);
	return 0;
}
