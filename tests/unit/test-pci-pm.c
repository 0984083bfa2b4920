/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* pci-pm's resume against a config space of the test's own (libpci's sysfs
 * method on a directory the test writes): the recovery wait after D3hot ->
 * D0 comes before the header is restored, and a function that is not the
 * one suspended gets nothing written, in this run's resume and in the one
 * a restart runs from the transition record; a function gone from sysfs
 * when offered is declined without an error in the log. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/model.h"
#include "drivers/pci-pm.h"
#include "pm/pm.h"
#include "tree-util.h"

#define SLOT "0000:05:00.0"
#define DEVPATH "/devices/pci0000:00/" SLOT
#define PM_CAP 0x50
#define BAR0 0xfe000000u

struct config_space {
	char dir[64], config[160];
};

static uint32_t get32(const uint8_t *cfg, int off)
{
	return (uint32_t)cfg[off] | (uint32_t)cfg[off + 1] << 8 | (uint32_t)cfg[off + 2] << 16 |
	       (uint32_t)cfg[off + 3] << 24;
}

static void put32(uint8_t *cfg, int off, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		cfg[off + i] = (uint8_t)(v >> (8 * i));
}

static void read_config(const struct config_space *cs, uint8_t cfg[256])
{
	FILE *f = fopen(cs->config, "rb");
	assert_non_null(f);
	assert_int_equal(fread(cfg, 1, 256, f), 256);
	fclose(f);
}

static void write_config(const struct config_space *cs, const uint8_t cfg[256])
{
	FILE *f = fopen(cs->config, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(cfg, 1, 256, f), 256);
	fclose(f);
}

/* A bridge-less type 0 function 1a03:1150 with the PM capability at 0x50
 * (PMCSR's No_Soft_Reset clear: D3hot may lose the configuration). */
static void config_space_new(struct config_space *cs)
{
	strcpy(cs->dir, "/tmp/driverfs-pcipm-XXXXXX");
	assert_non_null(mkdtemp(cs->dir));
	char path[128];
	snprintf(path, sizeof(path), "%s/devices", cs->dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/devices/" SLOT, cs->dir);
	assert_int_equal(mkdir(path, 0755), 0);
	test_write_file(path, "vendor", "0x1a03\n");
	test_write_file(path, "device", "0x1150\n");
	test_write_file(path, "class", "0x030000\n");
	snprintf(cs->config, sizeof(cs->config), "%s/config", path);
	uint8_t cfg[256] = { 0 };
	put32(cfg, 0x00, 0x11501a03);
	put32(cfg, 0x04, 0x00100007); /* status: capability list; command: IO, memory, master */
	put32(cfg, 0x08, 0x03000000);
	put32(cfg, 0x10, BAR0);
	cfg[0x34] = PM_CAP;
	put32(cfg, PM_CAP, 0x00030001); /* PM, last capability, version 3 */
	write_config(cs, cfg);
}

static void config_space_free(struct config_space *cs)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", cs->dir);
	assert_int_equal(system(cmd), 0);
}

/* What the injected sleep saw of the function when it was called. */
struct sleeps {
	const struct config_space *cs;
	unsigned n, ms;
	uint16_t pmcsr; /* at the (last) call */
	uint32_t bar0;
};
static struct sleeps sleeps;

static void fake_sleep(unsigned ms, void *ctx)
{
	(void)ctx;
	uint8_t cfg[256];
	read_config(sleeps.cs, cfg);
	sleeps.n++;
	sleeps.ms += ms;
	sleeps.pmcsr = (uint16_t)get32(cfg, PM_CAP + 4);
	sleeps.bar0 = get32(cfg, 0x10);
}

struct setup {
	struct config_space cs;
	struct dm_model *m;
	struct dm_pm *pm;
	struct dm_driver *drv;
	struct dm_device *dev;
	char record[128];
};

/* A model with pci-pm bound to the function of @cs (a new config space
 * when NULL), and a transition record beside it when @with_record. */
static void build_on(struct setup *s, const struct config_space *cs, bool with_record)
{
	if (cs)
		s->cs = *cs;
	else
		config_space_new(&s->cs);
	sleeps = (struct sleeps){ .cs = &s->cs };
	assert_int_equal(dm_model_new(&s->m), 0);
	assert_int_equal(dm_pm_new(s->m, &s->pm), 0);
	if (with_record) {
		snprintf(s->record, sizeof(s->record), "%s/transition", s->cs.dir);
		assert_int_equal(dm_pm_set_record(s->pm, s->record), 0);
	}
	struct dm_pci_pm_env env = { .sysfs_path = s->cs.dir, .sleep_ms = fake_sleep };
	assert_int_equal(dm_pci_pm_register_env(s->m, &env, &s->drv), 0);
	struct dm_bus *bus;
	assert_int_equal(dm_bus_get(s->m, "pci", NULL, &bus), 0);
	assert_int_equal(dm_device_new(s->m, SLOT, &s->dev), 0);
	dm_device_set_bus(s->dev, bus);
	assert_int_equal(dm_device_set_devpath(s->dev, DEVPATH), 0);
	assert_int_equal(dm_device_add(s->dev, NULL), 0);
	dm_model_read_lock(s->m);
	assert_ptr_equal(dm_device_get_driver_locked(s->dev), s->drv);
	dm_model_unlock(s->m);
}

static void build(struct setup *s, bool with_record)
{
	build_on(s, NULL, with_record);
}

/* The daemon goes: the config space and the record stay. */
static void teardown_model(struct setup *s)
{
	dm_device_unref(s->dev);
	dm_driver_unregister(s->drv);
	dm_driver_unref(s->drv);
	dm_pm_free(s->pm);
	dm_model_free(s->m);
}

static void teardown(struct setup *s)
{
	teardown_model(s);
	config_space_free(&s->cs);
}

/* Suspends, then plays D3hot losing the BARs: BAR0 reads 0. */
static void suspend_and_lose_bar0(struct setup *s)
{
	uint8_t cfg[256];
	assert_int_equal(dm_pm_suspend(s->pm, s->dev, 0), 0);
	read_config(&s->cs, cfg);
	assert_int_equal(get32(cfg, PM_CAP + 4) & 3, 3);
	put32(cfg, 0x10, 0);
	write_config(&s->cs, cfg);
}

static void test_resume_waits_before_restoring(void **state)
{
	(void)state;
	struct setup s;
	build(&s, false);
	suspend_and_lose_bar0(&s);
	assert_int_equal(dm_pm_resume(s.pm, s.dev, 0), 0);
	if (sleeps.n == 0)
		fail_msg("resume did not wait after D3hot -> D0");
	assert_int_equal(sleeps.n, 1);
	assert_true(sleeps.ms >= 10);
	/* the wait came after the D0 write and before the header */
	assert_int_equal(sleeps.pmcsr & 3, 0);
	assert_int_equal(sleeps.bar0, 0);
	uint8_t cfg[256];
	read_config(&s.cs, cfg);
	assert_int_equal(get32(cfg, 0x10), BAR0);
	assert_int_equal(get32(cfg, PM_CAP + 4) & 3, 0);
	teardown(&s);
}

/* Another function at the address: other IDs and its own BARs. */
static void swap_function(struct setup *s, uint8_t cfg[256])
{
	read_config(&s->cs, cfg);
	put32(cfg, 0x00, 0x15238086);
	put32(cfg, 0x10, 0xaaaaaaaa);
	write_config(&s->cs, cfg);
}

/* The failed resume is in the device's power_error. */
static void assert_power_error(struct dm_device *dev)
{
	char err[256];
	int n = dm_device_get_power_error(dev, err, sizeof(err));
	if (n <= 0)
		fail_msg("no power_error after resuming another function");
}

static void test_resume_leaves_another_function_alone(void **state)
{
	(void)state;
	struct setup s;
	build(&s, false);
	suspend_and_lose_bar0(&s);
	uint8_t swapped[256], cfg[256];
	swap_function(&s, swapped);
	dm_pm_resume(s.pm, s.dev, 0);
	assert_power_error(s.dev);
	read_config(&s.cs, cfg);
	if (memcmp(cfg, swapped, sizeof(cfg)) != 0)
		fail_msg("resume wrote into another function (BAR0 %#x, PMCSR %#x)",
			 get32(cfg, 0x10), get32(cfg, PM_CAP + 4) & 0xffff);
	teardown(&s);
}

/* The resume a restart runs: what suspend saved comes from the record. */
static void test_recovery_checks_and_waits_too(void **state)
{
	(void)state;
	for (int swap = 0; swap <= 1; swap++) {
		struct setup s;
		build(&s, true);
		suspend_and_lose_bar0(&s);
		/* the daemon is killed: a new pci-pm, a new model, the record */
		char kept[4096];
		FILE *f = fopen(s.record, "r");
		assert_non_null(f);
		size_t n = fread(kept, 1, sizeof(kept) - 1, f);
		fclose(f);
		kept[n] = '\0';
		assert_non_null(strstr(kept, "=pm=50,cfg="));
		teardown_model(&s);

		/* the restart: pci-pm binds the function again, and the
		 * recovery resumes what the record lists */
		struct setup r;
		build_on(&r, &s.cs, true);

		uint8_t swapped[256], cfg[256];
		if (swap)
			swap_function(&r, swapped);
		int res = dm_pm_recover(r.pm, NULL, NULL, NULL, 0);
		read_config(&r.cs, cfg);
		if (swap) {
			assert_power_error(r.dev);
			if (memcmp(cfg, swapped, sizeof(cfg)) != 0)
				fail_msg("recovery wrote into another function (BAR0 %#x)",
					 get32(cfg, 0x10));
			assert_int_equal(sleeps.n, 0);
		} else {
			assert_int_equal(res, 1);
			assert_int_equal(sleeps.n, 1);
			assert_int_equal(sleeps.pmcsr & 3, 0);
			assert_int_equal(sleeps.bar0, 0);
			assert_int_equal(get32(cfg, 0x10), BAR0);
		}
		teardown(&r);
	}
}

/* The kernel bound a driver and the model was not told: sysfs's driver
 * link is enough for suspend to leave PMCSR alone and let the device go. */
static void test_suspend_leaves_a_function_sysfs_shows_bound(void **state)
{
	(void)state;
	struct setup s;
	build(&s, false);
	uint8_t before[256], after[256];
	read_config(&s.cs, before);
	char link[160];
	snprintf(link, sizeof(link), "%s/devices/" SLOT "/driver", s.cs.dir);
	assert_int_equal(symlink("../../drivers/nvme", link), 0);
	assert_int_equal(dm_pm_suspend(s.pm, s.dev, 0), 0);
	read_config(&s.cs, after);
	if (memcmp(before, after, sizeof(after)) != 0)
		fail_msg("suspend wrote PMCSR %#x behind a kernel driver",
			 get32(after, PM_CAP + 4) & 0xffff);
	dm_model_read_lock(s.m);
	assert_null(dm_device_get_driver_locked(s.dev));
	dm_model_unlock(s.m);
	assert_int_equal(dm_pm_resume(s.pm, s.dev, 0), 0);
	teardown(&s);
}

static void add_device(void *data)
{
	assert_int_equal(dm_device_add(data, NULL), 0);
}

/* A function whose sysfs directory is gone when it is offered: an SR-IOV
 * VF being disabled, which the kernel unbinds just before its remove (the
 * vm tier's guest: libpci logged "Cannot open .../vendor" as an error).
 * pci-pm declines it quietly: no driver, nothing logged above debug. */
static void test_probe_declines_a_function_gone_from_sysfs(void **state)
{
	(void)state;
	struct config_space cs;
	config_space_new(&cs);
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s/devices/" SLOT "'", cs.dir);
	assert_int_equal(system(cmd), 0);
	struct dm_model *m;
	struct dm_driver *drv;
	struct dm_device *dev;
	struct dm_bus *bus;
	assert_int_equal(dm_model_new(&m), 0);
	struct dm_pci_pm_env env = { .sysfs_path = cs.dir, .sleep_ms = fake_sleep };
	assert_int_equal(dm_pci_pm_register_env(m, &env, &drv), 0);
	assert_int_equal(dm_bus_get(m, "pci", NULL, &bus), 0);
	assert_int_equal(dm_device_new(m, SLOT, &dev), 0);
	dm_device_set_bus(dev, bus);
	assert_int_equal(dm_device_set_devpath(dev, DEVPATH), 0);
	char *text = test_logged(add_device, dev);
	dm_model_read_lock(m);
	assert_null(dm_device_get_driver_locked(dev));
	dm_model_unlock(m);
	if (strstr(text, ": error: ") || strstr(text, ": warning: "))
		fail_msg("a function gone from sysfs is declined quietly; logged:\n%s", text);
	free(text);
	dm_device_unref(dev);
	dm_driver_unregister(drv);
	dm_driver_unref(drv);
	dm_model_free(m);
	config_space_free(&cs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resume_waits_before_restoring),
		cmocka_unit_test(test_resume_leaves_another_function_alone),
		cmocka_unit_test(test_recovery_checks_and_waits_too),
		cmocka_unit_test(test_suspend_leaves_a_function_sysfs_shows_bound),
		cmocka_unit_test(test_probe_declines_a_function_gone_from_sysfs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
