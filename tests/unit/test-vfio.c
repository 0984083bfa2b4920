/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The vfio-pci driver against a stand-in for the kernel's VFIO ioctls. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <linux/vfio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/model.h"
#include "drivers/vfio-pci.h"
#include "pm/pm.h"

/* what the fake kernel saw, in order */
struct fake {
	char log[32][64];
	size_t n;
	int open_error; /* returned by open */
	int entry_error; /* returned by LOW_POWER_ENTRY */
	int open_handles;
	const char *driver; /* the function's sysfs driver link: vfio-pci when NULL */
};

static void __attribute__((format(printf, 2, 3))) note(struct fake *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (f->n < 32)
		vsnprintf(f->log[f->n++], 64, fmt, ap);
	va_end(ap);
}


static int fake_open(const char *slot, void **ret, void *ctx)
{
	struct fake *f = ctx;
	note(f, "open %s", slot);
	if (f->open_error)
		return f->open_error;
	char *h = strdup(slot);
	if (!h)
		return -ENOMEM;
	f->open_handles++;
	*ret = h;
	return 0;
}

static int fake_set_feature(void *handle, uint32_t feature, void *ctx)
{
	struct fake *f = ctx;
	char what[64];
	snprintf(what, sizeof(what), "%s %s",
		 feature == VFIO_DEVICE_FEATURE_LOW_POWER_ENTRY  ? "entry"
		 : feature == VFIO_DEVICE_FEATURE_LOW_POWER_EXIT ? "exit"
								 : "?",
		 (const char *)handle);
	note(f, "%s", what);
	return feature == VFIO_DEVICE_FEATURE_LOW_POWER_ENTRY ? f->entry_error : 0;
}

static void fake_close(void *handle, void *ctx)
{
	struct fake *f = ctx;
	note(f, "close %s", (const char *)handle);
	f->open_handles--;
	free(handle);
}

static int fake_bound_to_vfio(const char *slot, void *ctx)
{
	(void)slot;
	struct fake *f = ctx;
	return !f->driver || strcmp(f->driver, "vfio-pci") == 0;
}

static const struct dm_vfio_ops fake_ops = {
	.open = fake_open, .set_feature = fake_set_feature, .close = fake_close,
	.bound_to_vfio = fake_bound_to_vfio,
};

struct setup {
	struct dm_model *m;
	struct dm_pm *pm;
	struct dm_driver *drv;
	struct dm_device *gpu, *nic;
};

/* a GPU on vfio-pci and a NIC on e1000e, the driver on @ops and @ctx */
static void build_with(struct setup *s, const struct dm_vfio_ops *ops, void *ctx)
{
	struct dm_bus *bus;
	assert_int_equal(dm_model_new(&s->m), 0);
	assert_int_equal(dm_pm_new(s->m, &s->pm), 0);
	assert_int_equal(dm_vfio_pci_register(s->m, ops, ctx, &s->drv), 0);
	assert_int_equal(dm_bus_get(s->m, "pci", NULL, &bus), 0);
	const char *names[] = { "0000:03:00.0", "0000:04:00.0" };
	const char *kdrv[] = { "vfio-pci", "e1000e" };
	struct dm_device **devs[] = { &s->gpu, &s->nic };
	for (int i = 0; i < 2; i++) {
		assert_int_equal(dm_device_new(s->m, names[i], devs[i]), 0);
		dm_device_set_bus(*devs[i], bus);
		dm_device_set_kernel_driver(*devs[i], kdrv[i]);
		assert_int_equal(dm_device_add(*devs[i], NULL), 0);
	}
}

static void build(struct setup *s, struct fake *f)
{
	build_with(s, &fake_ops, f);
}

static void teardown_setup(struct setup *s)
{
	dm_device_unref(s->gpu);
	dm_device_unref(s->nic);
	dm_driver_unregister(s->drv);
	dm_driver_unref(s->drv);
	dm_pm_free(s->pm);
	dm_model_free(s->m);
}

static void test_binds_only_vfio_functions_and_enters_low_power(void **state)
{
	(void)state;
	struct fake f = { 0 };
	struct setup s;
	build(&s, &f);
	dm_model_read_lock(s.m);
	assert_ptr_equal(dm_device_get_driver_locked(s.gpu), s.drv);
	assert_null(dm_device_get_driver_locked(s.nic));
	dm_model_unlock(s.m);

	assert_int_equal(dm_pm_suspend(s.pm, s.gpu, 0), 0);
	assert_int_equal(f.n, 2);
	assert_string_equal(f.log[0], "open 0000:03:00.0");
	assert_string_equal(f.log[1], "entry 0000:03:00.0");
	assert_int_equal(f.open_handles, 1); /* kept open while in low power */
	assert_int_equal(dm_pm_resume(s.pm, s.gpu, 0), 0);
	assert_int_equal(f.n, 4);
	assert_string_equal(f.log[2], "exit 0000:03:00.0");
	assert_string_equal(f.log[3], "close 0000:03:00.0");
	assert_int_equal(f.open_handles, 0);
	teardown_setup(&s);
}

static void test_entry_failure_rolls_back_and_closes(void **state)
{
	(void)state;
	struct fake f = { .entry_error = -EIO };
	struct setup s;
	build(&s, &f);
	assert_int_equal(dm_pm_suspend(s.pm, s.gpu, 0), -EIO);
	assert_int_equal(f.open_handles, 0);
	assert_string_equal(f.log[f.n - 1], "close 0000:03:00.0");
	assert_int_equal(dm_device_get_power(s.gpu), DM_POWER_ON);
	teardown_setup(&s);
}

static void test_group_held_by_a_vm_is_left_alone(void **state)
{
	(void)state;
	struct fake f = { .open_error = -EBUSY };
	struct setup s;
	build(&s, &f);
	assert_int_equal(dm_pm_suspend(s.pm, s.gpu, 0), 0);
	assert_int_equal(dm_pm_resume(s.pm, s.gpu, 0), 0);
	assert_int_equal(f.n, 1); /* only the attempt to open */
	teardown_setup(&s);
}

static void test_unbind_while_suspended_closes(void **state)
{
	(void)state;
	struct fake f = { 0 };
	struct setup s;
	build(&s, &f);
	assert_int_equal(dm_pm_suspend(s.pm, s.gpu, 0), 0);
	assert_int_equal(f.open_handles, 1);
	dm_device_del(s.gpu); /* hot-unplugged in low power */
	assert_int_equal(f.open_handles, 0);
	teardown_setup(&s);
}

/* The kernel bound nvme in vfio-pci's place and no event told the daemon:
 * suspend opens nothing (no low-power entry behind nvme), and the claim
 * ends; the bind event's re-check does the same. */
static void test_kernel_driver_changed_ends_the_claim(void **state)
{
	(void)state;
	struct fake f = { 0 };
	struct setup s;
	build(&s, &f);
	assert_int_equal(dm_device_set_kernel_driver(s.gpu, "nvme"), 0);
	assert_int_equal(dm_pm_suspend(s.pm, NULL, 0), 0);
	for (size_t i = 0; i < f.n; i++)
		if (strstr(f.log[i], "0000:03:00.0"))
			fail_msg("VFIO touched a function nvme owns: %s", f.log[i]);
	dm_model_read_lock(s.m);
	assert_null(dm_device_get_driver_locked(s.gpu));
	dm_model_unlock(s.m);
	assert_int_equal(dm_pm_resume(s.pm, NULL, 0), 0);

	/* back to vfio-pci, then away again by an event: re-checked at once */
	assert_int_equal(dm_device_set_kernel_driver(s.gpu, "vfio-pci"), 0);
	assert_int_equal(dm_device_attach(s.gpu), 1);
	assert_int_equal(dm_device_recheck_claim(s.gpu), 0);
	assert_int_equal(dm_device_set_kernel_driver(s.gpu, NULL), 0);
	assert_int_equal(dm_device_recheck_claim(s.gpu), 1);
	dm_model_read_lock(s.m);
	assert_null(dm_device_get_driver_locked(s.gpu));
	dm_model_unlock(s.m);
	teardown_setup(&s);
}

/* The kernel moved the function to nvme and its event is still queued:
 * the driver link is enough for suspend to open nothing and let go. */
static void test_driver_link_moved_ends_the_claim(void **state)
{
	(void)state;
	struct fake f = { 0 };
	struct setup s;
	build(&s, &f);
	f.driver = "nvme";
	assert_int_equal(dm_pm_suspend(s.pm, s.gpu, 0), 0);
	if (f.n)
		fail_msg("VFIO touched a function nvme owns: %s", f.log[0]);
	dm_model_read_lock(s.m);
	assert_null(dm_device_get_driver_locked(s.gpu));
	dm_model_unlock(s.m);
	assert_int_equal(dm_pm_resume(s.pm, s.gpu, 0), 0);
	assert_int_equal(f.n, 0);
	teardown_setup(&s);
}

/* ---- the kernel's VFIO at the ioctl level (dm_vfio_kernel_ops) ----
 * As Linux 6.1 answers (seen in the vm tier's guest, tests/vm/guest/
 * test_vfio.sh): a group another process has open is EBUSY at open; the
 * container offers a type1 backend only once vfio_iommu_type1 is loaded,
 * and VFIO_SET_IOMMU without one is ENODEV; the device fd only after
 * VFIO_SET_IOMMU. */
enum { GROUP_FD = 10, CONTAINER_FD = 11, DEVICE_FD = 12 };

struct kfake {
	bool type1_loaded;
	bool group_held; /* another process has the group open */
	bool iommu_set;
	int open_fds;
	int entries, exits;
	char log[32][64];
	size_t n;
};

static int k_open(const char *path, int flags, void *ctx)
{
	(void)flags;
	struct kfake *k = ctx;
	if (strcmp(path, "/dev/vfio/vfio") == 0) {
		k->open_fds++;
		return CONTAINER_FD;
	}
	assert_string_equal(path, "/dev/vfio/6");
	if (k->group_held)
		return -EBUSY;
	k->open_fds++;
	return GROUP_FD;
}

static int k_ioctl(int fd, unsigned long req, unsigned long arg, void *ctx)
{
	struct kfake *k = ctx;
	if (k->n < 32)
		snprintf(k->log[k->n++], 64, "%d %lx", fd, req);
	switch (req) {
	case VFIO_GROUP_GET_STATUS:
		((struct vfio_group_status *)arg)->flags = VFIO_GROUP_FLAGS_VIABLE;
		return 0;
	case VFIO_GROUP_SET_CONTAINER:
		return 0;
	case VFIO_CHECK_EXTENSION:
		return k->type1_loaded && (arg == VFIO_TYPE1v2_IOMMU || arg == VFIO_TYPE1_IOMMU);
	case VFIO_SET_IOMMU:
		if (!k->type1_loaded)
			return -ENODEV; /* no backend registered answers it */
		k->iommu_set = true;
		return 0;
	case VFIO_GROUP_GET_DEVICE_FD:
		assert_string_equal((const char *)arg, "0000:03:00.0");
		if (!k->iommu_set)
			return -EINVAL;
		k->open_fds++;
		return DEVICE_FD;
	case VFIO_DEVICE_FEATURE: {
		struct vfio_device_feature *f = (void *)arg;
		assert_int_equal(fd, DEVICE_FD);
		if ((f->flags & VFIO_DEVICE_FEATURE_MASK) == VFIO_DEVICE_FEATURE_LOW_POWER_ENTRY)
			k->entries++;
		else
			k->exits++;
		return 0;
	}
	}
	return -ENOTTY;
}

static void k_close(int fd, void *ctx)
{
	struct kfake *k = ctx;
	if (fd == CONTAINER_FD)
		k->iommu_set = false;
	k->open_fds--;
}

static int k_group(const char *slot, void *ctx)
{
	(void)slot;
	(void)ctx;
	return 6;
}

static int k_bound(const char *slot, void *ctx)
{
	(void)slot;
	(void)ctx;
	return 1;
}

#define KSYS(k) { .open = k_open, .ioctl = k_ioctl, .close = k_close, .iommu_group = k_group, \
		  .bound_to_vfio = k_bound, .ctx = (k) }

static void test_kernel_low_power_walk(void **state)
{
	(void)state;
	struct kfake k = { .type1_loaded = true };
	struct dm_vfio_sys sys = KSYS(&k);
	struct setup s;
	build_with(&s, &dm_vfio_kernel_ops, &sys);
	assert_int_equal(dm_pm_suspend(s.pm, s.gpu, 0), 0);
	assert_int_equal(k.entries, 1);
	assert_int_equal(k.open_fds, 3); /* group, container, device kept */
	assert_int_equal(dm_pm_resume(s.pm, s.gpu, 0), 0);
	assert_int_equal(k.exits, 1);
	assert_int_equal(k.open_fds, 0);
	teardown_setup(&s);
}

/* The guest's first ENODEV: vfio loaded without its softdep
 * vfio_iommu_type1, VFIO_SET_IOMMU answers ENODEV. Said as what it is
 * (ENOPKG, the module missing), everything closed, the device on. */
static void test_kernel_without_iommu_backend(void **state)
{
	(void)state;
	struct kfake k = { .type1_loaded = false };
	struct dm_vfio_sys sys = KSYS(&k);
	struct setup s;
	build_with(&s, &dm_vfio_kernel_ops, &sys);
	assert_true(dm_pm_suspend(s.pm, s.gpu, 0) < 0);
	assert_int_equal(k.open_fds, 0);
	assert_int_equal(k.entries, 0);
	assert_int_equal(dm_device_get_power(s.gpu), DM_POWER_ON);
	char err[256];
	assert_true(dm_device_get_power_error(s.gpu, err, sizeof(err)) >= 0);
	assert_non_null(strstr(err, "ENOPKG"));
	teardown_setup(&s);
}

/* QEMU or DPDK has the group: open says EBUSY at once, the device is its
 * holder's (suspend and resume succeed, touching nothing). */
static void test_kernel_group_held(void **state)
{
	(void)state;
	struct kfake k = { .type1_loaded = true, .group_held = true };
	struct dm_vfio_sys sys = KSYS(&k);
	struct setup s;
	build_with(&s, &dm_vfio_kernel_ops, &sys);
	assert_int_equal(dm_pm_suspend(s.pm, s.gpu, 0), 0);
	assert_int_equal(dm_pm_resume(s.pm, s.gpu, 0), 0);
	assert_int_equal(k.n, 0);
	assert_int_equal(k.open_fds, 0);
	teardown_setup(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_binds_only_vfio_functions_and_enters_low_power),
		cmocka_unit_test(test_entry_failure_rolls_back_and_closes),
		cmocka_unit_test(test_group_held_by_a_vm_is_left_alone),
		cmocka_unit_test(test_unbind_while_suspended_closes),
		cmocka_unit_test(test_kernel_driver_changed_ends_the_claim),
		cmocka_unit_test(test_driver_link_moved_ends_the_claim),
		cmocka_unit_test(test_kernel_low_power_walk),
		cmocka_unit_test(test_kernel_without_iommu_backend),
		cmocka_unit_test(test_kernel_group_held),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
