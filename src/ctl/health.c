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
 * Exit status 0 when none is, 3 when some device is not healthy.
 */
#include "commands.h"
#include "ctl.h"
#include "fleet/aer.h"

#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CTL_UNHEALTHY 3

struct health {
	int rootfd;
	bool json;
	json_object *list; /* --json: the devices not healthy */
	size_t unhealthy;
};

struct problems {
	json_object *arr;
	size_t n;
};

static void problem(struct problems *p, const char *path, const char *kind, const char *detail,
		    bool json)
{
	if (json) {
		json_object *o = json_object_new_object();
		json_object_object_add(o, "kind", json_object_new_string(kind));
		json_object_object_add(o, "detail", json_object_new_string(detail));
		json_object_array_add(p->arr, o);
	} else {
		const char *name = strrchr(path, '/');
		ctl_put(name ? name + 1 : path);
		printf("\t%s\t", kind);
		ctl_put(detail);
		putchar('\n');
	}
	p->n++;
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

	if (p.n) {
		h->unhealthy++;
		if (h->json) {
			json_object *o = json_object_new_object();
			json_object_object_add(o, "path", json_object_new_string(path));
			json_object_object_add(o, "id", json_object_new_string(name));
			json_object_object_add(o, "problems", p.arr);
			json_object_array_add(h->list, o);
			p.arr = NULL;
		}
	}
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
	/* DEV: that device and those below it; else every device */
	if (*rel)
		check_device(&h, rel);
	r = walk(&h, rel);
	close(h.rootfd);
	if (h.json) {
		ctl_print_json(h.list);
		json_object_put(h.list);
	}
	if (r < 0)
		return ctl_fail(mnt, NULL, -r);
	return h.unhealthy ? CTL_UNHEALTHY : CTL_OK;
}
