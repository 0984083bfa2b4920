/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of the snapshot's layout of files (src/snapshot/format.c),
 * its base64 (src/snapshot/base64.c) and what --sanitize masks
 * (src/snapshot/sanitize.c). */
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

#include "snapshot/base64.h"
#include "snapshot/format.h"
#include "snapshot/sanitize.h"

/* The JSON of @o, compact. */
static const char *json(json_object *o)
{
	return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
							 JSON_C_TO_STRING_NOSLASHESCAPE);
}

/* A device object with the file @name added as format.c places it. */
static json_object *one_file(const char *name, mode_t mode, const char *content, size_t len,
			     const struct dm_sanitizer *san)
{
	json_object *devices = json_object_new_array(), *dev;
	struct dm_snapshot_device d = { .path = "x" };
	assert_int_equal(dm_snapshot_add_device(devices, &d, &dev), 0);
	assert_int_equal(dm_snapshot_add_file(dev, name, mode, content, len, 0, san), 0);
	json_object *values, *files = NULL;
	assert_true(json_object_object_get_ex(dev, "values", &values));
	json_object_object_get_ex(dev, "files", &files);
	json_object *out = json_object_new_object();
	json_object_object_add(out, "values", json_object_get(values));
	if (files)
		json_object_object_add(out, "files", json_object_get(files));
	json_object_put(devices);
	return out;
}

static void check_file(const char *name, mode_t mode, const char *content, size_t len,
		       const struct dm_sanitizer *san, const char *expect)
{
	json_object *o = one_file(name, mode, content, len, san);
	assert_string_equal(json(o), expect);
	json_object_put(o);
}

static void test_where_each_file_goes(void **state)
{
	(void)state;
	/* read-only text with one newline: a value, as in format 1 */
	check_file("vendor", 0444, "0x8086\n", 7, NULL, "{\"values\":{\"vendor\":\"0x8086\"}}");
	check_file("v", 0444, "a\nb\n", 4, NULL, "{\"values\":{\"v\":\"a\\nb\"}}");
	check_file("e", 0444, "\n", 1, NULL, "{\"values\":{\"e\":\"\"}}");
	/* another mode, no newline, empty: a file with its mode and text */
	check_file("online", 0644, "1\n", 2, NULL,
		   "{\"values\":{},\"files\":{\"online\":{\"mode\":\"0644\",\"text\":\"1\\n\"}}}");
	check_file("n", 0444, "no newline", 10, NULL,
		   "{\"values\":{},\"files\":{\"n\":{\"mode\":\"0444\",\"text\":\"no newline\"}}}");
	check_file("empty", 0444, "", 0, NULL,
		   "{\"values\":{},\"files\":{\"empty\":{\"mode\":\"0444\",\"text\":\"\"}}}");
	check_file("secret", 0400, "s\n", 2, NULL,
		   "{\"values\":{},\"files\":{\"secret\":{\"mode\":\"0400\",\"text\":\"s\\n\"}}}");
	/* binary (a NUL, bad UTF-8): base64 */
	check_file("descriptors", 0444, "\x12\x01\x00\x02", 4, NULL,
		   "{\"values\":{},\"files\":{\"descriptors\":{\"mode\":\"0444\","
		   "\"base64\":\"EgEAAg==\"}}}");
	check_file("cut", 0444, "\xe0\x80\n", 3, NULL,
		   "{\"values\":{},\"files\":{\"cut\":{\"mode\":\"0444\",\"base64\":\"4IAK\"}}}");
	/* unreadable when saved (write-only, a failed read): its mode alone */
	check_file("reset", 0200, NULL, 0, NULL,
		   "{\"values\":{},\"files\":{\"reset\":{\"mode\":\"0200\"}}}");
	/* a read that failed: its error, by name */
	json_object *devices = json_object_new_array(), *dev;
	struct dm_snapshot_device d = { .path = "x" };
	assert_int_equal(dm_snapshot_add_device(devices, &d, &dev), 0);
	assert_int_equal(dm_snapshot_add_file(dev, "speed", 0444, NULL, 0, EOPNOTSUPP, NULL), 0);
	assert_non_null(strstr(json(dev), "\"speed\":{\"mode\":\"0444\",\"error\":\"EOPNOTSUPP\"}"));
	json_object_put(devices);
	assert_int_equal(dm_snapshot_errno("EOPNOTSUPP"), EOPNOTSUPP);
	assert_int_equal(dm_snapshot_errno("ENOENT"), ENOENT);
	assert_int_equal(dm_snapshot_errno("EWHATEVER"), 0);
	/* a page of text is no value: base64 */
	static char page[4097];
	memset(page, 'x', sizeof(page));
	page[4095] = '\n';
	json_object *o = one_file("page", 0444, page, 4096, NULL);
	assert_non_null(strstr(json(o), "\"values\":{\"page\":\"xxx"));
	json_object_put(o);
	page[4096] = '\n';
	o = one_file("page", 0444, page, 4097, NULL);
	assert_non_null(strstr(json(o), "\"base64\":\"eHh4"));
	json_object_put(o);
}

static void test_directories_nest(void **state)
{
	(void)state;
	json_object *devices = json_object_new_array(), *dev, *queue, *iosched;
	struct dm_snapshot_device d = { .path = "sda" };
	assert_int_equal(dm_snapshot_add_device(devices, &d, &dev), 0);
	assert_int_equal(dm_snapshot_add_file(dev, "size", 0444, "8\n", 2, 0, NULL), 0);
	assert_int_equal(dm_snapshot_add_dir(dev, "queue", &queue), 0);
	assert_int_equal(dm_snapshot_add_file(queue, "scheduler", 0644, "none\n", 5, 0, NULL), 0);
	assert_int_equal(dm_snapshot_add_file(queue, "nr", 0444, "4\n", 2, 0, NULL), 0);
	assert_int_equal(dm_snapshot_add_dir(queue, "iosched", &iosched), 0);
	assert_string_equal(json(dev),
			    "{\"path\":\"sda\",\"power\":\"on\",\"values\":{\"size\":\"8\"},"
			    "\"dirs\":{\"queue\":{\"values\":{\"nr\":\"4\"},\"files\":{\"scheduler\":"
			    "{\"mode\":\"0644\",\"text\":\"none\\n\"}},\"dirs\":{\"iosched\":"
			    "{\"values\":{}}}}}}");
	json_object_put(devices);
}

static void test_base64(void **state)
{
	(void)state;
	static const struct {
		const char *plain, *coded;
	} cases[] = { { "", "" }, { "f", "Zg==" }, { "fo", "Zm8=" }, { "foo", "Zm9v" },
		      { "foob", "Zm9vYg==" }, { "fooba", "Zm9vYmE=" }, { "foobar", "Zm9vYmFy" } };
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *c = dm_base64_encode(cases[i].plain, strlen(cases[i].plain)), *p;
		size_t len;
		assert_string_equal(c, cases[i].coded);
		assert_int_equal(dm_base64_decode(c, strlen(c), &p, &len), 0);
		assert_int_equal(len, strlen(cases[i].plain));
		assert_memory_equal(p, cases[i].plain, len);
		free(c);
		free(p);
	}
	unsigned char all[256];
	for (int i = 0; i < 256; i++)
		all[i] = (unsigned char)i;
	char *c = dm_base64_encode(all, sizeof(all)), *p;
	size_t len;
	assert_int_equal(dm_base64_decode(c, strlen(c), &p, &len), 0);
	assert_int_equal(len, 256);
	assert_memory_equal(p, all, 256);
	free(c);
	free(p);
	/* one text for each byte string: nothing else is taken */
	static const char *const bad[] = { "Zg=", "Zg", "Z===", "Zh==", "Zm9=", "Zg==Zg==",
					   "Zm 9v", "Zm9v\n", "Zm-v", "=m9v" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(dm_base64_decode(bad[i], strlen(bad[i]), &p, &len), -EINVAL);
}

static char *masked(const struct dm_sanitizer *s, const char *name, const char *value)
{
	size_t len;
	char *out = dm_sanitize_text(s, name, value, strlen(value), &len);
	assert_non_null(out);
	assert_int_equal(len, strlen(out));
	return out;
}

static void check_masked(const struct dm_sanitizer *s, const char *name, const char *value,
			 const char *expect)
{
	char *out = masked(s, name, value);
	assert_string_equal(out, expect);
	free(out);
}

static void test_sanitize(void **state)
{
	(void)state;
	struct dm_sanitizer s = { .host = "build-host7" };
	/* identifiers by name: the whole value */
	check_masked(&s, "serial", "0123456789AB\n", "[REMOVED]\n");
	check_masked(&s, "queue/wwid", "naa.5000c500a1b2c3d4", "[REMOVED]");
	check_masked(&s, "address", "52:54:00:12:34:56\n", "[REMOVED]\n");
	check_masked(&s, "sysfs:serial", "X\n", "[REMOVED]\n");
	check_masked(&s, "product_uuid", "", "");
	/* in any value: MAC addresses, UUIDs, the host name */
	check_masked(&s, "uevent", "INTERFACE=eth0\nADDR=52:54:00:ab:CD:ef\n",
		     "INTERFACE=eth0\nADDR=[REMOVED]\n");
	check_masked(&s, "x", "a 20:00:00:25:b5:00:00:0f b", "a [REMOVED] b"); /* a WWN */
	check_masked(&s, "x", "52-54-00-ab-cd-ef", "[REMOVED]");
	check_masked(&s, "x", "fs 8a4c0b2e-6e4d-4c5e-9a11-0f0e0d0c0b0a\n", "fs [REMOVED]\n");
	check_masked(&s, "name", "Build-Host7 disk\n", "[REMOVED] disk\n");
	/* and nothing that only looks like part of one */
	check_masked(&s, "x", "0000:00:14.0 12:34:56 1-1.2:1.0\n", "0000:00:14.0 12:34:56 1-1.2:1.0\n");
	check_masked(&s, "x", "52:54:00:12:34\n", "52:54:00:12:34\n");
	check_masked(&s, "x", "build-host70 xbuild-host7\n", "build-host70 xbuild-host7\n");
	check_masked(&s, "vendor", "0x8086\n", "0x8086\n");
	assert_true(dm_sanitize_is_identifier("perm_addr"));
	assert_false(dm_sanitize_is_identifier("serial_"));
	/* binary values are dropped, text is masked, by format.c */
	check_file("descriptors", 0444, "\x12\x01\x00\x02", 4, &s, "{\"values\":{}}");
	check_file("serial", 0444, "ABC\n", 4, &s, "{\"values\":{\"serial\":\"[REMOVED]\"}}");
	check_file("mac", 0644, "52:54:00:12:34:56\n", 18, &s,
		   "{\"values\":{},\"files\":{\"mac\":{\"mode\":\"0644\",\"text\":\"[REMOVED]\\n\"}}}");
	/* no host name to mask: localhost or a letter would mask words */
	struct dm_sanitizer none = { .host = "" };
	check_masked(&none, "name", "localhost\n", "localhost\n");
}

/* The rules docs/snapshot.md's "Volatile values" lists: every `word` on
 * its "- " lines, into @rules (malloc()ed strings). */
static size_t documented_rules(char **rules, size_t max)
{
	const char *doc = getenv("SNAPSHOT_MD");
	assert_non_null(doc);
	FILE *f = fopen(doc, "r");
	assert_non_null(f);
	char line[1024];
	bool in = false, item = false;
	size_t n = 0;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "## ", 3) == 0) {
			in = strcmp(line, "## Volatile values\n") == 0;
			continue;
		}
		if (!in)
			continue;
		if (strncmp(line, "- ", 2) == 0)
			item = true;
		else if (line[0] != ' ')
			item = false;
		if (!item)
			continue;
		for (char *p = line; (p = strchr(p, '`'));) {
			char *q = strchr(p + 1, '`');
			if (!q)
				break;
			assert_true(n < max);
			rules[n++] = strndup(p + 1, (size_t)(q - p - 1));
			p = q + 1;
		}
	}
	fclose(f);
	return n;
}

static int by_string(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_volatile_rules_are_the_documented_ones(void **state)
{
	(void)state;
	char *doc[128];
	const char *code[128];
	size_t nd = documented_rules(doc, 128), nc = 0;
	while (nc < 128 && (code[nc] = dm_snapshot_volatile_rule(nc)))
		nc++;
	assert_true(nd > 10);
	qsort(doc, nd, sizeof(*doc), by_string);
	qsort(code, nc, sizeof(*code), by_string);
	for (size_t i = 0; i < nd || i < nc; i++) {
		if (i >= nd || i >= nc || strcmp(doc[i], code[i]) != 0)
			fail_msg("docs/snapshot.md and format.c differ at %zu: %s, %s", i,
				 i < nd ? doc[i] : "(end)", i < nc ? code[i] : "(end)");
	}
	for (size_t i = 0; i < nd; i++)
		free(doc[i]);
	/* the rules as they apply */
	assert_true(dm_snapshot_is_volatile("stat"));
	assert_true(dm_snapshot_is_volatile("queue/stat"));
	assert_true(dm_snapshot_is_volatile("temp1_input"));
	assert_true(dm_snapshot_is_volatile("statistics/rx_bytes"));
	assert_true(dm_snapshot_is_volatile("a/statistics/b/c"));
	assert_true(dm_snapshot_is_volatile("current_link_speed"));
	assert_false(dm_snapshot_is_volatile("_input"));
	assert_false(dm_snapshot_is_volatile("statistics"));
	assert_false(dm_snapshot_is_volatile("mystatistics/rx_bytes"));
	assert_false(dm_snapshot_is_volatile("status"));
	assert_false(dm_snapshot_is_volatile("serial"));
	assert_false(dm_snapshot_is_volatile("queue/scheduler"));
	assert_false(dm_snapshot_is_volatile("max_link_speed"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_volatile_rules_are_the_documented_ones),
		cmocka_unit_test(test_where_each_file_goes),
		cmocka_unit_test(test_directories_nest),
		cmocka_unit_test(test_base64),
		cmocka_unit_test(test_sanitize),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
