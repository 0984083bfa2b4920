/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of the open files' copies (src/fuse/open-value.c): a read at
 * work on a copy keeps it past its file's release, handles of another
 * epoch name nothing, and what a user pins is given back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuse/open-value.h"

static const struct fs_open_how how = { .sysfs = true };

static struct dm_blob *blob_of(size_t len)
{
	struct dm_blob *b = NULL;
	char *data = malloc(len);
	assert_non_null(data);
	memset(data, 'x', len);
	assert_int_equal(dm_blob_new(data, len, &b), 0);
	return b;
}

/* The kernel answers a read before it sends its file's release, but the
 * two may be served by two threads this process never orders: the read's
 * reference keeps the copy (and its lock) until the read is done. Under
 * ASan a copy freed at the release is a use after free here. */
static void test_a_read_keeps_its_copy_past_the_release(void **state)
{
	(void)state;
	struct fs_opens o;
	fs_opens_init(&o);
	uint64_t fh = 0;
	assert_int_equal(fs_open_value_new(&o, 1000, &how, &fh), 0);
	struct fs_open_value *v = fs_open_value_get(&o, fh);
	assert_non_null(v);
	assert_true(v->how.sysfs); /* as the open said, from the start */
	fs_open_value_release(&o, fh);
	assert_null(fs_open_value_get(&o, fh)); /* the handle names nothing now */
	pthread_mutex_lock(&v->lock);
	assert_int_equal(fs_open_value_set(&o, v, blob_of(100)), 0);
	assert_int_equal(v->value->len, 100);
	pthread_mutex_unlock(&v->lock);
	fs_open_value_put(v);
	fs_opens_done(&o);
}

/* What a user pins comes back at the release: a budget of two opens
 * takes any number of them one after the other. */
static void test_a_users_budget_comes_back(void **state)
{
	(void)state;
	struct fs_opens o;
	fs_opens_init(&o);
	o.uid_budget = 2 * FS_OPEN_COST + 64;
	for (int i = 0; i < 100; i++) {
		uint64_t a = 0, b = 0, c = 0;
		assert_int_equal(fs_open_value_new(&o, 1000, &how, &a), 0);
		assert_int_equal(fs_open_value_new(&o, 1000, &how, &b), 0);
		assert_int_equal(fs_open_value_new(&o, 1000, &how, &c), -EMFILE);
		assert_int_equal(fs_open_value_new(&o, 0, &how, &c), 0); /* root is not counted */
		struct fs_open_value *v = fs_open_value_get(&o, a);
		pthread_mutex_lock(&v->lock);
		assert_int_equal(fs_open_value_set(&o, v, blob_of(64)), 0);
		assert_int_equal(fs_open_value_set(&o, v, blob_of(65)), -ENOMEM);
		assert_int_equal(v->value->len, 64); /* the old copy stays */
		pthread_mutex_unlock(&v->lock);
		fs_open_value_release(&o, a); /* the read still holds it */
		fs_open_value_release(&o, b);
		fs_open_value_release(&o, c);
		fs_open_value_put(v);
	}
	assert_int_equal(o.n_uses, 0);
	fs_opens_done(&o);
}

/* A handle the last daemon of a handed-over connection gave names none
 * of this daemon's copies, even at the same slot. */
static void test_a_handle_of_another_epoch_names_nothing(void **state)
{
	(void)state;
	struct fs_opens o;
	fs_opens_init(&o);
	fs_opens_set_epoch(&o, 7);
	uint64_t fh = 0;
	assert_int_equal(fs_open_value_new(&o, 0, &how, &fh), 0);
	assert_int_equal(fh >> 32, 7);
	struct fs_open_value *v = fs_open_value_get(&o, fh);
	assert_non_null(v);
	fs_open_value_put(v);
	assert_null(fs_open_value_get(&o, 6ull << 32 | (fh & 0xffffffffu)));
	fs_open_value_release(&o, 6ull << 32 | (fh & 0xffffffffu)); /* nothing */
	assert_non_null(v = fs_open_value_get(&o, fh));
	fs_open_value_put(v);
	fs_opens_done(&o); /* frees what is left open */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_read_keeps_its_copy_past_the_release),
		cmocka_unit_test(test_a_users_budget_comes_back),
		cmocka_unit_test(test_a_handle_of_another_epoch_names_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
