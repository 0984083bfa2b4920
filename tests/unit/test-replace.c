/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of dm_replace_file() (src/replace.c): a new file and a
 * replaced one, whole and 0644, no temporary left; the caller's symlink
 * followed; someone else's symlink replaced itself, its target untouched
 * (a link planted in a directory others write to); /dev/null written to;
 * a directory refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "replace.h"

static char dir[64];

static char *at(const char *name)
{
	static char buf[4][128];
	static int i;
	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, name);
	return buf[i];
}

static char *slurp(const char *path)
{
	static char buf[256];
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static size_t entries(void)
{
	DIR *d = opendir(dir);
	size_t n = 0;
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test-replace-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

static void test_new_and_replaced(void **state)
{
	(void)state;
	assert_int_equal(dm_replace_file(at("f"), "one\n", 4), 0);
	assert_string_equal(slurp(at("f")), "one\n");
	assert_int_equal(dm_replace_file(at("f"), "two", 3), 0);
	assert_string_equal(slurp(at("f")), "two");
	struct stat st;
	assert_int_equal(stat(at("f"), &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	assert_int_equal(entries(), 1); /* no temporary left */
	assert_int_equal(dm_replace_file(dir, "x", 1), -EISDIR);
	assert_int_equal(dm_replace_file(at("none/f"), "x", 1), -ENOENT);
}

static void test_symlinks(void **state)
{
	(void)state;
	assert_int_equal(dm_replace_file(at("target"), "precious\n", 9), 0);
	/* the caller's own link: its target replaced */
	assert_int_equal(symlink("target", at("mine")), 0);
	assert_int_equal(dm_replace_file(at("mine"), "new\n", 4), 0);
	assert_string_equal(slurp(at("target")), "new\n");
	struct stat st;
	assert_int_equal(lstat(at("mine"), &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	if (geteuid() != 0) {
		skip(); /* making someone else's link needs root */
		return;
	}
	/* someone else's link (nobody's): replaced itself, never followed */
	assert_int_equal(symlink(at("target"), at("planted")), 0);
	assert_int_equal(lchown(at("planted"), 65534, 65534), 0);
	assert_int_equal(dm_replace_file(at("planted"), "mine\n", 5), 0);
	assert_string_equal(slurp(at("target")), "new\n");
	assert_int_equal(lstat(at("planted"), &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_string_equal(slurp(at("planted")), "mine\n");
}

static void test_a_device_is_written_to(void **state)
{
	(void)state;
	assert_int_equal(dm_replace_file("/dev/null", "x", 1), 0);
	struct stat st;
	assert_int_equal(stat("/dev/null", &st), 0);
	assert_true(S_ISCHR(st.st_mode));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_and_replaced),
		cmocka_unit_test(test_symlinks),
		cmocka_unit_test(test_a_device_is_written_to),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
