/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * exec-parse.c - the *.conf files of drivers.d read and checked: user
 * drivers whose hooks are programs.
 *
 * Each file is read by the strict INI reader (conffile.h), which reports
 * syntax errors; the handlers here check sections' keys and values. A
 * whole directory is checked before anything is registered.
 */
#include "drivers/exec.h"
#include "exec-private.h"

#include "drivers/hookenv.h"
#include "drivers/kernel.h"
#include "util/conffile.h"
#include "util/trust.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Bounds on what an administrator's directory can make us hold. */
#define EXEC_MAX_FILES 1024
#define EXEC_MAX_MATCH 64

#define EXEC_DEFAULT_PRIORITY 100
#define EXEC_PRIORITY_MIN (-1000)
#define EXEC_PRIORITY_MAX 1000

static const char *const hook_keys[N_HOOKS] = { "Probe", "Remove", "Suspend", "Resume" };

static void exec_conf_free(struct exec_conf *c)
{
	if (!c)
		return;
	free(c->path);
	free(c->name);
	free(c->bus);
	free(c->class);
	free(c->kernel_driver);
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

/* ---- the keys ---- */

/* Name=, Bus= and Class=: a name that can be a directory of the mount. */
static void set_name(struct dm_conffile *cf, const char *key, const char *value, char **field,
		     unsigned *line)
{
	if (dm_conffile_duplicate(cf, key, *line))
		return;
	*line = dm_conffile_line(cf);
	if (!dm_name_is_printable(value))
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
	} else if (strcmp(key, "Class") == 0) {
		set_name(cf, key, value, &c->class, &c->class_line);
	} else if (strcmp(key, "KernelDriver") == 0) {
		if (dm_conffile_duplicate(cf, key, c->kernel_driver_line))
			return;
		c->kernel_driver_line = dm_conffile_line(cf);
		/* a kernel driver's name: what sysfs's driver directories have */
		if (strlen(value) > DM_KERNEL_DRIVER_NAME_MAX ||
		    !dm_name_is_plain(value, strlen(value)))
			dm_conffile_error(cf, "bad KernelDriver '%s' (a kernel driver's name)", value);
		else
			dm_conffile_set_string(cf, &c->kernel_driver, value);
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

/* 0, or 1 with why in @msg when anyone but root could change @program or
 * the interpreter its #! line names (it runs as root); -ENOMEM. One that cannot be found is left to fail when run
 * (it may be installed later), where the runner checks it again. */
static int exec_check_program(const char *program, char *msg, size_t size)
{
	char why[PATH_MAX + 128];
	int r = dm_trust_check_program(program, why, sizeof(why));
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
	if (!dm_name_is_printable(key)) {
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
				      "no [Driver] section (Name= and Bus= or Class= are required)");
			n_errors++;
		}
	} else {
		if (!c->name_line) {
			dm_conf_error(errors, path, c->driver_line, "[Driver] has no Name=");
			n_errors++;
		}
		if (!c->bus_line && !c->class_line) {
			dm_conf_error(errors, path, c->driver_line,
				      "[Driver] has neither Bus= nor Class= (a driver drives the "
				      "devices of a bus or of a class)");
			n_errors++;
		} else if (c->bus_line && c->class_line) {
			dm_conf_error(errors, path, c->class_line,
				      "[Driver] has both Bus= (line %u) and Class=: a driver drives "
				      "the devices of a bus or of a class, not both",
				      c->bus_line);
			n_errors++;
		} else if (c->class_line && c->name && strchr(c->name, ':')) {
			dm_conf_error(errors, path, c->name_line,
				      "a class driver's Name= has no ':' (class/<class>/drivers/ "
				      "names the bus drivers <bus>:<driver>)");
			n_errors++;
		} else if (c->class_line && c->kernel_driver_line) {
			dm_conf_error(errors, path, c->kernel_driver_line,
				      "KernelDriver= is for a bus driver: a class device has no "
				      "kernel driver of its own");
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

void dm_exec_conf_list_done(struct conf_list *l)
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

int dm_exec_conf_load_dir(const char *dir, int default_timeout_s, FILE *errors,
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
	int r = dm_exec_conf_load_dir(dir, default_timeout_s, errors, &l);
	dm_exec_conf_list_done(&l);
	return r;
}
