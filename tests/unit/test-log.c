/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The log and sd_notify escaping (src/log.c): text from devices and users
 * cannot add lines to the log or fields to a notification. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"
#include "tree-util.h"

static void test_escape_control_characters(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "plain /devices/pci0000:00", "plain /devices/pci0000:00" },
		{ "x\nREADY=1", "x\\nREADY=1" },
		{ "a\tb\rc", "a\\tb\\rc" },
		{ "back\\slash", "back\\\\slash" },
		{ "\x01\x1f\x7f", "\\x01\\x1f\\x7f" },
		{ "caf\xc3\xa9", "caf\xc3\xa9" }, /* UTF-8 stays */
		{ "", "" },
	};
	char buf[64];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = dm_escape(buf, sizeof(buf), cases[i].in);
		assert_string_equal(buf, cases[i].out);
		assert_int_equal(n, strlen(cases[i].out));
	}
}

static void test_escape_cuts_between_escapes(void **state)
{
	char buf[6];
	/* "ab\n..." needs 4 bytes for "ab\n": with room for 5, the next
	 * escape (\x01, 4 bytes) does not fit and is left out whole */
	assert_int_equal(dm_escape(buf, sizeof(buf), "ab\n\x01z"), 4);
	assert_string_equal(buf, "ab\\n");
	assert_int_equal(dm_escape(buf, 1, "abc"), 0);
	assert_string_equal(buf, "");
}

static void log_one(void *msg)
{
	log_warn("device name: %s", (const char *)msg);
}

/* What dm_log() writes to stderr for @msg, as one string. */
static char *logged(const char *msg)
{
	return test_logged(log_one, (void *)msg);
}

static void test_a_logged_newline_adds_no_line(void **state)
{
	char *text = logged("evil\nDEVNAME=/etc/shadow\x1b[2J");
	/* one line, ending in its newline */
	assert_non_null(strchr(text, '\n'));
	assert_ptr_equal(strchr(text, '\n'), text + strlen(text) - 1);
	assert_null(strchr(text, '\x1b'));
	assert_non_null(strstr(text, "evil\\nDEVNAME=/etc/shadow\\x1b[2J"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape_control_characters),
		cmocka_unit_test(test_escape_cuts_between_escapes),
		cmocka_unit_test(test_a_logged_newline_adds_no_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
