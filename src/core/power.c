/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* power.c - a device's power as the model keeps it (the 2002 model's
 * drivers/base/power.c): the driver's suspend() and resume() hooks called
 * under the device mutex, their measured cost for the PM engine's order,
 * the device's power state and power_error, the state a PM handler keeps,
 * and the handler's journal (power_log) as one shared copy
 * (docs/design.md §8). The walks themselves are src/pm/pm.c's. */
#include "model-private.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int dm_device_call_driver(struct dm_device *dev, int which, uint64_t *clock)
{
	int r = 0;
	dm_device_lock(dev);
	/* A claim that no longer holds is dropped before its suspend writes
	 * anything: a kernel driver the daemon was not told of (an event
	 * still queued, or lost) owns the device now. The flag says it from
	 * the device's first line (claim_holds() reads two more). */
	if (which == DM_CALL_SUSPEND &&
	    (atomic_load_explicit(&dev->flags, memory_order_relaxed) & DM_DEV_F_CLAIM_STALE))
		dm_device_drop_claim_mutex_held(dev);
	/* binding changes only under the device mutex: the driver stays */
	struct dm_driver *drv = dev->driver, *released = NULL;
	dm_model_assert_not_held(dev->model); /* hooks run without it */
	if (drv && drv->ops) {
		if (which == DM_CALL_SUSPEND && drv->ops->suspend) {
			r = drv->ops->suspend(dev, drv->data);
			/* the driver found the device taken meanwhile, and
			 * changed nothing */
			if (r == -DM_ECLAIM && drv->kind == DM_DRIVER_USER) {
				released = dm_driver_ref(drv); /* for its estimate below */
				dm_device_release_mutex_held(dev);
				r = 0;
			}
		} else if (which == DM_CALL_RESUME && drv->ops->resume) {
			r = drv->ops->resume(dev, drv->data);
		}
	}
	if (clock) {
		uint64_t t1 = dm_clock_now();
		long usec = dm_clock_usec(t1 - *clock);
		if (drv)
			dm_driver_record_pm_usec(drv, usec > 1000000 ? 1000000 : (unsigned)usec);
		*clock = t1;
	}
	dm_device_unlock(dev);
	dm_driver_unref(released);
	return r;
}

bool dm_pm_state_is_valid(const char *state)
{
	size_t len = strlen(state);
	if (len == 0 || len >= DM_PM_STATE_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (state[i] <= ' ' || state[i] > '~')
			return false;
	return true;
}

/* The PM handler, taken under the lock (it changes only at start and end). */
static const struct dm_pm_handler *pm_handler(struct dm_device *dev, void **data)
{
	dm_model_read_lock(dev->model);
	const struct dm_pm_handler *h = dev->model->pm_handler;
	*data = dev->model->pm_data;
	dm_model_unlock(dev->model);
	return h;
}

int dm_device_keep_pm_state(struct dm_device *dev, const char *state)
{
	if (!dm_pm_state_is_valid(state))
		return -EINVAL;
	void *data;
	const struct dm_pm_handler *h = pm_handler(dev, &data);
	return h && h->keep_state ? h->keep_state(dev, state, data) : 0;
}

int dm_device_get_kept_pm_state(struct dm_device *dev, char *buf, size_t size)
{
	void *data;
	const struct dm_pm_handler *h = pm_handler(dev, &data);
	return h && h->kept_state ? h->kept_state(dev, buf, size, data) : -ENOENT;
}

int dm_driver_pm_cost(const struct dm_driver *drv, int which)
{
	bool has = drv && drv->ops &&
		   (which == DM_CALL_SUSPEND ? drv->ops->suspend != NULL : drv->ops->resume != NULL);
	return has ? (int)atomic_load_explicit(&((struct dm_driver *)drv)->pm_usec,
					      memory_order_relaxed)
		   : -1;
}

int dm_device_pm_cost(struct dm_device *dev, int which)
{
	dm_model_read_lock(dev->model);
	int usec = dm_driver_pm_cost(dev->driver, which);
	dm_model_unlock(dev->model);
	return usec;
}

void dm_driver_record_pm_usec(struct dm_driver *drv, unsigned usec)
{
	/* the shorter of the last two calls: one call that was preempted or
	 * faulted does not send a quick driver to the pool, two slow ones in
	 * a row do, and one quick call brings it back. Stored only when it
	 * moves, so that many threads calling one driver's quick hooks do not
	 * fight over its cache line. */
	unsigned last = atomic_load_explicit(&drv->pm_last_usec, memory_order_relaxed);
	if (last != usec)
		atomic_store_explicit(&drv->pm_last_usec, usec, memory_order_relaxed);
	unsigned est = last < usec ? last : usec;
	if (atomic_load_explicit(&drv->pm_usec, memory_order_relaxed) != est)
		atomic_store_explicit(&drv->pm_usec, est, memory_order_relaxed);
}

enum dm_power_state dm_device_get_power(const struct dm_device *dev)
{
	return (enum dm_power_state)atomic_load(&dev->power);
}

/* The power files may be cached (DM_ATTR_ANNOUNCED): each change counts and
 * is announced, without the lock, which a PM walk does not hold. The
 * listener is set before and cleared after any PM transition runs. */
static void power_changed(struct dm_device *dev)
{
	struct dm_model *m = dev->model;
	atomic_fetch_add(&dev->changes, 1);
	if (m->listener && m->listener->power_changed)
		m->listener->power_changed(dev, m->listener_data);
}

void dm_device_set_power(struct dm_device *dev, enum dm_power_state st)
{
	if (atomic_exchange(&dev->power, (uint8_t)st) != st)
		power_changed(dev);
}

int dm_device_set_power_error(struct dm_device *dev, const char *msg)
{
	struct dm_model *m = dev->model;
	bool clear = !msg || !*msg;
	/* clearing what is already clear, the common case of a transition */
	if (clear && !atomic_load_explicit(&dev->has_power_error, memory_order_acquire))
		return 0;
	dm_model_write_lock(m);
	int r = dm_set_string(&dev->power_error, clear ? NULL : msg);
	if (r == 0)
		atomic_store_explicit(&dev->has_power_error, !clear, memory_order_release);
	dm_model_unlock(m);
	if (r == 0)
		power_changed(dev);
	return r;
}

int dm_device_get_power_error(struct dm_device *dev, char *buf, size_t size)
{
	dm_model_read_lock(dev->model);
	int n = snprintf(buf, size, "%s", dev->power_error ? dev->power_error : "");
	dm_model_unlock(dev->model);
	return n < 0 ? -EIO : (size_t)n >= size ? (int)size - 1 : n;
}

void dm_model_set_pm_handler(struct dm_model *m, const struct dm_pm_handler *h, void *data)
{
	dm_model_write_lock(m);
	m->pm_handler = h;
	m->pm_data = data;
	dm_model_unlock(m);
	/* another journal: its versions say nothing of the copy kept */
	pthread_mutex_lock(&m->log_lock);
	dm_blob_unref(m->log_copy);
	m->log_copy = NULL;
	pthread_mutex_unlock(&m->log_lock);
}

/* A fresh copy of the journal (or an empty one without a handler). */
static int log_build(const struct dm_pm_handler *h, void *data, struct dm_blob **ret)
{
	char *buf = NULL;
	size_t len = 0;
	int r = h && h->show_log ? h->show_log(&buf, &len, data) : 0;
	if (r < 0)
		return r;
	if (!buf && !(buf = strdup("")))
		return -ENOMEM;
	return dm_blob_new(buf, len, ret);
}

int dm_model_show_log(struct dm_model *m, struct dm_blob **ret)
{
	dm_model_read_lock(m);
	const struct dm_pm_handler *h = m->pm_handler;
	void *data = m->pm_data;
	dm_model_unlock(m);
	if (!h || !h->log_version) {
		atomic_fetch_add_explicit(&m->log_builds, 1, memory_order_relaxed);
		return log_build(h, data, ret);
	}
	/* The version is read before the text is built: a copy holds at
	 * least what its version says, and an entry added meanwhile moves
	 * the version again, so that the next read builds anew. Built under
	 * log_lock (taken before the handler's locks and the model's): a
	 * crowd of readers of a new version waits for one copy instead of
	 * each building its own. */
	uint64_t version = h->log_version(data);
	pthread_mutex_lock(&m->log_lock);
	if (!m->log_copy || m->log_copy_version != version) {
		struct dm_blob *b;
		int r = log_build(h, data, &b);
		if (r < 0) {
			pthread_mutex_unlock(&m->log_lock);
			return r;
		}
		atomic_fetch_add_explicit(&m->log_builds, 1, memory_order_relaxed);
		dm_blob_unref(m->log_copy);
		m->log_copy = b;
		m->log_copy_version = version;
	}
	*ret = dm_blob_ref(m->log_copy);
	pthread_mutex_unlock(&m->log_lock);
	return 0;
}

uint64_t dm_model_count_log_builds(struct dm_model *m)
{
	return atomic_load_explicit(&m->log_builds, memory_order_relaxed);
}
