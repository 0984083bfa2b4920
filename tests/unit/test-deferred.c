/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The kernel's deferred probes (src/fleet/deferred.c): a driver's text
 * cannot add a line, a field or a terminal control, nor grow past the
 * bounds; the daemon's file parses to itself. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet/deferred.h"

/* the lines handed on, as the daemon writes them */
struct out {
	char *buf;
	size_t size;
	FILE *f;
	size_t n;
};

static int put(const char *name, const char *reason, void *data)
{
	struct out *o = data;
	for (const char *s = name; *s; s++)
		assert_true(*s > 0x20 && *s < 0x7f); /* no tab, no space: it was split at the tab */
	for (const char *s = reason; *s; s++)
		assert_true(*s >= 0x20 && *s < 0x7f);
	fprintf(o->f, "%s\t%s\n", name, reason);
	o->n++;
	return 0;
}

static char *parse(const char *text, size_t len, size_t *n)
{
	struct out o = { 0 };
	o.f = open_memstream(&o.buf, &o.size);
	assert_non_null(o.f);
	assert_int_equal(dm_deferred_parse(text, len, put, &o), 0);
	fclose(o.f);
	*n = o.n;
	return o.buf;
}

static void test_lines(void **state)
{
	(void)state;
	static const char text[] = "0000:01:00.0\tnvme: no firmware\n"
				   "platform-x\t\n"
				   "\tno name\n"
				   "no tab\n"
				   "esc\x1b[2J\t\x07\xff\tx\r\n"
				   "cut\tat the end";
	size_t n;
	char *got = parse(text, sizeof(text) - 1, &n);
	assert_int_equal(n, 3);
	assert_string_equal(got, "0000:01:00.0\tnvme: no firmware\n"
				 "platform-x\t\n"
				 "esc\\x1b[2J\t\\x07\\xff\\x09x\\x0d\n");
	/* the daemon's text, parsed again (driverfsctl health): itself */
	size_t n2;
	char *again = parse(got, strlen(got), &n2);
	assert_int_equal(n2, n);
	assert_string_equal(again, got);
	free(again);
	free(got);
}

static void test_bounds(void **state)
{
	(void)state;
	/* a name at the bound is taken, one past it is not */
	size_t size = 2 * (DM_DEFERRED_NAME_MAX + 16) + DM_DEFERRED_REASON_MAX * 2 + 64;
	char *text = calloc(1, size);
	assert_non_null(text);
	memset(text, 'a', DM_DEFERRED_NAME_MAX);
	strcat(text, "\tr\n");
	size_t at = strlen(text);
	memset(text + at, 'b', DM_DEFERRED_NAME_MAX + 1);
	strcat(text, "\tr\nx\t");
	at = strlen(text);
	memset(text + at, 'c', DM_DEFERRED_REASON_MAX * 2);
	strcat(text, "\n");
	size_t n;
	char *got = parse(text, strlen(text), &n);
	assert_int_equal(n, 2);
	char *second = strchr(got, '\n') + 1;
	assert_int_equal(strchr(got, '\t') - got, DM_DEFERRED_NAME_MAX);
	assert_int_equal(strlen(second), 2 + DM_DEFERRED_REASON_MAX + 3 + 1);
	assert_memory_equal(second + 2 + DM_DEFERRED_REASON_MAX, "...\n", 4);
	free(got);
	free(text);

	/* lines past the most taken: left */
	size_t lines = DM_DEFERRED_LINES_MAX + 10;
	text = malloc(lines * 8 + 1);
	assert_non_null(text);
	text[0] = '\0';
	for (size_t i = 0; i < lines; i++)
		sprintf(text + strlen(text), "d%04zu\t\n", i);
	got = parse(text, strlen(text), &n);
	assert_int_equal(n, DM_DEFERRED_LINES_MAX);
	free(got);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines),
		cmocka_unit_test(test_bounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
