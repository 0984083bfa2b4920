/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * exec.c - the *.conf files of drivers.d: user drivers whose hooks are
 * programs.
 *
 * Each file is read by the strict INI reader (conffile.h), which reports
 * syntax errors; the handlers here check sections' keys and values. A
 * whole directory is checked before anything is registered.
 */
#include "drivers/exec.h"

#include "conffile.h"
#include "drivers/hookenv.h"
#include "drivers/runner.h"
#include "log.h"
#include "trust.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Bounds on what an administrator's directory can make us hold. */
#define EXEC_MAX_FILES 1024
#define EXEC_MAX_MATCH 64
#define EXEC_NAME_MAX 255

#define EXEC_DEFAULT_PRIORITY 100
#define EXEC_PRIORITY_MIN (-1000)
#define EXEC_PRIORITY_MAX 1000

enum exec_hook {
	HOOK_PROBE,
	HOOK_REMOVE,
	HOOK_SUSPEND,
	HOOK_RESUME,
	N_HOOKS,
};

static const char *const hook_keys[N_HOOKS] = { "Probe", "Remove", "Suspend", "Resume" };
static const char *const hook_actions[N_HOOKS] = { "probe", "remove", "suspend", "resume" };

struct match_rule {
	char *key;
	char *glob;
	unsigned line;
};

/* One parsed file. */
struct exec_conf {
	char *path;
	unsigned driver_line; /* the first [Driver] header, 0 when none */
	bool bad_section; /* a "[...]" line was bad */
	char *name;
	unsigned name_line;
	char *bus;
	unsigned bus_line;
	int priority;
	unsigned priority_line;
	int timeout_s;
	unsigned timeout_line;
	char *hooks[N_HOOKS]; /* command lines, checked; or NULL */
	unsigned hook_line[N_HOOKS];
	struct match_rule *match;
	size_t n_match;
};

static void exec_conf_free(struct exec_conf *c)
{
	if (!c)
		return;
	free(c->path);
	free(c->name);
	free(c->bus);
	for (int h = 0; h < N_HOOKS; h++)
		free(c->hooks[h]);
	for (size_t i = 0; i < c->n_match; i++) {
		free(c->match[i].key);
		free(c->match[i].glob);
	}
	free(c->match);
	free(c);
}

/* ---- values ---- */

/* A name that can be a directory of the mount: 1..255 bytes, no '/',
 * neither "." nor "..", no control characters. */
static bool name_is_valid(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > EXEC_NAME_MAX || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return false;
	for (const char *c = s; *c; c++)
		if (*c == '/' || iscntrl((unsigned char)*c))
			return false;
	return true;
}

/* ---- the keys ---- */

/* Name= and Bus=: a name that can be a directory of the mount. */
static void set_name(struct dm_conffile *cf, const char *key, const char *value, char **field,
		     unsigned *line)
{
	if (dm_conffile_duplicate(cf, key, *line))
		return;
	*line = dm_conffile_line(cf);
	if (!name_is_valid(value))
		dm_conffile_error(cf, "bad %s '%s' (1-%d characters, no '/')", key, value,
				  EXEC_NAME_MAX);
	else
		dm_conffile_set_string(cf, field, value);
}

static void handle_driver(struct dm_conffile *cf, struct exec_conf *c, const char *key,
			  const char *value)
{
	if (strcmp(key, "Name") == 0) {
		set_name(cf, key, value, &c->name, &c->name_line);
	} else if (strcmp(key, "Bus") == 0) {
		set_name(cf, key, value, &c->bus, &c->bus_line);
	} else if (strcmp(key, "Priority") == 0) {
		if (dm_conffile_duplicate(cf, key, c->priority_line))
			return;
		c->priority_line = dm_conffile_line(cf);
		if (!dm_conf_parse_int(value, EXEC_PRIORITY_MIN, EXEC_PRIORITY_MAX, &c->priority))
			dm_conffile_error(cf, "bad Priority '%s' (an integer from %d to %d)", value,
					  EXEC_PRIORITY_MIN, EXEC_PRIORITY_MAX);
	} else {
		dm_conffile_error(cf, "unknown key %s in [Driver]", key);
	}
}

/* 0, or 1 with why in @msg when anyone but root could change @program (it
 * runs as root); -ENOMEM. One that cannot be found is left to fail when run
 * (it may be installed later), where the runner checks it again. */
static int exec_check_program(const char *program, char *msg, size_t size)
{
	char why[PATH_MAX + 128];
	int r = dm_trust_check(program, why, sizeof(why));
	if (r == -ENOMEM)
		return r;
	if (r != -EPERM)
		return 0;
	snprintf(msg, size, "program %s refused, anyone but root could change it: %s", program,
		 why);
	return 1;
}

int dm_exec_check_command(const char *cmdline, char *msg, size_t size)
{
	char **argv;
	size_t n;
	int r = dm_split_command(cmdline, &argv, &n);
	if (r == -EBADMSG) {
		snprintf(msg, size, "unbalanced quotes");
		return 1;
	}
	if (r < 0)
		return r;
	r = 1;
	if (n == 0)
		snprintf(msg, size, "no command");
	else if (argv[0][0] != '/')
		snprintf(msg, size, "the program must be an absolute path, not '%s'", argv[0]);
	else
		r = exec_check_program(argv[0], msg, size);
	dm_strv_free(argv);
	return r;
}

static void handle_hooks(struct dm_conffile *cf, struct exec_conf *c, const char *key,
			 const char *value)
{
	if (strcmp(key, "Timeout") == 0) {
		if (dm_conffile_duplicate(cf, key, c->timeout_line))
			return;
		c->timeout_line = dm_conffile_line(cf);
		if (!dm_conf_parse_int(value, 1, DM_EXEC_TIMEOUT_MAX_S, &c->timeout_s))
			dm_conffile_error(cf, "bad Timeout '%s' (seconds, from 1 to %d)", value,
					  DM_EXEC_TIMEOUT_MAX_S);
		return;
	}
	for (int h = 0; h < N_HOOKS; h++) {
		if (strcmp(key, hook_keys[h]) != 0)
			continue;
		if (dm_conffile_duplicate(cf, key, c->hook_line[h]))
			return;
		c->hook_line[h] = dm_conffile_line(cf);
		char problem[EXEC_NAME_MAX + 64];
		int r = dm_exec_check_command(value, problem, sizeof(problem));
		if (r < 0)
			dm_conffile_fail(cf, r);
		else if (r > 0)
			dm_conffile_error(cf, "%s=: %s", key, problem);
		else
			dm_conffile_set_string(cf, &c->hooks[h], value);
		return;
	}
	dm_conffile_error(cf, "unknown key %s in [Hooks]", key);
}

static void handle_match(struct dm_conffile *cf, struct exec_conf *c, const char *key,
			 const char *value)
{
	if (!name_is_valid(key)) {
		dm_conffile_error(cf, "bad attribute name '%s' in [Match]", key);
		return;
	}
	for (size_t i = 0; i < c->n_match; i++)
		if (strcmp(c->match[i].key, key) == 0) {
			dm_conffile_duplicate(cf, key, c->match[i].line);
			return;
		}
	if (c->n_match == EXEC_MAX_MATCH) {
		dm_conffile_error(cf, "more than %d [Match] rules", EXEC_MAX_MATCH);
		return;
	}
	struct match_rule *m = realloc(c->match, (c->n_match + 1) * sizeof(*m));
	if (!m) {
		dm_conffile_fail(cf, -ENOMEM);
		return;
	}
	c->match = m;
	m = &c->match[c->n_match];
	m->key = strdup(key);
	m->glob = strdup(value);
	m->line = dm_conffile_line(cf);
	if (!m->key || !m->glob) {
		free(m->key);
		free(m->glob);
		dm_conffile_fail(cf, -ENOMEM);
		return;
	}
	c->n_match++;
}

static void conf_section(struct dm_conffile *cf, const char *section, void *data)
{
	struct exec_conf *c = data;
	if (!section)
		c->bad_section = true;
	else if (strcmp(section, "Driver") == 0 && !c->driver_line)
		c->driver_line = dm_conffile_line(cf);
}

static void conf_key(struct dm_conffile *cf, const char *section, const char *key,
		     const char *value, void *data)
{
	if (strcmp(section, "Driver") == 0)
		handle_driver(cf, data, key, value);
	else if (strcmp(section, "Hooks") == 0)
		handle_hooks(cf, data, key, value);
	else
		handle_match(cf, data, key, value);
}

static const char *const conf_sections[] = { "Driver", "Match", "Hooks", NULL };

static const struct dm_conffile_ops conf_ops = {
	.sections = conf_sections,
	.section = conf_section,
	.key = conf_key,
};

/* ---- files ---- */

/*
 * Parses the file at @path. Returns the number of errors (written to
 * @errors) or -errno; *ret is the parsed file either way when not -errno.
 */
static int conf_parse(const char *path, int default_timeout_s, FILE *errors,
		      struct exec_conf **ret)
{
	struct exec_conf *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->path = strdup(path);
	if (!c->path) {
		free(c);
		return -ENOMEM;
	}
	c->priority = EXEC_DEFAULT_PRIORITY;
	c->timeout_s = default_timeout_s > 0 ? default_timeout_s : DM_EXEC_DEFAULT_TIMEOUT_S;

	bool read;
	int r = dm_conffile_parse(path, &conf_ops, c, errors, &read);
	if (r == -ENOENT) { /* gone since the directory was read */
		dm_conf_error(errors, path, 0, "cannot open: %s", strerror(ENOENT));
		r = 1;
	}
	if (r < 0) {
		exec_conf_free(c);
		return r;
	}
	unsigned n_errors = (unsigned)r;
	if (!c->driver_line) {
		/* after a bad "[...]" line, that was most likely meant to be
		 * [Driver]: it is reported already, as is an unreadable file */
		if (read && !c->bad_section) {
			dm_conf_error(errors, path, 1,
				      "no [Driver] section (Name= and Bus= are required)");
			n_errors++;
		}
	} else {
		if (!c->name_line) {
			dm_conf_error(errors, path, c->driver_line, "[Driver] has no Name=");
			n_errors++;
		}
		if (!c->bus_line) {
			dm_conf_error(errors, path, c->driver_line, "[Driver] has no Bus=");
			n_errors++;
		}
	}
	*ret = c;
	return n_errors > INT_MAX ? INT_MAX : (int)n_errors;
}

static int conf_filter(const struct dirent *d)
{
	size_t n = strlen(d->d_name);
	/* hidden files are editors' and package managers' leftovers */
	return d->d_name[0] != '.' && n > 5 && strcmp(d->d_name + n - 5, ".conf") == 0;
}

struct conf_list {
	struct exec_conf **v;
	size_t n;
};

static void conf_list_done(struct conf_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		exec_conf_free(l->v[i]);
	free(l->v);
	*l = (struct conf_list){ 0 };
}

/* A second definition of a driver name is an error on the second one. */
static unsigned check_duplicate_names(const struct conf_list *l, FILE *errors)
{
	unsigned n = 0;
	for (size_t i = 0; i < l->n; i++) {
		const struct exec_conf *c = l->v[i];
		if (!c->name)
			continue;
		for (size_t k = 0; k < i; k++) {
			const struct exec_conf *o = l->v[k];
			if (o->name && strcmp(o->name, c->name) == 0) {
				dm_conf_error(errors, c->path, c->name_line,
					   "driver %s is already defined in %s:%u", c->name,
					   o->path, o->name_line);
				n++;
				break;
			}
		}
	}
	return n;
}

/*
 * Parses every *.conf of @dir in name order into @ret (which the caller
 * frees with conf_list_done() in every case). Returns the number of errors
 * or -errno.
 */
static int conf_load_dir(const char *dir, int default_timeout_s, FILE *errors,
			 struct conf_list *ret)
{
	struct dirent **names = NULL;
	unsigned n_errors = 0;
	int n, r = 0;

	*ret = (struct conf_list){ 0 };
	if (!dir)
		return -EINVAL;
	n = scandir(dir, &names, conf_filter, alphasort);
	if (n < 0)
		return errno == ENOENT ? 0 : -errno;
	if (n > EXEC_MAX_FILES) {
		dm_conf_error(errors, dir, 0, "more than %d *.conf files", EXEC_MAX_FILES);
		n_errors++;
		goto out_free_names;
	}
	ret->v = calloc((size_t)n + 1, sizeof(*ret->v));
	if (!ret->v) {
		r = -ENOMEM;
		goto out_free_names;
	}
	for (int i = 0; i < n; i++) {
		char *path;
		struct exec_conf *c = NULL;

		if (asprintf(&path, "%s/%s", dir, names[i]->d_name) < 0) {
			r = -ENOMEM;
			goto out_free_names;
		}
		r = conf_parse(path, default_timeout_s, errors, &c);
		free(path);
		if (r < 0)
			goto out_free_names;
		n_errors += (unsigned)r;
		r = 0;
		if (c)
			ret->v[ret->n++] = c;
	}
	n_errors += check_duplicate_names(ret, errors);

out_free_names:
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	if (r < 0)
		return r;
	return n_errors > INT_MAX ? INT_MAX : (int)n_errors;
}

int dm_exec_check_dir(const char *dir, int default_timeout_s, FILE *errors)
{
	struct conf_list l;
	int r = conf_load_dir(dir, default_timeout_s, errors, &l);
	conf_list_done(&l);
	return r;
}

/* ---- the drivers ---- */

/* A registered exec driver's data: what its hooks need. */
struct exec_driver {
	struct dm_driver_ops ops; /* NULL where the file has no hook */
	struct dm_model *model;
	char *name;
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

static int exec_probe(struct dm_device *dev, void *data)
{
	return exec_call(data, HOOK_PROBE, dev);
}

static void exec_remove(struct dm_device *dev, void *data)
{
	(void)exec_call(data, HOOK_REMOVE, dev); /* logged by the runner */
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
	ed->ops.probe = ed->argv[HOOK_PROBE] ? exec_probe : NULL;
	ed->ops.remove = ed->argv[HOOK_REMOVE] ? exec_remove : NULL;
	ed->ops.suspend = ed->argv[HOOK_SUSPEND] ? exec_suspend : NULL;
	ed->ops.resume = ed->argv[HOOK_RESUME] ? exec_resume : NULL;
	*ret = ed;
	return 0;
}

/* Creates and registers the driver of @c. Returns 0, 1 for a conflict with
 * a driver already on the bus (reported to @errors), or -errno. */
static int exec_register(struct dm_model *m, struct exec_conf *c, FILE *errors,
			 struct dm_driver **ret)
{
	struct exec_driver *ed;
	struct dm_driver *drv;
	struct dm_bus *bus;
	int r;

	r = dm_bus_get(m, c->bus, NULL, &bus);
	if (r < 0)
		return r;
	r = exec_driver_new(m, c, &ed);
	if (r < 0)
		return r;
	r = dm_driver_new(c->name, DM_DRIVER_USER, c->priority, &ed->ops, ed, exec_driver_free,
			  &drv);
	if (r < 0) {
		exec_driver_free(ed);
		return r;
	}
	for (size_t i = 0; i < c->n_match && r >= 0; i++)
		r = dm_driver_add_match(drv, c->match[i].key, c->match[i].glob);
	if (r >= 0) {
		r = dm_driver_register(bus, drv);
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
		dm_conf_error(errors, c->path, c->name_line, "bus %s already has a driver named %s",
			   c->bus, c->name);
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
	conf_list_done(&set->confs);
	free(set->drivers);
	free(set);
}

void dm_exec_unload(struct dm_exec_set *set)
{
	exec_set_free(set);
}

/* A set of the files of @l (taken over, @l emptied), not registered. */
static int exec_set_new(struct conf_list *l, struct dm_exec_set **ret)
{
	struct dm_exec_set *set = calloc(1, sizeof(*set));
	if (!set)
		return -ENOMEM;
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
		r = exec_register(m, set->confs.v[i], errors, &set->drivers[set->n]);
		if (r != 0)
			break;
		set->n++;
	}
	if (r != 0)
		exec_set_unregister(set);
	return r;
}

int dm_exec_load_dir(struct dm_model *m, const char *dir, int default_timeout_s, FILE *errors,
		     struct dm_exec_set **ret)
{
	struct dm_exec_set *set = NULL;
	struct conf_list l;
	int r;

	if (!m || !ret)
		return -EINVAL;
	r = conf_load_dir(dir, default_timeout_s, errors, &l);
	if (r == 0)
		r = exec_set_new(&l, &set);
	if (r == 0)
		r = exec_set_register(m, set, errors);
	if (r == 0)
		*ret = set;
	else
		exec_set_free(set);
	conf_list_done(&l);
	return r;
}

struct device_list {
	struct dm_device **v;
	size_t n, cap;
};

static int device_list_add(struct dm_device *dev, void *data)
{
	struct device_list *l = data;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		struct dm_device **v = realloc(l->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
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
	struct device_list released = { 0 };
	struct conf_list l;
	int r;

	r = conf_load_dir(dir, default_timeout_s, errors, &l);
	if (r == 0)
		r = exec_set_new(&l, &new);
	conf_list_done(&l);
	if (r == 0)
		r = exec_set_bound_devices(m, old, &released);
	if (r != 0) {
		exec_set_free(new);
		goto out_put;
	}
	/* the old drivers go first: the new ones may have their names */
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
out_put:
	for (size_t i = 0; i < released.n; i++)
		dm_device_unref(released.v[i]);
	free(released.v);
	return r;
}
