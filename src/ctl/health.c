/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * health.c - driverfsctl health [DEV] [--json]: the devices that are not
 * healthy, each with what is wrong, read from the mount's files alone:
 *   link      its PCIe link trained below what both ends can do
 *             (pcie_link/state "degraded")
 *   upstream  a link above it is, the first one on the way to the root
 *             port (pcie_link/bottleneck)
 *   aer       PCIe AER errors counted (the kernel's aer_dev_correctable,
 *             aer_dev_nonfatal, aer_dev_fatal: their TOTAL_ERR_* lines)
 *   power     its last PM hook failed (power_error)
 *   binding   its last binding request failed (binding)
 *   probe     its kernel driver's probe was deferred, with the reason the
 *             driver gave (the mount's devices_deferred: debugfs's, root
 *             only); a device the kernel names there that the tree does
 *             not have is listed by its name, after the tree's
 * Exit status 0 when none is, 3 when some device is not healthy.
 */
#include "commands.h"
#include "ctl.h"
#include "fleet/aer.h"
#include "fleet/deferred.h"
#include "util/readall.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CTL_UNHEALTHY 3

/* A deferred probe, as the mount's devices_deferred says (escaped). */
struct deferred {
	char *name, *reason;
	bool seen; /* a device of the tree */
};

struct health {
	int rootfd;
	bool json;
	json_object *list; /* --json: the devices not healthy */
	size_t unhealthy;
	struct deferred *deferred; /* sorted by name */
	size_t n_deferred;
};

struct problems {
	json_object *arr;
	size_t n;
};

static void put_plain(const char *s)
{
	fputs(s, stdout);
}

/* @path's last name and @detail are device text; with @escaped, both are
 * printable ASCII already (fleet/deferred.h), shown as they are */
static void problem_text(struct problems *p, const char *path, const char *kind,
			 const char *detail, bool json, bool escaped)
{
	if (json) {
		json_object *o = json_object_new_object();
		json_object_object_add(o, "kind", json_object_new_string(kind));
		json_object_object_add(o, "detail", json_object_new_string(detail));
		json_object_array_add(p->arr, o);
	} else {
		const char *name = strrchr(path, '/');
		void (*put)(const char *) = escaped ? put_plain : ctl_put;
		put(name ? name + 1 : path);
		printf("\t%s\t", kind);
		put(detail);
		putchar('\n');
	}
	p->n++;
}

static void problem(struct problems *p, const char *path, const char *kind, const char *detail,
		    bool json)
{
	problem_text(p, path, kind, detail, json, false);
}

/* ---- the kernel's deferred probes ---- */

static int deferred_cmp(const void *a, const void *b)
{
	return strcmp(((const struct deferred *)a)->name, ((const struct deferred *)b)->name);
}

static int add_deferred(const char *name, const char *reason, void *data)
{
	struct health *h = data;
	struct deferred *v = realloc(h->deferred, (h->n_deferred + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	h->deferred = v;
	struct deferred *d = &v[h->n_deferred];
	*d = (struct deferred){ .name = strdup(name), .reason = strdup(reason) };
	if (!d->name || !d->reason) {
		free(d->name);
		free(d->reason);
		return -ENOMEM;
	}
	h->n_deferred++;
	return 0;
}

/* The mount's devices_deferred; none when it has none (a snapshot's mount,
 * an older daemon) or this user may not read it (root only). Its text is
 * the daemon's, parsed again as the kernel's would be. */
static int read_deferred(struct health *h)
{
	int fd = openat(h->rootfd, "../devices_deferred", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	char *text;
	size_t len;
	/* the most the daemon writes of the most lines it takes */
	int r = dm_read_all(fd, 4096,
			    (size_t)DM_DEFERRED_LINES_MAX *
				    (DM_DEFERRED_NAME_SIZE + DM_DEFERRED_REASON_SIZE + 1),
			    &text, &len);
	close(fd);
	if (r < 0)
		return r == -ENOMEM ? r : 0;
	r = dm_deferred_parse(text, len, add_deferred, h);
	free(text);
	if (r == 0 && h->n_deferred)
		qsort(h->deferred, h->n_deferred, sizeof(*h->deferred), deferred_cmp);
	return r;
}

static struct deferred *find_deferred(struct health *h, const char *name)
{
	struct deferred key = { .name = (char *)name };
	return h->n_deferred ? bsearch(&key, h->deferred, h->n_deferred, sizeof(key), deferred_cmp)
			     : NULL;
}

static void deferred_problem(struct problems *p, const char *path, const struct deferred *d,
			     bool json)
{
	char buf[DM_DEFERRED_REASON_SIZE + 32];
	snprintf(buf, sizeof(buf), "deferred%s%s", d->reason[0] ? ": " : "", d->reason);
	problem_text(p, path, "probe", buf, json, true);
}

static void add_unhealthy(struct health *h, struct problems *p, const char *path,
			  const char *name)
{
	h->unhealthy++;
	if (h->json) {
		json_object *o = json_object_new_object();
		json_object_object_add(o, "path", path ? json_object_new_string(path) : NULL);
		json_object_object_add(o, "id", json_object_new_string(name));
		json_object_object_add(o, "problems", p->arr);
		json_object_array_add(h->list, o);
		p->arr = NULL;
	}
}

/* The deferred devices the tree does not have, by their kernel names. */
static void deferred_unseen(struct health *h)
{
	for (size_t i = 0; i < h->n_deferred; i++) {
		const struct deferred *d = &h->deferred[i];
		if (d->seen)
			continue;
		struct problems p = { .arr = h->json ? json_object_new_array() : NULL };
		deferred_problem(&p, d->name, d, h->json);
		add_unhealthy(h, &p, NULL, d->name);
		json_object_put(p.arr);
	}
}

/* The count on @key's line of the AER counter file @file; 0 without one. */
static unsigned long long aer_total(int rootfd, const char *path, const char *file,
				    const char *key)
{
	char buf[4096];
	unsigned long long n;
	return ctl_read(rootfd, path, file, buf, sizeof(buf)) >= 0 && dm_aer_count(buf, key, &n)
		       ? n
		       : 0;
}

static void check_device(struct health *h, const char *path)
{
	struct problems p = { .arr = h->json ? json_object_new_array() : NULL };
	char buf[4096];
	const char *name = strrchr(path, '/');
	name = name ? name + 1 : path;

	if (ctl_read(h->rootfd, path, "pcie_link/state", buf, sizeof(buf)) > 0 &&
	    strcmp(buf, "degraded") == 0) {
		char speed[64] = "", width[16] = "", max_speed[64] = "", max_width[16] = "";
		ctl_read_line(h->rootfd, path, "pcie_link/speed", speed, sizeof(speed));
		ctl_read_line(h->rootfd, path, "pcie_link/width", width, sizeof(width));
		ctl_read_line(h->rootfd, path, "pcie_link/max_speed", max_speed, sizeof(max_speed));
		ctl_read_line(h->rootfd, path, "pcie_link/max_width", max_width, sizeof(max_width));
		snprintf(buf, sizeof(buf), "%s x%s, both ends can do %s x%s", speed, width,
			 max_speed, max_width);
		problem(&p, path, "link", buf, h->json);
	}
	/* a degraded link above it: named by its lower end's bus id */
	if (ctl_read(h->rootfd, path, "pcie_link/bottleneck", buf, sizeof(buf)) > 0 &&
	    strcmp(buf, "none") != 0) {
		size_t len = strcspn(buf, " ");
		if (len != strlen(name) || strncmp(buf, name, len) != 0)
			problem(&p, path, "upstream", buf, h->json);
	}
	static const struct {
		const char *file, *key, *what;
	} aer[] = {
		{ "aer_dev_fatal", "TOTAL_ERR_FATAL", "fatal" },
		{ "aer_dev_nonfatal", "TOTAL_ERR_NONFATAL", "non-fatal" },
		{ "aer_dev_correctable", "TOTAL_ERR_COR", "correctable" },
	};
	for (size_t i = 0; i < sizeof(aer) / sizeof(aer[0]); i++) {
		unsigned long long n = aer_total(h->rootfd, path, aer[i].file, aer[i].key);
		if (n) {
			snprintf(buf, sizeof(buf), "%llu %s error%s", n, aer[i].what, n == 1 ? "" : "s");
			problem(&p, path, "aer", buf, h->json);
		}
	}
	if (ctl_read_own(h->rootfd, path, "power_error", buf, sizeof(buf)) > 0)
		problem(&p, path, "power", buf, h->json);
	if (ctl_read_own(h->rootfd, path, "binding", buf, sizeof(buf)) > 0 &&
	    strstr(buf, "the last request failed")) {
		char line[512];
		ctl_read_line(h->rootfd, path, "binding", line, sizeof(line));
		problem(&p, path, "binding", line, h->json);
	}
	struct deferred *d = find_deferred(h, name);
	if (d) {
		d->seen = true;
		deferred_problem(&p, path, d, h->json);
	}

	if (p.n)
		add_unhealthy(h, &p, path, name);
	json_object_put(p.arr);
}

static int walk(struct health *h, const char *path)
{
	char **names;
	size_t n;
	int r = ctl_children(h->rootfd, path, &names, &n);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n && r == 0; i++) {
		char child[PATH_MAX];
		ctl_join(child, sizeof(child), path, names[i]);
		check_device(h, child);
		r = walk(h, child);
	}
	ctl_names_free(names, n);
	return r;
}

int ctl_cmd_health(const char *mnt, int argc, char **argv)
{
	struct ctl_args a;
	int ret = ctl_parse_args("health", argc, argv, CTL_OPT_JSON, 1, false, &a);
	if (ret)
		return ret;
	struct health h = { .json = a.flags & CTL_OPT_JSON };
	h.rootfd = ctl_open_root(mnt);
	if (h.rootfd < 0)
		return CTL_FAILED;
	char rel[PATH_MAX] = "";
	int r = a.arg ? ctl_resolve(mnt, a.arg, rel, sizeof(rel)) : 0;
	if (r < 0) {
		close(h.rootfd);
		return ctl_fail_device(a.arg, -r);
	}
	if (h.json)
		h.list = json_object_new_array();
	r = read_deferred(&h);
	/* DEV: that device and those below it; else every device, and the
	 * deferred ones the tree does not have */
	if (*rel && r == 0)
		check_device(&h, rel);
	if (r == 0)
		r = walk(&h, rel);
	if (r == 0 && !*rel)
		deferred_unseen(&h);
	close(h.rootfd);
	for (size_t i = 0; i < h.n_deferred; i++) {
		free(h.deferred[i].name);
		free(h.deferred[i].reason);
	}
	free(h.deferred);
	if (h.json) {
		ctl_print_json(h.list);
		json_object_put(h.list);
	}
	if (r < 0)
		return ctl_fail(mnt, NULL, -r);
	return h.unhealthy ? CTL_UNHEALTHY : CTL_OK;
}
