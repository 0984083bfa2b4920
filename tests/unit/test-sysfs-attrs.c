/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of what the tree does with a device's sysfs attributes
 * (src/buses/sysfs-attrs.c) and of which values a snapshot keeps
 * (src/snapshot/format.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "buses/sysfs-attrs.h"
#include "snapshot/format.h"

static void test_policy(void **state)
{
	(void)state;
	static const char *const left_out[] = { "bind", "unbind", "new_id", "remove_id", "remove",
						"rescan", "scan", "delete", "eject", "reset",
						"rom", "vpd", "legacy_io", "legacy_mem",
						"resource0", "resource2_wc", "resource5_uc" };
	for (size_t i = 0; i < sizeof(left_out) / sizeof(left_out[0]); i++)
		assert_int_equal(dm_sysfs_attr_policy(left_out[i]), DM_SYSFS_LEFT_OUT);
	static const char *const read_only[] = { "driver_override", "authorized",
						 "authorized_default", "uevent" };
	for (size_t i = 0; i < sizeof(read_only) / sizeof(read_only[0]); i++)
		assert_int_equal(dm_sysfs_attr_policy(read_only[i]), DM_SYSFS_READ_ONLY);
	assert_int_equal(dm_sysfs_attr_policy("config"), DM_SYSFS_PCI_CONFIG);
	/* the text resource table, tunables and ordinary values pass */
	static const char *const pass[] = { "resource", "resources", "online", "size", "mtu",
					    "enable", "d3cold_allowed", "reset_method", "state" };
	for (size_t i = 0; i < sizeof(pass) / sizeof(pass[0]); i++)
		assert_int_equal(dm_sysfs_attr_policy(pass[i]), DM_SYSFS_PASS);
}

static void test_snapshot_keeps_text_with_its_newline(void **state)
{
	(void)state;
	assert_true(dm_snapshot_file_is_kept("0x8086\n", 7));
	assert_true(dm_snapshot_file_is_kept("a\nb\n", 4));
	assert_true(dm_snapshot_file_is_kept("caf\xc3\xa9\n", 6));
	assert_true(dm_snapshot_file_is_kept("\n", 1)); /* an empty value, shown as "\n" */
	assert_false(dm_snapshot_file_is_kept("", 0));
	assert_false(dm_snapshot_file_is_kept("no newline", 10));
	assert_false(dm_snapshot_file_is_kept("a\0b\n", 4));
	assert_false(dm_snapshot_file_is_kept("\x12\x01\x00\x02\n", 5));
	assert_false(dm_snapshot_file_is_kept("\xe0\x80\n", 3)); /* cut */
	assert_false(dm_snapshot_file_is_kept("\xc0\xaf\n", 3)); /* overlong */
	assert_false(dm_snapshot_file_is_kept("\xed\xa0\x80\n", 4)); /* a surrogate */
	/* a static value holds at most 4095 bytes, shown with its newline */
	static char page[4097];
	memset(page, 'x', sizeof(page));
	page[4095] = '\n';
	assert_true(dm_snapshot_file_is_kept(page, 4096));
	page[4095] = 'x';
	page[4096] = '\n';
	assert_false(dm_snapshot_file_is_kept(page, 4097));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_policy),
		cmocka_unit_test(test_snapshot_keeps_text_with_its_newline),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
