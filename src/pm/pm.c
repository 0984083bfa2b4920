/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* pm.c - ordered suspend/resume with rollback and a journal. */
#include "pm.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct pm_entry {
	const char *phase;
	char *path;
	int result;
	long usec;
};

struct dm_pm {
	struct dm_model *model;
	pthread_mutex_t transition; /* held for a whole transition */
	pthread_mutex_t log_lock; /* protects the journal */
	struct pm_entry *log;
	size_t n_log, cap_log;
};

static void log_clear(struct dm_pm *pm)
{
	pthread_mutex_lock(&pm->log_lock);
	for (size_t i = 0; i < pm->n_log; i++)
		free(pm->log[i].path);
	pm->n_log = 0;
	pthread_mutex_unlock(&pm->log_lock);
}

static void log_add(struct dm_pm *pm, const char *phase, struct dm_device *dev, int result,
		    long usec)
{
	char path[4096];
	dm_model_read_lock(pm->model);
	int n = dm_device_path_locked(dev, path, sizeof(path));
	dm_model_unlock(pm->model);
	if (n < 0)
		snprintf(path, sizeof(path), "%s", dm_device_get_name(dev));
	else if (n == 0)
		snprintf(path, sizeof(path), ".");

	char *p = strdup(path);
	if (!p)
		return; /* the journal is best effort; the transition goes on */
	pthread_mutex_lock(&pm->log_lock);
	if (pm->n_log == pm->cap_log) {
		size_t cap = pm->cap_log ? pm->cap_log * 2 : 64;
		struct pm_entry *l = realloc(pm->log, cap * sizeof(*l));
		if (l) {
			pm->log = l;
			pm->cap_log = cap;
		}
	}
	if (pm->n_log < pm->cap_log)
		pm->log[pm->n_log++] = (struct pm_entry){ phase, p, result, usec };
	else
		free(p);
	pthread_mutex_unlock(&pm->log_lock);
}

static long now_usec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

/* Calls one hook, journals it, and returns its result. */
static int pm_call(struct dm_pm *pm, struct dm_device *dev, const char *phase, int which,
		   unsigned flags)
{
	long t0 = now_usec();
	int r = flags & DM_PM_DRY_RUN ? 0 : dm_device_call_driver(dev, which);
	log_add(pm, phase, dev, r, now_usec() - t0);
	return r;
}

static void set_error(struct dm_device *dev, const char *phase, int r)
{
	char msg[256];
	snprintf(msg, sizeof(msg), "%s %s %s", phase, strerrorname_np(-r) ?: "EIO", strerror(-r));
	dm_device_set_power_error(dev, msg);
}

static int resume_one(struct dm_pm *pm, struct dm_device *dev, unsigned flags)
{
	if (dm_device_get_power(dev) != DM_POWER_SUSPENDED || dm_device_is_dead(dev))
		return 0;
	int r = pm_call(pm, dev, "resume", DM_CALL_RESUME, flags);
	if (flags & DM_PM_DRY_RUN)
		return 0;
	if (r < 0)
		set_error(dev, "resume", r);
	/* A device whose resume failed is still treated as on: nothing would
	 * ever resume it otherwise, and the error stays in power_error. */
	dm_device_set_power(dev, DM_POWER_ON);
	return r;
}

static int do_suspend(struct dm_pm *pm, struct dm_device *top, unsigned flags)
{
	struct dm_device **devs;
	size_t n;
	int r = dm_model_snapshot(pm->model, top, &devs, &n);
	if (r < 0)
		return r;
	/* Mark which devices this transition suspends, to roll back exactly those. */
	bool *done = calloc(n ? n : 1, sizeof(*done));
	if (!done) {
		dm_device_array_free(devs, n);
		return -ENOMEM;
	}
	size_t i = n;
	while (i-- > 0) {
		struct dm_device *dev = devs[i];
		if (dm_device_get_power(dev) == DM_POWER_SUSPENDED || dm_device_is_dead(dev))
			continue;
		if (!(flags & DM_PM_DRY_RUN))
			dm_device_set_power_error(dev, NULL);
		r = pm_call(pm, dev, "suspend", DM_CALL_SUSPEND, flags);
		if (r < 0) {
			set_error(dev, "suspend", r);
			break;
		}
		done[i] = true;
		if (!(flags & DM_PM_DRY_RUN))
			dm_device_set_power(dev, DM_POWER_SUSPENDED);
	}
	if (r < 0) {
		/* roll back, parents first */
		for (size_t k = 0; k < n; k++)
			if (done[k])
				resume_one(pm, devs[k], flags);
		r = -EIO;
	}
	free(done);
	dm_device_array_free(devs, n);
	return r;
}

static int do_resume(struct dm_pm *pm, struct dm_device *top, unsigned flags)
{
	int ret = 0;
	/* suspended ancestors first, top-down */
	struct dm_device *chain[256];
	size_t depth = 0;
	dm_model_read_lock(pm->model);
	for (struct dm_device *p = dm_device_get_parent_locked(top); p && depth < 256;
	     p = dm_device_get_parent_locked(p))
		chain[depth++] = dm_device_ref(p);
	dm_model_unlock(pm->model);
	while (depth-- > 0) {
		if (resume_one(pm, chain[depth], flags) < 0)
			ret = -EIO;
		dm_device_unref(chain[depth]);
	}

	struct dm_device **devs;
	size_t n;
	int r = dm_model_snapshot(pm->model, top, &devs, &n);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		if (resume_one(pm, devs[i], flags) < 0)
			ret = -EIO;
	dm_device_array_free(devs, n);
	return ret;
}

static int transition(struct dm_pm *pm, struct dm_device *dev, unsigned flags, bool suspend)
{
	if (pthread_mutex_trylock(&pm->transition) != 0)
		return -EBUSY;
	log_clear(pm);
	struct dm_device *top = dev ? dev : dm_model_get_root(pm->model);
	int r = suspend ? do_suspend(pm, top, flags) : do_resume(pm, top, flags);
	pthread_mutex_unlock(&pm->transition);
	return r;
}

int dm_pm_suspend(struct dm_pm *pm, struct dm_device *dev, unsigned flags)
{
	return transition(pm, dev, flags, true);
}

int dm_pm_resume(struct dm_pm *pm, struct dm_device *dev, unsigned flags)
{
	return transition(pm, dev, flags, false);
}

int dm_pm_show_log(struct dm_pm *pm, char *buf, size_t size)
{
	size_t len = 0;
	pthread_mutex_lock(&pm->log_lock);
	for (size_t i = 0; i < pm->n_log && len + 1 < size; i++) {
		const struct pm_entry *e = &pm->log[i];
		char res[32];
		if (e->result == 0)
			snprintf(res, sizeof(res), "ok");
		else
			snprintf(res, sizeof(res), "%s", strerrorname_np(-e->result) ?: "EIO");
		len += dm_emit(buf + len, size - len, "%zu %s %s %s %ld\n", i + 1, e->phase,
			       e->path, res, e->usec);
	}
	pthread_mutex_unlock(&pm->log_lock);
	return (int)len;
}

static int pm_request(struct dm_device *dev, enum dm_pm_request req, void *data)
{
	struct dm_pm *pm = data;
	return req == DM_PM_SUSPEND ? dm_pm_suspend(pm, dev, 0) : dm_pm_resume(pm, dev, 0);
}

static int pm_show_log(char *buf, size_t size, void *data)
{
	return dm_pm_show_log(data, buf, size);
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
	pthread_mutex_init(&pm->log_lock, NULL);
	dm_model_set_pm_handler(m, &pm_handler, pm);
	*ret = pm;
	return 0;
}

void dm_pm_free(struct dm_pm *pm)
{
	if (!pm)
		return;
	dm_model_set_pm_handler(pm->model, NULL, NULL);
	log_clear(pm);
	free(pm->log);
	pthread_mutex_destroy(&pm->transition);
	pthread_mutex_destroy(&pm->log_lock);
	free(pm);
}
