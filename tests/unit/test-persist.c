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
 * skipped for anyone else). A PF's VFs (issue 33 item 5): "sriov pci NAME
 * N DRIVER IDENTITY" lines load, bad ones are skipped, a record is written
 * with the PF's identity; what is written to a PF's sriov file parses as
 * a count, a driver and the words, and nothing else does.
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
#include "drivers/sriov.h"
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

/* A state file in a new directory (@dir, 64 bytes), its path into @path
 * (128 bytes), open for the test's lines. */
static FILE *state_file(char *dir, char *path)
{
	snprintf(dir, 64, "/tmp/test-persist-XXXXXX");
	assert_non_null(mkdtemp(dir));
	chmod(dir, 0755);
	snprintf(path, 128, "%s/bindings", dir);
	FILE *f = fopen(path, "we");
	assert_non_null(f);
	return f;
}

/* The state file written (@f closed) and loaded, root's: persistence on
 * no binder (its records kept and written, none applied). */
static struct dm_persist *load(FILE *f, const char *path)
{
	fclose(f);
	chmod(path, 0644);
	struct dm_persist *ps;
	assert_int_equal(dm_persist_new(NULL, path, &ps), 0);
	assert_int_equal(dm_persist_load(ps), 0);
	return ps;
}

static void test_state_file(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	char dir[64], path[128];
	char *lng = malloc(4096);
	assert_non_null(lng);
	memset(lng, 'a', 4095);
	lng[4095] = '\0';
	FILE *f = state_file(dir, path);
	fprintf(f, "# a comment\n"
		   "pci 0000:00:1f.6 vfio-pci\n"
		   "usb 1-1:1.0 none usb:05f3:0007:KB%%201\n"
		   "usb 1-2:1.0 none usb:05f3:0007:KB 1\n"
		   "usb 1-3:1.0 none usb:05F3:0007\n"
		   "pci 0000:00:1f.7 vfio-pci pci:8086:15bc:1028:0869 extra\n"
		   "pci %s vfio-pci\n"
		   "pci 0000:00:1f.5 vfio-pci pci:8086:15bc:1028:0869\n",
		lng);
	free(lng);
	struct dm_persist *ps = load(f, path);

	struct dm_model *m;
	assert_int_equal(dm_model_new(&m), 0);
	struct dm_bus *usb;
	assert_int_equal(dm_bus_get(m, "usb", NULL, &usb), 0);
	struct dm_device *kbd = add(m, usb, "9-9", NULL,
				    (const char *const[]){ "idVendor", "05f3", "idProduct", "0008",
							   "serial", "x y", NULL });
	char msg[128];
	assert_int_equal(dm_persist_set(ps, kbd, "usb", "9-9", "none", msg, sizeof(msg)), 0);
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
	assert_int_equal(dm_persist_set(ps, kbd, "usb", "9-9", NULL, msg, sizeof(msg)), 0);
	assert_null(strstr(slurp(path), "9-9"));
	dm_device_unref(kbd);
	dm_model_free(m);
	dm_persist_free(ps);
	test_rm_rf(dir);
}

static void test_sriov_state(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	char dir[64], path[128];
	FILE *f = state_file(dir, path);
	fprintf(f, "sriov pci 0000:04:00.0 4 vfio-pci pci:15b3:1017:15b3:0020\n"
		   "sriov pci 0000:05:00.0 x vfio-pci pci:15b3:1017:15b3:0020\n"
		   "sriov pci 0000:06:00.0 99999 vfio-pci pci:15b3:1017:15b3:0020\n"
		   "sriov usb 1-1 2 vfio-pci usb:05f3:0007\n"
		   "sriov pci 0000:07:00.0 2 vfio-pci usb:05f3:0007\n"
		   "sriov pci 0000:08:00.0 2 vfio-pci\n"
		   "sriov pci 0000:09:00.0 2 a/b pci:15b3:1017:15b3:0020\n"
		   "pci 0000:00:1f.6 vfio-pci pci:8086:15bc:1028:0869\n");
	struct dm_persist *ps = load(f, path);

	struct dm_model *m;
	assert_int_equal(dm_model_new(&m), 0);
	struct dm_bus *pci;
	assert_int_equal(dm_bus_get(m, "pci", NULL, &pci), 0);
	struct dm_device *pf = add(m, pci, "0000:81:00.0", NULL,
				   (const char *const[]){ "vendor", "0x8086", "device", "0x1572",
							  "subsystem_vendor", "0x8086",
							  "subsystem_device", "0x0001", NULL });
	char msg[128];
	assert_int_equal(dm_persist_set_sriov(ps, pf, "0000:81:00.0", 8, NULL, msg, sizeof(msg)), 0);
	/* the binding first, then each PF's VFs; the bad lines gone */
	assert_string_equal(slurp(path),
			    "# driverfsd's persisted bindings: BUS NAME DRIVER IDENTITY "
			    "(driverfsctl bind --persist)\n"
			    "pci 0000:00:1f.6 vfio-pci pci:8086:15bc:1028:0869\n"
			    "sriov pci 0000:04:00.0 4 vfio-pci pci:15b3:1017:15b3:0020\n"
			    "sriov pci 0000:81:00.0 8 default pci:8086:1572:8086:0001\n");
	assert_int_equal(dm_persist_forget_sriov(ps, "0000:04:00.0", msg, sizeof(msg)), 0);
	assert_null(strstr(slurp(path), "0000:04:00.0"));
	dm_device_unref(pf);
	dm_model_free(m);
	dm_persist_free(ps);
	test_rm_rf(dir);
}

static void test_sriov_parse(void **state)
{
	(void)state;
	struct dm_sriov_request req;
	char buf[128];
	snprintf(buf, sizeof(buf), "4 vfio-pci force dry-run persist\n");
	assert_int_equal(dm_sriov_parse(buf, &req), 0);
	assert_int_equal(req.numvfs, 4);
	assert_string_equal(req.driver, "vfio-pci");
	assert_true(req.force && req.dry_run && req.persist);
	snprintf(buf, sizeof(buf), "0");
	assert_int_equal(dm_sriov_parse(buf, &req), 0);
	assert_int_equal(req.numvfs, 0);
	assert_null(req.driver);
	snprintf(buf, sizeof(buf), "2 default");
	assert_int_equal(dm_sriov_parse(buf, &req), 0);
	assert_null(req.driver);
	snprintf(buf, sizeof(buf), "0 forget");
	assert_int_equal(dm_sriov_parse(buf, &req), 0);
	assert_true(req.forget && !req.persist);
	static const char *const bad[] = {
		"", "\n", "x", "-1", "+2", " ", "65536", "99999999999999999999", "2 a/b",
		"2 vfio-pci igb", "2 force force", "2 dry-run dry-run", "vfio-pci 2", "2 a\nb",
		"2\n\n", "2 persist forget", "2 forget forget",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(buf, sizeof(buf), "%s", bad[i]);
		assert_int_equal(dm_sriov_parse(buf, &req), -EINVAL);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_encode),
		cmocka_unit_test(test_normalize),
		cmocka_unit_test(test_identity),
		cmocka_unit_test(test_state_file),
		cmocka_unit_test(test_sriov_state),
		cmocka_unit_test(test_sriov_parse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
