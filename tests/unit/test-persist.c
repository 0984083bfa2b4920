/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of persisted bindings' identities (src/drivers/persist.c,
 * issue 33 item 4): a PCI function's is its vendor, device and subsystem
 * ids, a USB device's (and its interfaces') its idVendor, idProduct and
 * serial; a serial of spaces, newlines, control characters, '%' and ':'
 * is encoded into one word of letters, digits, ".", "_", "-" and %XX,
 * which the file's reader takes back in one spelling; ids that are not
 * ids give no identity; a removed device -ENODEV. The state file: an old
 * "BUS NAME DRIVER" line loads, lines that are not bindings (a bad
 * identity, five words, one too long) are skipped, and a record is
 * written with its device's identity (root's files alone are read:
 * skipped for anyone else).
 */
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

#include "drivers/persist.h"
#include "tree-util.h"

static struct dm_device *add(struct dm_model *m, struct dm_bus *bus, const char *name,
			     struct dm_device *parent, const char *const *values)
{
	struct dm_device *dev;
	assert_int_equal(dm_device_new(m, name, &dev), 0);
	dm_device_set_bus(dev, bus);
	for (size_t i = 0; values && values[i]; i += 2)
		assert_int_equal(dm_device_set_value(dev, values[i], values[i + 1]), 0);
	assert_int_equal(dm_device_add(dev, parent), 0);
	return dev;
}

static void test_encode(void **state)
{
	(void)state;
	char buf[DM_PERSIST_ID_MAX];
	const char hostile[] = "A B\n\x01\x1b[31m%:\xc3\xa9.x_-";
	dm_persist_encode_serial(hostile, sizeof(hostile) - 1, buf, sizeof(buf));
	assert_string_equal(buf, "A%20B%0A%01%1B%5B31m%25%3A%C3%A9.x_-");
	/* a NUL is a byte as any */
	dm_persist_encode_serial("a\0b", 3, buf, sizeof(buf));
	assert_string_equal(buf, "a%00b");
	/* the longest: DM_PERSIST_SERIAL_MAX bytes, every one encoded, fits */
	char all[DM_PERSIST_SERIAL_MAX + 10];
	memset(all, ' ', sizeof(all));
	/* (after "usb:VVVV:PPPP:") */
	size_t n = dm_persist_encode_serial(all, sizeof(all), buf, sizeof(buf) - 14);
	assert_int_equal(n, 3 * DM_PERSIST_SERIAL_MAX);
	/* a small buffer: cut on a whole byte */
	assert_int_equal(dm_persist_encode_serial("a b", 3, buf, 4), 1);
	assert_string_equal(buf, "a");
}

static void test_normalize(void **state)
{
	(void)state;
	char buf[DM_PERSIST_ID_MAX];
	static const char *const good[][2] = {
		{ "pci:8086:15bc:1028:0869", "pci:8086:15bc:1028:0869" },
		{ "usb:05f3:0007", "usb:05f3:0007" },
		{ "usb:05f3:0007:ABC-1.2_3", "usb:05f3:0007:ABC-1.2_3" },
		/* one spelling: %41 is A, %0a is %0A */
		{ "usb:05f3:0007:%41%0a%3a", "usb:05f3:0007:A%0A%3A" },
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_true(dm_persist_normalize_id(good[i][0], buf, sizeof(buf)));
		assert_string_equal(buf, good[i][1]);
	}
	static const char *const bad[] = {
		"", "pci", "pci:8086:15bc:1028", "pci:8086:15bc:1028:0869:", "pci:8086:15BC:1028:0869",
		"pci:808:15bc:1028:0869", "usb:05f3", "usb:05f3:0007:", "usb:05f3:0007:a b",
		"usb:05f3:0007:%4", "usb:05f3:0007:%zz", "usb:05f3:0007:a:b", "usb:05f3:0007:a/b",
		"platform:1", "usb:05f3:0007%20",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_false(dm_persist_normalize_id(bad[i], buf, sizeof(buf)));
	/* a serial longer than kept is not a state file's */
	char *lng = malloc(DM_PERSIST_ID_MAX * 2);
	assert_non_null(lng);
	strcpy(lng, "usb:05f3:0007:");
	memset(lng + 14, 'a', DM_PERSIST_SERIAL_MAX + 1);
	lng[14 + DM_PERSIST_SERIAL_MAX + 1] = '\0';
	assert_false(dm_persist_normalize_id(lng, buf, sizeof(buf)));
	free(lng);
}

static void test_identity(void **state)
{
	(void)state;
	struct dm_model *m;
	assert_int_equal(dm_model_new(&m), 0);
	struct dm_bus *usb, *pci, *platform;
	assert_int_equal(dm_bus_get(m, "usb", NULL, &usb), 0);
	assert_int_equal(dm_bus_get(m, "pci", NULL, &pci), 0);
	assert_int_equal(dm_bus_get(m, "platform", NULL, &platform), 0);
	char buf[DM_PERSIST_ID_MAX];

	struct dm_device *kbd = add(m, usb, "1-1", NULL,
				    (const char *const[]){ "idVendor", "05f3", "idProduct", "0007",
							   "serial", "KB 1\n\x1b:%", NULL });
	struct dm_device *ifc = add(m, usb, "1-1:1.0", kbd, NULL);
	assert_int_equal(dm_persist_identity(kbd, "usb", buf, sizeof(buf)), 1);
	assert_string_equal(buf, "usb:05f3:0007:KB%201%0A%1B%3A%25");
	/* an interface: its device's */
	assert_int_equal(dm_persist_identity(ifc, "usb", buf, sizeof(buf)), 1);
	assert_string_equal(buf, "usb:05f3:0007:KB%201%0A%1B%3A%25");
	char norm[DM_PERSIST_ID_MAX];
	assert_true(dm_persist_normalize_id(buf, norm, sizeof(norm)));
	assert_string_equal(norm, buf);

	/* no serial: vendor and product */
	struct dm_device *stick = add(m, usb, "1-2", NULL,
				      (const char *const[]){ "idVendor", "0x781", "idProduct", "5567",
							     NULL });
	assert_int_equal(dm_persist_identity(stick, "usb", buf, sizeof(buf)), 1);
	assert_string_equal(buf, "usb:0781:5567");
	/* not ids: none */
	static const char *const not_ids[] = { "", "12345", "zz", "05f3 1", "-1", "0x", NULL };
	for (size_t i = 0; not_ids[i]; i++) {
		char name[16];
		snprintf(name, sizeof(name), "2-%zu", i);
		struct dm_device *d = add(m, usb, name, NULL,
					  (const char *const[]){ "idVendor", not_ids[i], "idProduct",
								 "0001", NULL });
		assert_int_equal(dm_persist_identity(d, "usb", buf, sizeof(buf)), 0);
		assert_string_equal(buf, "");
		dm_device_unref(d);
	}

	struct dm_device *nic = add(m, pci, "0000:00:1f.6", NULL,
				    (const char *const[]){ "vendor", "0x8086", "device", "0x15bc",
							   "subsystem_vendor", "0x1028",
							   "subsystem_device", "0x0869", NULL });
	assert_int_equal(dm_persist_identity(nic, "pci", buf, sizeof(buf)), 1);
	assert_string_equal(buf, "pci:8086:15bc:1028:0869");
	struct dm_device *bare = add(m, pci, "0000:00:1f.7", NULL,
				     (const char *const[]){ "vendor", "0x8086", "device", "0x15bc",
							    NULL });
	assert_int_equal(dm_persist_identity(bare, "pci", buf, sizeof(buf)), 0);
	/* another bus: none */
	struct dm_device *plat = add(m, platform, "serial8250", NULL,
				     (const char *const[]){ "vendor", "0x8086", NULL });
	assert_int_equal(dm_persist_identity(plat, "platform", buf, sizeof(buf)), 0);

	/* removed */
	dm_device_del(ifc);
	assert_int_equal(dm_persist_identity(ifc, "usb", buf, sizeof(buf)), -ENODEV);

	struct dm_device *all[] = { kbd, ifc, stick, nic, bare, plat };
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		dm_device_unref(all[i]);
	dm_model_free(m);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "re");
	assert_non_null(f);
	static char text[8192];
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	return text;
}

static void test_state_file(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	char dir[64], path[128];
	snprintf(dir, sizeof(dir), "/tmp/test-persist-XXXXXX");
	assert_non_null(mkdtemp(dir));
	chmod(dir, 0755);
	snprintf(path, sizeof(path), "%s/bindings", dir);
	char *lng = malloc(4096);
	assert_non_null(lng);
	memset(lng, 'a', 4095);
	lng[4095] = '\0';
	FILE *f = fopen(path, "we");
	assert_non_null(f);
	fprintf(f, "# a comment\n"
		   "pci 0000:00:1f.6 vfio-pci\n"
		   "usb 1-1:1.0 none usb:05f3:0007:KB%%201\n"
		   "usb 1-2:1.0 none usb:05f3:0007:KB 1\n"
		   "usb 1-3:1.0 none usb:05F3:0007\n"
		   "pci 0000:00:1f.7 vfio-pci pci:8086:15bc:1028:0869 extra\n"
		   "pci %s vfio-pci\n"
		   "pci 0000:00:1f.5 vfio-pci pci:8086:15bc:1028:0869\n",
		lng);
	fclose(f);
	free(lng);
	chmod(path, 0644);
	assert_int_equal(dm_persist_load(path), 0);

	struct dm_model *m;
	assert_int_equal(dm_model_new(&m), 0);
	struct dm_bus *usb;
	assert_int_equal(dm_bus_get(m, "usb", NULL, &usb), 0);
	struct dm_device *kbd = add(m, usb, "9-9", NULL,
				    (const char *const[]){ "idVendor", "05f3", "idProduct", "0008",
							   "serial", "x y", NULL });
	char msg[128];
	assert_int_equal(dm_persist_set(kbd, "usb", "9-9", "none", msg, sizeof(msg)), 0);
	/* the old line kept as it was (no device of it seen yet), the bad
	 * ones gone, the new one with its identity */
	assert_string_equal(slurp(path),
			    "# driverfsd's persisted bindings: BUS NAME DRIVER IDENTITY "
			    "(driverfsctl bind --persist)\n"
			    "pci 0000:00:1f.6 vfio-pci\n"
			    "usb 1-1:1.0 none usb:05f3:0007:KB%201\n"
			    "pci 0000:00:1f.5 vfio-pci pci:8086:15bc:1028:0869\n"
			    "usb 9-9 none usb:05f3:0008:x%20y\n");
	/* forgotten */
	assert_int_equal(dm_persist_set(kbd, "usb", "9-9", NULL, msg, sizeof(msg)), 0);
	assert_null(strstr(slurp(path), "9-9"));
	dm_device_unref(kbd);
	dm_model_free(m);
	dm_persist_stop();
	test_rm_rf(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_encode),
		cmocka_unit_test(test_normalize),
		cmocka_unit_test(test_identity),
		cmocka_unit_test(test_state_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
