/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-uevent.c - device-reported text on its way to value files
 * (src/buses/uevent.c): the strings a USB device reports through sysfs or
 * libusb (manufacturer, product, serial) keep their first line only, cut
 * to fit a file, whatever bytes they hold; and a sysfs file's text as the
 * pci and usb sources take it (src/buses/sysfs-value.h): byte for byte
 * where a static value can show it so, else left to the file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buses/sysfs-value.h"
#include "buses/uevent.h"
#include "core/model.h"

static void assert_device_string(const char *value, const char *expected)
{
	char buf[DM_ATTR_MAX];
	memset(buf, 'x', sizeof(buf));
	dm_uevent_device_string(buf, sizeof(buf), value);
	if (strcmp(buf, expected) != 0)
		fail_msg("'%s' should become '%s', became '%s'", value, expected, buf);
}

static void test_device_string_keeps_one_line(void **state)
{
	(void)state;
	assert_device_string("Cruzer Blade", "Cruzer Blade");
	/* as sysfs shows it, with the kernel's newline */
	assert_device_string("Cruzer Blade\n", "Cruzer Blade");
	/* a hostile device's string descriptor, as libusb returns it: what
	 * follows the newline would be a line of its own in the file */
	assert_device_string("Evil\nname=pwned\n../../../etc/passwd", "Evil");
	assert_device_string("\nLD_PRELOAD=/evil.so", "");
	assert_device_string("", "");
	/* other bytes are the device's, kept as given (no line is made) */
	assert_device_string("/../..\x01\x1b[31mred\x7f\t\r", "/../..\x01\x1b[31mred\x7f\t\r");
}

static void test_device_string_fits_the_buffer(void **state)
{
	(void)state;
	char *longer = malloc(3 * DM_ATTR_MAX);
	assert_non_null(longer);
	memset(longer, 'S', 3 * DM_ATTR_MAX - 1);
	longer[3 * DM_ATTR_MAX - 1] = '\0';
	char buf[DM_ATTR_MAX];
	dm_uevent_device_string(buf, sizeof(buf), longer);
	assert_int_equal(strlen(buf), DM_ATTR_MAX - 1);

	/* a newline beyond the cut changes nothing; one before it cuts */
	longer[DM_ATTR_MAX + 10] = '\n';
	dm_uevent_device_string(buf, sizeof(buf), longer);
	assert_int_equal(strlen(buf), DM_ATTR_MAX - 1);
	longer[20] = '\n';
	dm_uevent_device_string(buf, sizeof(buf), longer);
	assert_int_equal(strlen(buf), 20);
	free(longer);

	/* tiny buffers: always NUL-terminated, never overrun */
	char small[4] = { 'x', 'x', 'x', 'x' };
	dm_uevent_device_string(small, 3, "abcdef");
	assert_string_equal(small, "ab");
	assert_int_equal(small[3], 'x');
	dm_uevent_device_string(small, 1, "abcdef");
	assert_string_equal(small, "");
	small[0] = 'x';
	dm_uevent_device_string(small, 0, "abcdef");
	assert_int_equal(small[0], 'x');
}

/* A device directory of files in a temporary directory. */
struct sysdir {
	char dir[64];
	struct dm_scan scan;
	struct dm_record *rec;
};

static void put(struct sysdir *d, const char *name, const char *text, size_t len)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/%s", d->dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	fclose(f);
}

static void sysdir_open(struct sysdir *d)
{
	snprintf(d->dir, sizeof(d->dir), "/tmp/test-sysfs-value-XXXXXX");
	assert_non_null(mkdtemp(d->dir));
	dm_scan_init(&d->scan);
	assert_int_equal(dm_scan_get(&d->scan, "/devices/pci0000:00/0000:00:1f.1", &d->rec), 0);
}

static void sysdir_close(struct sysdir *d)
{
	dm_scan_done(&d->scan);
	DIR *dir = opendir(d->dir);
	assert_non_null(dir);
	struct dirent *e;
	while ((e = readdir(dir)))
		if (e->d_name[0] != '.')
			assert_int_equal(unlinkat(dirfd(dir), e->d_name,
						  e->d_type == DT_DIR ? AT_REMOVEDIR : 0), 0);
	closedir(dir);
	assert_int_equal(rmdir(d->dir), 0);
}

/* dm_sysfs_value_set() of @text as the file @name: its return and the
 * value it left (NULL: none). */
static const char *take(struct sysdir *d, const char *name, const char *text, size_t len,
			unsigned flags, int *ret)
{
	put(d, name, text, len);
	*ret = dm_sysfs_value_set(d->rec, d->dir, name, flags);
	return dm_record_get(d->rec, name);
}

static void test_sysfs_value_is_the_kernels_text(void **state)
{
	(void)state;
	struct sysdir d;
	sysdir_open(&d);
	int r;
	/* one line and its newline: the line */
	assert_string_equal(take(&d, "vendor", "0x8086\n", 7, 0, &r), "0x8086");
	assert_int_equal(r, 1);
	assert_string_equal(take(&d, "bMaxPower", "  2mA\n", 6, 0, &r), "  2mA");
	/* a table of lines where lines are allowed: all of it */
	const char *res = "0x00000000000001f0 0x00000000000001f7 0x0000000000000110\n"
			  "0x00000000000003f6 0x00000000000003f6 0x0000000000000110\n";
	const char *v = take(&d, "resource", res, strlen(res), DM_SYSFS_VALUE_LINES, &r);
	assert_int_equal(r, 1);
	assert_int_equal(strlen(v), strlen(res) - 1);
	assert_memory_equal(v, res, strlen(res) - 1);
	/* the same where one line is expected, an empty file, no newline, a
	 * NUL: no value, the file shows them (and says it is there) */
	assert_null(take(&d, "class", res, strlen(res), 0, &r));
	assert_int_equal(r, 1);
	assert_null(take(&d, "configuration", "", 0, 0, &r));
	assert_int_equal(r, 1);
	assert_null(take(&d, "irq", "23", 2, 0, &r));
	assert_int_equal(r, 1);
	assert_null(take(&d, "device", "0x\0" "01\n", 6, 0, &r));
	assert_int_equal(r, 1);
	/* no file, a directory, no directory: sysfs has none */
	assert_int_equal(dm_sysfs_value_set(d.rec, d.dir, "numa_node", 0), 0);
	char sub[128];
	snprintf(sub, sizeof(sub), "%s/iommu_group", d.dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	assert_int_equal(dm_sysfs_value_set(d.rec, d.dir, "iommu_group", 0), 0);
	assert_int_equal(dm_sysfs_value_set(d.rec, NULL, "vendor", 0), 0);
	/* and then the library's value, formatted */
	assert_int_equal(dm_sysfs_value_setf(d.rec, d.dir, "numa_node", "%d", -1), 0);
	assert_string_equal(dm_record_get(d.rec, "numa_node"), "-1");
	assert_int_equal(dm_sysfs_value_setf(d.rec, d.dir, "vendor", "0x%04x", 0x1234), 0);
	assert_string_equal(dm_record_get(d.rec, "vendor"), "0x8086");
	sysdir_close(&d);
}

static void test_sysfs_device_string_is_one_line(void **state)
{
	(void)state;
	struct sysdir d;
	sysdir_open(&d);
	int r;
	const unsigned s = DM_SYSFS_VALUE_DEVICE_STRING;
	assert_string_equal(take(&d, "product", "USB DISK 3.2\n", 13, s, &r), "USB DISK 3.2");
	/* a device's newline ends the value; a kernel value's would not be one */
	const char *evil = "Evil\nname=pwned\n";
	assert_string_equal(take(&d, "product", evil, strlen(evil), s, &r), "Evil");
	assert_int_equal(r, 1);
	/* past a value's size: cut */
	char *big = malloc(5001);
	assert_non_null(big);
	memset(big, 'S', 5000);
	big[5000] = '\n';
	assert_int_equal(strlen(take(&d, "serial", big, 5001, s, &r)), DM_ATTR_MAX - 1);
	free(big);
	/* one line without its newline (a recording's): the file's */
	assert_null(take(&d, "manufacturer", "Canon Inc.", 10, s, &r));
	assert_int_equal(r, 1);
	sysdir_close(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_device_string_keeps_one_line),
		cmocka_unit_test(test_device_string_fits_the_buffer),
		cmocka_unit_test(test_sysfs_value_is_the_kernels_text),
		cmocka_unit_test(test_sysfs_device_string_is_one_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
