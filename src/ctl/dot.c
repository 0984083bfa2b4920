/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * dot.c - driverfsctl dot: the hierarchy as a Graphviz graph, coloured by
 * bus or class, its device links as dashed edges, and with --pm-order the
 * order a suspend takes (device links included: a dry run's).
 */
#include "commands.h"
#include "ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
	char f[PATH_MAX + 256];
	ctl_read_line(rootfd, "", ctl_own(rootfd, path, "name", f, sizeof(f)), name, sizeof(name));
	const char *s =
		ctl_link_name(rootfd, "", ctl_own(rootfd, path, "subsystem", f, sizeof(f)), sub,
			      sizeof(sub));
	s = s ? s : "";
	unsigned h = 5381; /* a stable colour per bus or class, from its name */
	for (const char *c = s; *c; c++)
		h = h * 33 + (unsigned char)*c;
	size_t n = o->n_steps ? pm_step(o, path) : 0;
	if (n)
		snprintf(step, sizeof(step), "\\nsuspend #%zu", n);
	/* a class device bound to a class driver: the driver named, the box bold */
	char target[PATH_MAX], cesc[600], cline[640] = "";
	if (ctl_link_target(rootfd, "", ctl_own(rootfd, path, "driver", f, sizeof(f)), target,
			    sizeof(target)) &&
	    ctl_is_class_driver(target))
		snprintf(cline, sizeof(cline), "\\nclass driver %s",
			 dot_escape(ctl_link_base(target), cesc, sizeof(cesc)));
	if (ctl_filter_matches(o->filter, path))
		printf("  \"%s\" [label=\"%s\\n%s%s%s\", style=\"filled%s\", "
		       "fillcolor=\"%.3f 0.25 0.95\"];\n",
		       dot_id(path, esc, sizeof(esc)), dot_escape(base, pesc, sizeof(pesc)),
		       dot_escape(*name ? name : s, nesc, sizeof(nesc)), cline, step,
		       *cline ? ",bold" : "", *s ? (h % 1000) / 1000.0 : 0.0);
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
	/* its device links: supplier -> consumer, dashed, not ranking */
	char **names;
	size_t count;
	if (ctl_device_links(rootfd, path, "consumers", &names, &count) == 0) {
		for (size_t i = 0; i < count; i++)
			if (ctl_filter_keeps(o->filter, names[i]))
				printf("  \"%s\" -> \"%s\" [style=dashed, color=blue, constraint=false, "
				       "tooltip=\"device link\"];\n",
				       dot_id(path, esc, sizeof(esc)), dot_id(names[i], pesc, sizeof(pesc)));
		ctl_names_free(names, count);
	}
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
 * "suspend" lines of the power_log at the mount's top). A mount that cannot run one (a
 * snapshot is read-only; only root may write) gives the global order
 * backwards, which is the order a dry run records. */
static int pm_order(const char *mnt, int rootfd, struct dot_out *o)
{
	int fd = openat(rootfd, "../power", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		static const char word[] = "suspend-dry-run";
		ssize_t n = write(fd, word, sizeof(word) - 1);
		int err = n < 0 ? errno : 0;
		close(fd);
		if (n < 0)
			return ctl_fail("power", "suspend-dry-run failed", err);
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/power_log", mnt);
		FILE *f = fopen(path, "re");
		if (!f)
			return ctl_fail("power_log", NULL, errno);
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
		return ctl_fail("power", NULL, errno);
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

int ctl_cmd_dot(const char *mnt, int argc, char **argv)
{
	struct ctl_args a;
	int ret = ctl_parse_args("dot", argc, argv, CTL_OPT_FILTER | CTL_OPT_PM_ORDER, 0, false, &a);
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
	if ((a.flags & CTL_OPT_PM_ORDER) && (ret = pm_order(mnt, rootfd, &o))) {
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
