/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of the PM engine: ordering, rollback, journal, dry run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/model.h"
#include "pm/pm.h"
#include "tree-util.h"

struct recorder {
	const struct test_tree *t;
	int calls[4096]; /* +index+1 for suspend, -(index+1) for resume */
	size_t n;
	int fail_at; /* index of the device whose suspend fails, or -1 */
};
static struct recorder rec;

static int rec_suspend(struct dm_device *dev, void *data)
{
	(void)data;
	int i = test_tree_index(rec.t, dev);
	rec.calls[rec.n++] = i + 1;
	return i == rec.fail_at ? -EIO : 0;
}

static int rec_resume(struct dm_device *dev, void *data)
{
	(void)data;
	rec.calls[rec.n++] = -(test_tree_index(rec.t, dev) + 1);
	return 0;
}

static const struct dm_driver_ops rec_ops = { .suspend = rec_suspend, .resume = rec_resume };

struct fixture {
	struct dm_model *m;
	struct dm_bus *bus;
	struct dm_driver *drv;
	struct dm_pm *pm;
	struct test_tree t;
};

static void fixture_setup(struct fixture *f, size_t n, unsigned seed)
{
	assert_int_equal(dm_model_new(&f->m), 0);
	assert_int_equal(dm_bus_get(f->m, "test", NULL, &f->bus), 0);
	assert_int_equal(dm_driver_new("rec", DM_DRIVER_USER, 1, &rec_ops, NULL, NULL, &f->drv), 0);
	assert_int_equal(dm_driver_register(f->bus, f->drv), 0);
	assert_int_equal(dm_pm_new(f->m, &f->pm), 0);
	test_tree_build(&f->t, f->m, n, seed, f->bus);
	rec.t = &f->t;
	rec.n = 0;
	rec.fail_at = -1;
}

static void fixture_teardown(struct fixture *f)
{
	test_tree_free(&f->t);
	dm_pm_free(f->pm);
	dm_driver_unref(f->drv);
	dm_model_free(f->m);
}

static size_t position(const int *calls, size_t n, int v)
{
	for (size_t i = 0; i < n; i++)
		if (calls[i] == v)
			return i;
	return (size_t)-1;
}

static void test_suspend_children_first_resume_parents_first(void **state)
{
	(void)state;
	for (unsigned seed = 1; seed <= 40; seed++) {
		struct fixture f;
		size_t n = 2 + seed * 13 % 90;
		fixture_setup(&f, n, seed);
		assert_int_equal(dm_pm_suspend(f.pm, NULL, 0), 0);
		assert_int_equal(rec.n, n);
		for (size_t i = 0; i < n; i++) {
			assert_int_equal(dm_device_get_power(f.t.dev[i]), DM_POWER_SUSPENDED);
			int p = f.t.parent[i];
			if (p >= 0 && position(rec.calls, rec.n, (int)i + 1) >
					      position(rec.calls, rec.n, p + 1))
				fail_msg("seed %u: %s suspended after its parent %s", seed,
					 f.t.name[i], f.t.name[p]);
		}
		rec.n = 0;
		assert_int_equal(dm_pm_resume(f.pm, NULL, 0), 0);
		assert_int_equal(rec.n, n);
		for (size_t i = 0; i < n; i++) {
			assert_int_equal(dm_device_get_power(f.t.dev[i]), DM_POWER_ON);
			int p = f.t.parent[i];
			if (p >= 0 && position(rec.calls, rec.n, -((int)i + 1)) <
					      position(rec.calls, rec.n, -(p + 1)))
				fail_msg("seed %u: %s resumed before its parent %s", seed,
					 f.t.name[i], f.t.name[p]);
		}
		fixture_teardown(&f);
	}
}

static void test_failure_at_every_position_rolls_back_exactly(void **state)
{
	(void)state;
	for (unsigned seed = 3; seed <= 9; seed++) {
		size_t n = 25 + seed;
		for (size_t fail = 0; fail < n; fail++) {
			struct fixture f;
			fixture_setup(&f, n, seed);
			rec.fail_at = (int)fail;
			assert_int_equal(dm_pm_suspend(f.pm, NULL, 0), -EIO);

			/* the walk stopped at the failing device ... */
			size_t fpos = position(rec.calls, rec.n, (int)fail + 1);
			assert_true(fpos != (size_t)-1);
			/* ... everything suspended before it, and only that, was resumed,
			 * in the reverse order, parents first */
			for (size_t k = 0; k < fpos; k++) {
				assert_true(rec.calls[k] > 0);
				assert_int_equal(rec.calls[fpos + 1 + (fpos - 1 - k)], -rec.calls[k]);
			}
			assert_int_equal(rec.n, 2 * fpos + 1);
			for (size_t i = 0; i < n; i++)
				assert_int_equal(dm_device_get_power(f.t.dev[i]), DM_POWER_ON);

			char buf[DM_ATTR_MAX];
			int len = dm_device_show(f.t.dev[fail], NULL, "power_error", buf, sizeof(buf));
			assert_true(len > 0);
			buf[len] = '\0';
			if (!strstr(buf, "suspend EIO"))
				fail_msg("power_error of %s: expected 'suspend EIO ...', got '%s'",
					 f.t.name[fail], buf);
			fixture_teardown(&f);
		}
	}
}

static void test_subtree_and_ancestors_and_log(void **state)
{
	(void)state;
	struct fixture f;
	/* a chain: 0 <- 1 <- 2, plus 3 beside it */
	assert_int_equal(dm_model_new(&f.m), 0);
	assert_int_equal(dm_bus_get(f.m, "test", NULL, &f.bus), 0);
	assert_int_equal(dm_driver_new("rec", DM_DRIVER_USER, 1, &rec_ops, NULL, NULL, &f.drv), 0);
	assert_int_equal(dm_driver_register(f.bus, f.drv), 0);
	assert_int_equal(dm_pm_new(f.m, &f.pm), 0);
	struct dm_device *d[4];
	const char *names[] = { "a", "b", "c", "z" };
	int parents[] = { -1, 0, 1, -1 };
	for (int i = 0; i < 4; i++) {
		assert_int_equal(dm_device_new(f.m, names[i], &d[i]), 0);
		dm_device_set_bus(d[i], f.bus);
		assert_int_equal(dm_device_add(d[i], parents[i] < 0 ? NULL : d[parents[i]]), 0);
	}
	f.t = (struct test_tree){ .n = 4, .dev = d };
	rec.t = &f.t;
	rec.n = 0;
	rec.fail_at = -1;

	/* writing "suspend" to b's power suspends b's subtree only */
	assert_int_equal(dm_device_store(d[1], NULL, "power", "suspend\n", 8), 0);
	assert_int_equal(rec.n, 2);
	assert_int_equal(rec.calls[0], 3);
	assert_int_equal(rec.calls[1], 2);
	assert_int_equal(dm_device_get_power(d[0]), DM_POWER_ON);
	assert_int_equal(dm_device_get_power(d[3]), DM_POWER_ON);

	char buf[DM_ATTR_MAX];
	int len = dm_device_show(dm_model_get_root(f.m), NULL, "power_log", buf, sizeof(buf));
	buf[len > 0 ? len : 0] = '\0';
	char want[64];
	if (sscanf(buf, "1 suspend a/b/c ok %63s", want) != 1 || !strstr(buf, "\n2 suspend a/b ok "))
		fail_msg("power_log: got '%s'", buf);

	/* suspending the whole system, then resuming c resumes a and b first */
	assert_int_equal(dm_pm_suspend(f.pm, NULL, 0), 0);
	rec.n = 0;
	assert_int_equal(dm_device_store(d[2], NULL, "power", "resume", 6), 0);
	assert_int_equal(rec.n, 3);
	assert_int_equal(rec.calls[0], -1);
	assert_int_equal(rec.calls[1], -2);
	assert_int_equal(rec.calls[2], -3);
	assert_int_equal(dm_device_get_power(d[3]), DM_POWER_SUSPENDED);
	assert_int_equal(dm_pm_resume(f.pm, NULL, 0), 0);

	/* a dry run records the order and calls nothing */
	rec.n = 0;
	assert_int_equal(dm_pm_suspend(f.pm, NULL, DM_PM_DRY_RUN), 0);
	assert_int_equal(rec.n, 0);
	assert_int_equal(dm_device_get_power(d[2]), DM_POWER_ON);
	len = dm_pm_show_log(f.pm, buf, sizeof(buf));
	buf[len] = '\0';
	assert_non_null(strstr(buf, "1 suspend z ok"));
	assert_non_null(strstr(buf, "2 suspend a/b/c ok"));
	assert_non_null(strstr(buf, "5 suspend . ok"));

	for (int i = 0; i < 4; i++)
		dm_device_unref(d[i]);
	dm_pm_free(f.pm);
	dm_driver_unref(f.drv);
	dm_model_free(f.m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_suspend_children_first_resume_parents_first),
		cmocka_unit_test(test_failure_at_every_position_rolls_back_exactly),
		cmocka_unit_test(test_subtree_and_ancestors_and_log),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
