/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz-snapshot.c - the snapshot loader (src/snapshot/load.c). Any bytes
 * load or give -EINVAL with a message; what loads saves, and that file
 * loads again and saves to the same bytes (snapshot.h's promise).
 */
#include "fuzz-util.h"

#include "snapshot/snapshot.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

static void check_name(const char *what, const char *name)
{
	FUZZ_CHECK(name && *name && !strchr(name, '/') && strcmp(name, ".") && strcmp(name, "..") &&
			   strlen(name) <= 255,
		   "a %s named '%s' cannot be a directory entry", what, name ? name : "(null)");
}

static int value_name(const char *name, const char *value, void *data)
{
	(void)value, (void)data;
	check_name("value", name);
	return 0;
}

static int device_names(struct dm_device *dev, void *data)
{
	(void)data;
	check_name("device", dm_device_get_name(dev));
	dm_device_for_each_value_locked(dev, value_name, NULL);
	return 0;
}

static int driver_name(struct dm_driver *drv, void *data)
{
	(void)data;
	check_name("driver", dm_driver_get_name(drv));
	return 0;
}

static int bus_names(struct dm_bus *bus, void *data)
{
	(void)data;
	check_name("bus", dm_bus_get_name(bus));
	return dm_bus_for_each_driver_locked(bus, driver_name, NULL);
}

static int iface_name(struct dm_interface *i, void *data)
{
	(void)data;
	check_name("interface", dm_interface_get_name(i));
	return 0;
}

static int class_names(struct dm_class *c, void *data)
{
	(void)data;
	check_name("class", dm_class_get_name(c));
	return dm_class_for_each_interface_locked(c, iface_name, NULL);
}

/* Every name a snapshot put in the model is one directory entry. */
static void check_names(struct dm_model *m)
{
	dm_model_read_lock(m);
	dm_model_for_each_device_locked(m, device_names, NULL);
	dm_model_for_each_bus_locked(m, bus_names, NULL);
	dm_model_for_each_class_locked(m, class_names, NULL);
	dm_model_unlock(m);
}

static char *save(struct dm_model *m, const char *path, size_t *ret_len)
{
	int r = dm_snapshot_save(m, path, false, NULL, 0);
	FUZZ_CHECK(r == 0, "a loaded model does not save: %s", strerror(-r));
	return fuzz_read(path, ret_len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char in[PATH_MAX], out[PATH_MAX], err[512] = "";
	struct dm_model *m;

	fuzz_write(fuzz_dir(), "in.json", data, size);
	snprintf(in, sizeof(in), "%s/in.json", fuzz_dir());
	snprintf(out, sizeof(out), "%s/out.json", fuzz_dir());
	if (dm_model_new(&m) < 0)
		abort();
	int r = dm_snapshot_load(m, in, err, sizeof(err));
	FUZZ_CHECK(r == 0 || r == -ENOMEM || (r == -EINVAL && err[0]), "load: %d, '%s'", r, err);
	if (r == 0) {
		size_t len1, len2;
		check_names(m);
		char *first = save(m, out, &len1);
		struct dm_model *again;
		if (dm_model_new(&again) < 0)
			abort();
		r = dm_snapshot_load(again, out, err, sizeof(err));
		FUZZ_CHECK(r == 0, "a saved snapshot does not load: %s\n%s", err, first);
		char *second = save(again, out, &len2);
		FUZZ_CHECK(len1 == len2 && memcmp(first, second, len1) == 0,
			   "save, load, save differ:\n%s\n----\n%s", first, second);
		free(first);
		free(second);
		dm_model_free(again);
	}
	dm_model_free(m);
	return 0;
}
