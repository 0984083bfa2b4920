/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of device links (src/core/link.c) and the PM order with them
 * (src/pm/pm.c): cycles refused as the kernel refuses them; on random trees
 * with random links, every suspend takes each consumer before its supplier
 * and each child before its parent, every resume the reverse, serial and
 * on the pool, links made after a walk built its order included; a failed
 * suspend's rollback resumes in the same order; a
 * subtree whose links leave it is refused while the other end is not
 * ready; a device's removal drops its links.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/model.h"
#include "pm/pm.h"
#include "tree-util.h"

#define MAX_DEVS 512

/* Per device: logical start and end times of its last hook, and the
 * number of suspends minus resumes that took effect. */
struct timing {
	const struct test_tree *t;
	atomic_int clock;
	int start[MAX_DEVS], end[MAX_DEVS];
	int calls[MAX_DEVS];
	int suspend_end[MAX_DEVS], resume_start[MAX_DEVS], resume_end[MAX_DEVS];
	bool resumed[MAX_DEVS];
	int fail_at;
	bool slow;
};
static struct timing tm;

static int hook(struct dm_device *dev, bool suspend)
{
	int i = test_tree_index(tm.t, dev);
	int start = atomic_fetch_add(&tm.clock, 1);
	if (tm.slow && i % 3 == 0)
		usleep(200);
	int r = suspend && i == tm.fail_at ? -EIO : 0;
	if (r == 0)
		tm.calls[i] += suspend ? 1 : -1;
	int end = atomic_fetch_add(&tm.clock, 1);
	if (suspend) {
		tm.suspend_end[i] = end;
	} else {
		tm.resumed[i] = true;
		tm.resume_start[i] = start;
		tm.resume_end[i] = end;
	}
	tm.start[i] = start;
	tm.end[i] = end;
	return r;
}

static int t_suspend(struct dm_device *dev, void *data)
{
	(void)data;
	return hook(dev, true);
}

static int t_resume(struct dm_device *dev, void *data)
{
	(void)data;
	return hook(dev, false);
}

static const struct dm_driver_ops t_ops = { .suspend = t_suspend, .resume = t_resume };

struct fixture {
	struct dm_model *m;
	struct dm_bus *bus;
	struct dm_driver *drv;
	struct dm_pm *pm;
	struct test_tree t;
	/* the links made: supplier and consumer indices */
	int sup[4 * MAX_DEVS], con[4 * MAX_DEVS];
	size_t n_links;
};

static void fixture_setup(struct fixture *f, size_t n, unsigned seed, bool pool)
{
	assert_int_equal(dm_model_new(&f->m), 0);
	assert_int_equal(dm_bus_get(f->m, "test", NULL, &f->bus), 0);
	assert_int_equal(dm_driver_new("t", DM_DRIVER_USER, 1, &t_ops, NULL, NULL, &f->drv), 0);
	assert_int_equal(dm_driver_register(f->bus, f->drv), 0);
	assert_int_equal(dm_pm_new(f->m, &f->pm), 0);
	test_tree_build(&f->t, f->m, n, seed, f->bus);
	memset(&tm, 0, sizeof(tm));
	tm.t = &f->t;
	tm.fail_at = -1;
	tm.slow = pool;
	if (pool) {
		/* the engine learns from the first calls that the hooks are slow */
		dm_driver_record_pm_usec(f->drv, 1000);
		dm_driver_record_pm_usec(f->drv, 1000);
	}
	f->n_links = 0;
}

static void fixture_teardown(struct fixture *f)
{
	test_tree_free(&f->t);
	dm_pm_free(f->pm);
	dm_driver_unref(f->drv);
	dm_model_free(f->m);
}

/* Whether @b depends on @a through the tree and the links made so far:
 * @b is @a, below it, or a consumer of it or of anything below it. */
static bool depends(const struct fixture *f, int a, int b, int depth)
{
	if (a == b || test_tree_is_ancestor(&f->t, a, b))
		return true;
	if (depth > 64)
		return false;
	for (size_t k = 0; k < f->n_links; k++)
		if ((f->sup[k] == a || test_tree_is_ancestor(&f->t, a, f->sup[k])) &&
		    depends(f, f->con[k], b, depth + 1))
			return true;
	return false;
}

/* About @count random links, each made or refused as the model of the
 * test says it must be (a cycle: -ELOOP; a pair linked already: -EEXIST). */
static void add_random_links(struct fixture *f, size_t count, unsigned seed)
{
	srand(seed);
	size_t n = f->t.n;
	for (size_t k = 0; k < count && f->n_links < 4 * MAX_DEVS; k++) {
		int s = rand() % (int)n, c = rand() % (int)n;
		if (s == c)
			continue;
		bool linked = false;
		for (size_t j = 0; j < f->n_links; j++)
			linked |= f->sup[j] == s && f->con[j] == c;
		int expect = linked ? -EEXIST : depends(f, c, s, 0) ? -ELOOP : 0;
		int r = dm_link_add(f->t.dev[s], f->t.dev[c], 0, NULL);
		if (r != expect)
			fail_msg("link %s -> %s: %d, expected %d", f->t.name[s], f->t.name[c], r,
				 expect);
		if (r == 0) {
			f->sup[f->n_links] = s;
			f->con[f->n_links++] = c;
		}
	}
	assert_int_equal(dm_model_count_links(f->m), f->n_links);
}

/* Every edge of the last suspend (each consumer's and child's hook ended
 * before its supplier's or parent's started) and of the last resume (the
 * reverse). */
static void check_suspend_order(const struct fixture *f, const char *what)
{
	for (size_t k = 0; k < f->n_links; k++)
		if (tm.suspend_end[f->con[k]] > tm.start[f->sup[k]] && tm.calls[f->sup[k]])
			fail_msg("%s: consumer %s still suspending when its supplier %s started", what,
				 f->t.name[f->con[k]], f->t.name[f->sup[k]]);
	for (size_t i = 0; i < f->t.n; i++) {
		int p = f->t.parent[i];
		if (p >= 0 && tm.calls[p] && tm.suspend_end[i] > tm.start[p])
			fail_msg("%s: child %s still suspending when its parent %s started", what,
				 f->t.name[i], f->t.name[p]);
	}
}

static void check_resume_order(const struct fixture *f, const char *what)
{
	for (size_t k = 0; k < f->n_links; k++) {
		int s = f->sup[k], c = f->con[k];
		if (tm.resumed[s] && tm.resumed[c] && tm.resume_end[s] > tm.resume_start[c])
			fail_msg("%s: consumer %s resumed before its supplier %s was done", what,
				 f->t.name[c], f->t.name[s]);
	}
	for (size_t i = 0; i < f->t.n; i++) {
		int p = f->t.parent[i];
		if (p >= 0 && tm.resumed[i] && tm.resumed[p] && tm.resume_end[p] > tm.resume_start[i])
			fail_msg("%s: child %s resumed before its parent %s was done", what,
				 f->t.name[i], f->t.name[p]);
	}
}

static void test_cycles_are_refused(void **state)
{
	(void)state;
	struct fixture f;
	fixture_setup(&f, 40, 7, false);
	/* a device with itself */
	assert_int_equal(dm_link_add(f.t.dev[0], f.t.dev[0], 0, NULL), -EINVAL);
	/* a parent consuming its own child: its child would have to suspend
	 * after it and before it */
	int child = -1;
	for (size_t i = 0; i < f.t.n && child < 0; i++)
		if (f.t.parent[i] >= 0)
			child = (int)i;
	assert_true(child >= 0);
	int parent = f.t.parent[child];
	assert_int_equal(dm_link_add(f.t.dev[child], f.t.dev[parent], 0, NULL), -ELOOP);
	/* the other way round is what the tree says already: allowed */
	assert_int_equal(dm_link_add(f.t.dev[parent], f.t.dev[child], 0, NULL), 0);
	assert_int_equal(dm_link_add(f.t.dev[parent], f.t.dev[child], 0, NULL), -EEXIST);
	/* a chain a -> b -> c, closed by c -> a */
	int a = -1, b = -1, c = -1;
	for (size_t i = 0; i < f.t.n; i++) {
		if (f.t.parent[i] != -1)
			continue;
		if (a < 0)
			a = (int)i;
		else if (b < 0)
			b = (int)i;
		else if (c < 0)
			c = (int)i;
	}
	assert_true(c >= 0);
	assert_int_equal(dm_link_add(f.t.dev[a], f.t.dev[b], 0, NULL), 0);
	assert_int_equal(dm_link_add(f.t.dev[b], f.t.dev[c], 0, NULL), 0);
	assert_int_equal(dm_link_add(f.t.dev[c], f.t.dev[a], 0, NULL), -ELOOP);
	/* ... unless it only serves sync_state(): it orders nothing */
	struct dm_link *l;
	assert_int_equal(dm_link_add(f.t.dev[c], f.t.dev[a], DM_LINK_SYNC_STATE_ONLY, &l), 0);
	assert_false(dm_link_orders(l));
	assert_int_equal(dm_model_count_links(f.m), 4);
	fixture_teardown(&f);
}

static void run_random(bool pool)
{
	for (unsigned seed = 1; seed <= (pool ? 12 : 30); seed++) {
		struct fixture f;
		size_t n = 20 + seed * 17 % 150;
		fixture_setup(&f, n, seed, pool);
		add_random_links(&f, n, seed * 31);
		assert_true(f.n_links > 0);
		char what[64];
		snprintf(what, sizeof(what), "seed %u%s suspend", seed, pool ? " (pool)" : "");
		assert_int_equal(dm_pm_suspend(f.pm, NULL, pool ? 0 : DM_PM_SERIAL), 0);
		for (size_t i = 0; i < n; i++)
			assert_int_equal(tm.calls[i], 1);
		check_suspend_order(&f, what);
		snprintf(what, sizeof(what), "seed %u%s resume", seed, pool ? " (pool)" : "");
		assert_int_equal(dm_pm_resume(f.pm, NULL, pool ? 0 : DM_PM_SERIAL), 0);
		for (size_t i = 0; i < n; i++)
			assert_int_equal(tm.calls[i], 0);
		check_resume_order(&f, what);
		fixture_teardown(&f);
	}
}

static void test_random_links_order_every_walk_serial(void **state)
{
	(void)state;
	run_random(false);
}

static void test_random_links_order_every_walk_on_the_pool(void **state)
{
	(void)state;
	run_random(true);
}

/* Links made after a walk built its order (a driver binding late, a
 * consumer probed after its supplier) order the next walk: the order's
 * edges are built again (issue 35 item 6: a mutation dropping that went
 * unnoticed). */
static void test_links_made_after_a_walk_order_the_next(void **state)
{
	(void)state;
	for (unsigned seed = 3; seed <= 8; seed++) {
		for (int pool = 0; pool <= 1; pool++) {
			struct fixture f;
			size_t n = 40 + seed * 13;
			fixture_setup(&f, n, seed, pool);
			int how = pool ? 0 : DM_PM_SERIAL;
			/* a walk with no link: the order and its (no) edges built */
			assert_int_equal(dm_pm_suspend(f.pm, NULL, how), 0);
			assert_int_equal(dm_pm_resume(f.pm, NULL, how), 0);
			add_random_links(&f, n, seed * 7);
			assert_true(f.n_links > 0);
			assert_int_equal(dm_pm_suspend(f.pm, NULL, how), 0);
			check_suspend_order(&f, "after links were made");
			assert_int_equal(dm_pm_resume(f.pm, NULL, how), 0);
			check_resume_order(&f, "after links were made");
			fixture_teardown(&f);
		}
	}
}

static void test_rollback_follows_the_links(void **state)
{
	(void)state;
	for (unsigned seed = 2; seed <= 5; seed++) {
		size_t n = 60;
		for (size_t fail = 0; fail < n; fail += 4) {
			for (int pool = 0; pool <= 1; pool++) {
				struct fixture f;
				fixture_setup(&f, n, seed, pool);
				add_random_links(&f, 80, seed);
				tm.fail_at = (int)fail;
				assert_int_equal(dm_pm_suspend(f.pm, NULL, pool ? 0 : DM_PM_SERIAL), -EIO);
				/* every device suspended was resumed, once; all are on */
				for (size_t i = 0; i < n; i++) {
					assert_int_equal(tm.calls[i], 0);
					assert_int_equal(dm_device_get_power(f.t.dev[i]), DM_POWER_ON);
				}
				check_resume_order(&f, "rollback");
				fixture_teardown(&f);
			}
		}
	}
}

static void test_a_subtree_with_links_leaving_it(void **state)
{
	(void)state;
	struct fixture f;
	fixture_setup(&f, 30, 11, false);
	/* two top-level devices: s supplies c */
	int s = -1, c = -1;
	for (size_t i = 0; i < f.t.n; i++)
		if (f.t.parent[i] == -1) {
			if (s < 0)
				s = (int)i;
			else if (c < 0)
				c = (int)i;
		}
	assert_int_equal(dm_link_add(f.t.dev[s], f.t.dev[c], 0, NULL), 0);
	/* s cannot sleep while its consumer is awake: refused, journalled */
	assert_int_equal(dm_pm_suspend(f.pm, f.t.dev[s], 0), -EBUSY);
	char *log;
	size_t len;
	assert_int_equal(dm_pm_show_log(f.pm, &log, &len), 0);
	assert_non_null(strstr(log, " consumer "));
	assert_non_null(strstr(log, " EBUSY "));
	free(log);
	assert_int_equal(dm_device_get_power(f.t.dev[s]), DM_POWER_ON);
	/* the consumer first, then the supplier */
	assert_int_equal(dm_pm_suspend(f.pm, f.t.dev[c], 0), 0);
	assert_int_equal(dm_pm_suspend(f.pm, f.t.dev[s], 0), 0);
	/* c cannot wake before its supplier */
	assert_int_equal(dm_pm_resume(f.pm, f.t.dev[c], 0), -EBUSY);
	assert_int_equal(dm_pm_show_log(f.pm, &log, &len), 0);
	assert_non_null(strstr(log, " supplier "));
	free(log);
	assert_int_equal(dm_pm_resume(f.pm, f.t.dev[s], 0), 0);
	assert_int_equal(dm_pm_resume(f.pm, f.t.dev[c], 0), 0);
	/* a dormant link orders nothing */
	assert_int_equal(dm_link_set_dormant(f.t.dev[s], f.t.dev[c], true), 0);
	assert_int_equal(dm_pm_suspend(f.pm, f.t.dev[s], 0), 0);
	assert_int_equal(dm_pm_resume(f.pm, f.t.dev[s], 0), 0);
	/* removed: nothing links them */
	assert_int_equal(dm_link_remove(f.t.dev[s], f.t.dev[c]), 0);
	assert_int_equal(dm_link_remove(f.t.dev[s], f.t.dev[c]), -ENOENT);
	assert_int_equal(dm_link_set_dormant(f.t.dev[s], f.t.dev[c], false), -ENOENT);
	assert_int_equal(dm_model_count_links(f.m), 0);
	fixture_teardown(&f);
}

static void test_removal_drops_the_links(void **state)
{
	(void)state;
	struct fixture f;
	fixture_setup(&f, 50, 5, false);
	add_random_links(&f, 60, 9);
	size_t before = dm_model_count_links(f.m);
	/* a device with links, removed with its subtree */
	int victim = f.con[0];
	size_t gone = 0;
	for (size_t k = 0; k < f.n_links; k++) {
		int a = f.sup[k], b = f.con[k];
		bool a_gone = a == victim || test_tree_is_ancestor(&f.t, victim, a);
		bool b_gone = b == victim || test_tree_is_ancestor(&f.t, victim, b);
		gone += a_gone || b_gone;
	}
	dm_device_del(f.t.dev[victim]);
	assert_int_equal(dm_model_count_links(f.m), before - gone);
	/* the walks go on with what is left */
	assert_int_equal(dm_pm_suspend(f.pm, NULL, 0), 0);
	assert_int_equal(dm_pm_resume(f.pm, NULL, 0), 0);
	fixture_teardown(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cycles_are_refused),
		cmocka_unit_test(test_random_links_order_every_walk_serial),
		cmocka_unit_test(test_random_links_order_every_walk_on_the_pool),
		cmocka_unit_test(test_links_made_after_a_walk_order_the_next),
		cmocka_unit_test(test_rollback_follows_the_links),
		cmocka_unit_test(test_a_subtree_with_links_leaving_it),
		cmocka_unit_test(test_removal_drops_the_links),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
