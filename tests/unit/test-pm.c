/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of the PM engine: ordering, rollback, journal, dry run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/model.h"
#include "pm/pm.h"
#include "pm/pool.h"
#include "pm/record.h"
#include "tree-util.h"

struct recorder {
	const struct test_tree *t;
	int calls[4096]; /* +index+1 for suspend, -(index+1) for resume */
	size_t n;
	int fail_at; /* index of the device whose suspend fails, or -1 */
	int resume_fail_at; /* index of the device whose resume fails, or -1 */
	int slow; /* index + 1 of the device whose suspend takes 3 ms, or 0 */
};
static struct recorder rec;

static int rec_suspend(struct dm_device *dev, void *data)
{
	(void)data;
	int i = test_tree_index(rec.t, dev);
	rec.calls[rec.n++] = i + 1;
	if (i + 1 == rec.slow)
		usleep(3000);
	return i == rec.fail_at ? -EIO : 0;
}

static int rec_resume(struct dm_device *dev, void *data)
{
	(void)data;
	int i = test_tree_index(rec.t, dev);
	rec.calls[rec.n++] = -(i + 1);
	return i == rec.resume_fail_at ? -EIO : 0;
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
	rec.resume_fail_at = -1;
	rec.slow = 0;
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

/* The exact serial walk (DM_PM_SERIAL): the order is checked call by call.
 * The tests further down check the same invariants with the pool on. */
static void test_suspend_children_first_resume_parents_first(void **state)
{
	(void)state;
	for (unsigned seed = 1; seed <= 40; seed++) {
		struct fixture f;
		size_t n = 2 + seed * 13 % 90;
		fixture_setup(&f, n, seed);
		assert_int_equal(dm_pm_suspend(f.pm, NULL, DM_PM_SERIAL), 0);
		assert_int_equal(rec.n, n);
		/* power_log has every call, however long it gets (past 4096 bytes) */
		char *log;
		size_t log_len, lines = 0;
		assert_int_equal(dm_device_show_alloc(dm_model_get_root(f.m), NULL, "power_log",
						      &log, &log_len), 0);
		for (size_t k = 0; k < log_len; k++)
			lines += log[k] == '\n';
		free(log);
		assert_int_equal(lines, n + 1); /* and root */
		for (size_t i = 0; i < n; i++) {
			assert_int_equal(dm_device_get_power(f.t.dev[i]), DM_POWER_SUSPENDED);
			int p = f.t.parent[i];
			if (p >= 0 && position(rec.calls, rec.n, (int)i + 1) >
					      position(rec.calls, rec.n, p + 1))
				fail_msg("seed %u: %s suspended after its parent %s", seed,
					 f.t.name[i], f.t.name[p]);
		}
		rec.n = 0;
		assert_int_equal(dm_pm_resume(f.pm, NULL, DM_PM_SERIAL), 0);
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
			assert_int_equal(dm_pm_suspend(f.pm, NULL, DM_PM_SERIAL), -EIO);

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

/* Design §8.3: a suspend that succeeds clears the power_error an earlier
 * one left; and power_log gives each hook's time, from the engine's clock
 * (issue 35 item 6: both went untested). */
static void test_a_good_suspend_clears_power_error_and_hooks_are_timed(void **state)
{
	(void)state;
	struct fixture f;
	fixture_setup(&f, 12, 5);
	const int dev = 4;
	rec.fail_at = dev;
	assert_int_equal(dm_pm_suspend(f.pm, NULL, DM_PM_SERIAL), -EIO);
	char buf[DM_ATTR_MAX];
	int len = dm_device_show(f.t.dev[dev], NULL, "power_error", buf, sizeof(buf));
	assert_true(len > 0);
	buf[len] = '\0';
	assert_non_null(strstr(buf, "suspend EIO"));

	rec.fail_at = -1;
	rec.slow = dev + 1;
	assert_int_equal(dm_pm_suspend(f.pm, NULL, DM_PM_SERIAL), 0);
	len = dm_device_show(f.t.dev[dev], NULL, "power_error", buf, sizeof(buf));
	assert_true(len >= 0);
	buf[len] = '\0';
	if (strspn(buf, "\n") != (size_t)len)
		fail_msg("power_error after a good suspend: '%s'", buf);

	/* its hook slept 3 ms: its line says at least that many microseconds */
	char path[4096], want[4200];
	dm_model_read_lock(f.m);
	assert_true(dm_device_path_locked(f.t.dev[dev], path, sizeof(path)) >= 0);
	dm_model_unlock(f.m);
	snprintf(want, sizeof(want), " suspend %s ok ", path);
	char *log;
	size_t log_len;
	assert_int_equal(dm_pm_show_log(f.pm, &log, &log_len), 0);
	const char *line = strstr(log, want);
	if (!line)
		fail_msg("no '%s' in power_log:\n%s", want, log);
	long usec = strtol(line + strlen(want), NULL, 10);
	if (usec < 3000)
		fail_msg("a 3 ms hook timed %ld us:\n%s", usec, log);
	free(log);
	assert_int_equal(dm_pm_resume(f.pm, NULL, DM_PM_SERIAL), 0);
	fixture_teardown(&f);
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
	rec.slow = 0;

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
	char *log;
	size_t log_len;
	assert_int_equal(dm_pm_show_log(f.pm, &log, &log_len), 0);
	assert_non_null(strstr(log, "1 suspend z ok"));
	assert_non_null(strstr(log, "2 suspend a/b/c ok"));
	assert_non_null(strstr(log, "5 suspend . ok"));
	free(log);

	for (int i = 0; i < 4; i++)
		dm_device_unref(d[i]);
	dm_pm_free(f.pm);
	dm_driver_unref(f.drv);
	dm_model_free(f.m);
}

/* ---- with the worker pool: slow hooks, concurrency, the same invariants ---- */

struct timing {
	const struct test_tree *t;
	atomic_int clock;
	int start[512], end[512]; /* per device: logical times */
	int calls[512]; /* hook calls per device */
	bool resumed[512];
	atomic_int running, max_running;
	int fail_at;
	int slow_every; /* every n-th device's hook sleeps */
};
static struct timing tm;

static void timed_hook(struct dm_device *dev, bool suspend, int *ret)
{
	int i = test_tree_index(tm.t, dev);
	int now = atomic_fetch_add(&tm.running, 1) + 1;
	int max = atomic_load(&tm.max_running);
	while (now > max && !atomic_compare_exchange_weak(&tm.max_running, &max, now))
		;
	tm.start[i] = atomic_fetch_add(&tm.clock, 1);
	if (tm.slow_every && i % tm.slow_every == 0)
		usleep(300);
	*ret = suspend && i == tm.fail_at ? -EIO : 0;
	if (*ret == 0)
		tm.calls[i] += suspend ? 1 : -1; /* a failed suspend changed nothing */
	if (!suspend)
		tm.resumed[i] = true;
	tm.end[i] = atomic_fetch_add(&tm.clock, 1);
	atomic_fetch_sub(&tm.running, 1);
}

static int timed_suspend(struct dm_device *dev, void *data)
{
	(void)data;
	int r;
	timed_hook(dev, true, &r);
	return r;
}

static int timed_resume(struct dm_device *dev, void *data)
{
	(void)data;
	int r;
	timed_hook(dev, false, &r);
	return r;
}

static const struct dm_driver_ops timed_ops = { .suspend = timed_suspend, .resume = timed_resume };

static void pool_fixture(struct fixture *f, size_t n, unsigned seed)
{
	assert_int_equal(dm_model_new(&f->m), 0);
	assert_int_equal(dm_bus_get(f->m, "test", NULL, &f->bus), 0);
	assert_int_equal(dm_driver_new("timed", DM_DRIVER_USER, 1, &timed_ops, NULL, NULL, &f->drv), 0);
	assert_int_equal(dm_driver_register(f->bus, f->drv), 0);
	assert_int_equal(dm_pm_new(f->m, &f->pm), 0);
	test_tree_build(&f->t, f->m, n, seed, f->bus);
	memset(&tm, 0, sizeof(tm));
	tm.t = &f->t;
	tm.fail_at = -1;
	tm.slow_every = 3;
	/* the engine learns from the first calls that this driver is slow */
	dm_driver_record_pm_usec(f->drv, 1000);
	dm_driver_record_pm_usec(f->drv, 1000);
}

static void test_pool_keeps_the_order(void **state)
{
	(void)state;
	int max_seen = 0;
	for (unsigned seed = 1; seed <= 25; seed++) {
		struct fixture f;
		size_t n = 20 + seed * 11 % 100;
		pool_fixture(&f, n, seed);
		assert_int_equal(dm_pm_suspend(f.pm, NULL, 0), 0);
		for (size_t i = 0; i < n; i++) {
			assert_int_equal(tm.calls[i], 1);
			int p = f.t.parent[i];
			if (p >= 0 && tm.end[i] > tm.start[p])
				fail_msg("seed %u: parent %s started before its child %s ended", seed,
					 f.t.name[p], f.t.name[i]);
		}
		assert_int_equal(dm_pm_resume(f.pm, NULL, 0), 0);
		for (size_t i = 0; i < n; i++) {
			assert_int_equal(tm.calls[i], 0);
			assert_int_equal(dm_device_get_power(f.t.dev[i]), DM_POWER_ON);
			int p = f.t.parent[i];
			if (p >= 0 && tm.end[p] > tm.start[i])
				fail_msg("seed %u: child %s resumed before its parent %s was done",
					 seed, f.t.name[i], f.t.name[p]);
		}
		if (tm.max_running > max_seen)
			max_seen = tm.max_running;
		fixture_teardown(&f);
	}
	/* independent subtrees did overlap */
	assert_true(max_seen >= 2);
}

static void test_pool_failure_rolls_back_exactly(void **state)
{
	(void)state;
	for (unsigned seed = 4; seed <= 6; seed++) {
		size_t n = 40;
		for (size_t fail = 0; fail < n; fail += 3) {
			struct fixture f;
			pool_fixture(&f, n, seed);
			tm.fail_at = (int)fail;
			assert_int_equal(dm_pm_suspend(f.pm, NULL, 0), -EIO);
			/* each device suspended by the walk was resumed once, the
			 * failing one never; every device is on again */
			for (size_t i = 0; i < n; i++) {
				assert_int_equal(tm.calls[i], 0);
				assert_int_equal(dm_device_get_power(f.t.dev[i]), DM_POWER_ON);
				/* the rollback resumed parents before children */
				int p = f.t.parent[i];
				if (p >= 0 && tm.resumed[i] && tm.resumed[p] && tm.end[p] > tm.start[i])
					fail_msg("rollback resumed %s before its parent %s",
						 f.t.name[i], f.t.name[p]);
			}
			/* and the failure is recorded where a user looks */
			char buf[DM_ATTR_MAX];
			int len = dm_device_show(f.t.dev[fail], NULL, "power_error", buf, sizeof(buf));
			assert_true(len > 0);
			char *log;
			size_t log_len;
			assert_int_equal(dm_pm_show_log(f.pm, &log, &log_len), 0);
			assert_non_null(strstr(log, " EIO "));
			free(log);
			fixture_teardown(&f);
		}
	}
}

/* The pool alone: more jobs than threads (they wait in the pool for one),
 * each run once, on at most the pool's threads, results handed back. */
struct pool_check {
	atomic_int runs[64], running, max_running;
	int taken[64];
};

static int pool_check_job(void *ctx, int job)
{
	struct pool_check *c = ctx;
	int now = atomic_fetch_add(&c->running, 1) + 1;
	int max = atomic_load(&c->max_running);
	while (now > max && !atomic_compare_exchange_weak(&c->max_running, &max, now))
		;
	atomic_fetch_add(&c->runs[job], 1);
	if (job % 4 == 0)
		usleep(200);
	atomic_fetch_sub(&c->running, 1);
	return -job;
}

static void pool_check_done(void *data, int job, int result)
{
	struct pool_check *c = data;
	assert_int_equal(result, -job);
	c->taken[job]++;
}

static void test_pool_more_jobs_than_threads(void **state)
{
	(void)state;
	struct dm_pool *p;
	assert_int_equal(dm_pool_new(3, 64 * 1024, &p), 0);
	for (int round = 0; round < 3; round++) {
		static struct pool_check c;
		memset(&c, 0, sizeof(c));
		assert_int_equal(dm_pool_begin(p, pool_check_job, &c, 64), 0);
		for (int j = 0; j < 64; j++)
			assert_true(dm_pool_submit(p, j));
		int taken = 0;
		while (taken < 64) {
			dm_pool_take(p, pool_check_done, &c);
			taken = 0;
			for (int j = 0; j < 64; j++)
				taken += c.taken[j];
		}
		dm_pool_end(p);
		for (int j = 0; j < 64; j++) {
			assert_int_equal(atomic_load(&c.runs[j]), 1);
			assert_int_equal(c.taken[j], 1);
		}
		assert_true(atomic_load(&c.max_running) <= 3);
	}
	dm_pool_free(p);
}

/* a transition blocked in a hook: a second one gets EBUSY */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int gate_open, gate_entered;

static int gated_suspend(struct dm_device *dev, void *data)
{
	(void)dev;
	(void)data;
	pthread_mutex_lock(&gate_lock);
	gate_entered = 1;
	pthread_cond_broadcast(&gate_cond);
	while (!gate_open)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
	return 0;
}
static const struct dm_driver_ops gated_ops = { .suspend = gated_suspend };

static void *suspend_thread(void *data)
{
	return (void *)(intptr_t)dm_pm_suspend(data, NULL, 0);
}

static void test_busy_during_a_transition(void **state)
{
	(void)state;
	struct fixture f;
	assert_int_equal(dm_model_new(&f.m), 0);
	assert_int_equal(dm_bus_get(f.m, "test", NULL, &f.bus), 0);
	assert_int_equal(dm_driver_new("gated", DM_DRIVER_USER, 1, &gated_ops, NULL, NULL, &f.drv), 0);
	assert_int_equal(dm_driver_register(f.bus, f.drv), 0);
	assert_int_equal(dm_pm_new(f.m, &f.pm), 0);
	struct dm_device *dev;
	assert_int_equal(dm_device_new(f.m, "slow", &dev), 0);
	dm_device_set_bus(dev, f.bus);
	assert_int_equal(dm_device_add(dev, NULL), 0);

	gate_open = gate_entered = 0;
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, suspend_thread, f.pm), 0);
	pthread_mutex_lock(&gate_lock);
	while (!gate_entered)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);

	assert_int_equal(dm_pm_resume(f.pm, NULL, 0), -EBUSY);
	assert_int_equal(dm_device_store(dev, NULL, "power", "resume", 6), -EBUSY);

	pthread_mutex_lock(&gate_lock);
	gate_open = 1;
	pthread_cond_broadcast(&gate_cond);
	pthread_mutex_unlock(&gate_lock);
	void *res;
	pthread_join(th, &res);
	assert_int_equal((int)(intptr_t)res, 0);
	assert_int_equal(dm_device_get_power(dev), DM_POWER_SUSPENDED);

	dm_device_unref(dev);
	dm_pm_free(f.pm);
	dm_driver_unref(f.drv);
	dm_model_free(f.m);
}

/* power_log read while the pool writes it: always a whole prefix of the
 * journal (1, 2, ... k, each line complete), and at the end all of it. */
static atomic_bool reading;

static void *log_reader(void *data)
{
	struct dm_pm *pm = data;
	size_t reads = 0;
	while (atomic_load(&reading) || reads == 0) {
		char *log;
		size_t len;
		assert_int_equal(dm_pm_show_log(pm, &log, &len), 0);
		size_t seq = 0;
		for (char *line = log; line < log + len;) {
			char *nl = memchr(line, '\n', (size_t)(log + len - line));
			assert_non_null(nl);
			assert_int_equal(strtoul(line, NULL, 10), ++seq);
			line = nl + 1;
		}
		free(log);
		reads++;
	}
	return (void *)reads;
}

static void test_log_read_during_the_walk(void **state)
{
	(void)state;
	struct fixture f;
	pool_fixture(&f, 200, 11);
	atomic_store(&reading, true);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, log_reader, f.pm), 0);
	assert_int_equal(dm_pm_suspend(f.pm, NULL, 0), 0);
	atomic_store(&reading, false);
	void *reads;
	pthread_join(th, &reads);
	assert_true((size_t)reads > 0);
	char *log;
	size_t len, lines = 0;
	assert_int_equal(dm_pm_show_log(f.pm, &log, &len), 0);
	for (size_t k = 0; k < len; k++)
		lines += log[k] == '\n';
	free(log);
	assert_int_equal(lines, f.t.n + 1); /* and root */
	assert_int_equal(dm_pm_resume(f.pm, NULL, 0), 0);
	fixture_teardown(&f);
}

/* A device removed while a walk is under way: the walk skips it, and the
 * model keeps it allocated for the PM order and the journal until the
 * next transition clears them, then frees it. ASan checks the rest. */
static struct dm_device *to_remove;
static int freed;

static void count_free(void *data)
{
	(void)data;
	freed++;
}

static int removing_suspend(struct dm_device *dev, void *data)
{
	if (to_remove) {
		dm_device_del(to_remove);
		to_remove = NULL;
	}
	return rec_suspend(dev, data);
}

static const struct dm_driver_ops removing_ops = { .suspend = removing_suspend,
						   .resume = rec_resume };

static void test_removed_during_the_walk(void **state)
{
	(void)state;
	struct fixture f;
	assert_int_equal(dm_model_new(&f.m), 0);
	assert_int_equal(dm_bus_get(f.m, "test", NULL, &f.bus), 0);
	assert_int_equal(
		dm_driver_new("removing", DM_DRIVER_USER, 1, &removing_ops, NULL, NULL, &f.drv), 0);
	assert_int_equal(dm_driver_register(f.bus, f.drv), 0);
	assert_int_equal(dm_pm_new(f.m, &f.pm), 0);
	test_tree_build(&f.t, f.m, 30, 7, f.bus);
	rec.t = &f.t;
	rec.n = 0;
	rec.fail_at = -1;
	rec.slow = 0;
	/* root's first child, so suspended after every device of the tree;
	 * the model holds the only reference */
	struct dm_device *extra;
	assert_int_equal(dm_device_new(f.m, "0-extra", &extra), 0);
	dm_device_set_bus(extra, f.bus);
	dm_device_set_bus_data(extra, NULL, count_free);
	assert_int_equal(dm_device_add(extra, dm_model_get_root(f.m)), 0);
	dm_device_unref(extra);
	freed = 0;
	to_remove = extra;

	assert_int_equal(dm_pm_suspend(f.pm, NULL, 0), 0);
	assert_null(to_remove);
	/* every tree device once, and nothing for the removed one (-1 + 1) */
	assert_int_equal(rec.n, f.t.n);
	for (size_t i = 0; i < rec.n; i++)
		assert_int_not_equal(rec.calls[i], 0);
	char *log;
	size_t len;
	assert_int_equal(dm_pm_show_log(f.pm, &log, &len), 0);
	assert_null(strstr(log, "0-extra"));
	free(log);
	assert_int_equal(freed, 0); /* the journal's PM order still holds it */

	/* one added after the order was taken is not held back */
	struct dm_device *late;
	assert_int_equal(dm_device_new(f.m, "late", &late), 0);
	dm_device_set_bus_data(late, NULL, count_free);
	assert_int_equal(dm_device_add(late, dm_model_get_root(f.m)), 0);
	dm_device_unref(late);
	dm_device_del(late);
	assert_int_equal(freed, 1);

	assert_int_equal(dm_pm_resume(f.pm, NULL, 0), 0);
	assert_int_equal(freed, 2);
	fixture_teardown(&f);
}

static void read_file(const char *path, char *buf, size_t size)
{
	assert_true(test_read_file(path, buf, size));
}

/* The record's file: "+" before a suspend, "-" after a resume, gone with
 * the last device; a file left behind is read back without its cut line,
 * and a long one is compacted. */
static void test_transition_record(void **state)
{
	(void)state;
	char dir[] = "/tmp/driverfs-record-XXXXXX", path[128], buf[4096];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/run/transition", dir);
	struct dm_pm_record *record;
	assert_int_equal(dm_pm_record_new(path, &record), 0);
	assert_int_equal(access(path, F_OK), -1); /* nothing written yet */
	assert_int_equal(dm_pm_record_suspending(record, "/devices/a"), 0);
	assert_int_equal(dm_pm_record_suspending(record, "/devices/a/b"), 0);
	assert_int_equal(dm_pm_record_suspending(record, "/devices/a"), 0); /* once */
	dm_pm_record_resumed(record, "/devices/a");
	dm_pm_record_resumed(record, "/devices/unknown");
	assert_int_equal(dm_pm_record_sync(record), 0);
	read_file(path, buf, sizeof(buf));
	assert_string_equal(buf, "+/devices/a\n+/devices/a/b\n-/devices/a\n");
	dm_pm_record_resumed(record, "/devices/a/b");
	assert_int_equal(access(path, F_OK), -1); /* the last one took it */

	/* a driver's state: "=STATE DEVPATH" after the device's "+" line,
	 * only for a listed device, only one word */
	assert_int_equal(dm_pm_record_suspending(record, "/devices/k"), 0);
	assert_int_equal(dm_pm_record_keep_state(record, "/devices/k", "control=on,delay=2000"), 0);
	assert_int_equal(dm_pm_record_keep_state(record, "/devices/unlisted", "control=on"), 0);
	assert_int_equal(dm_pm_record_keep_state(record, "/devices/k", "two words"), -EINVAL);
	assert_int_equal(dm_pm_record_keep_state(record, "/devices/k", "line\n+/devices/x"),
			 -EINVAL);
	assert_int_equal(dm_pm_record_keep_state(record, "/devices/k", ""), -EINVAL);
	read_file(path, buf, sizeof(buf));
	assert_string_equal(buf, "+/devices/k\n=control=on,delay=2000 /devices/k\n");
	/* this run's own states are not what an earlier run kept */
	assert_int_equal(dm_pm_record_kept_state(record, "/devices/k", buf, sizeof(buf)), -ENOENT);
	dm_pm_record_resumed(record, "/devices/k");
	assert_int_equal(access(path, F_OK), -1);

	/* a file a killed run left: a cut last line is skipped; a state
	 * belongs to the device's last "+", a "-" drops it */
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("+/devices/x\n=control=on /devices/x\n+/devices/y\n-/devices/x\n"
	      "+/devices/z\n=control=on,delay=2000 /devices/z\n=control=auto /devices/z\n"
	      "=control=on /devices/unlisted\n=control=on\n=bad word /devices/y\n"
	      "+/devices/x\n=control=on,delay=5 /dev",
	      f);
	fclose(f);
	char **list;
	size_t n;
	assert_int_equal(dm_pm_record_load(record, &list, &n, NULL, 0), 0);
	assert_int_equal(n, 3);
	assert_string_equal(list[0], "/devices/y");
	assert_string_equal(list[1], "/devices/z");
	assert_string_equal(list[2], "/devices/x");
	assert_null(list[3]);
	for (size_t i = 0; i < n; i++)
		free(list[i]);
	free(list);
	assert_int_equal(dm_pm_record_kept_state(record, "/devices/z", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "control=auto");
	assert_int_equal(dm_pm_record_kept_state(record, "/devices/z", buf, 5), -ENOBUFS);
	assert_int_equal(dm_pm_record_kept_state(record, "/devices/x", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(dm_pm_record_kept_state(record, "/devices/y", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(dm_pm_record_kept_state(record, "/devices/unlisted", buf, sizeof(buf)),
			 -ENOENT);
	assert_int_equal(dm_pm_record_clear(record), 0);
	assert_int_equal(dm_pm_record_kept_state(record, "/devices/z", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(dm_pm_record_load(record, &list, &n, NULL, 0), -ENOENT);

	/* many transitions of one device while another stays: compacted,
	 * with the state kept */
	assert_int_equal(dm_pm_record_suspending(record, "/devices/stays"), 0);
	assert_int_equal(dm_pm_record_keep_state(record, "/devices/stays", "control=on"), 0);
	for (int i = 0; i < 3000; i++) {
		assert_int_equal(dm_pm_record_suspending(record, "/devices/toggles"), 0);
		dm_pm_record_resumed(record, "/devices/toggles");
		assert_int_equal(dm_pm_record_sync(record), 0);
	}
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_true(st.st_size < 3000 * 20); /* 6000 lines unless compacted */
	assert_int_equal(dm_pm_record_load(record, &list, &n, NULL, 0), 0);
	assert_int_equal(n, 1);
	assert_string_equal(list[0], "/devices/stays");
	free(list[0]);
	free(list);
	assert_int_equal(dm_pm_record_kept_state(record, "/devices/stays", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "control=on");
	dm_pm_record_free(record);
	assert_int_equal(access(path, F_OK), 0); /* it lists a device: kept */
	test_rm_rf(dir);
	assert_int_equal(dm_pm_record_new("relative", &record), -EINVAL);
}

/* ---- claims that no longer hold ---- */

struct claims {
	struct dm_device *suspended[4], *removed[4];
	size_t n_suspended, n_removed;
	int suspend_result;
};
static struct claims claims;

/* pci-pm's rule: only devices no kernel driver owns */
static int claim_probe(struct dm_device *dev, void *data)
{
	(void)data;
	return dm_device_get_kernel_driver(dev) ? -ENODEV : 0;
}
static void claim_remove(struct dm_device *dev, void *data)
{
	(void)data;
	claims.removed[claims.n_removed++] = dev;
}
static int claim_suspend(struct dm_device *dev, void *data)
{
	(void)data;
	claims.suspended[claims.n_suspended++] = dev;
	return claims.suspend_result;
}
static const struct dm_driver_ops claim_ops = {
	.probe = claim_probe, .remove = claim_remove, .suspend = claim_suspend,
};

struct claim_fixture {
	struct dm_model *m;
	struct dm_bus *bus;
	struct dm_driver *user, *kernel;
	struct dm_pm *pm;
	struct dm_device *taken, *free;
};

static void claim_setup(struct claim_fixture *f)
{
	claims = (struct claims){ 0 };
	assert_int_equal(dm_model_new(&f->m), 0);
	assert_int_equal(dm_bus_get(f->m, "pci", NULL, &f->bus), 0);
	assert_int_equal(dm_driver_new("claimer", DM_DRIVER_USER, 50, &claim_ops, NULL, NULL,
				       &f->user), 0);
	assert_int_equal(dm_driver_register(f->bus, f->user), 0);
	assert_int_equal(dm_driver_new("nvme", DM_DRIVER_KERNEL, 0, NULL, NULL, NULL, &f->kernel), 0);
	assert_int_equal(dm_driver_register(f->bus, f->kernel), 0);
	assert_int_equal(dm_pm_new(f->m, &f->pm), 0);
	const char *names[] = { "0000:01:00.0", "0000:02:00.0" };
	struct dm_device **devs[] = { &f->taken, &f->free };
	for (size_t i = 0; i < 2; i++) {
		assert_int_equal(dm_device_new(f->m, names[i], devs[i]), 0);
		dm_device_set_bus(*devs[i], f->bus);
		assert_int_equal(dm_device_add(*devs[i], NULL), 0);
	}
	dm_model_read_lock(f->m);
	assert_ptr_equal(dm_device_get_driver_locked(f->taken), f->user);
	assert_ptr_equal(dm_device_get_driver_locked(f->free), f->user);
	dm_model_unlock(f->m);
}

static void claim_teardown(struct claim_fixture *f)
{
	dm_pm_free(f->pm);
	dm_device_unref(f->taken);
	dm_device_unref(f->free);
	dm_driver_unregister(f->user);
	dm_driver_unregister(f->kernel);
	dm_driver_unref(f->user);
	dm_driver_unref(f->kernel);
	dm_model_free(f->m);
}

static struct dm_driver *driver_of(struct claim_fixture *f, struct dm_device *dev)
{
	dm_model_read_lock(f->m);
	struct dm_driver *drv = dm_device_get_driver_locked(dev);
	dm_model_unlock(f->m);
	return drv;
}

/* The kernel bound a driver and no event told the daemon (it is queued, or
 * was lost): the model's kernel driver changed, nothing re-checked the
 * claim. Suspend must not call the user driver's hook on that device. */
static void test_suspend_drops_a_claim_the_kernel_took(void **state)
{
	(void)state;
	struct claim_fixture f;
	claim_setup(&f);
	assert_int_equal(dm_device_set_kernel_driver(f.taken, "nvme"), 0);

	assert_int_equal(dm_pm_suspend(f.pm, NULL, DM_PM_SERIAL), 0);
	for (size_t i = 0; i < claims.n_suspended; i++)
		if (claims.suspended[i] == f.taken)
			fail_msg("the user driver's suspend ran on a device nvme owns");
	/* the other device is still the user driver's, and was suspended */
	assert_int_equal(claims.n_suspended, 1);
	assert_ptr_equal(claims.suspended[0], f.free);
	/* the claim was dropped as a release does: remove(), then the kernel
	 * driver's proxy took the device */
	assert_int_equal(claims.n_removed, 1);
	assert_ptr_equal(claims.removed[0], f.taken);
	assert_ptr_equal(driver_of(&f, f.taken), f.kernel);
	assert_ptr_equal(driver_of(&f, f.free), f.user);
	assert_int_equal(dm_pm_resume(f.pm, NULL, DM_PM_SERIAL), 0);
	claim_teardown(&f);
}

/* The kernel's binding moved away and back before a suspend (no event
 * re-checked the claim between): the claim holds again, so both hooks run
 * and nothing is released. The device keeps whether its claim holds beside
 * what a walk reads; each change of kernel_driver must set it anew. */
static void test_suspend_keeps_a_claim_given_back(void **state)
{
	(void)state;
	struct claim_fixture f;
	claim_setup(&f);
	assert_int_equal(dm_device_set_kernel_driver(f.taken, "nvme"), 0);
	assert_int_equal(dm_device_set_kernel_driver(f.taken, NULL), 0);

	assert_int_equal(dm_pm_suspend(f.pm, NULL, DM_PM_SERIAL), 0);
	assert_int_equal(claims.n_suspended, 2);
	assert_int_equal(claims.n_removed, 0);
	assert_ptr_equal(driver_of(&f, f.taken), f.user);
	assert_int_equal(dm_pm_resume(f.pm, NULL, DM_PM_SERIAL), 0);

	/* taken again: the next suspend drops it */
	assert_int_equal(dm_device_set_kernel_driver(f.taken, "nvme"), 0);
	assert_int_equal(dm_pm_suspend(f.pm, NULL, DM_PM_SERIAL), 0);
	assert_int_equal(claims.n_suspended, 3);
	assert_int_equal(claims.n_removed, 1);
	assert_ptr_equal(driver_of(&f, f.taken), f.kernel);
	assert_int_equal(dm_pm_resume(f.pm, NULL, DM_PM_SERIAL), 0);
	claim_teardown(&f);
}

/* Hotplug's bind and unbind: the re-check releases at once, and gives the
 * device back to the user driver once the kernel lets it go. */
static void test_recheck_follows_the_kernel_binding(void **state)
{
	(void)state;
	struct claim_fixture f;
	claim_setup(&f);
	assert_int_equal(dm_device_recheck_claim(f.taken), 0);
	assert_int_equal(claims.n_removed, 0);

	assert_int_equal(dm_device_set_kernel_driver(f.taken, "nvme"), 0);
	assert_int_equal(dm_device_recheck_claim(f.taken), 1);
	assert_int_equal(claims.n_removed, 1);
	assert_ptr_equal(driver_of(&f, f.taken), f.kernel);
	assert_int_equal(dm_device_recheck_claim(f.taken), 0); /* a kernel proxy: not a claim */

	dm_device_release_driver(f.taken);
	assert_int_equal(dm_device_set_kernel_driver(f.taken, NULL), 0);
	dm_device_attach(f.taken);
	assert_ptr_equal(driver_of(&f, f.taken), f.user);
	assert_int_equal(dm_device_recheck_claim(f.taken), 0);
	claim_teardown(&f);
}

/* A user driver that finds the device taken in the view (pci-pm reads the
 * sysfs driver link) returns -DM_ECLAIM: released, and the walk goes on. */
static void test_suspend_eclaim_releases(void **state)
{
	(void)state;
	struct claim_fixture f;
	claim_setup(&f);
	claims.suspend_result = -DM_ECLAIM;
	assert_int_equal(dm_pm_suspend(f.pm, NULL, DM_PM_SERIAL), 0);
	assert_int_equal(claims.n_suspended, 2);
	assert_int_equal(claims.n_removed, 2);
	assert_null(driver_of(&f, f.taken));
	assert_null(driver_of(&f, f.free));
	assert_int_equal(dm_pm_resume(f.pm, NULL, DM_PM_SERIAL), 0);
	claim_teardown(&f);
}

/* Symlinks planted at the record's path, or where a compaction once wrote
 * its temporary file ("PATH.new"), are not followed: their target stays
 * as it was. */
static void test_record_follows_no_symlink(void **state)
{
	(void)state;
	char dir[] = "/tmp/driverfs-record-XXXXXX", path[128], tmp[160], target[128];
	char buf[4096];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/transition", dir);
	snprintf(tmp, sizeof(tmp), "%s.new", path);
	snprintf(target, sizeof(target), "%s/target", dir);
	FILE *f = fopen(target, "w");
	assert_non_null(f);
	fputs("precious\n", f);
	fclose(f);

	struct dm_pm_record *record;
	assert_int_equal(dm_pm_record_new(path, &record), 0);
	assert_int_equal(symlink(target, path), 0);
	assert_int_equal(dm_pm_record_suspending(record, "/devices/a"), -ELOOP);
	read_file(target, buf, sizeof(buf));
	assert_string_equal(buf, "precious\n");
	assert_int_equal(unlink(path), 0);

	/* the compaction's temporary file */
	assert_int_equal(symlink(target, tmp), 0);
	assert_int_equal(dm_pm_record_suspending(record, "/devices/stays"), 0);
	for (int i = 0; i < 3000; i++) {
		assert_int_equal(dm_pm_record_suspending(record, "/devices/toggles"), 0);
		dm_pm_record_resumed(record, "/devices/toggles");
		assert_int_equal(dm_pm_record_sync(record), 0);
	}
	read_file(target, buf, sizeof(buf));
	assert_string_equal(buf, "precious\n");
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode)); /* compacted, into a file of its own */
	assert_true(st.st_size < 3000 * 20);
	read_file(path, buf, sizeof(buf));
	assert_int_equal(strncmp(buf, "+/devices/stays\n", 16), 0);
	dm_pm_record_free(record);
	test_rm_rf(dir);
}

/* Recovery whose resume fails for a device keeps that device, with the
 * state kept for it, in the record: the next start tries again. The others
 * are taken off. */
static void test_recovery_keeps_what_failed(void **state)
{
	(void)state;
	struct fixture f;
	char dir[] = "/tmp/driverfs-record-XXXXXX", path[128], buf[4096];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/transition", dir);
	fixture_setup(&f, 4, 1);
	assert_int_equal(dm_pm_set_record(f.pm, path), 0);
	FILE *s = fopen(path, "w");
	assert_non_null(s);
	fputs("+/devices/test/1\n=control=on /devices/test/1\n+/devices/test/2\n", s);
	fclose(s);
	rec.resume_fail_at = test_tree_index(&f.t, f.t.dev[2]);
	assert_int_equal(dm_pm_recover(f.pm, NULL, NULL, NULL, 0), 2);
	read_file(path, buf, sizeof(buf));
	assert_string_equal(buf, "+/devices/test/2\n");

	/* and a start where it resumes takes it off */
	rec.resume_fail_at = -1;
	assert_int_equal(dm_pm_set_record(f.pm, path), 0);
	assert_int_equal(dm_pm_recover(f.pm, NULL, NULL, NULL, 0), 1);
	assert_int_equal(access(path, F_OK), -1);

	/* a failed one keeps the state an earlier run kept for it */
	s = fopen(path, "w");
	assert_non_null(s);
	fputs("+/devices/test/1\n=control=on /devices/test/1\n", s);
	fclose(s);
	rec.resume_fail_at = test_tree_index(&f.t, f.t.dev[1]);
	assert_int_equal(dm_pm_set_record(f.pm, path), 0);
	assert_int_equal(dm_pm_recover(f.pm, NULL, NULL, NULL, 0), 1);
	read_file(path, buf, sizeof(buf));
	assert_string_equal(buf, "+/devices/test/1\n=control=on /devices/test/1\n");
	fixture_teardown(&f);
	test_rm_rf(dir);
}

/* A record anyone but root could have written (issue 30 item 5: its saved
 * PCI headers go back into config space) is refused as drivers.d files are:
 * the file owned by another user or writable by group or other, or a
 * directory above it writable by group or other. Nothing is resumed, no
 * driver is called, and the reason names what is at fault. */
static void test_untrusted_record_is_refused(void **state)
{
	(void)state;
	struct fixture f;
	char dir[] = "/tmp/driverfs-record-XXXXXX", sub[64], path[128];
	char why[512];
	assert_non_null(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/run", dir);
	snprintf(path, sizeof(path), "%s/transition", sub);
	fixture_setup(&f, 4, 1);
	assert_int_equal(dm_pm_set_record(f.pm, path), 0);
	static const char text[] = "+/devices/test/1\n=control=on /devices/test/1\n";
	static const struct {
		uid_t uid;
		mode_t file, dir;
		const char *why;
	} cases[] = {
		{ 65534, 0644, 0755, "the file is owned by uid 65534, not root (mode 0644)" },
		{ 0, 0666, 0755, "the file is writable by other (owner uid 0, mode 0666)" },
		{ 0, 0664, 0755, "the file is writable by group (owner uid 0, mode 0664)" },
		{ 0, 0644, 0777, "is writable by other (owner uid 0, mode 0777)" },
	};
	if (geteuid() != 0) {
		fixture_teardown(&f);
		test_rm_rf(dir);
		skip();
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		FILE *s = fopen(path, "w");
		assert_non_null(s);
		fputs(text, s);
		fclose(s);
		assert_int_equal(chown(path, cases[i].uid, cases[i].uid), 0);
		assert_int_equal(chmod(path, cases[i].file), 0);
		assert_int_equal(chmod(sub, cases[i].dir), 0);
		rec.n = 0;
		why[0] = '\0';
		assert_int_equal(dm_pm_recover(f.pm, NULL, NULL, why, sizeof(why)), -EPERM);
		assert_non_null(strstr(why, cases[i].why));
		assert_int_equal(rec.n, 0); /* no driver called */
		assert_int_equal(dm_device_get_power(f.t.dev[1]), DM_POWER_ON);
		assert_int_equal(access(path, F_OK), 0); /* left for root to look at */
		assert_int_equal(chmod(sub, 0755), 0);
	}
	/* the same file, root's: resumed */
	assert_int_equal(chown(path, 0, 0), 0);
	assert_int_equal(chmod(path, 0644), 0);
	rec.n = 0;
	assert_int_equal(dm_pm_recover(f.pm, NULL, NULL, why, sizeof(why)), 1);
	assert_int_equal(rec.n, 1);
	fixture_teardown(&f);
	test_rm_rf(dir);
}

/* A resume hook that fails: dm_pm_resume() says -EIO, as pm.h promises,
 * and the walk still resumes every other device, children of the failed
 * one included. */
static void test_a_failed_resume_is_reported_and_the_walk_completes(void **state)
{
	(void)state;
	struct fixture f;
	fixture_setup(&f, 12, 7);
	size_t n = f.t.n;
	assert_int_equal(dm_pm_suspend(f.pm, NULL, DM_PM_SERIAL), 0);
	rec.resume_fail_at = 1;
	rec.n = 0;
	assert_int_equal(dm_pm_resume(f.pm, NULL, DM_PM_SERIAL), -EIO);
	assert_int_equal(rec.n, n);
	for (size_t i = 0; i < n; i++)
		if (i != 1)
			assert_int_equal(dm_device_get_power(f.t.dev[i]), DM_POWER_ON);
	/* and in parallel */
	rec.resume_fail_at = -1;
	assert_int_equal(dm_pm_suspend(f.pm, NULL, 0), 0);
	rec.resume_fail_at = 1;
	assert_int_equal(dm_pm_resume(f.pm, NULL, 0), -EIO);
	rec.resume_fail_at = -1;
	assert_int_equal(dm_pm_resume(f.pm, NULL, 0), 0);
	fixture_teardown(&f);
}

/* ---- the serial walk's order, call by call (issue 35 item 6) ---- */

/* A fixed tree of three levels with siblings, named so that the list's
 * natural order (strverscmp, §3.2) differs from the text's and from the
 * order the devices are added in:
 *
 *   a            the global list: a a1 a2 a2x9 a2x10 a10 b b1 b1a c
 *     a1
 *     a2
 *       a2x9
 *       a2x10
 *     a10
 *   b
 *     b1
 *       b1a
 *   c
 */
static const char *const fixed_names[] = { "a",	"a1",  "a2", "a2x9", "a2x10",
					   "a10", "b", "b1", "b1a", "c" };
static const int fixed_parent[] = { -1, 0, 0, 2, 2, 0, -1, 6, 7, -1 };
/* the order they are added in: parents before children, nothing else kept */
static const int fixed_added[] = { 9, 6, 0, 5, 7, 2, 4, 1, 8, 3 };
#define FIXED_N (sizeof(fixed_names) / sizeof(fixed_names[0]))

/* The fixed tree in @f; @hooks false: devices without a driver (no hook:
 * the dispatcher runs them inline whatever the flags). */
static void fixed_setup(struct fixture *f, bool hooks)
{
	assert_int_equal(dm_model_new(&f->m), 0);
	assert_int_equal(dm_bus_get(f->m, "test", NULL, &f->bus), 0);
	assert_int_equal(dm_driver_new("rec", DM_DRIVER_USER, 1, &rec_ops, NULL, NULL, &f->drv), 0);
	assert_int_equal(dm_driver_register(f->bus, f->drv), 0);
	assert_int_equal(dm_pm_new(f->m, &f->pm), 0);
	struct test_tree *t = &f->t;
	t->n = FIXED_N;
	t->parent = calloc(FIXED_N, sizeof(*t->parent));
	t->name = calloc(FIXED_N, sizeof(*t->name));
	t->dev = calloc(FIXED_N, sizeof(*t->dev));
	assert_true(t->parent && t->name && t->dev);
	for (size_t k = 0; k < FIXED_N; k++) {
		int i = fixed_added[k], p = fixed_parent[i];
		t->parent[i] = p;
		t->name[i] = strdup(fixed_names[i]);
		assert_non_null(t->name[i]);
		assert_true(p < 0 || t->dev[p]);
		assert_int_equal(dm_device_new(f->m, t->name[i], &t->dev[i]), 0);
		if (hooks)
			dm_device_set_bus(t->dev[i], f->bus);
		assert_int_equal(dm_device_add(t->dev[i], p < 0 ? NULL : t->dev[p]), 0);
	}
	rec.t = t;
	rec.n = 0;
	rec.fail_at = -1;
	rec.resume_fail_at = -1;
	rec.slow = 0;
}

static int fixed_index(const char *name)
{
	for (size_t i = 0; i < FIXED_N; i++)
		if (strcmp(fixed_names[i], name) == 0)
			return (int)i;
	fail_msg("no device %s in the fixed tree", name);
	return -1;
}

/* The hook calls recorded since rec.n was 0, as "name name ...". */
static void calls_text(char *buf, size_t size)
{
	size_t len = 0;
	buf[0] = '\0';
	for (size_t k = 0; k < rec.n; k++) {
		int i = rec.calls[k] > 0 ? rec.calls[k] - 1 : -rec.calls[k] - 1;
		len += (size_t)snprintf(buf + len, size - len, "%s%s", k ? " " : "",
					rec.t->name[i]);
		assert_true(len < size);
	}
}

/* The devices power_log names for @phase, as "name name ..." (each line's
 * last path component; the root, ".", left out: it has no hook). */
static void log_text(struct fixture *f, const char *phase, char *buf, size_t size)
{
	char *log;
	size_t log_len, len = 0;
	assert_int_equal(dm_pm_show_log(f->pm, &log, &log_len), 0);
	buf[0] = '\0';
	char *save = NULL;
	for (char *line = strtok_r(log, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char ph[32], path[256], res[32];
		if (sscanf(line, "%*u %31s %255s %31s", ph, path, res) != 3)
			fail_msg("power_log line '%s'", line);
		if (strcmp(ph, phase) != 0 || strcmp(path, ".") == 0)
			continue;
		const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
		len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? " " : "", base);
		assert_true(len < size);
	}
	free(log);
}

/* One step of a walk: suspend (true) or resume @dev (NULL: the whole
 * tree), expecting the hooks in exactly the order @want gives. */
static void walk_expect(struct fixture *f, bool hooks, unsigned flags, bool suspend,
			const char *dev, const char *want)
{
	struct dm_device *d = dev ? f->t.dev[fixed_index(dev)] : NULL;
	rec.n = 0;
	int r = suspend ? dm_pm_suspend(f->pm, d, flags) : dm_pm_resume(f->pm, d, flags);
	assert_int_equal(r, 0);
	char got[512];
	if (hooks) {
		calls_text(got, sizeof(got));
		if (strcmp(got, want) != 0)
			fail_msg("%s %s: hooks called\n  %s\nexpected\n  %s",
				 suspend ? "suspend" : "resume", dev ? dev : "(all)", got, want);
	} else {
		assert_int_equal(rec.n, 0);
	}
	/* the journal has them in the same order */
	log_text(f, suspend ? "suspend" : "resume", got, sizeof(got));
	if (strcmp(got, want) != 0)
		fail_msg("%s %s: power_log\n  %s\nexpected\n  %s", suspend ? "suspend" : "resume",
			 dev ? dev : "(all)", got, want);
}

/* Design §8.2: suspend goes backwards over the global list (every child
 * before its parent, the last sibling first), resume forwards (parents
 * first, siblings in the list's order), a resume waking the device's
 * suspended ancestors first, top-down; devices already in the target
 * state are skipped. Exactly, call by call: serially (DM_PM_SERIAL), and
 * on the dispatcher with every hook inline (devices without a hook),
 * which reproduces the serial order. */
static void check_fixed_order(bool hooks, unsigned flags)
{
	struct fixture f;
	fixed_setup(&f, hooks);
	walk_expect(&f, hooks, flags, true, NULL, "c b1a b1 b a10 a2x10 a2x9 a2 a1 a");
	walk_expect(&f, hooks, flags, false, NULL, "a a1 a2 a2x9 a2x10 a10 b b1 b1a c");
	walk_expect(&f, hooks, flags, true, "a", "a10 a2x10 a2x9 a2 a1 a");
	walk_expect(&f, hooks, flags, false, "a2", "a a2 a2x9 a2x10");
	walk_expect(&f, hooks, flags, true, "b1", "b1a b1");
	walk_expect(&f, hooks, flags, false, NULL, "a1 a10 b1 b1a");
	fixture_teardown(&f);
}

static void test_serial_walk_order_exactly(void **state)
{
	(void)state;
	check_fixed_order(true, DM_PM_SERIAL);
}

static void test_inline_dispatch_keeps_the_serial_order(void **state)
{
	(void)state;
	check_fixed_order(false, 0);
}

/* The same tree with device links (§3.5, §8.2): b1 supplies a1 and c
 * supplies a2x9, both against the list's order, and a2x10 supplies b1a.
 * A consumer suspends before its supplier, and resumes after it. The walk
 * still goes along the list (down on suspend, up on resume), taking each
 * device it reaches that is ready (a2x10, readied by b1a, waits for the
 * walk to reach it, after a10); a device readied behind the walk (a
 * supplier whose last consumer came after it in the walk: b1, c) is taken
 * at once (src/pm/pm.c, push_ready()). */
static void check_fixed_order_links(bool hooks, unsigned flags)
{
	struct fixture f;
	fixed_setup(&f, hooks);
	assert_int_equal(dm_link_add(f.t.dev[fixed_index("b1")], f.t.dev[fixed_index("a1")], 0,
				     NULL),
			 0);
	assert_int_equal(dm_link_add(f.t.dev[fixed_index("c")], f.t.dev[fixed_index("a2x9")], 0,
				     NULL),
			 0);
	assert_int_equal(dm_link_add(f.t.dev[fixed_index("a2x10")], f.t.dev[fixed_index("b1a")], 0,
				     NULL),
			 0);
	walk_expect(&f, hooks, flags, true, NULL, "b1a a10 a2x10 a2x9 c a2 a1 b1 b a");
	walk_expect(&f, hooks, flags, false, NULL, "a a2 a2x10 a10 b b1 a1 b1a c a2x9");
	fixture_teardown(&f);
}

static void test_serial_walk_order_with_links(void **state)
{
	(void)state;
	check_fixed_order_links(true, DM_PM_SERIAL);
}

static void test_inline_dispatch_order_with_links(void **state)
{
	(void)state;
	check_fixed_order_links(false, 0);
}

/* ---- the words power refuses (issue 35 item 6) ---- */

/* What a refused write must leave as it was: every device's power state
 * and power_error, and the journal. */
struct power_seen {
	enum dm_power_state power[FIXED_N];
	char error[FIXED_N][DM_ATTR_MAX];
	char *log;
};

static void power_seen_take(struct fixture *f, struct power_seen *s)
{
	size_t len;
	for (size_t i = 0; i < FIXED_N; i++) {
		s->power[i] = dm_device_get_power(f->t.dev[i]);
		int n = dm_device_show(f->t.dev[i], NULL, "power_error", s->error[i],
				       sizeof(s->error[i]));
		assert_true(n >= 0);
		s->error[i][n] = '\0';
	}
	assert_int_equal(dm_pm_show_log(f->pm, &s->log, &len), 0);
}

static void power_seen_check(struct fixture *f, const struct power_seen *before, const char *what)
{
	struct power_seen now;
	power_seen_take(f, &now);
	if (rec.n)
		fail_msg("%s: %zu hooks called", what, rec.n);
	for (size_t i = 0; i < FIXED_N; i++) {
		if (now.power[i] != before->power[i])
			fail_msg("%s: the power of %s changed", what, fixed_names[i]);
		if (strcmp(now.error[i], before->error[i]) != 0)
			fail_msg("%s: power_error of %s is now '%s'", what, fixed_names[i],
				 now.error[i]);
	}
	if (strcmp(now.log, before->log) != 0)
		fail_msg("%s: power_log changed:\n%s", what, now.log);
	free(now.log);
}

/* Design §6.4, §6.5: power takes "suspend", "resume", "suspend-dry-run" or
 * "resume-dry-run", one trailing newline allowed, and nothing else: every
 * other write is EINVAL (EFBIG past 4096 bytes) and changes nothing, no
 * hook called, no state, no power_error, power_log as it was; whether the
 * device is on or suspended, or the root. */
static void test_power_refuses_every_other_word(void **state)
{
	(void)state;
#define WORD(s) { s, sizeof(s) - 1 }
	static const struct {
		const char *buf;
		size_t len;
	} bad[] = {
		WORD(""), WORD("\n"), WORD("\n\n"), WORD(" "),
		/* trailing or leading garbage */
		WORD("suspend\n\n"), WORD("resume\n\n"), WORD("on\n\n"),
		WORD("suspend-dry-run\n\n"), WORD("suspend\r\n"), WORD("suspend\r"),
		WORD("suspend "), WORD(" suspend"), WORD("\tresume"), WORD("resume\t"),
		WORD("suspendx"), WORD("suspend x"), WORD("suspend resume"),
		WORD("suspend\nresume"), WORD("resume\nsuspend"), WORD("\nsuspend"),
		WORD("suspend-dry-run-x"), WORD("resume-dry-runs"),
		/* prefixes of the words */
		WORD("s"), WORD("susp"), WORD("suspen"), WORD("r"), WORD("resum\n"),
		WORD("suspend-"), WORD("suspend-dry"), WORD("resume-dry-ru"),
		/* another case, another script */
		WORD("Suspend"), WORD("SUSPEND\n"), WORD("Resume"), WORD("RESUME"),
		WORD("suspend-Dry-Run"), WORD("resume-DRY-RUN"),
		WORD("\xd1\x95uspend"), /* a Cyrillic dze for the s */
		/* a NUL inside or after the word */
		WORD("suspend\0"), WORD("suspend\0\n"), WORD("sus\0pend"), WORD("\0suspend"),
		WORD("resume\0x"), WORD("\0"),
		/* states and words of other files: what power reads, pm/control,
		 * pm/wakeup, /sys/power/state, PCI power states */
		WORD("on"), WORD("on\n"), WORD("suspended"), WORD("suspended\n"), WORD("off"),
		WORD("auto"), WORD("enabled"), WORD("disabled"), WORD("mem"), WORD("freeze"),
		WORD("standby"), WORD("disk"), WORD("D3hot"), WORD("D0"), WORD("active"),
		WORD("1"), WORD("0"), WORD("-1"), WORD("ok"),
	};
#undef WORD
	struct fixture f;
	fixed_setup(&f, true);
	/* a journal and states to keep: a's subtree rolled back from a failure
	 * at a1 (its power_error set), then b's subtree suspended */
	rec.fail_at = fixed_index("a1");
	assert_int_equal(dm_pm_suspend(f.pm, f.t.dev[fixed_index("a")], DM_PM_SERIAL), -EIO);
	rec.fail_at = -1;
	assert_int_equal(dm_pm_suspend(f.pm, f.t.dev[fixed_index("b")], DM_PM_SERIAL), 0);
	rec.n = 0;
	struct power_seen before;
	power_seen_take(&f, &before);
	assert_non_null(strstr(before.error[fixed_index("a1")], "suspend EIO"));

	/* a device on, one suspended, and the root */
	struct dm_device *targets[] = { f.t.dev[fixed_index("a2")], f.t.dev[fixed_index("b1a")],
					dm_model_get_root(f.m) };
	char long_word[DM_ATTR_MAX + 2];
	for (size_t t = 0; t < sizeof(targets) / sizeof(targets[0]); t++) {
		char what[128];
		for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
			/* the word, escaped, for the message */
			char word[64];
			size_t w = 0;
			for (size_t i = 0; i < bad[k].len && w + 5 < sizeof(word); i++) {
				unsigned char ch = (unsigned char)bad[k].buf[i];
				w += (size_t)snprintf(word + w, sizeof(word) - w,
						      ch > ' ' && ch < 0x7f ? "%c" : "\\x%02x", ch);
			}
			word[w] = '\0';
			snprintf(what, sizeof(what), "'%s' (%zu bytes) to %s", word, bad[k].len,
				 t == 2 ? "the root" : dm_device_get_name(targets[t]));
			int r = dm_device_store(targets[t], NULL, "power", bad[k].buf, bad[k].len);
			if (r != -EINVAL)
				fail_msg("%s: %d, expected -EINVAL", what, r);
			power_seen_check(&f, &before, what);
		}
		/* too long: a word padded to the most a write carries, and past it */
		memset(long_word, ' ', sizeof(long_word));
		memcpy(long_word, "suspend", 7);
		long_word[DM_ATTR_MAX - 1] = '\n';
		assert_int_equal(dm_device_store(targets[t], NULL, "power", long_word, DM_ATTR_MAX),
				 -EINVAL);
		power_seen_check(&f, &before, "a padded word");
		memcpy(long_word, "suspend\n", 8);
		assert_int_equal(dm_device_store(targets[t], NULL, "power", long_word, DM_ATTR_MAX + 1),
				 -EFBIG);
		power_seen_check(&f, &before, "a word past 4096 bytes");
	}
	free(before.log);

	/* the four words, with one newline or none, are taken */
	struct dm_device *c = f.t.dev[fixed_index("c")];
	assert_int_equal(dm_device_store(c, NULL, "power", "suspend-dry-run\n", 16), 0);
	assert_int_equal(rec.n, 0);
	assert_int_equal(dm_device_store(c, NULL, "power", "suspend", 7), 0);
	assert_int_equal(dm_device_get_power(c), DM_POWER_SUSPENDED);
	assert_int_equal(dm_device_store(c, NULL, "power", "resume-dry-run", 14), 0);
	assert_int_equal(dm_device_get_power(c), DM_POWER_SUSPENDED);
	assert_int_equal(dm_device_store(c, NULL, "power", "resume\n", 7), 0);
	assert_int_equal(dm_device_get_power(c), DM_POWER_ON);
	assert_int_equal(rec.n, 2);
	fixture_teardown(&f);
}

/* What a driver keeps for its resume (dm_device_keep_pm_state(), the
 * transition record's "=STATE DEVPATH" line) is one word of printable
 * ASCII shorter than DM_PM_STATE_MAX: anything else is EINVAL, a line
 * of the record never split or joined. */
static void test_kept_state_is_one_printable_word(void **state)
{
	(void)state;
	char longest[DM_PM_STATE_MAX + 1];
	memset(longest, 'x', sizeof(longest));
	longest[DM_PM_STATE_MAX - 1] = '\0';
	static const char *const good[] = { "x", "!", "~", "control=on,delay=2000",
					    "pm=0x44,cfg=8680..." };
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (!dm_pm_state_is_valid(good[i]))
			fail_msg("'%s' refused", good[i]);
	assert_true(dm_pm_state_is_valid(longest));
	static const char *const bad[] = { "",	    " x",    "x ",	   "a b",     "a\tb",
					   "a\nb",  "a\rb",  "x\n",	   "\x01",    "\x7f",
					   "a\x7f", "caf\xc3\xa9", "\xff" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (dm_pm_state_is_valid(bad[i]))
			fail_msg("state #%zu ('%s') taken", i, bad[i]);
	longest[DM_PM_STATE_MAX - 1] = 'x';
	longest[DM_PM_STATE_MAX] = '\0';
	assert_false(dm_pm_state_is_valid(longest));

	/* and a driver asking to keep one is refused before the engine hears it */
	struct fixture f;
	fixed_setup(&f, true);
	assert_int_equal(dm_device_keep_pm_state(f.t.dev[0], "two words"), -EINVAL);
	assert_int_equal(dm_device_keep_pm_state(f.t.dev[0], longest), -EINVAL);
	fixture_teardown(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_failed_resume_is_reported_and_the_walk_completes),
		cmocka_unit_test(test_suspend_children_first_resume_parents_first),
		cmocka_unit_test(test_failure_at_every_position_rolls_back_exactly),
		cmocka_unit_test(test_a_good_suspend_clears_power_error_and_hooks_are_timed),
		cmocka_unit_test(test_subtree_and_ancestors_and_log),
		cmocka_unit_test(test_pool_keeps_the_order),
		cmocka_unit_test(test_pool_failure_rolls_back_exactly),
		cmocka_unit_test(test_pool_more_jobs_than_threads),
		cmocka_unit_test(test_busy_during_a_transition),
		cmocka_unit_test(test_log_read_during_the_walk),
		cmocka_unit_test(test_removed_during_the_walk),
		cmocka_unit_test(test_transition_record),
		cmocka_unit_test(test_suspend_drops_a_claim_the_kernel_took),
		cmocka_unit_test(test_suspend_keeps_a_claim_given_back),
		cmocka_unit_test(test_recheck_follows_the_kernel_binding),
		cmocka_unit_test(test_suspend_eclaim_releases),
		cmocka_unit_test(test_record_follows_no_symlink),
		cmocka_unit_test(test_recovery_keeps_what_failed),
		cmocka_unit_test(test_untrusted_record_is_refused),
		cmocka_unit_test(test_serial_walk_order_exactly),
		cmocka_unit_test(test_inline_dispatch_keeps_the_serial_order),
		cmocka_unit_test(test_serial_walk_order_with_links),
		cmocka_unit_test(test_inline_dispatch_order_with_links),
		cmocka_unit_test(test_power_refuses_every_other_word),
		cmocka_unit_test(test_kept_state_is_one_printable_word),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
