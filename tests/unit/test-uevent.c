/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-uevent.c - device-reported text on its way to value files
 * (src/buses/uevent.c): the strings a USB device reports through sysfs or
 * libusb (manufacturer, product, serial) keep their first line only, cut
 * to fit a file, whatever bytes they hold.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_device_string_keeps_one_line),
		cmocka_unit_test(test_device_string_fits_the_buffer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
