/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tree.c - driverfsctl list and tree: the devices in the global order, as
 * paths or as the hierarchy, with their names, drivers and power states,
 * and the files -o names (a disk's size and model: an inventory).
 */
#include "commands.h"
#include "ctl.h"

#include <json-c/json.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


/* What list and tree show of a device. */
struct dev_view {
	char name[512];
	char power[32];
	char driver_buf[256];
	const char *driver; /* NULL when unbound */
};

static void view_read(int rootfd, const char *path, struct dev_view *v)
{
	char f[PATH_MAX + 256];
	ctl_read_line(rootfd, "", ctl_own(rootfd, path, "name", f, sizeof(f)), v->name,
		      sizeof(v->name));
	ctl_read_line(rootfd, "", ctl_own(rootfd, path, "power", f, sizeof(f)), v->power,
		      sizeof(v->power));
	v->driver = ctl_link_name(rootfd, "", ctl_own(rootfd, path, "driver", f, sizeof(f)),
				  v->driver_buf, sizeof(v->driver_buf));
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
	const char *output; /* -o NAME[,NAME...], or NULL */
	const struct ctl_filter *filter;
	json_object *json; /* --json: the array this level's devices go in */
	char prefix[4096];
};

/* Calls @fn with each name of the -o list @output (comma-separated). */
static void for_each_output(const char *output, void (*fn)(const char *name, void *), void *data)
{
	char name[256];
	for (const char *s = output; s && *s;) {
		size_t n = strcspn(s, ",");
		if (n < sizeof(name) && !(n == 1 && s[0] == '.') && !(n == 2 && !strncmp(s, "..", 2))) {
			memcpy(name, s, n);
			name[n] = '\0';
			fn(name, data);
		}
		s += n + (s[n] == ',');
	}
}

struct output_ctx {
	int rootfd;
	const char *path;
	json_object *json; /* --json: the device's "attributes", else NULL: printed */
};

/* One -o file of a device, by the name it has there (the root device's
 * are at the top of the mount): its first line; a device without it shows
 * nothing (null in --json). */
static void output_one(const char *name, void *data)
{
	struct output_ctx *c = data;
	char value[4096 + 2];
	int r = ctl_read(c->rootfd, *c->path ? c->path : "..", name, value, sizeof(value));
	if (r >= 0)
		value[strcspn(value, "\n")] = '\0';
	if (c->json)
		json_object_object_add(c->json, name, r >= 0 ? json_object_new_string(value) : NULL);
	else if (r >= 0) {
		fputs("  ", stdout);
		ctl_put(name);
		putchar('=');
		ctl_put(value);
	}
}

/* Shows the device @path (under the root/ fd @rootfd) as list or tree does. */
static void show_device(int rootfd, const char *path, const char *label, bool last,
			struct walk_out *o)
{
	struct dev_view v;
	bool match = ctl_filter_matches(o->filter, path);
	if (!o->tree && !match)
		return; /* list: only the devices themselves; each path names its ancestors */
	view_read(rootfd, path, &v);
	struct output_ctx out = { .rootfd = rootfd, .path = path };
	if (o->json) {
		json_object *node = view_json(path, &v, o->filter);
		json_object_array_add(o->json, node);
		if (o->output && match) {
			out.json = json_object_new_object();
			json_object_object_add(node, "attributes", out.json);
			for_each_output(o->output, output_one, &out);
		}
		if (o->tree) {
			json_object *kids = json_object_new_array();
			json_object_object_add(node, "children", kids);
			o->json = kids; /* the caller puts the level back */
		}
		return;
	}
	if (!o->tree) {
		ctl_put(*path ? path : ".");
		for_each_output(o->output, output_one, &out);
		printf("\n");
		return;
	}
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	const char *shown = label ? label : base;
	if (!label) /* below the top of the tree */
		printf("%s%s ", o->prefix, last ? "`--" : "|--");
	ctl_put(shown);
	/* an ancestor kept only for the shape shows its name alone */
	if (match && *v.name && strcmp(v.name, shown) != 0) {
		fputs("  ", stdout);
		ctl_put(v.name);
	}
	if (match && v.driver) {
		fputs("  [", stdout);
		ctl_put(v.driver);
		putchar(']');
	}
	if (match && strcmp(v.power, "on") != 0 && *v.power) {
		fputs("  (", stdout);
		ctl_put(v.power);
		putchar(')');
	}
	if (match)
		for_each_output(o->output, output_one, &out);
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

static int walk(const char *mnt, bool tree, int argc, char **argv)
{
	struct ctl_args a;
	int ret = ctl_parse_args(tree ? "tree" : "list", argc, argv,
				 CTL_OPT_JSON | CTL_OPT_FILTER | CTL_OPT_OUTPUT, tree ? 1 : 0, false, &a);
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
	struct walk_out o = { .tree = tree, .filter = &f, .output = a.output };
	json_object *doc = NULL;
	if (a.flags & CTL_OPT_JSON)
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
		ctl_print_json(tree ? json_object_array_get_idx(doc, 0) : doc);
	json_object_put(doc);
	if (r < 0)
		return ctl_fail(mnt, "walking root/ failed", -r);
	return CTL_OK;
}

int ctl_cmd_list(const char *mnt, int argc, char **argv)
{
	return walk(mnt, false, argc, argv);
}

int ctl_cmd_tree(const char *mnt, int argc, char **argv)
{
	return walk(mnt, true, argc, argv);
}
