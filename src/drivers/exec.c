/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * exec.c - exec drivers: the drivers made from the files exec-parse.c
 * read, whose hooks run their programs, and the reload of drivers.d.
 */
#include "core/array.h"
#include "drivers/exec.h"
#include "exec-private.h"

#include "drivers/hookenv.h"
#include "drivers/needs.h"
#include "drivers/runner.h"
#include "util/conffile.h"
#include "util/log.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

static const char *const hook_actions[N_HOOKS] = { "probe", "remove", "suspend", "resume" };

/* A registered exec driver's data: what its hooks need. */
struct exec_driver {
	struct dm_driver_ops ops; /* NULL where the file has no hook */
	struct dm_model *model;
	char *name;
	char *kernel_driver; /* KernelDriver=: the one it needs, or NULL */
	struct dm_needs *needs; /* what moves the device to it (NULL: none) */
	int timeout_ms;
	char **argv[N_HOOKS];
};

static void exec_driver_free(void *data)
{
	struct exec_driver *ed = data;
	if (!ed)
		return;
	for (int h = 0; h < N_HOOKS; h++)
		dm_strv_free(ed->argv[h]);
	free(ed->name);
	free(ed->kernel_driver);
	free(ed);
}

/* Runs @hook for @dev; 0 and *ret filled when the program ran. Called
 * without the model lock (driver hooks always are). */
static int exec_run(struct exec_driver *ed, enum exec_hook hook, struct dm_device *dev,
		    struct dm_run_result *ret)
{
	char **env;
	char label[PATH_MAX + 2 * EXEC_NAME_MAX];
	int r = dm_hook_env(dev, hook_actions[hook], ed->name, NULL, &env);
	if (r < 0) {
		log_warn("%s %s %s: cannot prepare the hook: %s", hook_actions[hook],
			 dm_device_get_name(dev), ed->name, strerror(-r));
		return r;
	}
	snprintf(label, sizeof(label), "%s %s %s", hook_actions[hook], dm_device_get_name(dev),
		 ed->name);
	/* the runner logs the call, whatever its outcome */
	r = dm_run(label, (const char *const *)ed->argv[hook], (const char *const *)env,
		   ed->timeout_ms, ret);
	dm_strv_free(env);
	return r;
}

/* -errno of a hook: it could not run, or dm_run_errno(). */
static int exec_call(struct exec_driver *ed, enum exec_hook hook, struct dm_device *dev)
{
	struct dm_run_result res;
	int r = exec_run(ed, hook, dev, &res);
	if (r < 0)
		return r;
	r = dm_run_errno(&res);
	/* a probe that exited non-zero declines the device: not a failure */
	if (hook == HOOK_PROBE && r == -EIO)
		r = -ENODEV;
	dm_run_result_done(&res);
	return r;
}

/* With KernelDriver=, the device is first moved to that kernel driver
 * (needs.h: offered again once the kernel has bound it); a probe hook that
 * then declines gives it back. */
static int exec_probe(struct dm_device *dev, void *data)
{
	struct exec_driver *ed = data;
	if (ed->kernel_driver) {
		int r = ed->needs ? dm_needs_kernel_driver(ed->needs, dev, ed->kernel_driver, ed->name)
				  : -ENODEV;
		if (r < 0)
			return r == -EAGAIN ? -ENODEV : r;
	}
	int r = ed->argv[HOOK_PROBE] ? exec_call(ed, HOOK_PROBE, dev) : 0;
	if (r < 0 && ed->kernel_driver && ed->needs)
		dm_needs_release(ed->needs, dev, true);
	return r;
}

static void exec_remove(struct dm_device *dev, void *data)
{
	struct exec_driver *ed = data;
	if (ed->argv[HOOK_REMOVE])
		(void)exec_call(ed, HOOK_REMOVE, dev); /* logged by the runner */
	if (ed->kernel_driver && ed->needs)
		dm_needs_release(ed->needs, dev, false);
}

static int exec_suspend(struct dm_device *dev, void *data)
{
	return exec_call(data, HOOK_SUSPEND, dev);
}

static int exec_resume(struct dm_device *dev, void *data)
{
	return exec_call(data, HOOK_RESUME, dev);
}

/* A new driver data with the hooks of @c (which stays as it is: a reload
 * that fails registers it again). */
static int exec_driver_new(struct dm_model *m, const struct exec_conf *c,
			   struct exec_driver **ret)
{
	struct exec_driver *ed = calloc(1, sizeof(*ed));
	if (!ed)
		return -ENOMEM;
	ed->name = strdup(c->name);
	if (!ed->name) {
		free(ed);
		return -ENOMEM;
	}
	ed->model = m;
	if (c->kernel_driver && !(ed->kernel_driver = strdup(c->kernel_driver))) {
		exec_driver_free(ed);
		return -ENOMEM;
	}
	ed->timeout_ms = c->timeout_s * 1000;
	for (int h = 0; h < N_HOOKS; h++) {
		size_t n;
		/* checked when parsed: only memory can fail */
		if (c->hooks[h] && dm_split_command(c->hooks[h], &ed->argv[h], &n) < 0) {
			exec_driver_free(ed);
			return -ENOMEM;
		}
	}
	/* absent hooks stay NULL: no probe accepts every matching device,
	 * and the PM engine skips devices with no suspend/resume */
	ed->ops.probe = ed->argv[HOOK_PROBE] || ed->kernel_driver ? exec_probe : NULL;
	ed->ops.remove = ed->argv[HOOK_REMOVE] || ed->kernel_driver ? exec_remove : NULL;
	ed->ops.suspend = ed->argv[HOOK_SUSPEND] ? exec_suspend : NULL;
	ed->ops.resume = ed->argv[HOOK_RESUME] ? exec_resume : NULL;
	*ret = ed;
	return 0;
}

/* Creates and registers the driver of @c. Returns 0, 1 for a conflict with
 * a driver already on the bus (reported to @errors), or -errno. */
static int exec_register(struct dm_model *m, struct dm_needs *needs, struct exec_conf *c,
			 FILE *errors, struct dm_driver **ret)
{
	struct exec_driver *ed;
	struct dm_driver *drv;
	struct dm_bus *bus = NULL;
	struct dm_class *cls = NULL;
	int r;

	r = c->bus ? dm_bus_get(m, c->bus, NULL, &bus) : dm_class_get(m, c->class, &cls);
	if (r < 0)
		return r;
	r = exec_driver_new(m, c, &ed);
	if (r < 0)
		return r;
	ed->needs = needs;
	r = dm_driver_new(c->name, DM_DRIVER_USER, c->priority, &ed->ops, ed, exec_driver_free,
			  &drv);
	if (r < 0) {
		exec_driver_free(ed);
		return r;
	}
	for (size_t i = 0; i < c->n_match && r >= 0; i++)
		r = dm_driver_add_match(drv, c->match[i].key, c->match[i].glob);
	if (r >= 0) {
		r = bus ? dm_driver_register(bus, drv) : dm_driver_register_class(cls, drv);
		/* -ENOMEM can come after the driver went on the bus */
		if (r < 0 && r != -EEXIST && r != -EBUSY) {
			dm_model_read_lock(m);
			bool registered = dm_driver_is_registered_locked(drv);
			dm_model_unlock(m);
			if (registered)
				dm_driver_unregister(drv);
		}
	}
	if (r == -EEXIST) {
		dm_conf_error(errors, c->path, c->name_line, "%s %s already has a driver named %s",
			      bus ? "bus" : "class", bus ? c->bus : c->class, c->name);
		r = 1;
	}
	if (r != 0) {
		dm_driver_unref(drv);
		return r;
	}
	*ret = drv;
	return 0;
}

/* The drivers of one drivers.d, and the files they were made from. */
struct dm_exec_set {
	struct dm_needs *needs; /* the KernelDriver= moves' (needs.h), or NULL */
	struct conf_list confs;
	struct dm_driver **drivers; /* registered, each with our reference */
	size_t n;
};

/* Unregisters the set's drivers (remove() on each bound device), the last
 * registered first, as a stack is torn down; its files stay. */
static void exec_set_unregister(struct dm_exec_set *set)
{
	for (size_t i = set->n; i > 0; i--) {
		dm_driver_unregister(set->drivers[i - 1]);
		dm_driver_unref(set->drivers[i - 1]);
	}
	set->n = 0;
}

static void exec_set_free(struct dm_exec_set *set)
{
	if (!set)
		return;
	exec_set_unregister(set);
	dm_exec_conf_list_done(&set->confs);
	free(set->drivers);
	free(set);
}

void dm_exec_unload(struct dm_exec_set *set)
{
	exec_set_free(set);
}

/* A set of the files of @l (taken over, @l emptied), not registered. */
static int exec_set_new(struct conf_list *l, struct dm_needs *needs, struct dm_exec_set **ret)
{
	struct dm_exec_set *set = calloc(1, sizeof(*set));
	if (!set)
		return -ENOMEM;
	set->needs = needs;
	set->drivers = calloc(l->n + 1, sizeof(*set->drivers));
	if (!set->drivers) {
		free(set);
		return -ENOMEM;
	}
	set->confs = *l;
	*l = (struct conf_list){ 0 };
	*ret = set;
	return 0;
}

/* Registers every driver of @set, or none: 0, the number of conflicts
 * (reported to @errors) or -errno. */
static int exec_set_register(struct dm_model *m, struct dm_exec_set *set, FILE *errors)
{
	int r = 0;
	for (size_t i = 0; i < set->confs.n; i++) {
		r = exec_register(m, set->needs, set->confs.v[i], errors, &set->drivers[set->n]);
		if (r != 0)
			break;
		set->n++;
	}
	if (r != 0)
		exec_set_unregister(set);
	return r;
}

int dm_exec_load_dir(struct dm_model *m, struct dm_needs *needs, const char *dir,
		     int default_timeout_s, FILE *errors, struct dm_exec_set **ret)
{
	struct dm_exec_set *set = NULL;
	struct conf_list l;
	int r;

	if (!m || !ret)
		return -EINVAL;
	r = dm_exec_conf_load_dir(dir, default_timeout_s, errors, &l);
	if (r == 0)
		r = exec_set_new(&l, needs, &set);
	if (r == 0)
		r = exec_set_register(m, set, errors);
	if (r == 0)
		*ret = set;
	else
		exec_set_free(set);
	dm_exec_conf_list_done(&l);
	return r;
}

struct device_list {
	struct dm_device **v;
	size_t n, cap;
};

static int device_list_add(struct dm_device *dev, void *data)
{
	struct device_list *l = data;
	if (!dm_array_grow((void **)&l->v, &l->cap, l->n, sizeof(*l->v), 16))
		return -ENOMEM;
	l->v[l->n++] = dm_device_ref(dev);
	return 0;
}

/* The devices @set's drivers hold, referenced, into @l. */
static int exec_set_bound_devices(struct dm_model *m, struct dm_exec_set *set,
				  struct device_list *l)
{
	int r = 0;
	dm_model_read_lock(m);
	for (size_t i = 0; i < set->n && r >= 0; i++)
		r = dm_driver_for_each_device_locked(set->drivers[i], device_list_add, l);
	dm_model_unlock(m);
	return r;
}

int dm_exec_reload(struct dm_model *m, struct dm_exec_set **set, const char *dir,
		   int default_timeout_s, FILE *errors)
{
	struct dm_exec_set *old = *set, *new = NULL;
	struct dm_needs *needs = old ? old->needs : NULL; /* the new set's too */
	struct device_list released = { 0 };
	struct conf_list l;
	int r;

	r = dm_exec_conf_load_dir(dir, default_timeout_s, errors, &l);
	if (r == 0)
		r = exec_set_new(&l, needs, &new);
	dm_exec_conf_list_done(&l);
	if (r == 0)
		r = exec_set_bound_devices(m, old, &released);
	if (r != 0) {
		exec_set_free(new);
		goto out_put;
	}
	/* the old drivers go first: the new ones may have their names; no
	 * device is given back meanwhile to the kernel driver it had before
	 * a driver needed another (a new one may need the same) */
	if (needs)
		dm_needs_hold(needs, true);
	exec_set_unregister(old);
	r = exec_set_register(m, new, errors);
	if (r != 0) {
		/* a name another kind of driver holds: back to the old set,
		 * which registered before with these very names */
		exec_set_free(new);
		if (exec_set_register(m, old, NULL) != 0)
			log_err("exec drivers: the previous drivers.d could not be registered again");
	} else {
		exec_set_free(old);
		*set = new;
	}
	/* What the old drivers held and no new one took goes to the other
	 * drivers (kernel proxies, pci-pm) as at start; a new exec driver may
	 * be asked again about a device it just declined. */
	for (size_t i = 0; i < released.n; i++)
		dm_device_attach(released.v[i]);
	if (needs)
		dm_needs_hold(needs, false);
out_put:
	for (size_t i = 0; i < released.n; i++)
		dm_device_unref(released.v[i]);
	free(released.v);
	return r;
}
