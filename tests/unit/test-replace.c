/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of dm_replace_file() (src/replace.c): a new file and a
 * replaced one, whole and 0644, no temporary left; the caller's symlink
 * followed; someone else's symlink replaced itself, its target untouched
 * (a link planted in a directory others write to); a fifo (no reader:
 * the writer blocked forever), /dev/null and a directory refused with the
 * reason, never blocking, by dm_replace_file() and dm_open_regular().
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/replace.h"

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
	assert_int_equal(dm_replace_file(at("f"), "one\n", 4, NULL, 0), 0);
	assert_string_equal(slurp(at("f")), "one\n");
	assert_int_equal(dm_replace_file(at("f"), "two", 3, NULL, 0), 0);
	assert_string_equal(slurp(at("f")), "two");
	struct stat st;
	assert_int_equal(stat(at("f"), &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	assert_int_equal(entries(), 1); /* no temporary left */
	assert_int_equal(dm_replace_file(dir, "x", 1, NULL, 0), -EISDIR);
	assert_int_equal(dm_replace_file(at("none/f"), "x", 1, NULL, 0), -ENOENT);
}

static void test_symlinks(void **state)
{
	(void)state;
	assert_int_equal(dm_replace_file(at("target"), "precious\n", 9, NULL, 0), 0);
	/* the caller's own link: its target replaced */
	assert_int_equal(symlink("target", at("mine")), 0);
	assert_int_equal(dm_replace_file(at("mine"), "new\n", 4, NULL, 0), 0);
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
	assert_int_equal(dm_replace_file(at("planted"), "mine\n", 5, NULL, 0), 0);
	assert_string_equal(slurp(at("target")), "new\n");
	assert_int_equal(lstat(at("planted"), &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_string_equal(slurp(at("planted")), "mine\n");
}

/* Both writers refuse @path with @err and @why, under an alarm: a writer
 * that blocks (a fifo with no reader) fails the test, not hangs it. */
static void refused(const char *path, const char *why, int err)
{
	char msg[64] = "x";
	alarm(10);
	assert_int_equal(dm_replace_file(path, "x", 1, msg, sizeof(msg)), err);
	assert_string_equal(msg, why);
	strcpy(msg, "x");
	int fd = dm_open_regular(path, O_WRONLY | O_CREAT | O_APPEND, 0644, msg, sizeof(msg));
	assert_int_equal(fd, err);
	assert_string_equal(msg, why);
	alarm(0);
}

static void test_what_is_not_a_regular_file_is_refused(void **state)
{
	(void)state;
	/* a fifo with no reader: opening it to write blocked forever */
	assert_int_equal(mkfifo(at("fifo"), 0644), 0);
	refused(at("fifo"), "not a regular file (a fifo)", -EACCES);
	refused("/dev/null", "not a regular file (a character device)", -EACCES);
	refused(dir, "not a regular file (a directory)", -EISDIR);
	struct stat st;
	assert_int_equal(lstat(at("fifo"), &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	assert_int_equal(stat("/dev/null", &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	/* the caller's link to a fifo: refused as the fifo */
	assert_int_equal(symlink("fifo", at("to-fifo")), 0);
	char msg[64];
	alarm(10);
	assert_int_equal(dm_replace_file(at("to-fifo"), "x", 1, msg, sizeof(msg)), -EACCES);
	assert_string_equal(msg, "not a regular file (a fifo)");
	/* dm_open_regular() follows no link at all */
	assert_int_equal(dm_open_regular(at("to-fifo"), O_WRONLY, 0, msg, sizeof(msg)), -ELOOP);
	assert_string_equal(msg, "not a regular file (a symlink)");
	alarm(0);
	unlink(at("to-fifo"));
	unlink(at("fifo"));
}

static void test_open_regular(void **state)
{
	(void)state;
	char msg[64];
	/* none yet: created with O_CREAT, else ENOENT */
	assert_int_equal(dm_open_regular(at("rec"), O_WRONLY, 0, msg, sizeof(msg)), -ENOENT);
	int fd = dm_open_regular(at("rec"), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644, msg,
				 sizeof(msg));
	assert_true(fd >= 0);
	assert_string_equal(msg, "");
	assert_false(fcntl(fd, F_GETFL) & O_NONBLOCK);
	assert_int_equal(write(fd, "+a\n", 3), 3);
	close(fd);
	fd = dm_open_regular(at("rec"), O_WRONLY | O_APPEND, 0, msg, sizeof(msg));
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "+b\n", 3), 3);
	close(fd);
	assert_string_equal(slurp(at("rec")), "+a\n+b\n");
	unlink(at("rec"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_and_replaced),
		cmocka_unit_test(test_symlinks),
		cmocka_unit_test(test_what_is_not_a_regular_file_is_refused),
		cmocka_unit_test(test_open_regular),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
