/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-helper.c - the hotplug helper's queue (src/hotplug/helper.c): it is
 * bounded, a device has at most one call waiting (a newer event replaces
 * it), and what is dropped is counted. The helper program run here waits
 * until the test creates a file, so no call ends while the queue is looked
 * at.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hotplug/helper.h"
#include "drivers/hookenv.h"

struct calls {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	char log[64][64]; /* "action devpath" of each call, in order */
	size_t n;
};

struct fixture {
	char dir[64];
	char go[PATH_MAX];
	struct calls calls;
	struct dm_helper *h;
};

static void on_done(const char *action, const char *devpath, int result, void *data)
{
	struct calls *c = data;
	pthread_mutex_lock(&c->lock);
	if (c->n < 64)
		snprintf(c->log[c->n], sizeof(c->log[0]), "%s %s", action, devpath);
	c->n++;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/test-helper-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->go, sizeof(f->go), "%s/go", f->dir);
	pthread_mutex_init(&f->calls.lock, NULL);
	pthread_cond_init(&f->calls.cond, NULL);
	char cmd[PATH_MAX + 128];
	snprintf(cmd, sizeof(cmd), "/bin/sh -c 'while ! test -e %s; do sleep 0.01; done'", f->go);
	assert_int_equal(dm_helper_new(cmd, 600000, on_done, &f->calls, &f->h), 0);
	*state = f;
	return 0;
}

/* Lets every call end. */
static void release(struct fixture *f)
{
	int fd = open(f->go, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	release(f);
	dm_helper_free(f->h);
	unlink(f->go);
	rmdir(f->dir);
	pthread_cond_destroy(&f->calls.cond);
	pthread_mutex_destroy(&f->calls.lock);
	free(f);
	return 0;
}

static char **env(const char *action)
{
	char **e = calloc(3, sizeof(*e));
	assert_non_null(e);
	assert_true(asprintf(&e[0], "PATH=/usr/bin:/bin") > 0);
	assert_true(asprintf(&e[1], "ACTION=%s", action) > 0);
	return e;
}

static void queue(struct fixture *f, const char *action, const char *devpath)
{
	dm_helper_queue(f->h, action, devpath, env(action));
}

static struct dm_helper_stats stats(struct fixture *f)
{
	struct dm_helper_stats s;
	dm_helper_get_stats(f->h, &s);
	return s;
}

static void test_flapping_device_is_bounded(void **state)
{
	struct fixture *f = *state;
	for (size_t i = 0; i < 20000; i++) {
		queue(f, i % 2 ? "remove" : "add", "/devices/flap");
		/* one call under way, at most one waiting */
		assert_true(stats(f).jobs <= 2);
	}
	struct dm_helper_stats s = stats(f);
	assert_int_equal(s.merged + s.jobs, 20000);
	assert_int_equal(s.dropped, 0);
}

static void test_queue_is_bounded_and_drops_counted(void **state)
{
	struct fixture *f = *state;
	char devpath[64];
	for (size_t i = 0; i < DM_HELPER_MAX_JOBS + 100; i++) {
		snprintf(devpath, sizeof(devpath), "/devices/d%zu", i);
		queue(f, "add", devpath);
	}
	struct dm_helper_stats s = stats(f);
	assert_int_equal(s.jobs, DM_HELPER_MAX_JOBS);
	assert_int_equal(s.dropped, 100);
	/* a device with a call waiting (not one of the few under way) still
	 * gets its newer event: it is merged, not dropped */
	for (size_t i = 100; i < 110; i++) {
		snprintf(devpath, sizeof(devpath), "/devices/d%zu", i);
		queue(f, "change", devpath);
	}
	s = stats(f);
	assert_int_equal(s.jobs, DM_HELPER_MAX_JOBS);
	assert_int_equal(s.dropped, 100);
	assert_int_equal(s.merged, 10);
}

/* Waits until @n calls ended. */
static void wait_calls(struct fixture *f, size_t n)
{
	pthread_mutex_lock(&f->calls.lock);
	while (f->calls.n < n)
		pthread_cond_wait(&f->calls.cond, &f->calls.lock);
	pthread_mutex_unlock(&f->calls.lock);
}

/* Waits until @n calls are under way (none can end before the release):
 * the first call of a device starts on an idle thread. */
static void wait_running(struct fixture *f, size_t n)
{
	while (stats(f).running != n)
		sched_yield();
}

static void test_what_replaces_what(void **state)
{
	struct fixture *f = *state;
	/* under way: a change of A; waiting: its add, then a change (still
	 * the add: the helper has not seen the device yet) */
	queue(f, "change", "/devices/A");
	wait_running(f, 1);
	queue(f, "add", "/devices/A");
	queue(f, "change", "/devices/A");
	/* B: add under way; a remove replaces the change that waited */
	queue(f, "add", "/devices/B");
	wait_running(f, 2);
	queue(f, "change", "/devices/B");
	queue(f, "remove", "/devices/B");
	struct dm_helper_stats s = stats(f);
	assert_int_equal(s.jobs, 4);
	assert_int_equal(s.merged, 2);
	release(f);
	wait_calls(f, 4);
	size_t a = 0, b = 0;
	const char *want_a[] = { "change /devices/A", "add /devices/A" };
	const char *want_b[] = { "add /devices/B", "remove /devices/B" };
	for (size_t i = 0; i < 4; i++) {
		if (strstr(f->calls.log[i], "/devices/A"))
			assert_string_equal(f->calls.log[i], want_a[a++]);
		else
			assert_string_equal(f->calls.log[i], want_b[b++]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_flapping_device_is_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_queue_is_bounded_and_drops_counted, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_what_replaces_what, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
