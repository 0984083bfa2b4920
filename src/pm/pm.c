/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pm.c - ordered suspend/resume over the global list, on a worker pool.
 *
 * A transition takes a referenced snapshot of the subtree (pre-order, with
 * parent indices) and walks it as a dependency graph: on suspend a device is
 * ready once all its children are done, on resume once its parent is. The
 * dispatcher pops ready devices last-in first-out, which walks the list
 * backwards on suspend and forwards on resume, so with every hook inline the
 * order is exactly the serial one. Hooks known to be quick (devices without
 * the hook, drivers whose hooks took under POOL_USEC so far) run inline on
 * the dispatcher; the others go to the pool, so independent subtrees
 * overlap. A failing suspend stops dispatching, waits for what is in
 * flight, and resumes, in forward order, every device this transition
 * suspended.
 */
#include "pm.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Hooks that took longer than this on average go to the pool. */
#define POOL_USEC 50
/* Hooks mostly wait (for a program, a sysfs write, a device), so the pool
 * grows past the CPU count: a thread is added whenever a job finds none
 * idle, up to this many. */
#define POOL_MAX 64
/* Hooks run in these threads, programs are started from them: small stacks
 * keep a large pool cheap. */
#define POOL_STACK (256 * 1024)

struct pm_entry {
	const char *phase;
	struct dm_device *dev; /* referenced; its path is made when shown */
	int result;
	long usec;
};

struct pm_item {
	struct dm_device *dev;
	int parent;
	int first_child, next_sibling;
	int pending; /* suspend: children not done yet */
	bool done; /* this transition suspended it */
};

/* One transition in progress. */
struct walk {
	struct dm_pm *pm;
	struct pm_item *items;
	size_t n;
	bool suspend;
	unsigned flags;
	int *ready; /* a stack of item indices */
	size_t n_ready;
	size_t in_flight; /* on the pool */
	size_t remaining; /* not completed yet */
	int error; /* the first suspend failure */
};

struct dm_pm {
	struct dm_model *model;
	pthread_mutex_t transition; /* held for a whole transition */

	pthread_mutex_t lock; /* the journal, the pool and the current walk */
	pthread_cond_t work; /* pool: a job was queued, or quit */
	pthread_cond_t progress; /* dispatcher: a pool job completed */
	struct pm_entry *log;
	size_t n_log, cap_log;
	pthread_t threads[POOL_MAX];
	size_t n_threads, n_idle;
	int *jobs; /* item indices queued for the pool */
	size_t n_jobs, cap_jobs;
	struct walk *walk;
	bool quit;
};

static long now_usec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

/* ---- the journal ---- */

static void log_clear_locked(struct dm_pm *pm)
{
	for (size_t i = 0; i < pm->n_log; i++)
		dm_device_unref(pm->log[i].dev);
	pm->n_log = 0;
}

static void log_add_locked(struct dm_pm *pm, const char *phase, struct dm_device *dev, int result,
			   long usec)
{
	if (pm->n_log == pm->cap_log) {
		size_t cap = pm->cap_log ? pm->cap_log * 2 : 256;
		struct pm_entry *l = realloc(pm->log, cap * sizeof(*l));
		if (!l)
			return; /* the journal is best effort; the transition goes on */
		pm->log = l;
		pm->cap_log = cap;
	}
	pm->log[pm->n_log++] = (struct pm_entry){ phase, dm_device_ref(dev), result, usec };
}

int dm_pm_show_log(struct dm_pm *pm, char **ret, size_t *ret_len)
{
	char path[4096];
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return -ENOMEM;
	pthread_mutex_lock(&pm->lock);
	for (size_t i = 0; i < pm->n_log; i++) {
		const struct pm_entry *e = &pm->log[i];
		dm_model_read_lock(pm->model);
		int n = dm_device_path_locked(e->dev, path, sizeof(path));
		dm_model_unlock(pm->model);
		if (n < 0)
			snprintf(path, sizeof(path), "%s", dm_device_get_name(e->dev));
		const char *res = e->result == 0 ? "ok" : strerrorname_np(-e->result);
		fprintf(f, "%zu %s %s %s %ld\n", i + 1, e->phase, n == 0 ? "." : path,
			res ? res : "EIO", e->usec);
	}
	pthread_mutex_unlock(&pm->lock);
	if (fclose(f) != 0) {
		free(buf);
		return -ENOMEM;
	}
	*ret = buf;
	*ret_len = len;
	return 0;
}

/* ---- hooks ---- */

static void set_error(struct dm_device *dev, const char *phase, int r)
{
	char msg[256];
	const char *name = strerrorname_np(-r);
	snprintf(msg, sizeof(msg), "%s %s %s", phase, name ? name : "EIO", strerror(-r));
	dm_device_set_power_error(dev, msg);
}

/* Calls one device's hook, without pm->lock (a hook may read the mount,
 * power_log included); *ret_usec gets its duration. @clock, when not NULL,
 * holds the time the call starts (the previous call's end: consecutive
 * inline calls read the clock once each) and gets the time it ended. */
static int call_hook(struct dm_device *dev, bool suspend, unsigned flags, long *clock,
		     long *ret_usec)
{
	struct dm_driver *drv = NULL;
	long t0 = clock ? *clock : now_usec();
	int r = flags & DM_PM_DRY_RUN
			? 0
			: dm_device_call_driver(dev, suspend ? DM_CALL_SUSPEND : DM_CALL_RESUME, &drv);
	long t1 = now_usec();
	if (clock)
		*clock = t1;
	*ret_usec = t1 - t0;
	if (drv) {
		dm_driver_record_pm_usec(drv, (unsigned)(*ret_usec > 1000000 ? 1000000 : *ret_usec));
		dm_driver_unref(drv);
	}
	return r;
}

/* Journals a hook call and applies its result to the device; pm->lock held. */
static int record_locked(struct dm_pm *pm, struct dm_device *dev, bool suspend, unsigned flags,
			 int r, long usec)
{
	const char *phase = suspend ? "suspend" : "resume";
	log_add_locked(pm, phase, dev, r, usec);
	if (flags & DM_PM_DRY_RUN)
		return 0;
	if (r < 0)
		set_error(dev, phase, r);
	else if (suspend)
		dm_device_set_power_error(dev, NULL);
	/* A device whose resume failed counts as on: nothing would ever resume
	 * it otherwise, and the failure stays in power_error. */
	if (r == 0 || !suspend)
		dm_device_set_power(dev, suspend ? DM_POWER_SUSPENDED : DM_POWER_ON);
	return r;
}

/* Calls and records, for the walks outside the dispatcher. */
static int run_hook(struct dm_pm *pm, struct dm_device *dev, bool suspend, unsigned flags)
{
	long usec;
	int r = call_hook(dev, suspend, flags, NULL, &usec);
	pthread_mutex_lock(&pm->lock);
	r = record_locked(pm, dev, suspend, flags, r, usec);
	pthread_mutex_unlock(&pm->lock);
	return r;
}

/* Whether @dev's hook is quick enough to run on the dispatcher. */
static bool runs_inline(struct dm_device *dev, bool suspend, unsigned flags)
{
	if (flags & (DM_PM_DRY_RUN | DM_PM_SERIAL))
		return true;
	return dm_device_pm_cost(dev, suspend ? DM_CALL_SUSPEND : DM_CALL_RESUME) < POOL_USEC;
}

/* ---- the walk ---- */

/* Marks item @i finished with result @r and readies what now can run.
 * Called with pm->lock held. */
static void complete_locked(struct walk *w, int i, int r)
{
	struct pm_item *it = &w->items[i];
	w->remaining--;
	if (w->suspend) {
		if (r < 0) {
			if (!w->error)
				w->error = r;
			return;
		}
		it->done = true;
		if (it->parent >= 0 && --w->items[it->parent].pending == 0)
			w->ready[w->n_ready++] = it->parent;
	} else {
		/* the children lists run backwards, so they pop in list order */
		for (int c = it->first_child; c >= 0; c = w->items[c].next_sibling)
			w->ready[w->n_ready++] = c;
	}
}

static int item_skip(struct walk *w, int i)
{
	/* nothing to do: already in the target state, or removed meanwhile */
	struct dm_device *dev = w->items[i].dev;
	enum dm_power_state st = dm_device_get_power(dev);
	return dm_device_is_dead(dev) || (w->suspend ? st == DM_POWER_SUSPENDED : st == DM_POWER_ON);
}

static void *pool_thread(void *data)
{
	struct dm_pm *pm = data;
	pthread_mutex_lock(&pm->lock);
	for (;;) {
		pm->n_idle++;
		while (!pm->quit && pm->n_jobs == 0)
			pthread_cond_wait(&pm->work, &pm->lock);
		pm->n_idle--;
		if (pm->quit)
			break;
		int i = pm->jobs[--pm->n_jobs];
		struct walk *w = pm->walk;
		struct dm_device *dev = w->items[i].dev;
		pthread_mutex_unlock(&pm->lock);
		long usec;
		int r = call_hook(dev, w->suspend, w->flags, NULL, &usec);
		pthread_mutex_lock(&pm->lock);
		w->in_flight--;
		complete_locked(w, i, record_locked(pm, dev, w->suspend, w->flags, r, usec));
		pthread_cond_signal(&pm->progress);
	}
	pthread_mutex_unlock(&pm->lock);
	return NULL;
}

/* Adds a thread when none is idle; with no thread at all (none could be
 * started) the dispatcher runs the hook itself. */
static void pool_grow_locked(struct dm_pm *pm)
{
	if (pm->n_idle > pm->n_jobs || pm->n_threads == POOL_MAX)
		return;
	pthread_attr_t attr;
	if (pthread_attr_init(&attr) != 0)
		return;
	pthread_attr_setstacksize(&attr, POOL_STACK);
	if (pthread_create(&pm->threads[pm->n_threads], &attr, pool_thread, pm) == 0)
		pm->n_threads++;
	pthread_attr_destroy(&attr);
}

static int queue_job_locked(struct dm_pm *pm, int i)
{
	if (pm->n_jobs == pm->cap_jobs) {
		size_t cap = pm->cap_jobs ? pm->cap_jobs * 2 : 64;
		int *j = realloc(pm->jobs, cap * sizeof(*j));
		if (!j)
			return -ENOMEM;
		pm->jobs = j;
		pm->cap_jobs = cap;
	}
	pm->jobs[pm->n_jobs++] = i;
	pthread_cond_signal(&pm->work);
	return 0;
}

/* Runs the walk to its end (or, on suspend, to its first failure and the
 * drain of what was in flight). Called with pm->lock held. */
static void dispatch_locked(struct walk *w)
{
	struct dm_pm *pm = w->pm;
	long clock = now_usec();
	while (w->remaining > 0 && !(w->suspend && w->error)) {
		if (w->n_ready == 0) {
			pthread_cond_wait(&pm->progress, &pm->lock);
			clock = now_usec();
			continue;
		}
		int i = w->ready[--w->n_ready];
		struct dm_device *dev = w->items[i].dev;
		if (item_skip(w, i)) {
			complete_locked(w, i, 0);
			w->items[i].done = false; /* not this transition's to undo */
			continue;
		}
		if (!runs_inline(dev, w->suspend, w->flags)) {
			pool_grow_locked(pm);
			if (pm->n_threads && queue_job_locked(pm, i) == 0) {
				w->in_flight++;
				continue;
			}
		}
		pthread_mutex_unlock(&pm->lock);
		long usec;
		int r = call_hook(dev, w->suspend, w->flags, &clock, &usec);
		pthread_mutex_lock(&pm->lock);
		complete_locked(w, i, record_locked(pm, dev, w->suspend, w->flags, r, usec));
	}
	while (w->in_flight > 0)
		pthread_cond_wait(&pm->progress, &pm->lock);
}

static int walk_run(struct dm_pm *pm, struct dm_device *top, bool suspend, unsigned flags)
{
	struct dm_device **devs;
	int *parent;
	size_t n;
	int r = dm_model_snapshot_tree(pm->model, top, &devs, &parent, &n);
	if (r < 0)
		return r;
	struct walk w = { .pm = pm, .n = n, .suspend = suspend, .flags = flags, .remaining = n };
	w.items = calloc(n ? n : 1, sizeof(*w.items));
	w.ready = malloc((n ? n : 1) * sizeof(*w.ready));
	if (!w.items || !w.ready) {
		r = -ENOMEM;
		goto out_free;
	}
	for (size_t i = 0; i < n; i++)
		w.items[i] = (struct pm_item){ .dev = devs[i], .parent = parent[i],
					       .first_child = -1, .next_sibling = -1 };
	/* children lists, last child first */
	for (size_t i = 0; i < n; i++) {
		int p = parent[i];
		if (p < 0)
			continue;
		w.items[i].next_sibling = w.items[p].first_child;
		w.items[p].first_child = (int)i;
		w.items[p].pending++;
	}
	if (suspend) {
		for (size_t i = 0; i < n; i++)
			if (w.items[i].pending == 0)
				w.ready[w.n_ready++] = (int)i;
	} else {
		for (size_t i = n; i-- > 0;)
			if (parent[i] < 0)
				w.ready[w.n_ready++] = (int)i;
	}

	pthread_mutex_lock(&pm->lock);
	pm->walk = &w;
	dispatch_locked(&w);
	pm->walk = NULL;
	pthread_mutex_unlock(&pm->lock);

	r = w.error;
	if (suspend && r < 0) {
		/* roll back, parents first: exactly what this walk suspended */
		for (size_t i = 0; i < n; i++)
			if (w.items[i].done)
				run_hook(pm, w.items[i].dev, false, flags);
		r = -EIO;
	} else if (!suspend) {
		r = 0;
	}
out_free:
	free(w.items);
	free(w.ready);
	free(parent);
	dm_device_array_free(devs, n);
	return r;
}

static int resume_ancestors(struct dm_pm *pm, struct dm_device *top, unsigned flags)
{
	struct dm_device *chain[256];
	size_t depth = 0;
	int ret = 0;
	dm_model_read_lock(pm->model);
	for (struct dm_device *p = dm_device_get_parent_locked(top); p && depth < 256;
	     p = dm_device_get_parent_locked(p))
		chain[depth++] = dm_device_ref(p);
	dm_model_unlock(pm->model);
	while (depth-- > 0) {
		if (dm_device_get_power(chain[depth]) == DM_POWER_SUSPENDED &&
		    !dm_device_is_dead(chain[depth]) && run_hook(pm, chain[depth], false, flags) < 0)
			ret = -EIO;
		dm_device_unref(chain[depth]);
	}
	return ret;
}

static int transition(struct dm_pm *pm, struct dm_device *dev, unsigned flags, bool suspend)
{
	if (pthread_mutex_trylock(&pm->transition) != 0)
		return -EBUSY;
	pthread_mutex_lock(&pm->lock);
	log_clear_locked(pm);
	pthread_mutex_unlock(&pm->lock);
	struct dm_device *top = dev ? dev : dm_model_get_root(pm->model);
	int r = 0;
	if (!suspend)
		r = resume_ancestors(pm, top, flags);
	int r2 = walk_run(pm, top, suspend, flags);
	pthread_mutex_unlock(&pm->transition);
	return r2 < 0 ? r2 : r;
}

int dm_pm_suspend(struct dm_pm *pm, struct dm_device *dev, unsigned flags)
{
	return transition(pm, dev, flags, true);
}

int dm_pm_resume(struct dm_pm *pm, struct dm_device *dev, unsigned flags)
{
	return transition(pm, dev, flags, false);
}

static int pm_request(struct dm_device *dev, enum dm_pm_request req, void *data)
{
	struct dm_pm *pm = data;
	switch (req) {
	case DM_PM_SUSPEND:
		return dm_pm_suspend(pm, dev, 0);
	case DM_PM_RESUME:
		return dm_pm_resume(pm, dev, 0);
	case DM_PM_SUSPEND_DRY_RUN:
		return dm_pm_suspend(pm, dev, DM_PM_DRY_RUN);
	case DM_PM_RESUME_DRY_RUN:
		return dm_pm_resume(pm, dev, DM_PM_DRY_RUN);
	}
	return -EINVAL;
}

static int pm_show_log(char **ret, size_t *ret_len, void *data)
{
	return dm_pm_show_log(data, ret, ret_len);
}

static const struct dm_pm_handler pm_handler = {
	.request = pm_request,
	.show_log = pm_show_log,
};

int dm_pm_new(struct dm_model *m, struct dm_pm **ret)
{
	struct dm_pm *pm = calloc(1, sizeof(*pm));
	if (!pm)
		return -ENOMEM;
	pm->model = m;
	pthread_mutex_init(&pm->transition, NULL);
	pthread_mutex_init(&pm->lock, NULL);
	pthread_cond_init(&pm->work, NULL);
	pthread_cond_init(&pm->progress, NULL);
	dm_model_set_pm_handler(m, &pm_handler, pm);
	*ret = pm;
	return 0;
}

void dm_pm_free(struct dm_pm *pm)
{
	if (!pm)
		return;
	dm_model_set_pm_handler(pm->model, NULL, NULL);
	pthread_mutex_lock(&pm->lock);
	pm->quit = true;
	pthread_cond_broadcast(&pm->work);
	pthread_mutex_unlock(&pm->lock);
	for (size_t i = 0; i < pm->n_threads; i++)
		pthread_join(pm->threads[i], NULL);
	pthread_mutex_lock(&pm->lock);
	log_clear_locked(pm);
	pthread_mutex_unlock(&pm->lock);
	free(pm->log);
	free(pm->jobs);
	pthread_cond_destroy(&pm->work);
	pthread_cond_destroy(&pm->progress);
	pthread_mutex_destroy(&pm->transition);
	pthread_mutex_destroy(&pm->lock);
	free(pm);
}
