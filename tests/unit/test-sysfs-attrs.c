/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of what the tree does with a device's sysfs attributes
 * (src/buses/sysfs-attrs.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "buses/sysfs-attrs.h"

static void test_policy(void **state)
{
	(void)state;
	/* memory-mapped or capability-limited: not shown */
	static const char *const left_out[] = { "rom",	      "vpd",	      "legacy_io",
						"legacy_mem", "resource0",    "resource2_wc",
						"resource5_uc" };
	for (size_t i = 0; i < sizeof(left_out) / sizeof(left_out[0]); i++)
		assert_int_equal(dm_sysfs_attr_policy(left_out[i]), DM_SYSFS_LEFT_OUT);
	/* acting when written: shown as the kernel has them (a console's
	 * bind reads 1), never written through the tree */
	static const char *const read_only[] = { "driver_override", "authorized",
						 "authorized_default", "uevent",
						 "bind",	    "unbind",
						 "new_id",	    "remove_id",
						 "remove",	    "rescan",
						 "scan",	    "delete",
						 "eject",	    "reset" };
	for (size_t i = 0; i < sizeof(read_only) / sizeof(read_only[0]); i++)
		assert_int_equal(dm_sysfs_attr_policy(read_only[i]), DM_SYSFS_READ_ONLY);
	assert_int_equal(dm_sysfs_attr_policy("config"), DM_SYSFS_PCI_CONFIG);
	/* the text resource table, tunables and ordinary values pass */
	static const char *const pass[] = { "resource", "resources", "online", "size", "mtu",
					    "enable", "d3cold_allowed", "reset_method", "state" };
	for (size_t i = 0; i < sizeof(pass) / sizeof(pass[0]); i++)
		assert_int_equal(dm_sysfs_attr_policy(pass[i]), DM_SYSFS_PASS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_policy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
