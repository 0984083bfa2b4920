/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of the device model: list order, removal, binding, attributes,
 * lookups and lifetime. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/model.h"
#include "tree-util.h"

/* ---- global list order ---- */

struct collect {
	struct dm_device **v;
	size_t n;
};

static int collect_fn(struct dm_device *dev, void *data)
{
	struct collect *c = data;
	c->v[c->n++] = dev;
	return 0;
}

static void check_global_order(size_t n, unsigned seed)
{
	struct dm_model *m;
	assert_int_equal(dm_model_new(&m), 0);
	struct test_tree t;
	test_tree_build(&t, m, n, seed, NULL);

	struct collect c = { .v = calloc(n + 1, sizeof(*c.v)) };
	dm_model_read_lock(m);
	dm_model_for_each_device_locked(m, collect_fn, &c);
	dm_model_unlock(m);
	assert_int_equal(c.n, n + 1); /* + root */
	assert_ptr_equal(c.v[0], dm_model_get_root(m));

	int *want = calloc(n, sizeof(int));
	assert_int_equal(test_tree_preorder(&t, want), n);
	for (size_t i = 0; i < n; i++) {
		int got = test_tree_index(&t, c.v[i + 1]);
		if (got != want[i])
			fail_msg("seed %u: position %zu of the global list: expected %s, got %s", seed,
				 i, t.name[want[i]], got < 0 ? "?" : t.name[got]);
	}
	/* and directly: every parent before its child, each subtree contiguous */
	for (size_t i = 0; i < n; i++) {
		int d = test_tree_index(&t, c.v[i + 1]);
		if (t.parent[d] >= 0) {
			size_t ppos = 0;
			while (c.v[ppos] != t.dev[t.parent[d]])
				ppos++;
			assert_true(ppos < i + 1);
			for (size_t k = ppos + 1; k < i + 1; k++) {
				int mid = test_tree_index(&t, c.v[k]);
				if (!test_tree_is_ancestor(&t, t.parent[d], mid))
					fail_msg("seed %u: %s inside the subtree of %s", seed,
						 t.name[mid], t.name[t.parent[d]]);
			}
		}
	}
	free(want);
	free(c.v);
	test_tree_free(&t);
	dm_model_free(m);
}

static void test_global_list_depth_first_random_trees(void **state)
{
	(void)state;
	for (unsigned seed = 1; seed <= 60; seed++)
		check_global_order(1 + seed * 7 % 120, seed);
}

/* ---- removal ---- */

struct events {
	char log[64][32];
	size_t n;
};

static void on_removed(struct dm_device *dev, void *data)
{
	struct events *e = data;
	if (e->n < 64)
		snprintf(e->log[e->n++], 32, "%s", dm_device_get_name(dev));
}

static const struct dm_model_listener removal_listener = { .device_removed = on_removed };

static struct events removes_by_driver;
static void drv_remove_log(struct dm_device *dev, void *data)
{
	(void)data;
	on_removed(dev, &removes_by_driver);
}
static int probe_accept(struct dm_device *dev, void *data)
{
	(void)dev;
	(void)data;
	return 0;
}
static const struct dm_driver_ops accept_ops = { .probe = probe_accept, .remove = drv_remove_log };

static struct dm_device *add(struct dm_model *m, struct dm_device *parent, const char *name,
			     struct dm_bus *bus)
{
	struct dm_device *dev;
	assert_int_equal(dm_device_new(m, name, &dev), 0);
	char devpath[128];
	snprintf(devpath, sizeof(devpath), "/devices/%s", name);
	assert_int_equal(dm_device_set_devpath(dev, devpath), 0);
	if (bus)
		dm_device_set_bus(dev, bus);
	assert_int_equal(dm_device_add(dev, parent), 0);
	return dev;
}

static void test_remove_subtree_children_first(void **state)
{
	(void)state;
	struct dm_model *m;
	assert_int_equal(dm_model_new(&m), 0);
	struct dm_bus *bus;
	assert_int_equal(dm_bus_get(m, "usb", NULL, &bus), 0);
	struct dm_driver *drv;
	assert_int_equal(dm_driver_new("hub", DM_DRIVER_USER, 10, &accept_ops, NULL, NULL, &drv), 0);
	assert_int_equal(dm_driver_register(bus, drv), 0);

	struct events ev = { 0 };
	removes_by_driver.n = 0;
	dm_model_set_listener(m, &removal_listener, &ev);

	struct dm_device *a = add(m, NULL, "a", bus);
	struct dm_device *b = add(m, a, "b", bus);
	struct dm_device *c = add(m, b, "c", bus);
	struct dm_device *d = add(m, a, "d", bus);
	struct dm_device *keep = add(m, NULL, "keep", bus);
	dm_model_read_lock(m);
	assert_ptr_equal(dm_device_get_driver_locked(c), drv);
	dm_model_unlock(m);

	dm_device_del(a);
	/* children first: every device removed after all its descendants */
	const char *want[] = { "d", "c", "b", "a" };
	assert_int_equal(ev.n, 4);
	assert_int_equal(removes_by_driver.n, 4);
	for (size_t i = 0; i < 4; i++) {
		assert_string_equal(ev.log[i], want[i]);
		assert_string_equal(removes_by_driver.log[i], want[i]);
	}
	assert_true(dm_device_is_dead(c));
	assert_false(dm_device_is_dead(keep));
	assert_null(dm_model_find_devpath(m, "/devices/c"));
	assert_int_equal(dm_model_count_devices(m), 2); /* root + keep */
	dm_model_read_lock(m);
	assert_null(dm_device_get_driver_locked(c)); /* unbound */
	assert_null(dm_device_find_child_locked(dm_model_get_root(m), "a"));
	dm_model_unlock(m);
	/* a dead device's files are gone */
	char buf[DM_ATTR_MAX];
	assert_int_equal(dm_device_show(b, NULL, "power", buf, sizeof(buf)), -ENODEV);
	/* adding below a dead device fails */
	struct dm_device *e;
	assert_int_equal(dm_device_new(m, "e", &e), 0);
	assert_int_equal(dm_device_add(e, b), -ENODEV);
	dm_device_unref(e);

	for (struct dm_device **p = (struct dm_device *[]){ a, b, c, d, keep, NULL }; *p; p++)
		dm_device_unref(*p);
	dm_driver_unref(drv);
	dm_model_free(m);
}

/* ---- binding ---- */

static char probe_log[256];
static int probe_record(struct dm_device *dev, void *data)
{
	const char *who = data;
	strcat(probe_log, who);
	strcat(probe_log, " ");
	/* "accept" drivers take the device, the others decline it */
	return strncmp(who, "accept", 6) == 0 ? 0 : -ENODEV;
}
static const struct dm_driver_ops record_ops = { .probe = probe_record };

static void test_probe_priority_first_acceptor_wins(void **state)
{
	(void)state;
	struct dm_model *m;
	assert_int_equal(dm_model_new(&m), 0);
	struct dm_bus *bus;
	assert_int_equal(dm_bus_get(m, "pci", NULL, &bus), 0);
	struct {
		const char *name;
		int prio;
	} drivers[] = {
		{ "decline-low", 1 }, { "accept-mid", 5 }, { "decline-high", 9 }, { "accept-late", 5 },
	};
	struct dm_driver *drv[4];
	for (int i = 0; i < 4; i++) {
		assert_int_equal(dm_driver_new(drivers[i].name, DM_DRIVER_USER, drivers[i].prio,
					       &record_ops, (void *)drivers[i].name, NULL, &drv[i]),
				 0);
		assert_int_equal(dm_driver_register(bus, drv[i]), 0);
	}
	struct dm_driver *dup;
	assert_int_equal(dm_driver_new("accept-mid", DM_DRIVER_USER, 1, &record_ops, "x", NULL, &dup), 0);
	assert_int_equal(dm_driver_register(bus, dup), -EEXIST);
	dm_driver_unref(dup);

	probe_log[0] = '\0';
	struct dm_device *dev = add(m, NULL, "0000:00:02.0", bus);
	/* highest priority first; equal priorities in registration order; the
	 * first that accepts wins and nobody after it is asked */
	assert_string_equal(probe_log, "decline-high accept-mid ");
	dm_model_read_lock(m);
	assert_ptr_equal(dm_device_get_driver_locked(dev), drv[1]);
	dm_model_unlock(m);

	/* unregistering the bound driver unbinds; a new driver is offered the
	 * unbound device at registration */
	dm_driver_unregister(drv[1]);
	dm_model_read_lock(m);
	assert_null(dm_device_get_driver_locked(dev));
	dm_model_unlock(m);
	struct dm_driver *newer;
	probe_log[0] = '\0';
	assert_int_equal(dm_driver_new("accept-new", DM_DRIVER_USER, 0, &record_ops, "accept-new",
				       NULL, &newer), 0);
	assert_int_equal(dm_driver_register(bus, newer), 0);
	assert_string_equal(probe_log, "accept-new ");
	dm_model_read_lock(m);
	assert_ptr_equal(dm_device_get_driver_locked(dev), newer);
	dm_model_unlock(m);

	dm_device_unref(dev);
	dm_driver_unref(newer);
	for (int i = 0; i < 4; i++)
		dm_driver_unref(drv[i]);
	dm_model_free(m);
}

static void test_kernel_proxy_and_match_rules(void **state)
{
	(void)state;
	struct dm_model *m;
	assert_int_equal(dm_model_new(&m), 0);
	struct dm_bus *bus;
	assert_int_equal(dm_bus_get(m, "usb", NULL, &bus), 0);
	struct dm_driver *kdrv, *udrv;
	assert_int_equal(dm_driver_new("usbhid", DM_DRIVER_KERNEL, 0, NULL, NULL, NULL, &kdrv), 0);
	assert_int_equal(dm_driver_register(bus, kdrv), 0);
	assert_int_equal(dm_driver_new("scanner", DM_DRIVER_USER, 10, NULL, NULL, NULL, &udrv), 0);
	assert_int_equal(dm_driver_add_match(udrv, "idVendor", "04a9"), 0);
	assert_int_equal(dm_driver_add_match(udrv, "product", "*Scan*"), 0);
	assert_int_equal(dm_driver_register(bus, udrv), 0);

	struct dm_device *kbd, *scanner, *camera;
	assert_int_equal(dm_device_new(m, "1-1", &kbd), 0);
	dm_device_set_bus(kbd, bus);
	dm_device_set_kernel_driver(kbd, "usbhid");
	assert_int_equal(dm_device_add(kbd, NULL), 0);

	assert_int_equal(dm_device_new(m, "1-2", &scanner), 0);
	dm_device_set_bus(scanner, bus);
	dm_device_set_value(scanner, "idVendor", "04a9");
	dm_device_set_value(scanner, "product", "CanoScan LiDE");
	dm_device_set_kernel_driver(scanner, "usbhid");
	assert_int_equal(dm_device_add(scanner, NULL), 0);

	assert_int_equal(dm_device_new(m, "1-3", &camera), 0);
	dm_device_set_bus(camera, bus);
	dm_device_set_value(camera, "idVendor", "04a9");
	dm_device_set_value(camera, "product", "PowerShot");
	assert_int_equal(dm_device_add(camera, NULL), 0);

	dm_model_read_lock(m);
	assert_ptr_equal(dm_device_get_driver_locked(kbd), kdrv);
	/* the user driver is probed first and its rules match */
	assert_ptr_equal(dm_device_get_driver_locked(scanner), udrv);
	/* no rule matches, no kernel driver: unbound */
	assert_null(dm_device_get_driver_locked(camera));
	dm_model_unlock(m);

	dm_device_unref(kbd);
	dm_device_unref(scanner);
	dm_device_unref(camera);
	dm_driver_unref(kdrv);
	dm_driver_unref(udrv);
	dm_model_free(m);
}

/* class drivers (docs/design.md §7.6): offered the class devices, which
 * are on no bus, by their rules on the class device's own values, in
 * priority order, before or after the devices come; a device of the class
 * on a bus is its bus drivers' only; unregistering unbinds */
static void test_class_drivers_drive_class_devices(void **state)
{
	(void)state;
	struct dm_model *m;
	assert_int_equal(dm_model_new(&m), 0);
	struct dm_bus *bus;
	struct dm_class *block;
	assert_int_equal(dm_bus_get(m, "scsi", NULL, &bus), 0);
	assert_int_equal(dm_class_get(m, "block", &block), 0);
	struct dm_driver *any, *removable, *late, *busdrv;
	assert_int_equal(dm_driver_new("any-disk", DM_DRIVER_USER, 10, NULL, NULL, NULL, &any), 0);
	assert_int_equal(dm_driver_register_class(block, any), 0);
	assert_int_equal(dm_driver_new("sticks", DM_DRIVER_USER, 50, NULL, NULL, NULL, &removable),
			 0);
	assert_int_equal(dm_driver_add_match(removable, "removable", "1"), 0);
	assert_int_equal(dm_driver_register_class(block, removable), 0);
	/* registered once: on a class, then on a bus */
	assert_int_equal(dm_driver_register(bus, removable), -EBUSY);
	assert_int_equal(dm_driver_new("user-scsi", DM_DRIVER_USER, 10, NULL, NULL, NULL, &busdrv),
			 0);
	assert_int_equal(dm_driver_register(bus, busdrv), 0);

	struct dm_device *host, *sda, *sdb, *odd;
	assert_int_equal(dm_device_new(m, "0:0:0:0", &host), 0);
	dm_device_set_bus(host, bus);
	assert_int_equal(dm_device_add(host, NULL), 0);
	assert_int_equal(dm_device_new(m, "sda", &sda), 0);
	dm_device_set_class(sda, block, NULL);
	dm_device_set_value(sda, "removable", "0");
	assert_int_equal(dm_device_add(sda, host), 0);
	assert_int_equal(dm_device_new(m, "sdb", &sdb), 0);
	dm_device_set_class(sdb, block, NULL);
	dm_device_set_value(sdb, "removable", "1");
	assert_int_equal(dm_device_add(sdb, host), 0);
	/* of the class, but on a bus: not the class drivers' */
	assert_int_equal(dm_device_new(m, "odd", &odd), 0);
	dm_device_set_class(odd, block, NULL);
	dm_device_set_bus(odd, bus);
	assert_int_equal(dm_device_add(odd, host), 0);

	dm_model_read_lock(m);
	assert_ptr_equal(dm_device_get_driver_locked(host), busdrv);
	assert_ptr_equal(dm_device_get_driver_locked(sda), any);
	assert_ptr_equal(dm_device_get_driver_locked(sdb), removable); /* priority, rules */
	assert_ptr_equal(dm_device_get_driver_locked(odd), busdrv);
	assert_ptr_equal(dm_driver_get_class(any), block);
	assert_null(dm_driver_get_bus(any));
	dm_model_unlock(m);

	/* unregistered: its devices unbound and offered to nobody else */
	dm_driver_unregister(any);
	dm_model_read_lock(m);
	assert_null(dm_device_get_driver_locked(sda));
	dm_model_unlock(m);
	/* a driver that comes later is offered the unbound class devices */
	assert_int_equal(dm_driver_new("late", DM_DRIVER_USER, 10, NULL, NULL, NULL, &late), 0);
	assert_int_equal(dm_driver_register_class(block, late), 0);
	dm_model_read_lock(m);
	assert_ptr_equal(dm_device_get_driver_locked(sda), late);
	assert_ptr_equal(dm_device_get_driver_locked(sdb), removable);
	dm_model_unlock(m);
	struct dm_driver *found = dm_class_find_driver(block, "late");
	assert_ptr_equal(found, late);
	dm_driver_unref(found);
	assert_null(dm_class_find_driver(block, "user-scsi"));

	dm_device_unref(host);
	dm_device_unref(sda);
	dm_device_unref(sdb);
	dm_device_unref(odd);
	dm_driver_unref(any);
	dm_driver_unref(removable);
	dm_driver_unref(late);
	dm_driver_unref(busdrv);
	dm_model_free(m);
}

/* ---- attributes ---- */

struct level_dev {
	int level;
};
static struct level_dev level_state;

static int level_show(struct dm_device *dev, const struct dm_attribute *a, char *buf, size_t size)
{
	(void)dev;
	(void)a;
	return dm_emit(buf, size, "%d\n", level_state.level);
}

static int level_store(struct dm_device *dev, const struct dm_attribute *a, const char *buf,
		       size_t len)
{
	(void)dev;
	(void)a;
	char *end;
	errno = 0;
	long v = strtol(buf, &end, 10);
	if (end == buf || (*end && strcmp(end, "\n")) || errno || v < 0 || v > 100)
		return -EINVAL;
	(void)len;
	level_state.level = (int)v;
	return 0;
}

static const struct dm_attribute level_attr = DM_ATTR_RW(level, level_show, level_store);
static const struct dm_attribute *const level_attrs[] = { &level_attr, NULL };
static const struct dm_attribute_group level_group = { .attrs = level_attrs };
static const struct dm_attribute_group tune_group = { .name = "tune", .attrs = level_attrs };

static void test_attribute_store_rejects_bad_input(void **state)
{
	(void)state;
	struct dm_model *m;
	assert_int_equal(dm_model_new(&m), 0);
	struct dm_device *dev;
	assert_int_equal(dm_device_new(m, "dev0", &dev), 0);
	assert_int_equal(dm_device_add_group(dev, &level_group), 0);
	assert_int_equal(dm_device_add_group(dev, &tune_group), 0);
	assert_int_equal(dm_device_set_value(dev, "vendor", "0x8086"), 0);
	assert_int_equal(dm_device_add(dev, NULL), 0);
	level_state.level = 42;

	char buf[DM_ATTR_MAX + 1];
	int n = dm_device_show(dev, NULL, "level", buf, sizeof(buf));
	assert_int_equal(n, 3);
	assert_memory_equal(buf, "42\n", 3);

	const char *bad[] = { "abc", "101", "-1", "12abc", "7 8", "\n", "99999999999999999999" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = dm_device_store(dev, NULL, "level", bad[i], strlen(bad[i]));
		if (r != -EINVAL)
			fail_msg("store '%s': expected -EINVAL, got %d", bad[i], r);
		assert_int_equal(level_state.level, 42);
	}
	assert_int_equal(dm_device_store(dev, NULL, "level", "", 0), -EINVAL);
	assert_int_equal(dm_device_store(dev, NULL, "level", "1\0002", 3), -EINVAL);
	char big[DM_ATTR_MAX + 2]; /* a string of DM_ATTR_MAX + 1 characters */
	memset(big, '1', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(dm_device_store(dev, NULL, "level", big, strlen(big)), -EFBIG);
	assert_int_equal(level_state.level, 42);

	assert_int_equal(dm_device_store(dev, NULL, "level", "7\n", 2), 0);
	assert_int_equal(level_state.level, 7);
	assert_int_equal(dm_device_store(dev, "tune", "level", "8", 1), 0);
	assert_int_equal(level_state.level, 8);

	/* static values are read-only; unknown files do not exist */
	assert_int_equal(dm_device_store(dev, NULL, "vendor", "1", 1), -EACCES);
	n = dm_device_show(dev, NULL, "vendor", buf, sizeof(buf));
	assert_int_equal(n, 7);
	assert_memory_equal(buf, "0x8086\n", 7);
	assert_int_equal(dm_device_show(dev, NULL, "nope", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(dm_device_show(dev, "nope", "level", buf, sizeof(buf)), -ENOENT);
	/* power with a bad value: EINVAL, state unchanged */
	assert_int_equal(dm_device_store(dev, NULL, "power", "sleep", 5), -EINVAL);
	n = dm_device_show(dev, NULL, "power", buf, sizeof(buf));
	assert_memory_equal(buf, "on\n", 3);
	/* a value too long to show is refused at set time */
	assert_int_equal(dm_device_set_value(dev, "big", big + 1), -EINVAL); /* 4096 chars */

	struct dm_file_info fi;
	dm_model_read_lock(m);
	assert_int_equal(dm_device_stat_file_locked(dev, "tune", NULL, &fi), 0);
	assert_int_equal(dm_device_stat_file_locked(dev, NULL, "level", &fi), 0);
	assert_int_equal(fi.mode, 0644);
	assert_int_equal(dm_device_stat_file_locked(dev, NULL, "devpath", &fi), -ENOENT);
	dm_model_unlock(m);

	dm_device_unref(dev);
	dm_model_free(m);
}

/* ---- lookups and lifetime ---- */

static int freed;
static void count_free(void *p)
{
	(void)p;
	freed++;
}

static void test_lookups_and_refcounts(void **state)
{
	(void)state;
	struct dm_model *m;
	assert_int_equal(dm_model_new(&m), 0);
	freed = 0;
	struct dm_device *devs[20];
	for (int i = 0; i < 20; i++) {
		char name[16];
		snprintf(name, sizeof(name), "n%d", i);
		assert_int_equal(dm_device_new(m, name, &devs[i]), 0);
		char devpath[32];
		snprintf(devpath, sizeof(devpath), "/devices/n%d", i);
		dm_device_set_devpath(devs[i], devpath);
		dm_device_set_bus_data(devs[i], devs + i, count_free);
		assert_int_equal(dm_device_add(devs[i], i ? devs[(i - 1) / 2] : NULL), 0);
	}
	/* duplicate sibling names are refused */
	struct dm_device *dup;
	assert_int_equal(dm_device_new(m, "n1", &dup), 0);
	assert_int_equal(dm_device_add(dup, devs[0]), -EEXIST);
	dm_device_unref(dup);
	assert_int_equal(freed, 0);
	struct dm_device *bad;
	assert_int_equal(dm_device_new(m, "a/b", &bad), -EINVAL);
	assert_int_equal(dm_device_new(m, "..", &bad), -EINVAL);
	/* every name is one directory entry of the mount (a snapshot file
	 * could give any string) */
	static const char *const bad_names[] = { "", ".", "..", "a/b", "/" };
	struct dm_bus *bus;
	struct dm_class *cls;
	struct dm_interface *iface;
	struct dm_driver *drv;
	assert_int_equal(dm_class_get(m, "input", &cls), 0);
	for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
		const char *n = bad_names[i];
		assert_int_equal(dm_bus_get(m, n, NULL, &bus), -EINVAL);
		assert_int_equal(dm_class_get(m, n, &cls), -EINVAL);
		assert_int_equal(dm_class_get_interface(cls, n, &iface), -EINVAL);
		assert_int_equal(dm_driver_new(n, DM_DRIVER_USER, 0, NULL, NULL, NULL, &drv), -EINVAL);
		assert_int_equal(dm_device_set_value(devs[1], n, "x"), -EINVAL);
	}
	/* the class's own listings are no interface's name */
	assert_int_equal(dm_class_get_interface(cls, "devices", &iface), -EINVAL);
	assert_int_equal(dm_class_get_interface(cls, "drivers", &iface), -EINVAL);
	char long_name[300];
	memset(long_name, 'x', 256);
	long_name[256] = '\0';
	assert_int_equal(dm_bus_get(m, long_name, NULL, &bus), -EINVAL);
	assert_int_equal(dm_device_set_value(devs[1], long_name, "x"), -EINVAL);
	long_name[255] = '\0';
	assert_int_equal(dm_bus_get(m, long_name, NULL, &bus), 0);

	struct dm_device *f = dm_model_find_devpath(m, "/devices/n7");
	assert_ptr_equal(f, devs[7]);
	struct dm_device *g = dm_model_find_id(m, dm_device_get_id(devs[7]));
	assert_ptr_equal(g, devs[7]);
	char path[256];
	dm_model_read_lock(m);
	assert_int_equal(dm_device_path_locked(devs[7], path, sizeof(path)), 11);
	assert_string_equal(path, "n0/n1/n3/n7");
	dm_model_unlock(m);

	/* removal: lookups fail at once, but held references keep it alive */
	dm_device_del(devs[3]);
	assert_null(dm_model_find_devpath(m, "/devices/n7"));
	assert_null(dm_model_find_id(m, dm_device_get_id(devs[3])));
	assert_int_equal(freed, 0);
	for (int i = 0; i < 20; i++)
		dm_device_unref(devs[i]);
	/* removed subtree n3, n7, n8, n15..n18: all gone except f/g's n7 */
	assert_int_equal(freed, 6);
	dm_device_unref(f);
	dm_device_unref(g);
	assert_int_equal(freed, 7);
	dm_model_free(m);
	assert_int_equal(freed, 20);
}

/* Static values are packed per device: any order of sets and
 * replacements, before and after add, reads back in name order with the
 * last value of each; names repeated across devices are shared. */
struct values_seen {
	char text[512];
};

static int append_value(const char *name, const char *value, void *data)
{
	struct values_seen *v = data;
	size_t l = strlen(v->text);
	snprintf(v->text + l, sizeof(v->text) - l, "%s=%s;", name, value);
	return 0;
}

static void assert_values(struct dm_device *dev, const char *want)
{
	struct values_seen v = { "" };
	dm_model_read_lock(dm_device_get_model(dev));
	dm_device_for_each_value_locked(dev, append_value, &v);
	dm_model_unlock(dm_device_get_model(dev));
	if (strcmp(v.text, want))
		fail_msg("values of %s: expected '%s', got '%s'", dm_device_get_name(dev), want,
			 v.text);
}

static void test_values_packed_and_indexes(void **state)
{
	(void)state;
	struct dm_model *m;
	assert_int_equal(dm_model_new(&m), 0);
	assert_int_equal(dm_model_reserve_devices(m, 1000), 0);
	struct dm_device *a, *b;
	assert_int_equal(dm_device_new(m, "a", &a), 0);
	assert_int_equal(dm_device_reserve_values(a, 2, 8), 0); /* then more than reserved */
	assert_int_equal(dm_device_set_value(a, "vendor", "0x8086"), 0);
	assert_int_equal(dm_device_set_value(a, "class", "0x0c0330"), 0);
	assert_int_equal(dm_device_set_value(a, "vendor", "0x1af4-longer-than-before"), 0);
	assert_int_equal(dm_device_set_value(a, "irq", ""), 0);
	assert_int_equal(dm_device_set_value(a, "class", "1"), 0);
	assert_values(a, "class=1;irq=;vendor=0x1af4-longer-than-before;");
	assert_int_equal(dm_device_set_devpath(a, "/devices/a"), 0);
	assert_int_equal(dm_device_set_kernel_driver(a, "xhci_hcd"), 0);
	assert_int_equal(dm_device_add(a, NULL), 0);
	assert_int_equal(dm_device_reserve_values(a, 1, 1), -EBUSY);
	/* after add: replaced under the lock, the others unmoved */
	assert_int_equal(dm_device_set_value(a, "irq", "17"), 0);
	assert_int_equal(dm_device_set_value(a, "zz", "last"), 0);
	assert_values(a, "class=1;irq=17;vendor=0x1af4-longer-than-before;zz=last;");
	char buf[64];
	assert_int_equal(dm_device_get_value(a, "vendor", buf, sizeof(buf)), 25);
	assert_string_equal(buf, "0x1af4-longer-than-before");
	assert_int_equal(dm_device_get_value(a, "vendor", buf, 25), -ENOBUFS);
	assert_int_equal(dm_device_get_value(a, "none", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(dm_device_show(a, NULL, "irq", buf, sizeof(buf)), 3);
	assert_memory_equal(buf, "17\n", 3);

	/* a repeated kernel driver name is one string, which outlives a
	 * change of the device's driver */
	assert_int_equal(dm_device_new(m, "b", &b), 0);
	assert_int_equal(dm_device_set_kernel_driver(b, "xhci_hcd"), 0);
	assert_int_equal(dm_device_set_devpath(b, "/devices/a"), 0);
	assert_int_equal(dm_device_add(b, a), -EEXIST); /* the devpath is a's */
	assert_int_equal(dm_device_set_devpath(b, "/devices/a/b"), 0);
	assert_int_equal(dm_device_add(b, a), 0);
	const char *kd = dm_device_get_kernel_driver(a);
	assert_ptr_equal(dm_device_get_kernel_driver(b), kd);
	assert_int_equal(dm_device_set_kernel_driver(a, NULL), 0);
	assert_null(dm_device_get_kernel_driver(a));
	assert_string_equal(kd, "xhci_hcd");

	/* the indexes: by (parent, name), by devpath and id, after growing */
	struct dm_device *kids[300];
	for (int i = 0; i < 300; i++) {
		char name[16], devpath[64];
		snprintf(name, sizeof(name), "k%d", i);
		snprintf(devpath, sizeof(devpath), "/devices/a/b/k%d", i);
		assert_int_equal(dm_device_new(m, name, &kids[i]), 0);
		assert_int_equal(dm_device_set_devpath(kids[i], devpath), 0);
		assert_int_equal(dm_device_add(kids[i], i % 2 ? b : a), 0);
	}
	dm_device_del(kids[10]);
	dm_model_read_lock(m);
	assert_null(dm_device_find_child_locked(a, "k1")); /* b's */
	assert_ptr_equal(dm_device_find_child_locked(b, "k1"), kids[1]);
	assert_ptr_equal(dm_device_find_child_locked(a, "k298"), kids[298]);
	assert_null(dm_device_find_child_locked(a, "k10")); /* removed */
	assert_ptr_equal(dm_device_find_child_locked(dm_model_get_root(m), "a"), a);
	dm_model_unlock(m);
	for (int i = 0; i < 300; i++) {
		char devpath[64];
		snprintf(devpath, sizeof(devpath), "/devices/a/b/k%d", i);
		struct dm_device *f = dm_model_find_devpath(m, devpath);
		struct dm_device *g = dm_model_find_id(m, dm_device_get_id(kids[i]));
		assert_ptr_equal(f, i == 10 ? NULL : kids[i]);
		assert_ptr_equal(g, i == 10 ? NULL : kids[i]);
		dm_device_unref(f);
		dm_device_unref(g);
		dm_device_unref(kids[i]);
	}
	dm_device_unref(a);
	dm_device_unref(b);
	dm_model_free(m);
}

/* The PM cost estimate: nothing to call without the hook; one slow call
 * (preempted) is not enough to count as slow, two in a row are, and one
 * quick call makes it quick again. */
static int noop_hook(struct dm_device *dev, void *data)
{
	(void)dev;
	(void)data;
	return 0;
}

static void test_pm_cost_estimate(void **state)
{
	(void)state;
	static const struct dm_driver_ops ops = { .suspend = noop_hook };
	struct dm_driver *drv;
	assert_int_equal(dm_driver_new("est", DM_DRIVER_USER, 1, &ops, NULL, NULL, &drv), 0);
	assert_int_equal(dm_driver_pm_cost(drv, DM_CALL_RESUME), -1);
	assert_int_equal(dm_driver_pm_cost(NULL, DM_CALL_SUSPEND), -1);
	assert_int_equal(dm_driver_pm_cost(drv, DM_CALL_SUSPEND), 0);
	dm_driver_record_pm_usec(drv, 2);
	dm_driver_record_pm_usec(drv, 5000);
	assert_int_equal(dm_driver_pm_cost(drv, DM_CALL_SUSPEND), 2);
	dm_driver_record_pm_usec(drv, 3000);
	assert_int_equal(dm_driver_pm_cost(drv, DM_CALL_SUSPEND), 3000);
	dm_driver_record_pm_usec(drv, 1);
	assert_int_equal(dm_driver_pm_cost(drv, DM_CALL_SUSPEND), 1);
	dm_driver_unref(drv);
}

/* The hook clock agrees with CLOCK_MONOTONIC, and converts both ways. The
 * interval it measures lies inside the monotonic bracket around it, on every
 * try; that it fills the bracket is asked of one try in five, as a preempted
 * test thread widens the bracket without being wrong. */
static void test_clock_agrees_with_monotonic(void **state)
{
	(void)state;
	struct timespec a, b, pause = { 0, 30 * 1000000 };
	bool close = false;
	dm_clock_now(); /* calibrated by its first use, not in the bracket */
	for (int i = 0; i < 5; i++) {
		clock_gettime(CLOCK_MONOTONIC, &a);
		uint64_t t0 = dm_clock_now();
		nanosleep(&pause, NULL);
		uint64_t t1 = dm_clock_now();
		clock_gettime(CLOCK_MONOTONIC, &b);
		long mono = (b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000;
		long ours = dm_clock_usec(t1 - t0);
		assert_true(ours >= 30000 - 30000 / 1000);
		/* give or take the factor's error: a few 10^-5 from calibrating
		 * over 2 ms with reads narrower than a microsecond */
		assert_true(ours <= mono + mono / 1000 + 1);
		if (mono - ours < mono / 100 + 50)
			close = true;
	}
	assert_true(close);
	/* and back: the ticks of 1 ms last 1 ms */
	long back = dm_clock_usec(dm_clock_ticks(1000));
	assert_true(back >= 998 && back <= 1000);
}

/* ---- listings by kernel name ---- */

static bool on_bus(struct dm_device *dev, void *data)
{
	return dm_device_get_bus_locked(dev) == data;
}

/* Many devices, each name twice (under two parents, on two buses), half of
 * them removed in a scattered order: every remaining one is found in its
 * own bus's listing and nowhere else, every removed one nowhere. */
static void test_listed_lookup_by_sysname(void **state)
{
	(void)state;
	enum { N = 3000 };
	struct dm_model *m;
	assert_int_equal(dm_model_new(&m), 0);
	struct dm_bus *bus[2];
	assert_int_equal(dm_bus_get(m, "alpha", NULL, &bus[0]), 0);
	assert_int_equal(dm_bus_get(m, "beta", NULL, &bus[1]), 0);
	struct dm_device *top[2], *devs[2][N];
	bool gone[2][N] = { { false } };
	for (int b = 0; b < 2; b++) {
		assert_int_equal(dm_device_new(m, b ? "top1" : "top0", &top[b]), 0);
		assert_int_equal(dm_device_add(top[b], NULL), 0);
		for (int i = 0; i < N; i++) {
			char name[16];
			snprintf(name, sizeof(name), "d%d", i);
			assert_int_equal(dm_device_new(m, name, &devs[b][i]), 0);
			dm_device_set_bus(devs[b][i], bus[b]);
			assert_int_equal(dm_device_add(devs[b][i], top[b]), 0);
		}
	}
	for (int i = 0; i < N; i += 1 + i % 3) {
		int b = i % 2;
		dm_device_del(devs[b][i]);
		gone[b][i] = true;
	}
	dm_model_read_lock(m);
	for (int b = 0; b < 2; b++)
		for (int i = 0; i < N; i++) {
			char name[16];
			snprintf(name, sizeof(name), "d%d", i);
			struct dm_device *got = dm_model_find_listed_locked(m, name, on_bus, bus[b]);
			if (got != (gone[b][i] ? NULL : devs[b][i]))
				fail_msg("%s on bus %d: expected %s, got %s", name, b,
					 gone[b][i] ? "nothing" : "the device",
					 got ? (got == devs[b][i] ? "the device" : "another one")
					     : "nothing");
		}
	assert_null(dm_model_find_listed_locked(m, "d0x", on_bus, bus[0]));
	dm_model_unlock(m);
	for (int b = 0; b < 2; b++) {
		for (int i = 0; i < N; i++)
			dm_device_unref(devs[b][i]);
		dm_device_unref(top[b]);
	}
	dm_model_free(m);
}

/* ---- allocation failures ---- */

/* test-core links with --wrap=calloc: the next calloc fails when armed. */
void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);
static int calloc_fail_next;
void *__wrap_calloc(size_t n, size_t size)
{
	if (calloc_fail_next) {
		calloc_fail_next = 0;
		return NULL;
	}
	return __real_calloc(n, size);
}

static void test_register_failure_registers_nothing(void **state)
{
	(void)state;
	struct dm_model *m;
	assert_int_equal(dm_model_new(&m), 0);
	struct dm_bus *bus;
	assert_int_equal(dm_bus_get(m, "pci", NULL, &bus), 0);
	struct dm_device *dev = add(m, NULL, "0000:00:03.0", bus);
	struct dm_driver *drv;
	assert_int_equal(dm_driver_new("accept-retry", DM_DRIVER_USER, 1, &record_ops,
				       "accept-retry", NULL, &drv), 0);

	calloc_fail_next = 1;
	assert_int_equal(dm_driver_register(bus, drv), -ENOMEM);
	calloc_fail_next = 0;
	struct dm_driver *found = dm_bus_find_driver(bus, "accept-retry");
	if (found)
		fail_msg("a failed registration left the driver on the bus");
	dm_model_read_lock(m);
	assert_null(dm_device_get_driver_locked(dev));
	dm_model_unlock(m);

	/* nothing of the failed attempt stays: the retry registers and binds */
	assert_int_equal(dm_driver_register(bus, drv), 0);
	dm_model_read_lock(m);
	assert_ptr_equal(dm_device_get_driver_locked(dev), drv);
	dm_model_unlock(m);

	dm_driver_unregister(drv);
	dm_driver_unref(drv);
	dm_device_unref(dev);
	dm_model_free(m);
}

/* ---- values longer than the caller's buffer ---- */

#define JOURNAL_LEN (2 * DM_ATTR_MAX)

static int journal_show(struct dm_device *dev, const struct dm_attribute *a, char **ret,
			size_t *ret_len)
{
	(void)dev;
	(void)a;
	char *all = malloc(JOURNAL_LEN);
	if (!all)
		return -ENOMEM;
	memset(all, 'x', JOURNAL_LEN);
	*ret = all;
	*ret_len = JOURNAL_LEN;
	return 0;
}

/* a show() that fills all it is given, without room for a NUL */
static int fill_show(struct dm_device *dev, const struct dm_attribute *a, char *buf, size_t size)
{
	(void)dev;
	(void)a;
	memset(buf, 'y', size);
	return (int)size;
}

static const struct dm_attribute journal_attr = {
	.name = "journal", .mode = 0444, .flags = DM_ATTR_UNBOUNDED, .show_alloc = journal_show,
};
static const struct dm_attribute fill_attr = DM_ATTR_RO(fill, fill_show);
static const struct dm_attribute *const long_attrs[] = { &journal_attr, &fill_attr, NULL };
static const struct dm_attribute_group long_group = { .attrs = long_attrs };

static void test_show_cuts_long_values_with_a_nul(void **state)
{
	(void)state;
	struct dm_model *m;
	assert_int_equal(dm_model_new(&m), 0);
	struct dm_bus *bus;
	assert_int_equal(dm_bus_get(m, "pci", NULL, &bus), 0);
	struct dm_device *dev;
	assert_int_equal(dm_device_new(m, "0000:00:04.0", &dev), 0);
	dm_device_set_bus(dev, bus);
	assert_int_equal(dm_device_add_group(dev, &long_group), 0);
	assert_int_equal(dm_device_add(dev, NULL), 0);

	/* a match rule reads the journal into its own buffer (of
	 * DM_ATTR_MAX + 1 bytes, on the stack) and ends it: first, so that an
	 * ASan build sees a byte written past that buffer */
	struct dm_driver *drv;
	assert_int_equal(dm_driver_new("journal-reader", DM_DRIVER_USER, 1, NULL, NULL, NULL, &drv),
			 0);
	assert_int_equal(dm_driver_add_match(drv, "journal", "xxx*"), 0);
	assert_int_equal(dm_driver_register(bus, drv), 0);
	assert_int_equal(dm_driver_default_match(dev, drv), 1);

	/* on the heap, exactly sized: a byte written past it is ASan's */
	const char *names[] = { "journal", "fill" };
	for (size_t i = 0; i < 2; i++) {
		for (size_t size = 1; size <= DM_ATTR_MAX + 1; size += DM_ATTR_MAX / 2) {
			char *buf = malloc(size);
			assert_non_null(buf);
			int n = dm_device_show(dev, NULL, names[i], buf, size);
			if (n < 0 || (size_t)n >= size)
				fail_msg("%s into %zu bytes: expected at most %zu, got %d", names[i],
					 size, size - 1, n);
			assert_int_equal(buf[n], '\0');
			assert_int_equal(strlen(buf), n);
			free(buf);
		}
	}

	dm_driver_unregister(drv);
	dm_driver_unref(drv);
	dm_device_unref(dev);
	dm_model_free(m);
}

/* ---- the model lock: writers are not starved by readers ---- */

struct lock_race {
	struct dm_model *m;
	atomic_uint entries[2]; /* each reader's count of read locks taken */
	atomic_bool stop;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	bool written;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Two readers hand the read lock to each other: each keeps it until the
 * other has taken it anew (or half a second went by), so that with a
 * lock that lets readers in past a waiting writer it is never free. */
static void *reader_thread(void *data)
{
	struct lock_race *lr = *(struct lock_race **)data;
	int me = (int)(((struct lock_race **)data)[1] != NULL);
	while (!atomic_load(&lr->stop)) {
		dm_model_read_lock(lr->m);
		unsigned other = atomic_load(&lr->entries[!me]);
		atomic_fetch_add(&lr->entries[me], 1);
		double give_up = now_s() + 0.5;
		while (atomic_load(&lr->entries[!me]) == other && !atomic_load(&lr->stop) &&
		       now_s() < give_up)
			sched_yield();
		dm_model_unlock(lr->m);
	}
	return NULL;
}

static void *writer_thread(void *data)
{
	struct lock_race *lr = data;
	dm_model_write_lock(lr->m);
	dm_model_unlock(lr->m);
	pthread_mutex_lock(&lr->mu);
	lr->written = true;
	pthread_cond_signal(&lr->cond);
	pthread_mutex_unlock(&lr->mu);
	return NULL;
}

/* Readers that keep the model's lock taken without a break (any user's
 * walks can) must not hold off a writer (hotplug, PM) for ever. A liveness
 * check: the writer gets the lock within a minute, where glibc's default
 * rwlock, which lets readers in past it, never gives it. */
static void test_writer_gets_the_lock_past_readers(void **state)
{
	struct lock_race lr = { 0 };
	(void)state;
	assert_int_equal(dm_model_new(&lr.m), 0);
	pthread_mutex_init(&lr.mu, NULL);
	pthread_cond_init(&lr.cond, NULL);
	struct lock_race *args[2][2] = { { &lr, NULL }, { &lr, &lr } };
	pthread_t readers[2], writer;
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&readers[i], NULL, reader_thread, args[i]), 0);
	/* both readers handing the lock over before the writer comes */
	while (atomic_load(&lr.entries[0]) < 100 || atomic_load(&lr.entries[1]) < 100)
		sched_yield();
	assert_int_equal(pthread_create(&writer, NULL, writer_thread, &lr), 0);
	struct timespec deadline;
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 60;
	pthread_mutex_lock(&lr.mu);
	int r = 0;
	while (!lr.written && r == 0)
		r = pthread_cond_timedwait(&lr.cond, &lr.mu, &deadline);
	bool written = lr.written;
	pthread_mutex_unlock(&lr.mu);
	atomic_store(&lr.stop, true); /* then the writer gets it in any case */
	for (int i = 0; i < 2; i++)
		pthread_join(readers[i], NULL);
	pthread_join(writer, NULL);
	assert_true(written); /* else: the writer waited a minute behind readers */
	pthread_cond_destroy(&lr.cond);
	pthread_mutex_destroy(&lr.mu);
	dm_model_free(lr.m);
}

/* ---- lock rules checked (docs/design.md §4.2) ---- */

#ifdef DM_LOCK_CHECKS
static int count_fn(struct dm_device *dev, void *data)
{
	(void)dev;
	(*(size_t *)data)++;
	return 0;
}

enum broken_rule { RULE_KEPT, RULE_LOCKED_WITHOUT_LOCK, RULE_MUTEX_AFTER_LOCK, RULE_UNLOCK_NOT_HELD };

/* Runs @rule in a child: the exit status (0), or the signal that ended it. */
static int run_rule(struct dm_model *m, struct dm_device *dev, enum broken_rule rule)
{
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		size_t n = 0;
		/* the assertion's message on the test's stderr is expected */
		switch (rule) {
		case RULE_KEPT:
			dm_model_read_lock(m);
			dm_model_for_each_device_locked(m, count_fn, &n);
			dm_model_unlock(m);
			dm_device_release_driver(dev); /* device mutex, then the lock */
			break;
		case RULE_LOCKED_WITHOUT_LOCK:
			dm_model_for_each_device_locked(m, count_fn, &n);
			break;
		case RULE_MUTEX_AFTER_LOCK:
			dm_model_read_lock(m);
			dm_device_release_driver(dev); /* its mutex under the lock */
			dm_model_unlock(m);
			break;
		case RULE_UNLOCK_NOT_HELD:
			dm_model_unlock(m);
			break;
		}
		_exit(n > 0 || rule != RULE_LOCKED_WITHOUT_LOCK ? 0 : 1);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFSIGNALED(status) ? WTERMSIG(status) : -WEXITSTATUS(status);
}

#endif

static void test_lock_rules_are_checked(void **state)
{
	(void)state;
#ifndef DM_LOCK_CHECKS
	skip(); /* the checks are not built in (meson's -Dlock_checks) */
#else
	struct dm_model *m;
	assert_int_equal(dm_model_new(&m), 0);
	struct test_tree t;
	test_tree_build(&t, m, 8, 1, NULL);
	struct dm_device *dev = dm_model_get_root(m);

	assert_int_equal(run_rule(m, dev, RULE_KEPT), 0);
	assert_int_equal(run_rule(m, dev, RULE_LOCKED_WITHOUT_LOCK), SIGABRT);
	assert_int_equal(run_rule(m, dev, RULE_MUTEX_AFTER_LOCK), SIGABRT);
	assert_int_equal(run_rule(m, dev, RULE_UNLOCK_NOT_HELD), SIGABRT);
	test_tree_free(&t);
	dm_model_free(m);
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_global_list_depth_first_random_trees),
		cmocka_unit_test(test_remove_subtree_children_first),
		cmocka_unit_test(test_probe_priority_first_acceptor_wins),
		cmocka_unit_test(test_kernel_proxy_and_match_rules),
		cmocka_unit_test(test_class_drivers_drive_class_devices),
		cmocka_unit_test(test_attribute_store_rejects_bad_input),
		cmocka_unit_test(test_lookups_and_refcounts),
		cmocka_unit_test(test_values_packed_and_indexes),
		cmocka_unit_test(test_clock_agrees_with_monotonic),
		cmocka_unit_test(test_pm_cost_estimate),
		cmocka_unit_test(test_listed_lookup_by_sysname),
		cmocka_unit_test(test_register_failure_registers_nothing),
		cmocka_unit_test(test_show_cuts_long_values_with_a_nul),
		cmocka_unit_test(test_writer_gets_the_lock_past_readers),
		cmocka_unit_test(test_lock_rules_are_checked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
