/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * driverfsctl.c - the command-line client. It only reads and writes files of
 * a driverfs mount (-m MNT, else $DRIVERFS_MOUNT, else /devices); it links
 * nothing of the daemon but the snapshot's JSON layout.
 */
#include "ctl/ctl.h"
#include "snapshot/format.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <glob.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef DRIVERFSD_VERSION
#define DRIVERFSD_VERSION "0.1.0"
#endif

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: driverfsctl [-m MOUNT] COMMAND [ARGS]\n"
		"A client of a driverfs mount (-m, else $DRIVERFS_MOUNT, else /devices).\n"
		"\n"
		"Commands:\n"
		"  list [FILTER] [--json]     every device's path under root/, in the global\n"
		"                             order (depth first, parents first; resume's order)\n"
		"  tree [DEV] [FILTER] [--json]\n"
		"                             the hierarchy (below DEV), with names, drivers\n"
		"                             and power states other than on\n"
		"  info DEV [--json]          every file of DEV, its subsystem, driver and\n"
		"                             interface\n"
		"  dot [FILTER] [--pm-order]  the hierarchy as a Graphviz graph, coloured by\n"
		"                             bus or class (driverfsctl dot | dot -Tsvg);\n"
		"                             --pm-order numbers the devices and links them in\n"
		"                             the order a suspend takes: a dry run's journal\n"
		"                             (it replaces root/power_log), or where the mount\n"
		"                             cannot run one, the global order backwards\n"
		"  suspend [DEV] [--dry-run] [--json]\n"
		"                             suspend DEV's subtree, children first (default: the\n"
		"                             whole system); print the transition's journal\n"
		"  resume [DEV] [--dry-run] [--json]\n"
		"                             resume DEV (its suspended ancestors first) and its\n"
		"                             subtree, parents first\n"
		"  save FILE                  the whole model as JSON in driverfsd's snapshot\n"
		"                             format (driverfsd --snapshot FILE serves it);\n"
		"                             FILE - writes to standard output\n"
		"\n"
		"DEV is a path under root/ (pci0000:00/0000:00:02.0) or a bus id (0000:00:02.0,\n"
		"1-1.2). --dry-run records the order in root/power_log and calls no hook.\n"
		"FILTER is --bus BUS and/or --class CLASS: the devices on BUS or of CLASS.\n"
		"tree and dot keep the ancestors of those devices so that the hierarchy\n"
		"shows; list prints only the devices themselves.\n"
		"\n"
		"--json (one document on standard output; members never removed or renamed):\n"
		"  list, tree  for each device {\"path\", \"name\", \"driver\" (null when unbound),\n"
		"              \"power\"}, plus \"match\" (false for an ancestor kept for the\n"
		"              shape) when filtered: list an array in the global order, tree\n"
		"              the device with its \"children\" arrays nested\n"
		"  info        {\"path\", \"subsystem\", \"driver\", \"interface\" (each null when\n"
		"              none), \"files\": {NAME: value or null when unreadable}}; files\n"
		"              of groups are named \"pm/control\"; one trailing newline dropped\n"
		"  suspend, resume  the journal: an array of {\"seq\", \"phase\", \"path\",\n"
		"              \"result\" (\"ok\" or an errno name), \"usec\"}\n"
		"\n"
		"Options:\n"
		"  -m, --mount MOUNT  the driverfs mount point\n"
		"  -h, --help         show this help\n"
		"  -V, --version      show the version\n"
		"\n"
		"Errors name the device or file and the errno, as in\n"
		"\"driverfsctl: 0000:00:1f.3: no such device (ENOENT)\".\n"
		"Exit status: 0 done; 1 failed (an unknown device, bus or class, no mount, a\n"
		"transition that failed and was rolled back); 2 bad usage.\n");
}

/* ---- arguments ---- */

enum {
	OPT_JSON = 1 << 0,
	OPT_DRY_RUN = 1 << 1,
	OPT_PM_ORDER = 1 << 2,
	OPT_FILTER = 1 << 3,
};

struct cmd_args {
	unsigned flags; /* OPT_* given */
	const char *bus, *cls;
	const char *arg; /* the one positional argument, or NULL */
};

/* Parses a command's arguments: the options in @allowed and up to
 * @max_args positional ones (@need_arg: exactly one). */
static int parse_args(const char *cmd, int argc, char **argv, unsigned allowed, int max_args,
		      bool need_arg, struct cmd_args *a)
{
	static const struct {
		const char *name;
		unsigned flag;
	} flags[] = { { "--json", OPT_JSON }, { "--dry-run", OPT_DRY_RUN }, { "--pm-order", OPT_PM_ORDER } };
	*a = (struct cmd_args){ 0 };
	for (int i = 0; i < argc; i++) {
		const char *s = argv[i];
		bool known = false;
		for (size_t k = 0; k < sizeof(flags) / sizeof(flags[0]); k++)
			if (strcmp(s, flags[k].name) == 0 && (allowed & flags[k].flag)) {
				a->flags |= flags[k].flag;
				known = true;
			}
		if (known)
			continue;
		const char **value = strcmp(s, "--bus") == 0 || strncmp(s, "--bus=", 6) == 0 ? &a->bus
				     : strcmp(s, "--class") == 0 || strncmp(s, "--class=", 8) == 0
					     ? &a->cls
					     : NULL;
		if (value && (allowed & OPT_FILTER)) {
			const char *eq = strchr(s, '=');
			if (!eq && i + 1 >= argc)
				return ctl_usage_error(cmd, "option needs a value:", s);
			*value = eq ? eq + 1 : argv[++i];
			if (!**value)
				return ctl_usage_error(cmd, "empty value for", s);
			a->flags |= OPT_FILTER;
			continue;
		}
		if (s[0] == '-' && s[1] != '\0')
			return ctl_usage_error(cmd, "unknown option", s);
		if (a->arg || max_args == 0)
			return ctl_usage_error(cmd, "unexpected argument", s);
		a->arg = s;
	}
	if (need_arg && !a->arg)
		return ctl_usage_error(cmd, "needs a DEV", NULL);
	return CTL_OK;
}

/* --json output, laid out as snapshots are. */
static void print_json(json_object *doc)
{
	printf("%s\n", dm_snapshot_to_string(doc));
}

/* ---- list and tree ---- */

/* What list and tree show of a device. */
struct dev_view {
	char name[512];
	char power[32];
	char driver_buf[256];
	const char *driver; /* NULL when unbound */
};

static void view_read(int rootfd, const char *path, struct dev_view *v)
{
	ctl_read_line(rootfd, path, "name", v->name, sizeof(v->name));
	ctl_read_line(rootfd, path, "power", v->power, sizeof(v->power));
	v->driver = ctl_link_name(rootfd, path, "driver", v->driver_buf, sizeof(v->driver_buf));
}

/* The --json object of a device: path, name, driver (null when unbound),
 * power; "match" when filtered; tree adds "children". */
static json_object *view_json(const char *path, const struct dev_view *v,
			      const struct ctl_filter *f)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "path", json_object_new_string(*path ? path : "."));
	json_object_object_add(o, "name", json_object_new_string(v->name));
	json_object_object_add(o, "driver", v->driver ? json_object_new_string(v->driver) : NULL);
	json_object_object_add(o, "power", json_object_new_string(v->power));
	if (f->on)
		json_object_object_add(o, "match",
				       json_object_new_boolean(ctl_filter_matches(f, path)));
	return o;
}

struct walk_out {
	bool tree; /* else: list */
	const struct ctl_filter *filter;
	json_object *json; /* --json: the array this level's devices go in */
	char prefix[4096];
};

/* Shows the device @path (under the root/ fd @rootfd) as list or tree does. */
static void show_device(int rootfd, const char *path, const char *label, bool last,
			struct walk_out *o)
{
	struct dev_view v;
	bool match = ctl_filter_matches(o->filter, path);
	if (!o->tree && !match)
		return; /* list: only the devices themselves; each path names its ancestors */
	view_read(rootfd, path, &v);
	if (o->json) {
		json_object *node = view_json(path, &v, o->filter);
		json_object_array_add(o->json, node);
		if (o->tree) {
			json_object *kids = json_object_new_array();
			json_object_object_add(node, "children", kids);
			o->json = kids; /* the caller puts the level back */
		}
		return;
	}
	if (!o->tree) {
		printf("%s\n", *path ? path : ".");
		return;
	}
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	const char *shown = label ? label : base;
	if (label) /* the top of the tree */
		printf("%s", label);
	else
		printf("%s%s %s", o->prefix, last ? "`--" : "|--", base);
	/* an ancestor kept only for the shape shows its name alone */
	if (match && *v.name && strcmp(v.name, shown) != 0)
		printf("  %s", v.name);
	if (match && v.driver)
		printf("  [%s]", v.driver);
	if (match && strcmp(v.power, "on") != 0 && *v.power)
		printf("  (%s)", v.power);
	printf("\n");
}

/* Visits the child devices of @path in the model's global order: depth
 * first, siblings in natural order, which is the order resume takes
 * (suspend takes it backwards). */
static int walk_children(int rootfd, const char *path, struct walk_out *o)
{
	char **names;
	size_t n, kept = 0;
	int r = ctl_children(rootfd, path, &names, &n);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		char child[PATH_MAX];
		ctl_join(child, sizeof(child), path, names[i]);
		if (ctl_filter_keeps(o->filter, child))
			names[kept++] = names[i];
		else
			free(names[i]);
	}
	for (size_t i = 0; i < kept && r == 0; i++) {
		char child[PATH_MAX];
		ctl_join(child, sizeof(child), path, names[i]);
		json_object *level = o->json;
		bool last = i == kept - 1;
		show_device(rootfd, child, NULL, last, o);
		size_t plen = strlen(o->prefix);
		snprintf(o->prefix + plen, sizeof(o->prefix) - plen, "%s", last ? "    " : "|   ");
		r = walk_children(rootfd, child, o);
		o->prefix[plen] = '\0';
		o->json = level;
	}
	ctl_names_free(names, kept);
	return r;
}

static int cmd_walk(const char *mnt, bool tree, int argc, char **argv)
{
	struct cmd_args a;
	int ret = parse_args(tree ? "tree" : "list", argc, argv, OPT_JSON | OPT_FILTER, tree ? 1 : 0,
			     false, &a);
	if (ret)
		return ret;
	int rootfd = ctl_open_root(mnt);
	if (rootfd < 0)
		return CTL_FAILED;
	char rel[PATH_MAX];
	struct ctl_filter f;
	int r = ctl_resolve(mnt, a.arg, rel, sizeof(rel));
	if (r < 0) {
		close(rootfd);
		return ctl_fail_device(a.arg, -r);
	}
	ret = ctl_filter_init(&f, mnt, a.bus, a.cls);
	if (ret) {
		close(rootfd);
		return ret;
	}
	struct walk_out o = { .tree = tree, .filter = &f };
	json_object *doc = NULL;
	if (a.flags & OPT_JSON)
		doc = o.json = json_object_new_array();
	r = 0;
	if (ctl_filter_keeps(&f, rel)) { /* else nothing below it matches */
		show_device(rootfd, rel, *rel ? rel : "root", true, &o);
		r = walk_children(rootfd, rel, &o);
	}
	close(rootfd);
	ctl_filter_free(&f);
	/* tree: the top device itself (null when nothing matched) */
	if (doc && r == 0)
		print_json(tree ? json_object_array_get_idx(doc, 0) : doc);
	json_object_put(doc);
	if (r < 0)
		return ctl_fail(mnt, "walking root/ failed", -r);
	return CTL_OK;
}

/* ---- info ---- */

struct info_out {
	json_object *files; /* --json */
};

/* Every file of the device (and of its attribute groups, such as pm/):
 * text "name: value" per line, multi-line values indented below. */
static void info_files(int rootfd, const char *dev, const char *group, struct info_out *o)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s%s%s", *dev ? dev : ".", group ? "/" : "", group ? group : "");
	int fd = openat(rootfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent **names;
	int n = fd >= 0 ? scandirat(fd, ".", &names, NULL, versionsort) : -1;
	if (fd >= 0)
		close(fd);
	for (int i = 0; i < n; i++) {
		const char *name = names[i]->d_name;
		char full[PATH_MAX + 300], value[2 * 4096 + 2];
		snprintf(full, sizeof(full), "%s%s%s", group ? group : "", group ? "/" : "", name);
		char power[PATH_MAX + 300];
		struct stat st;
		snprintf(power, sizeof(power), "%s/%s/power", dir, name);
		/* a group has no power file; a child device has */
		if (names[i]->d_type == DT_DIR && name[0] != '.' && !group &&
		    fstatat(rootfd, power, &st, 0) < 0) {
			info_files(rootfd, dev, name, o); /* a group, not a child device */
		} else if (names[i]->d_type == DT_REG) {
			int len = ctl_read(rootfd, dir, name, value, sizeof(value));
			if (len == -EACCES) {
				/* write-only files have no value */
			} else if (o->files) {
				json_object_object_add(o->files, full,
						       len < 0 ? NULL : json_object_new_string(value));
			} else if (len < 0) {
				printf("%s: (%s)\n", full, strerror(-len));
			} else {
				while (len > 0 && value[len - 1] == '\n')
					value[--len] = '\0';
				printf("%s: ", full);
				for (char *p = value; *p; p++) {
					putchar(*p);
					if (*p == '\n')
						fputs("    ", stdout);
				}
				putchar('\n');
			}
		}
		free(names[i]);
	}
	if (n >= 0)
		free(names);
}

/* The interface directory of its class that lists the device, into @buf. */
static const char *find_interface(const char *mnt, const char *rel, char *buf, size_t size)
{
	char pattern[PATH_MAX + 64], target[PATH_MAX];
	glob_t g;
	const char *found = NULL;
	snprintf(pattern, sizeof(pattern), "%s/class/*/*/*", mnt);
	if (glob(pattern, GLOB_NOSORT, NULL, &g) != 0)
		return NULL;
	for (size_t i = 0; i < g.gl_pathc && !found; i++) {
		const char *p = g.gl_pathv[i] + strlen(mnt) + 7; /* "<class>/<iface>/<name>" */
		const char *slash = strchr(p, '/');
		if (!slash || strncmp(slash + 1, "devices/", 8) == 0)
			continue;
		ssize_t n = readlink(g.gl_pathv[i], target, sizeof(target) - 1);
		target[n > 0 ? n : 0] = '\0';
		const char *dev = n > 0 ? ctl_link_device(target) : NULL;
		if (dev && strcmp(dev, rel) == 0) {
			snprintf(buf, size, "%.*s", (int)(strrchr(p, '/') - p), p);
			found = buf;
		}
	}
	globfree(&g);
	return found;
}

static int cmd_info(const char *mnt, int argc, char **argv)
{
	struct cmd_args a;
	int ret = parse_args("info", argc, argv, OPT_JSON, 1, true, &a);
	if (ret)
		return ret;
	int rootfd = ctl_open_root(mnt);
	if (rootfd < 0)
		return CTL_FAILED;
	char rel[PATH_MAX], sub[256], drv[256], iface[512];
	int r = ctl_resolve(mnt, a.arg, rel, sizeof(rel));
	if (r < 0) {
		close(rootfd);
		return ctl_fail_device(a.arg, -r);
	}
	const char *subsystem = ctl_link_name(rootfd, rel, "subsystem", sub, sizeof(sub));
	const char *driver = ctl_link_name(rootfd, rel, "driver", drv, sizeof(drv));
	const char *interface = find_interface(mnt, rel, iface, sizeof(iface));
	struct info_out o = { 0 };
	json_object *doc = NULL;
	if (a.flags & OPT_JSON) {
		doc = json_object_new_object();
		json_object_object_add(doc, "path", json_object_new_string(*rel ? rel : "."));
		json_object_object_add(doc, "subsystem", subsystem ? json_object_new_string(subsystem) : NULL);
		json_object_object_add(doc, "driver", driver ? json_object_new_string(driver) : NULL);
		json_object_object_add(doc, "interface", interface ? json_object_new_string(interface) : NULL);
		o.files = json_object_new_object();
		json_object_object_add(doc, "files", o.files);
	} else {
		printf("%-20s %s\n", "path", *rel ? rel : ".");
		if (subsystem)
			printf("%-20s %s\n", "subsystem", subsystem);
		if (driver)
			printf("%-20s %s\n", "driver", driver);
		if (interface)
			printf("%-20s %s\n", "interface", interface);
	}
	info_files(rootfd, rel, NULL, &o);
	close(rootfd);
	if (doc) {
		print_json(doc);
		json_object_put(doc);
	}
	return CTL_OK;
}

/* ---- dot ---- */

static const char *dot_escape(const char *s, char *buf, size_t size)
{
	size_t n = 0;
	for (; *s && n + 2 < size; s++) {
		if (*s == '"' || *s == '\\')
			buf[n++] = '\\';
		buf[n++] = *s;
	}
	buf[n] = '\0';
	return buf;
}

struct pm_step {
	const char *path;
	size_t step;
};

struct dot_out {
	const struct ctl_filter *filter;
	struct ctl_set order; /* --pm-order: the paths in suspend order */
	char **by_step; /* order's paths, indexed by step - 1 */
	size_t n_steps;
	struct pm_step *by_path; /* the same, sorted by path */
};

static int by_step_path(const void *a, const void *b)
{
	return strcmp(((const struct pm_step *)a)->path, ((const struct pm_step *)b)->path);
}

/* The suspend step of @path (1 = first), 0 when not in the order. */
static size_t pm_step(const struct dot_out *o, const char *path)
{
	struct pm_step key = { .path = path };
	const struct pm_step *e =
		o->by_path ? bsearch(&key, o->by_path, o->n_steps, sizeof(key), by_step_path) : NULL;
	return e ? e->step : 0;
}

static const char *dot_id(const char *path, char *buf, size_t size)
{
	return *path ? dot_escape(path, buf, size) : "root";
}

/* One node per device labelled with its name (and its suspend step), filled
 * by bus or class (a colour per name) when it matches the filter; edges
 * parent -> child. */
static int dot_device(int rootfd, const char *path, struct dot_out *o)
{
	char esc[2 * PATH_MAX], pesc[2 * PATH_MAX], name[512], nesc[1024], sub[256], step[32] = "";
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : *path ? path : "root";
	ctl_read_line(rootfd, path, "name", name, sizeof(name));
	const char *s = ctl_link_name(rootfd, path, "subsystem", sub, sizeof(sub));
	s = s ? s : "";
	unsigned h = 5381; /* a stable colour per bus or class, from its name */
	for (const char *c = s; *c; c++)
		h = h * 33 + (unsigned char)*c;
	size_t n = o->n_steps ? pm_step(o, path) : 0;
	if (n)
		snprintf(step, sizeof(step), "\\nsuspend #%zu", n);
	if (ctl_filter_matches(o->filter, path))
		printf("  \"%s\" [label=\"%s\\n%s%s\", style=filled, fillcolor=\"%.3f 0.25 0.95\"];\n",
		       dot_id(path, esc, sizeof(esc)), dot_escape(base, pesc, sizeof(pesc)),
		       dot_escape(*name ? name : s, nesc, sizeof(nesc)), step,
		       *s ? (h % 1000) / 1000.0 : 0.0);
	else /* an ancestor kept for the shape */
		printf("  \"%s\" [label=\"%s%s\", style=dashed];\n", dot_id(path, esc, sizeof(esc)),
		       dot_escape(base, pesc, sizeof(pesc)), step);
	if (*path) {
		char parent[PATH_MAX];
		snprintf(parent, sizeof(parent), "%s", path);
		char *slash = strrchr(parent, '/');
		if (slash)
			*slash = '\0';
		else
			parent[0] = '\0';
		printf("  \"%s\" -> \"%s\";\n", dot_id(parent, pesc, sizeof(pesc)), esc);
	}
	char **names;
	size_t count;
	int r = ctl_children(rootfd, path, &names, &count);
	if (r < 0)
		return r;
	for (size_t i = 0; r == 0 && i < count; i++) {
		char child[PATH_MAX];
		ctl_join(child, sizeof(child), path, names[i]);
		if (ctl_filter_keeps(o->filter, child))
			r = dot_device(rootfd, child, o);
	}
	ctl_names_free(names, count);
	return r;
}

/* The order a suspend of the whole system takes: a dry run's journal (the
 * "suspend" lines of root/power_log). A mount that cannot run one (a
 * snapshot is read-only; only root may write) gives the global order
 * backwards, which is the order a dry run records. */
static int pm_order(const char *mnt, int rootfd, struct dot_out *o)
{
	int fd = openat(rootfd, "power", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		static const char word[] = "suspend-dry-run";
		ssize_t n = write(fd, word, sizeof(word) - 1);
		int err = n < 0 ? errno : 0;
		close(fd);
		if (n < 0)
			return ctl_fail("root/power", "suspend-dry-run failed", err);
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/root/power_log", mnt);
		FILE *f = fopen(path, "re");
		if (!f)
			return ctl_fail("root/power_log", NULL, errno);
		char line[PATH_MAX + 128], phase[32], dev[PATH_MAX];
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "%*u %31s %4095s", phase, dev) == 2 &&
			    strcmp(phase, "suspend") == 0 &&
			    ctl_set_add(&o->order, strcmp(dev, ".") ? dev : "") < 0)
				break;
		fclose(f);
	} else if (errno == EROFS || errno == EACCES || errno == EPERM) {
		/* the global order, backwards */
		struct ctl_set all = { 0 };
		struct ctl_set stack = { 0 };
		int r = ctl_set_add(&stack, "");
		while (r == 0 && stack.n) {
			char *path = stack.paths[--stack.n];
			char **names = NULL;
			size_t n = 0;
			r = ctl_set_add(&all, path);
			if (r == 0)
				r = ctl_children(rootfd, path, &names, &n);
			for (size_t i = n; r == 0 && i > 0; i--) {
				char child[PATH_MAX];
				ctl_join(child, sizeof(child), path, names[i - 1]);
				r = ctl_set_add(&stack, child);
			}
			ctl_names_free(names, n);
			free(path);
		}
		ctl_set_free(&stack);
		for (size_t i = all.n; r == 0 && i > 0; i--)
			r = ctl_set_add(&o->order, all.paths[i - 1]);
		ctl_set_free(&all);
		if (r < 0)
			return ctl_fail(mnt, NULL, -r);
	} else {
		return ctl_fail("root/power", NULL, errno);
	}
	o->by_step = o->order.paths;
	o->n_steps = o->order.n;
	o->by_path = calloc(o->n_steps + 1, sizeof(*o->by_path));
	if (!o->by_path)
		return ctl_fail(mnt, NULL, ENOMEM);
	for (size_t i = 0; i < o->n_steps; i++)
		o->by_path[i] = (struct pm_step){ .path = o->by_step[i], .step = i + 1 };
	qsort(o->by_path, o->n_steps, sizeof(*o->by_path), by_step_path);
	return CTL_OK;
}

static int cmd_dot(const char *mnt, int argc, char **argv)
{
	struct cmd_args a;
	int ret = parse_args("dot", argc, argv, OPT_FILTER | OPT_PM_ORDER, 0, false, &a);
	if (ret)
		return ret;
	int rootfd = ctl_open_root(mnt);
	if (rootfd < 0)
		return CTL_FAILED;
	struct ctl_filter f;
	struct dot_out o = { .filter = &f };
	ret = ctl_filter_init(&f, mnt, a.bus, a.cls);
	if (ret) {
		close(rootfd);
		return ret;
	}
	if ((a.flags & OPT_PM_ORDER) && (ret = pm_order(mnt, rootfd, &o))) {
		ctl_filter_free(&f);
		ctl_set_free(&o.order);
		free(o.by_path);
		close(rootfd);
		return ret;
	}
	printf("digraph driverfs {\n  rankdir=LR;\n  node [shape=box, fontsize=10];\n");
	int r = ctl_filter_keeps(&f, "") ? dot_device(rootfd, "", &o) : 0;
	/* the suspend order: numbered edges between the devices shown */
	const char *prev = NULL;
	size_t prev_step = 0;
	for (size_t i = 0; r == 0 && i < o.n_steps; i++) {
		char a_esc[2 * PATH_MAX], b_esc[2 * PATH_MAX];
		if (!ctl_filter_keeps(&f, o.by_step[i]))
			continue;
		if (prev)
			printf("  \"%s\" -> \"%s\" [style=dotted, color=red, constraint=false, "
			       "label=\"%zu\", fontcolor=red];\n",
			       dot_id(prev, a_esc, sizeof(a_esc)), dot_id(o.by_step[i], b_esc, sizeof(b_esc)),
			       prev_step);
		prev = o.by_step[i];
		prev_step = i + 1;
	}
	printf("}\n");
	close(rootfd);
	ctl_filter_free(&f);
	ctl_set_free(&o.order);
	free(o.by_path);
	if (r < 0)
		return ctl_fail(mnt, "walking root/ failed", -r);
	return CTL_OK;
}

/* ---- suspend and resume ---- */

/* Copies root/power_log to standard output, or as a JSON array. */
static int print_journal(const char *mnt, bool json)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/root/power_log", mnt);
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	json_object *doc = json ? json_object_new_array() : NULL;
	char line[PATH_MAX + 128];
	while (fgets(line, sizeof(line), f)) {
		char phase[32], dev[PATH_MAX], result[64];
		unsigned long seq;
		long usec;
		if (!doc) {
			fputs(line, stdout);
			continue;
		}
		if (sscanf(line, "%lu %31s %4095s %63s %ld", &seq, phase, dev, result, &usec) != 5)
			continue;
		json_object *o = json_object_new_object();
		json_object_object_add(o, "seq", json_object_new_int64((int64_t)seq));
		json_object_object_add(o, "phase", json_object_new_string(phase));
		json_object_object_add(o, "path", json_object_new_string(dev));
		json_object_object_add(o, "result", json_object_new_string(result));
		json_object_object_add(o, "usec", json_object_new_int64(usec));
		json_object_array_add(doc, o);
	}
	fclose(f);
	if (doc) {
		print_json(doc);
		json_object_put(doc);
	}
	return 0;
}

static int cmd_power(const char *mnt, const char *verb, int argc, char **argv)
{
	struct cmd_args a;
	int ret = parse_args(verb, argc, argv, OPT_DRY_RUN | OPT_JSON, 1, false, &a);
	if (ret)
		return ret;
	int rootfd = ctl_open_root(mnt);
	if (rootfd < 0)
		return CTL_FAILED;
	char rel[PATH_MAX], file[PATH_MAX + 16];
	int r = ctl_resolve(mnt, a.arg, rel, sizeof(rel));
	close(rootfd);
	if (r < 0)
		return ctl_fail_device(a.arg, -r);
	snprintf(file, sizeof(file), "%s/root%s%s/power", mnt, *rel ? "/" : "", rel);
	char word[32];
	snprintf(word, sizeof(word), "%s%s", verb, a.flags & OPT_DRY_RUN ? "-dry-run" : "");
	int fd = open(file, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return ctl_fail(file, NULL, errno);
	/* one whole value per write, as the file takes it */
	ssize_t n = write(fd, word, strlen(word));
	int err = n < 0 ? errno : 0;
	close(fd);
	print_journal(mnt, a.flags & OPT_JSON);
	if (err) {
		char what[PATH_MAX + 32];
		snprintf(what, sizeof(what), "%s %s", verb, *rel ? rel : "(system)");
		return ctl_fail(what,
				err == EIO ? "a hook failed; rolled back (see the power_error of the "
					     "device that failed)"
				: err == EBUSY ? "another transition is running"
					       : NULL,
				err);
	}
	return CTL_OK;
}

static int cmd_save(const char *mnt, int argc, char **argv)
{
	struct cmd_args a;
	int ret = parse_args("save", argc, argv, 0, 1, false, &a);
	if (ret)
		return ret;
	if (!a.arg)
		return ctl_usage_error("save", "needs a FILE (- for standard output)", NULL);
	return ctl_save(mnt, a.arg);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "mount", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	const char *mnt = getenv("DRIVERFS_MOUNT");
	int c;
	if (!mnt || !*mnt)
		mnt = "/devices";
	/* options before the command; the command's own come after it */
	while ((c = getopt_long(argc, argv, "+m:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'm':
			mnt = optarg;
			break;
		case 'h':
			usage(stdout);
			return CTL_OK;
		case 'V':
			printf("driverfsctl %s\n", DRIVERFSD_VERSION);
			return CTL_OK;
		default:
			usage(stderr);
			return CTL_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return CTL_USAGE;
	}
	const char *cmd = argv[optind++];
	int n = argc - optind;
	char **args = argv + optind;
	if (strcmp(cmd, "suspend") == 0 || strcmp(cmd, "resume") == 0)
		return cmd_power(mnt, cmd, n, args);
	if (strcmp(cmd, "info") == 0)
		return cmd_info(mnt, n, args);
	if (strcmp(cmd, "dot") == 0)
		return cmd_dot(mnt, n, args);
	if (strcmp(cmd, "list") == 0 || strcmp(cmd, "tree") == 0)
		return cmd_walk(mnt, strcmp(cmd, "tree") == 0, n, args);
	if (strcmp(cmd, "save") == 0)
		return cmd_save(mnt, n, args);
	return ctl_usage_error(cmd, "unknown command", NULL);
}
