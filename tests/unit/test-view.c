/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of the model as the mount shows it (src/fuse/view.c), without
 * a mount: what each kind of directory lists, what a name finds (through
 * an index or a walk), where links point at any depth, and what stat says
 * of directories, values, driver files and links, and of them once their
 * device is gone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/model.h"
#include "fuse/view.h"

/*
 * root/
 *   pci0000:00/            bus "pci"
 *     0000:00:02.0/        bus "pci", driver "i915", class "drm" iface "card"
 *                          values vendor=0x8086
 */
struct fixture {
	struct dm_model *m;
	struct dm_bus *pci;
	struct dm_class *drm;
	struct dm_interface *card;
	struct dm_driver *i915;
	struct dm_device *host, *gpu;
	struct timespec start;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	assert_int_equal(dm_model_new(&f->m), 0);
	assert_int_equal(dm_bus_get(f->m, "pci", NULL, &f->pci), 0);
	assert_int_equal(dm_class_get(f->m, "drm", &f->drm), 0);
	assert_int_equal(dm_class_get_interface(f->drm, "card", &f->card), 0);
	assert_int_equal(dm_driver_new("i915", DM_DRIVER_KERNEL, 0, NULL, NULL, NULL, &f->i915), 0);
	assert_int_equal(dm_driver_register(f->pci, f->i915), 0);

	assert_int_equal(dm_device_new(f->m, "pci0000:00", &f->host), 0);
	assert_int_equal(dm_device_add(f->host, NULL), 0);
	assert_int_equal(dm_device_new(f->m, "0000:00:02.0", &f->gpu), 0);
	dm_device_set_bus(f->gpu, f->pci);
	dm_device_set_class(f->gpu, f->drm, f->card);
	assert_int_equal(dm_device_set_kernel_driver(f->gpu, "i915"), 0);
	assert_int_equal(dm_device_set_value(f->gpu, "vendor", "0x8086"), 0);
	assert_int_equal(dm_device_add(f->gpu, f->host), 0);
	f->start = (struct timespec){ .tv_sec = 1000 };
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	dm_device_unref(f->gpu);
	dm_device_unref(f->host);
	dm_driver_unref(f->i915);
	dm_model_free(f->m);
	free(f);
	return 0;
}

/* A node as the table would copy it: @t at @depth (the mount root is 0). */
static struct fs_ref node(struct fs_target t, const char *name, unsigned depth)
{
	/* the group path outlives the node, which is returned by value (a
	 * pointer into its own n.group would point into this frame) */
	static char groups[64][FS_GROUP_MAX];
	static unsigned next;
	struct fs_ref n = { .t = t, .depth = depth, .ino = 2 };
	snprintf(n.name, sizeof(n.name), "%s", name);
	if (t.group) {
		char *g = groups[next++ % 64];
		snprintf(g, FS_GROUP_MAX, "%s", t.group);
		snprintf(n.group, sizeof(n.group), "%s", t.group);
		n.t.group = g;
	}
	return n;
}

struct listing {
	char text[2048]; /* "name:kind/type;" per entry */
};

static int collect(void *ctx, const char *name, const struct fs_target *t, mode_t type)
{
	struct listing *l = ctx;
	size_t len = strlen(l->text);
	snprintf(l->text + len, sizeof(l->text) - len, "%s:%d/%c;", name, (int)t->kind,
		 S_ISDIR(type) ? 'd' : S_ISLNK(type) ? 'l' : 'f');
	return 0;
}

/* The listing of @dir as text, with the walk's return in *ret. */
static const char *walk(struct fixture *f, const struct fs_ref *dir, int *ret)
{
	static struct listing l;
	l.text[0] = '\0';
	dm_model_read_lock(f->m);
	*ret = fs_view_walk_locked(f->m, dir, collect, &l);
	dm_model_unlock(f->m);
	return l.text;
}

static bool listed(const char *text, const char *entry)
{
	return strstr(text, entry) != NULL;
}

static void test_walk_each_kind(void **state)
{
	struct fixture *f = *state;
	int r;
	struct fs_ref top = node((struct fs_target){ .kind = FS_TOP }, "", 0);
	char expect[256];
	/* the three views, then the whole system's files (the root device's) */
	snprintf(expect, sizeof(expect),
		 "root:%d/d;bus:%d/d;class:%d/d;power:%d/f;power_error:%d/f;power_log:%d/f;"
		 "metrics:%d/f;",
		 FS_DEV, FS_BUSES, FS_CLASSES, FS_ATTR, FS_ATTR, FS_ATTR, FS_ATTR);
	assert_string_equal(walk(f, &top, &r), expect);
	assert_int_equal(r, 0);

	struct fs_ref gpu = node((struct fs_target){ .kind = FS_DEV, .dev = f->gpu }, "0000:00:02.0",
				 2);
	const char *text = walk(f, &gpu, &r);
	assert_int_equal(r, 0);
	snprintf(expect, sizeof(expect), "vendor:%d/f;", FS_ATTR);
	assert_true(listed(text, expect));
	snprintf(expect, sizeof(expect), "subsystem:%d/l;", FS_LINK_FROM_DEV);
	assert_true(listed(text, expect));
	snprintf(expect, sizeof(expect), "driver:%d/l;", FS_LINK_FROM_DEV);
	assert_true(listed(text, expect));

	struct fs_ref bus = node((struct fs_target){ .kind = FS_BUS, .bus = f->pci }, "pci", 2);
	snprintf(expect, sizeof(expect), "devices:%d/d;drivers:%d/d;", FS_BUS_DEVICES,
		 FS_BUS_DRIVERS);
	assert_string_equal(walk(f, &bus, &r), expect);

	struct fs_ref devs = node((struct fs_target){ .kind = FS_BUS_DEVICES, .bus = f->pci },
				  "devices", 3);
	snprintf(expect, sizeof(expect), "0000:00:02.0:%d/l;", FS_LINK_TO_DEV);
	assert_string_equal(walk(f, &devs, &r), expect);

	struct fs_ref drv = node((struct fs_target){ .kind = FS_DRIVER, .drv = f->i915 }, "i915", 4);
	/* a kernel driver's: bind and unbind too (binding transactions) */
	snprintf(expect, sizeof(expect),
		 "kind:%d/f;priority:%d/f;bind:%d/f;unbind:%d/f;0000:00:02.0:%d/l;", FS_DRV_ATTR,
		 FS_DRV_ATTR, FS_DRV_ATTR, FS_DRV_ATTR, FS_LINK_TO_DEV);
	assert_string_equal(walk(f, &drv, &r), expect);

	struct fs_ref cls = node((struct fs_target){ .kind = FS_CLASS, .class = f->drm }, "drm", 2);
	snprintf(expect, sizeof(expect), "devices:%d/d;drivers:%d/d;card:%d/d;", FS_CLASS_DEVICES,
		 FS_CLASS_DRIVERS, FS_IFACE);
	assert_string_equal(walk(f, &cls, &r), expect);

	/* the drivers of the class's devices, each once, by bus and name */
	struct fs_ref cdrv = node((struct fs_target){ .kind = FS_CLASS_DRIVERS, .class = f->drm },
				  "drivers", 3);
	snprintf(expect, sizeof(expect), "pci:i915:%d/l;", FS_LINK_TO_DRV);
	assert_string_equal(walk(f, &cdrv, &r), expect);

	struct fs_ref iface = node((struct fs_target){ .kind = FS_IFACE, .iface = f->card }, "card",
				   3);
	snprintf(expect, sizeof(expect), "0000:00:02.0:%d/l;", FS_LINK_TO_DEV);
	assert_string_equal(walk(f, &iface, &r), expect);

	/* a file is not a directory */
	struct fs_ref file = node((struct fs_target){ .kind = FS_ATTR, .dev = f->gpu }, "vendor", 3);
	walk(f, &file, &r);
	assert_int_equal(r, -ENOTDIR);
}

static int find(struct fixture *f, const struct fs_ref *dir, const char *name,
		struct fs_target *ret)
{
	dm_model_read_lock(f->m);
	static char group[FS_GROUP_MAX];
	int r = fs_view_find_locked(f->m, dir, name, ret, group);
	dm_model_unlock(f->m);
	return r;
}

static void test_find(void **state)
{
	struct fixture *f = *state;
	struct fs_target t;
	struct fs_ref root = node((struct fs_target){ .kind = FS_DEV,
						      .dev = dm_model_get_root(f->m) },
				  "root", 1);
	/* a child, from the index */
	assert_int_equal(find(f, &root, "pci0000:00", &t), 0);
	assert_int_equal(t.kind, FS_DEV);
	assert_ptr_equal(t.dev, f->host);
	/* a file of a device: by walking it */
	struct fs_ref gpu = node((struct fs_target){ .kind = FS_DEV, .dev = f->gpu }, "0000:00:02.0",
				 3);
	assert_int_equal(find(f, &gpu, "vendor", &t), 0);
	assert_int_equal(t.kind, FS_ATTR);
	assert_int_equal(find(f, &gpu, "driver", &t), 0);
	assert_int_equal(t.kind, FS_LINK_FROM_DEV);
	assert_int_equal(find(f, &gpu, "nothing", &t), -ENOENT);
	/* listings answered by their index alone */
	struct fs_ref drv = node((struct fs_target){ .kind = FS_DRIVER, .drv = f->i915 }, "i915", 4);
	assert_int_equal(find(f, &drv, "priority", &t), 0);
	assert_int_equal(t.kind, FS_DRV_ATTR);
	assert_int_equal(find(f, &drv, "0000:00:02.0", &t), 0);
	assert_int_equal(t.kind, FS_LINK_TO_DEV);
	assert_ptr_equal(t.dev, f->gpu);
	struct fs_ref iface = node((struct fs_target){ .kind = FS_IFACE, .iface = f->card }, "card",
				   3);
	assert_int_equal(find(f, &iface, "pci0000:00", &t), -ENOENT);
}

static int target(struct fixture *f, const struct fs_ref *n, char *buf, size_t size)
{
	dm_model_read_lock(f->m);
	int r = fs_view_link_target_locked(n, buf, size);
	dm_model_unlock(f->m);
	return r;
}

static void test_link_targets(void **state)
{
	struct fixture *f = *state;
	char buf[256];
	/* bus/pci/devices/0000:00:02.0 (depth 4) */
	struct fs_ref to = node((struct fs_target){ .kind = FS_LINK_TO_DEV, .dev = f->gpu },
				"0000:00:02.0", 4);
	const char *want = "../../../root/pci0000:00/0000:00:02.0";
	assert_int_equal(target(f, &to, buf, sizeof(buf)), (int)strlen(want));
	assert_string_equal(buf, want);
	/* root/pci0000:00/0000:00:02.0/driver (depth 4) and subsystem */
	struct fs_ref drv = node((struct fs_target){ .kind = FS_LINK_FROM_DEV, .dev = f->gpu },
				 "driver", 4);
	assert_true(target(f, &drv, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "../../../bus/pci/drivers/i915");
	struct fs_ref sub = node((struct fs_target){ .kind = FS_LINK_FROM_DEV, .dev = f->gpu },
				 "subsystem", 4);
	assert_true(target(f, &sub, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "../../../bus/pci");
	/* class/drm/drivers/pci:i915 (depth 4) */
	struct fs_ref cdrv = node((struct fs_target){ .kind = FS_LINK_TO_DRV, .drv = f->i915 },
				  "pci:i915", 4);
	assert_true(target(f, &cdrv, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "../../../bus/pci/drivers/i915");
	assert_int_equal(target(f, &cdrv, buf, 20), -ENAMETOOLONG);
	/* no room: never a cut target */
	assert_int_equal(target(f, &to, buf, 10), -ENAMETOOLONG);
	assert_int_equal(target(f, &to, buf, strlen(want)), -ENAMETOOLONG);
	/* a device without a driver has no driver link to follow */
	struct fs_ref host = node((struct fs_target){ .kind = FS_LINK_FROM_DEV, .dev = f->host },
				  "driver", 3);
	assert_int_equal(target(f, &host, buf, sizeof(buf)), -ENOENT);
}

static void test_stat(void **state)
{
	struct fixture *f = *state;
	struct stat st;
	double timeout = -1;
	struct fs_ref gpu = node((struct fs_target){ .kind = FS_DEV, .dev = f->gpu }, "0000:00:02.0",
				 3);
	assert_int_equal(fs_view_stat(f->m, &f->start, &gpu, &st, &timeout), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0755);
	assert_int_equal(st.st_ino, 2);
	assert_true(timeout == FS_ATTR_TIMEOUT);

	/* a static value: its length, read-only, its mtime past the start */
	struct fs_ref vendor = node((struct fs_target){ .kind = FS_ATTR, .dev = f->gpu }, "vendor",
				    4);
	assert_int_equal(fs_view_stat(f->m, &f->start, &vendor, &st, &timeout), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_size, strlen("0x8086\n"));
	assert_int_equal(st.st_mode & 0222, 0);
	assert_true(st.st_mtim.tv_sec > f->start.tv_sec ||
		    (st.st_mtim.tv_sec == f->start.tv_sec && st.st_mtim.tv_nsec > 0));
	struct timespec before = st.st_mtim;
	/* a change of the device's values moves it */
	assert_int_equal(dm_device_set_value(f->gpu, "vendor", "0x1af4"), 0);
	assert_int_equal(fs_view_stat(f->m, &f->start, &vendor, &st, NULL), 0);
	assert_true(st.st_mtim.tv_sec != before.tv_sec || st.st_mtim.tv_nsec != before.tv_nsec);

	/* a driver's file */
	struct fs_ref prio = node((struct fs_target){ .kind = FS_DRV_ATTR, .drv = f->i915 },
				  "priority", 5);
	assert_int_equal(fs_view_stat(f->m, &f->start, &prio, &st, NULL), 0);
	assert_int_equal(st.st_size, 2); /* "0\n" */
	char buf[16];
	assert_int_equal(fs_view_driver_file_show(f->i915, "kind", buf, sizeof(buf)), 7);
	assert_string_equal(buf, "kernel\n");
	assert_int_equal(fs_view_driver_file_show(f->i915, "other", buf, sizeof(buf)), -ENOENT);

	/* a link: its target's length */
	struct fs_ref sub = node((struct fs_target){ .kind = FS_LINK_FROM_DEV, .dev = f->gpu },
				 "subsystem", 4);
	assert_int_equal(fs_view_stat(f->m, &f->start, &sub, &st, NULL), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(st.st_size, strlen("../../../bus/pci"));

	/* no file of that name */
	struct fs_ref none = node((struct fs_target){ .kind = FS_ATTR, .dev = f->gpu }, "none", 4);
	assert_int_equal(fs_view_stat(f->m, &f->start, &none, &st, NULL), -ENOENT);
}

static void test_removed_device(void **state)
{
	struct fixture *f = *state;
	struct stat st;
	int r;
	struct fs_ref gpu = node((struct fs_target){ .kind = FS_DEV, .dev = f->gpu }, "0000:00:02.0",
				 3);
	struct fs_ref vendor = node((struct fs_target){ .kind = FS_ATTR, .dev = f->gpu }, "vendor",
				    4);
	struct fs_ref to = node((struct fs_target){ .kind = FS_LINK_TO_DEV, .dev = f->gpu },
				"0000:00:02.0", 4);
	dm_device_del(f->gpu);
	assert_int_equal(fs_view_stat(f->m, &f->start, &gpu, &st, NULL), -ENOENT);
	assert_int_equal(fs_view_stat(f->m, &f->start, &vendor, &st, NULL), -ENOENT);
	assert_int_equal(fs_view_stat(f->m, &f->start, &to, &st, NULL), -ENOENT);
	walk(f, &gpu, &r);
	assert_int_equal(r, -ENOENT);
	/* it has left the listings */
	struct fs_ref devs = node((struct fs_target){ .kind = FS_BUS_DEVICES, .bus = f->pci },
				  "devices", 3);
	assert_string_equal(walk(f, &devs, &r), "");
	struct fs_target t;
	assert_int_equal(find(f, &devs, "0000:00:02.0", &t), -ENOENT);
}

/* A dynamic group (driverfs.h: for_each and find instead of a table), as
 * the sysfs passthrough is: "vendor" and "name" (which the device's static
 * values shadow; driverfsd's "name" means something else than sysfs's) and
 * "extra". */
static int extra_show(struct dm_device *dev, const struct dm_attribute *attr, char *buf,
		      size_t size)
{
	(void)dev;
	return dm_emit(buf, size, "%s!\n", attr->name);
}
static const struct dm_attribute dyn_vendor = { .name = "vendor", .mode = 0444,
						.flags = DM_ATTR_LIVE, .show = extra_show };
static const struct dm_attribute dyn_name = { .name = "name", .mode = 0444,
					      .flags = DM_ATTR_LIVE, .show = extra_show };
static const struct dm_attribute dyn_extra = { .name = "extra", .mode = 0644,
					       .flags = DM_ATTR_LIVE, .show = extra_show };

static int dyn_for_each(struct dm_device *dev, const char *dir,
			int (*fn)(const struct dm_attribute *, void *), void *data)
{
	(void)dev;
	if (dir && strcmp(dir, "sub") == 0)
		return fn(&dyn_extra, data);
	if (dir)
		return 0;
	int r = fn(&dyn_vendor, data);
	r = r ? r : fn(&dyn_name, data);
	return r ? r : fn(&dyn_extra, data);
}

static const struct dm_attribute *dyn_find(struct dm_device *dev, const char *dir,
					   const char *name)
{
	(void)dev;
	if (dir && strcmp(dir, "sub") != 0)
		return NULL;
	if (!dir && strcmp(name, "vendor") == 0)
		return &dyn_vendor;
	if (!dir && strcmp(name, "name") == 0)
		return &dyn_name;
	return strcmp(name, "extra") == 0 ? &dyn_extra : NULL;
}

/* one subdirectory, "sub", holding "extra" */
static int dyn_for_each_dir(struct dm_device *dev, const char *dir,
			    int (*fn)(const char *, void *), void *data)
{
	(void)dev;
	return dir ? 0 : fn("sub", data);
}

static bool dyn_has_dir(struct dm_device *dev, const char *dir)
{
	(void)dev;
	return dir && strcmp(dir, "sub") == 0;
}

static const struct dm_attribute_group dyn_group = { .for_each = dyn_for_each,
						     .find = dyn_find,
						     .for_each_dir = dyn_for_each_dir,
						     .has_dir = dyn_has_dir };

static void test_dynamic_group(void **state)
{
	struct fixture *f = *state;
	struct dm_device *d;
	int r;
	assert_int_equal(dm_device_new(f->m, "dyn", &d), 0);
	assert_int_equal(dm_device_set_value(d, "vendor", "0x8086"), 0);
	assert_int_equal(dm_device_set_value(d, "name", "Dynamic device"), 0);
	assert_int_equal(dm_device_add_group(d, &dyn_group), 0);
	assert_int_equal(dm_device_add(d, NULL), 0);

	/* sysfs's "vendor" (the same value as the static one) listed once;
	 * the kernel's "name" under its name, driverfsd's description beside
	 * it as DM_OWN_PREFIX "name" (docs/design.md §6.2) */
	struct fs_ref dir = node((struct fs_target){ .kind = FS_DEV, .dev = d }, "dyn", 2);
	const char *text = walk(f, &dir, &r);
	assert_int_equal(r, 0);
	char expect[128];
	snprintf(expect, sizeof(expect), "vendor:%d/f;", FS_ATTR);
	const char *first = strstr(text, expect);
	assert_non_null(first);
	char again[sizeof(expect) + 1];
	snprintf(again, sizeof(again), ";%s", expect);
	assert_null(strstr(first, again)); /* once */
	assert_null(strstr(text, "driverfs:vendor"));
	assert_null(strstr(text, "sysfs:"));
	snprintf(expect, sizeof(expect), ";name:%d/f;", FS_ATTR);
	assert_non_null(strstr(text, expect));
	snprintf(expect, sizeof(expect), "driverfs:name:%d/f;", FS_ATTR);
	assert_non_null(strstr(text, expect));
	snprintf(expect, sizeof(expect), "extra:%d/f;", FS_ATTR);
	const char *extra = strstr(text, expect);
	assert_non_null(extra);
	assert_true(extra > first);

	/* found without a walk; the static value wins its name */
	struct fs_target t;
	assert_int_equal(find(f, &dir, "extra", &t), 0);
	assert_int_equal(t.kind, FS_ATTR);
	char buf[32];
	assert_int_equal(dm_device_show(d, NULL, "vendor", buf, sizeof(buf)), 7);
	assert_string_equal(buf, "0x8086\n");
	assert_int_equal(dm_device_show(d, NULL, "extra", buf, sizeof(buf)), 7);
	assert_string_equal(buf, "extra!\n");
	/* the kernel's "name" is "name"; driverfsd's is beside it, and only
	 * under the one name the rule gives it */
	assert_int_equal(find(f, &dir, "name", &t), 0);
	assert_int_equal(dm_device_show(d, NULL, "name", buf, sizeof(buf)), 6);
	assert_string_equal(buf, "name!\n");
	assert_int_equal(find(f, &dir, "driverfs:name", &t), 0);
	assert_int_equal(dm_device_show(d, NULL, "driverfs:name", buf, sizeof(buf)), 15);
	assert_string_equal(buf, "Dynamic device\n");
	assert_int_equal(find(f, &dir, "driverfs:driverfs:name", &t), -ENOENT);
	assert_int_equal(find(f, &dir, "driverfs:vendor", &t), -ENOENT);
	assert_int_equal(find(f, &dir, "driverfs:extra", &t), -ENOENT);
	assert_int_equal(find(f, &dir, "driverfs:power", &t), -ENOENT);
	assert_int_equal(find(f, &dir, "driverfs:", &t), -ENOENT);
	assert_int_equal(dm_device_show(d, NULL, "driverfs:nothing", buf, sizeof(buf)), -ENOENT);
	struct stat st;
	struct fs_ref file = node((struct fs_target){ .kind = FS_ATTR, .dev = d }, "extra", 3);
	assert_int_equal(fs_view_stat(f->m, &f->start, &file, &st, NULL), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	assert_int_equal(st.st_size, 4096); /* a live value: sized as sysfs sizes it */

	/* its directory "sub", and the file in it */
	snprintf(expect, sizeof(expect), "sub:%d/d;", FS_GROUP);
	assert_non_null(strstr(text, expect));
	assert_int_equal(find(f, &dir, "sub", &t), 0);
	assert_int_equal(t.kind, FS_GROUP);
	assert_string_equal(t.group, "sub");
	struct fs_ref sub = node((struct fs_target){ .kind = FS_GROUP, .dev = d, .group = "sub" },
				 "sub", 3);
	snprintf(expect, sizeof(expect), "extra:%d/f;", FS_ATTR);
	assert_string_equal(walk(f, &sub, &r), expect);
	assert_int_equal(find(f, &sub, "extra", &t), 0);
	assert_int_equal(t.kind, FS_ATTR);
	assert_string_equal(t.group, "sub");
	assert_int_equal(find(f, &sub, "vendor", &t), -ENOENT);
	assert_int_equal(find(f, &sub, "deeper", &t), -ENOENT);
	assert_int_equal(dm_device_show(d, "sub", "extra", buf, sizeof(buf)), 7);
	struct fs_ref subfile = node((struct fs_target){ .kind = FS_ATTR, .dev = d, .group = "sub" },
				     "extra", 4);
	assert_int_equal(fs_view_stat(f->m, &f->start, &subfile, &st, NULL), 0);
	assert_int_equal(fs_view_stat(f->m, &f->start, &sub, &st, NULL), 0);
	assert_true(S_ISDIR(st.st_mode));
	dm_device_unref(d);
}

/* The kernel's names first (docs/design.md §6.2): a device whose children
 * are named like driverfsd's own entries. Each child is found and listed
 * once under its name; the device's own entries move to DM_OWN_PREFIX
 * "<name>", past every name of that form a child has too, and back when
 * the child goes. The root device's files are at the top of the mount,
 * and root/ holds devices only. */
static void test_kernel_names_first(void **state)
{
	struct fixture *f = *state;
	static const char *const names[] = { "power", "power_error", "name", "pm", "binding",
					     "subsystem", "driver", "driverfs:power" };
	struct dm_device *kids[sizeof(names) / sizeof(names[0])];
	assert_int_equal(dm_device_set_value(f->gpu, "name", "Intel GPU"), 0);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		assert_int_equal(dm_device_new(f->m, names[i], &kids[i]), 0);
		assert_int_equal(dm_device_add(kids[i], f->gpu), 0);
	}
	struct fs_ref dir = node((struct fs_target){ .kind = FS_DEV, .dev = f->gpu }, "gpu", 3);
	int r;
	const char *text = walk(f, &dir, &r);
	assert_int_equal(r, 0);
	char expect[128], all[2048];
	snprintf(all, sizeof(all), ";%s", text); /* each entry between ';' */
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		/* each child once, as a device */
		snprintf(expect, sizeof(expect), ";%s:%d/d;", names[i], FS_DEV);
		const char *at = strstr(all, expect);
		assert_non_null(at);
		snprintf(expect, sizeof(expect), ";%s:", names[i]);
		if (strstr(at + 1, expect))
			fail_msg("%s listed twice: %s", names[i], text);
	}
	/* driverfsd's entries beside them */
	snprintf(expect, sizeof(expect), ";driverfs:driverfs:power:%d/f;", FS_ATTR);
	assert_non_null(strstr(text, expect));
	snprintf(expect, sizeof(expect), ";driverfs:power_error:%d/f;", FS_ATTR);
	assert_non_null(strstr(text, expect));
	snprintf(expect, sizeof(expect), ";driverfs:name:%d/f;", FS_ATTR);
	assert_non_null(strstr(text, expect));
	snprintf(expect, sizeof(expect), ";driverfs:subsystem:%d/l;", FS_LINK_FROM_DEV);
	assert_non_null(strstr(text, expect));
	snprintf(expect, sizeof(expect), ";driverfs:driver:%d/l;", FS_LINK_FROM_DEV);
	assert_non_null(strstr(text, expect));
	snprintf(expect, sizeof(expect), ";devpath:");
	assert_null(strstr(text, expect)); /* it has none */

	struct fs_target t;
	assert_int_equal(find(f, &dir, "power", &t), 0);
	assert_int_equal(t.kind, FS_DEV);
	assert_ptr_equal(t.dev, kids[0]);
	assert_int_equal(find(f, &dir, "driverfs:power", &t), 0);
	assert_int_equal(t.kind, FS_DEV);
	assert_ptr_equal(t.dev, kids[7]);
	assert_int_equal(find(f, &dir, "driverfs:driverfs:power", &t), 0);
	assert_int_equal(t.kind, FS_ATTR);
	char buf[64];
	assert_int_equal(dm_device_show(f->gpu, NULL, "driverfs:driverfs:power", buf, sizeof(buf)),
			 3);
	assert_string_equal(buf, "on\n");
	assert_int_equal(dm_device_show(f->gpu, NULL, "power", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(dm_device_show(f->gpu, NULL, "driverfs:name", buf, sizeof(buf)), 10);
	assert_string_equal(buf, "Intel GPU\n");
	assert_int_equal(find(f, &dir, "driverfs:driver", &t), 0);
	assert_int_equal(t.kind, FS_LINK_FROM_DEV);
	struct fs_ref link = node(t, "driverfs:driver", 4);
	dm_model_read_lock(f->m);
	assert_true(fs_view_link_target_locked(&link, buf, sizeof(buf)) > 0);
	dm_model_unlock(f->m);
	assert_string_equal(buf, "../../../bus/pci/drivers/i915");

	/* the children gone, every entry of driverfsd's has its name back */
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		dm_device_del(kids[i]);
		dm_device_unref(kids[i]);
	}
	text = walk(f, &dir, &r);
	assert_null(strstr(text, "driverfs:"));
	assert_int_equal(dm_device_show(f->gpu, NULL, "power", buf, sizeof(buf)), 3);
	assert_int_equal(find(f, &dir, "driverfs:power", &t), -ENOENT);

	/* root/ lists its devices only; the root device's files, at the top */
	struct dm_device *pwr;
	assert_int_equal(dm_device_new(f->m, "power", &pwr), 0);
	assert_int_equal(dm_device_add(pwr, NULL), 0);
	struct fs_ref root = node((struct fs_target){ .kind = FS_DEV, .dev = dm_model_get_root(f->m) },
				  "root", 1);
	snprintf(expect, sizeof(expect), "pci0000:00:%d/d;power:%d/d;", FS_DEV, FS_DEV);
	assert_string_equal(walk(f, &root, &r), expect);
	assert_int_equal(find(f, &root, "power_log", &t), -ENOENT);
	struct fs_ref top = node((struct fs_target){ .kind = FS_TOP }, "", 0);
	text = walk(f, &top, &r);
	snprintf(expect, sizeof(expect), "root:%d/d;bus:%d/d;class:%d/d;", FS_DEV, FS_BUSES,
		 FS_CLASSES);
	assert_true(strncmp(text, expect, strlen(expect)) == 0);
	static const char *const top_files[] = { "power", "power_error", "power_log", "metrics" };
	for (size_t i = 0; i < sizeof(top_files) / sizeof(top_files[0]); i++) {
		snprintf(expect, sizeof(expect), ";%s:%d/f;", top_files[i], FS_ATTR);
		assert_non_null(strstr(text, expect));
		assert_int_equal(find(f, &top, top_files[i], &t), 0);
		assert_ptr_equal(t.dev, dm_model_get_root(f->m));
	}
	/* and read as the root device's, its child called power aside */
	assert_int_equal(dm_device_show(dm_model_get_root(f->m), NULL, "power", buf, sizeof(buf)),
			 3);
	assert_string_equal(buf, "on\n");
	dm_device_del(pwr);
	dm_device_unref(pwr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_walk_each_kind, setup, teardown),
		cmocka_unit_test_setup_teardown(test_find, setup, teardown),
		cmocka_unit_test_setup_teardown(test_link_targets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stat, setup, teardown),
		cmocka_unit_test_setup_teardown(test_removed_device, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dynamic_group, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kernel_names_first, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
