/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-sources.c - the registry of sources (src/buses/sources.c) and what
 * reads it: the table's rules (the one source that places devices comes
 * first, every other completes a subsystem's records, keys are unique),
 * the sources a configuration picks and in what order, and driverfsd.conf's
 * [Sources] keys (src/config.c) as the table names them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "buses/sources.h"
#include "config.h"

static int index_of(const char *name)
{
	for (size_t i = 0; i < dm_n_sources; i++)
		if (strcmp(dm_sources[i].ops->name, name) == 0)
			return (int)i;
	fail_msg("no source %s in the registry", name);
	return -1;
}

static size_t count(const struct dm_source_ops *const *list)
{
	size_t n = 0;
	while (list[n])
		n++;
	return n;
}

/* One source places devices, first; the others each fill a subsystem;
 * keys and names are unique, whatever their case (driverfsd.conf keys are
 * matched as written, a second key differing in case would be a trap). */
static void test_table_rules(void **state)
{
	(void)state;
	assert_true(dm_n_sources >= 1 && dm_n_sources <= DM_SCAN_SOURCES_MAX);
	assert_int_equal(dm_sources[0].role, DM_SOURCE_PLACES);
	assert_null(dm_sources[0].ops->fills);
	assert_true(dm_sources[0].on);
	for (size_t i = 1; i < dm_n_sources; i++) {
		const struct dm_source *src = &dm_sources[i];
		assert_int_equal(src->role, DM_SOURCE_FILLS);
		assert_non_null(src->ops->fills);
		assert_non_null(src->ops->scan);
	}
	for (size_t i = 0; i < dm_n_sources; i++) {
		assert_non_null(dm_sources[i].key);
		assert_non_null(dm_sources[i].ops->name);
		for (size_t j = i + 1; j < dm_n_sources; j++) {
			assert_true(strcasecmp(dm_sources[i].key, dm_sources[j].key) != 0);
			assert_true(strcmp(dm_sources[i].ops->name, dm_sources[j].ops->name) != 0);
		}
	}
}

static void test_find_key(void **state)
{
	(void)state;
	assert_int_equal(dm_source_find_key("Udev"), index_of("udev"));
	assert_int_equal(dm_source_find_key("PCI"), index_of("pci"));
	assert_int_equal(dm_source_find_key("USB"), index_of("usb"));
	/* as driverfsd.conf(5) spells them, nothing else */
	assert_int_equal(dm_source_find_key("pci"), -1);
	assert_int_equal(dm_source_find_key("PCI "), -1);
	assert_int_equal(dm_source_find_key(""), -1);
	assert_int_equal(dm_source_find_key("MountPoint"), -1);
}

/* Everything on: the table's order, udev first; the fillers without it. */
static void test_pick_all(void **state)
{
	(void)state;
	bool on[DM_SCAN_SOURCES_MAX];
	struct dm_scan_sources src;
	memset(&src, 0xa5, sizeof(src));
	for (size_t i = 0; i < DM_SCAN_SOURCES_MAX; i++)
		on[i] = true;
	dm_sources_pick(on, &src);
	assert_int_equal(count(src.all), dm_n_sources);
	for (size_t i = 0; i < dm_n_sources; i++)
		assert_ptr_equal(src.all[i], dm_sources[i].ops);
	assert_string_equal(src.all[0]->name, "udev");
	assert_int_equal(count(src.fillers), dm_n_sources - 1);
	for (size_t i = 0; src.fillers[i]; i++)
		assert_ptr_equal(src.fillers[i], dm_sources[i + 1].ops);
	assert_non_null(src.groups);
	assert_non_null(src.groups[0]);
}

/* PCI off: udev and usb run, usb alone fills; the placing source runs
 * even when told off (the parser never lets it be). */
static void test_pick_some(void **state)
{
	(void)state;
	bool on[DM_SCAN_SOURCES_MAX] = { false };
	struct dm_scan_sources src;
	on[index_of("usb")] = true;
	dm_sources_pick(on, &src);
	assert_int_equal(count(src.all), 2);
	assert_string_equal(src.all[0]->name, "udev");
	assert_string_equal(src.all[1]->name, "usb");
	assert_int_equal(count(src.fillers), 1);
	assert_string_equal(src.fillers[0]->name, "usb");
	memset(on, 0, sizeof(on));
	dm_sources_pick(on, &src);
	assert_int_equal(count(src.all), 1);
	assert_string_equal(src.all[0]->name, "udev");
	assert_null(src.fillers[0]);
}

/* dm_config_load() of @text; its errors in @errors. */
static int load(const char *text, struct dm_config *c, char *errors, size_t size)
{
	char dir[] = "/tmp/test-sources-XXXXXX", path[64];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/driverfsd.conf", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	FILE *e = fmemopen(errors, size, "w");
	assert_non_null(e);
	int r = dm_config_load(path, true, e, c);
	fclose(e);
	unlink(path);
	rmdir(dir);
	return r;
}

static void test_config_defaults(void **state)
{
	(void)state;
	struct dm_config c;
	char errors[1024] = "";
	assert_int_equal(load("[Daemon]\n", &c, errors, sizeof(errors)), 0);
	for (size_t i = 0; i < dm_n_sources; i++)
		assert_int_equal(c.sources[i], dm_sources[i].on);
	dm_config_done(&c);
}

static void test_config_keys(void **state)
{
	(void)state;
	struct dm_config c;
	char errors[1024] = "";
	assert_int_equal(load("[Sources]\nPCI=no\nUSB=yes\nUdev=true\n", &c, errors,
			      sizeof(errors)),
			 0);
	assert_false(c.sources[index_of("pci")]);
	assert_true(c.sources[index_of("usb")]);
	assert_true(c.sources[index_of("udev")]);
	dm_config_done(&c);
}

/* The errors driverfsd.conf(5) promises, word for word as before the
 * registry: the placing source's key=no, an unknown key, a second key, a
 * bad boolean. */
static void test_config_errors(void **state)
{
	(void)state;
	struct dm_config c;
	char errors[2048] = "";
	int r = load("[Sources]\nUdev=no\nFireWire=yes\nUSB=yes\nUSB=no\nPCI=maybe\npci=no\n", &c,
		     errors, sizeof(errors));
	assert_int_equal(r, 5);
	assert_non_null(strstr(errors, ":2: Udev=no is not possible: the udev source places "
				       "every device, the others complete its records\n"));
	assert_non_null(strstr(errors, ":3: unknown key FireWire in [Sources]\n"));
	assert_non_null(strstr(errors, ":5: USB= given twice (first on line 4)\n"));
	assert_non_null(strstr(errors, ":6: bad PCI 'maybe' (yes or no)\n"));
	assert_non_null(strstr(errors, ":7: unknown key pci in [Sources]\n"));
	dm_config_done(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_rules),	 cmocka_unit_test(test_find_key),
		cmocka_unit_test(test_pick_all),	 cmocka_unit_test(test_pick_some),
		cmocka_unit_test(test_config_defaults), cmocka_unit_test(test_config_keys),
		cmocka_unit_test(test_config_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
