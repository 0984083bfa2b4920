/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of dm_trust_check_program() (src/trust.c): a program and the
 * interpreter its #! line names, by the kernel's rules (spaces and tabs
 * before it, an argument after it, no newline, a line cut by the 256 bytes
 * the kernel reads), interpreters that are scripts themselves, a loop of
 * them, and the reasons, each naming the interpreter (issue 30 item 8).
 * Files must be root's to be trusted: skipped for anyone else.
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

#include "tree-util.h"
#include "util/trust.h"

static char dir[64];

/* @name in the test's directory (one of four buffers, reused in turn). */
static const char *at(const char *name)
{
	static char buf[4][128];
	static int i;
	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, name);
	return buf[i];
}

/* @name, mode 0755 and root's, holding @content. */
static void program(const char *name, const char *content)
{
	FILE *f = fopen(at(name), "w");
	assert_non_null(f);
	fputs(content, f);
	fclose(f);
	assert_int_equal(chmod(at(name), 0755), 0);
	assert_int_equal(chown(at(name), 0, 0), 0);
}

static int setup(void **state)
{
	(void)state;
	if (geteuid() != 0)
		return 0;
	snprintf(dir, sizeof(dir), "/tmp/test-trust-XXXXXX");
	assert_non_null(mkdtemp(dir));
	/* a binary: no #! line */
	program("bin", "\177ELF\2\1\1\0\0\0\0\0\0\0\0\0");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (dir[0])
		test_rm_rf(dir);
	return 0;
}

/* dm_trust_check_program(@name): its result, and @msg holding @needle. */
static void expect(const char *name, int result, const char *needle)
{
	char msg[8192] = "";
	int r = dm_trust_check_program(at(name), msg, sizeof(msg));
	if (r != result || (needle && !strstr(msg, needle)))
		fail_msg("%s: expected %d with '%s', got %d: '%s'", name, result,
			 needle ? needle : "", r, msg);
}

static void test_program_and_interpreter(void **state)
{
	(void)state;
	char text[512], needle[512];
	if (geteuid() != 0)
		skip();
	expect("bin", 0, NULL);
	snprintf(text, sizeof(text), "#!%s\n", at("bin"));
	program("plain", text);
	expect("plain", 0, NULL);
	/* spaces and a tab before it, an argument after it */
	snprintf(text, sizeof(text), "#! \t %s -e -x\necho\n", at("bin"));
	program("spaced", text);
	expect("spaced", 0, NULL);
	/* no newline: the file's end ends it */
	snprintf(text, sizeof(text), "#!%s", at("bin"));
	program("no-newline", text);
	expect("no-newline", 0, NULL);

	/* the program itself another user's: refused as dm_trust_check() does */
	assert_int_equal(chown(at("plain"), 1000, 1000), 0);
	expect("plain", -EPERM, "the file is owned by uid 1000, not root (mode 0755)");
	assert_int_equal(chown(at("plain"), 0, 0), 0);

	/* the interpreter another user's, or writable by group or other */
	assert_int_equal(chown(at("bin"), 1000, 1000), 0);
	snprintf(needle, sizeof(needle),
		 "the #! interpreter %s of %s: the file is owned by uid 1000, not root (mode 0755)",
		 at("bin"), at("spaced"));
	expect("spaced", -EPERM, needle);
	snprintf(needle, sizeof(needle), "the #! interpreter %s of %s: the file is owned by uid 1000",
		 at("bin"), at("no-newline"));
	expect("no-newline", -EPERM, needle);
	assert_int_equal(chown(at("bin"), 0, 0), 0);
	assert_int_equal(chmod(at("bin"), 0775), 0);
	expect("plain", -EPERM, "the file is writable by group (owner uid 0, mode 0775)");
	assert_int_equal(chmod(at("bin"), 0755), 0);
	expect("plain", 0, NULL);
}

static void test_kernel_rules(void **state)
{
	(void)state;
	char text[512], needle[512];
	if (geteuid() != 0)
		skip();
	/* relative: found from the working directory */
	program("relative", "#!bin\n");
	snprintf(needle, sizeof(needle), "the #! interpreter bin of %s is not an absolute path",
		 at("relative"));
	expect("relative", -EPERM, needle);
	/* missing: exec says so */
	snprintf(text, sizeof(text), "#!%s\n", at("missing"));
	program("to-missing", text);
	expect("to-missing", -ENOENT, at("missing"));
	/* no interpreter, or one cut by the 256 bytes: the kernel runs neither */
	program("empty", "#! \t\nexit 0\n");
	expect("empty", -ENOEXEC, "names no interpreter");
	memset(text, 0, sizeof(text));
	memcpy(text, "#!/", 3);
	memset(text + 3, 'a', 300);
	program("long", text);
	expect("long", -ENOEXEC, "longer than the 256 bytes");
	/* "#" alone, or "!#": no #! line */
	program("hash", "# !/tmp/x\n");
	expect("hash", 0, NULL);
}

static void test_nested_interpreters(void **state)
{
	(void)state;
	char text[512], needle[512];
	if (geteuid() != 0)
		skip();
	/* script -> middle (a script) -> bin */
	snprintf(text, sizeof(text), "#!%s\n", at("bin"));
	program("middle", text);
	snprintf(text, sizeof(text), "#!%s arg\n", at("middle"));
	program("outer", text);
	expect("outer", 0, NULL);
	assert_int_equal(chmod(at("bin"), 0757), 0);
	snprintf(needle, sizeof(needle), "the #! interpreter %s of %s: the file is writable by other",
		 at("bin"), at("middle"));
	expect("outer", -EPERM, needle);
	assert_int_equal(chmod(at("bin"), 0755), 0);
	/* a loop is followed up to the bound, then refused */
	snprintf(text, sizeof(text), "#!%s\n", at("loop"));
	program("loop", text);
	expect("loop", -EPERM, "nest deeper than");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_program_and_interpreter),
		cmocka_unit_test(test_kernel_rules),
		cmocka_unit_test(test_nested_interpreters),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
