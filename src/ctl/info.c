/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * info.c - driverfsctl info: every file of a device, its subsystem, driver
 * and interface.
 */
#include "commands.h"
#include "ctl.h"
#include "snapshot/format.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct info_out {
	json_object *files; /* --json */
};

/* Every file of the device (and of its attribute groups, such as pm/):
 * text "name: value" per line, multi-line values indented below. The root
 * device's are at the top of the mount, beside root/, bus/ and class/. */
static void info_files(int rootfd, const char *dev, const char *group, struct info_out *o)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s%s%s", *dev ? dev : "..", group ? "/" : "",
		 group ? group : "");
	int fd = openat(rootfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent **names;
	int n = fd >= 0 ? scandirat(fd, ".", &names, NULL, versionsort) : -1;
	if (fd >= 0)
		close(fd);
	for (int i = 0; i < n; i++) {
		const char *name = names[i]->d_name;
		char full[PATH_MAX + 300], value[2 * 4096 + 2];
		snprintf(full, sizeof(full), "%s%s%s", group ? group : "", group ? "/" : "", name);
		char sub[PATH_MAX + 300];
		snprintf(sub, sizeof(sub), "%s/%s", dir, name);
		bool views = !*dev && !group && (strcmp(name, "root") == 0 || strcmp(name, "bus") == 0 ||
						 strcmp(name, "class") == 0);
		/* a group (pm/, queue/, queue/iosched/), not a child device */
		if (views) {
			/* the mount's views, beside the root device's files */
		} else if (names[i]->d_type == DT_DIR && name[0] != '.' &&
		    (group || !ctl_is_device_dir(rootfd, sub))) {
			info_files(rootfd, dev, full, o); /* a group, not a child device */
		} else if (names[i]->d_type == DT_REG) {
			int len = ctl_read(rootfd, dir, name, value, sizeof(value));
			/* a binary value (USB descriptors, PCI config) is no text */
			bool text = len >= 0 && dm_snapshot_value_is_text(value, (size_t)len);
			if (len == -EACCES) {
				/* write-only files have no value */
			} else if (o->files) {
				json_object_object_add(o->files, full,
						       text ? json_object_new_string(value) : NULL);
			} else {
				ctl_put(full);
				if (len < 0) {
					printf(": (%s)\n", strerror(-len));
				} else if (!text) {
					printf(": (binary, %d bytes)\n", len);
				} else {
					while (len > 0 && value[len - 1] == '\n')
						value[--len] = '\0';
					fputs(": ", stdout);
					/* each line escaped, those after the first indented */
					for (char *p = value;; fputs("\n    ", stdout)) {
						size_t line = strcspn(p, "\n");
						ctl_put_text(p, line, 0);
						if (!p[line])
							break;
						p += line + 1;
					}
					putchar('\n');
				}
			}
		}
		free(names[i]);
	}
	if (n >= 0)
		free(names);
}

/* A line "LABEL   VALUE[NOTE]" of the text, the value escaped. */
static void put_field(const char *label, const char *value, const char *note)
{
	printf("%-20s ", label);
	ctl_put(value);
	printf("%s\n", note);
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

int ctl_cmd_info(const char *mnt, int argc, char **argv)
{
	struct ctl_args a;
	int ret = ctl_parse_args("info", argc, argv, CTL_OPT_JSON, 1, true, &a);
	if (ret)
		return ret;
	int rootfd = ctl_open_root(mnt);
	if (rootfd < 0)
		return CTL_FAILED;
	char rel[PATH_MAX], sub[256], iface[512];
	int r = ctl_resolve(mnt, a.arg, rel, sizeof(rel));
	if (r < 0) {
		close(rootfd);
		return ctl_fail_device(a.arg, -r);
	}
	char f[PATH_MAX + 256];
	const char *subsystem = ctl_link_name(rootfd, "", ctl_own(rootfd, rel, "subsystem", f, sizeof(f)),
					      sub, sizeof(sub));
	char target[PATH_MAX];
	const char *driver = ctl_link_target(rootfd, "", ctl_own(rootfd, rel, "driver", f, sizeof(f)),
					     target, sizeof(target));
	bool class_driver = driver && ctl_is_class_driver(target);
	if (driver)
		driver = ctl_link_base(target);
	const char *interface = find_interface(mnt, rel, iface, sizeof(iface));
	struct info_out o = { 0 };
	json_object *doc = NULL;
	if (a.flags & CTL_OPT_JSON) {
		doc = json_object_new_object();
		json_object_object_add(doc, "path", json_object_new_string(*rel ? rel : "."));
		json_object_object_add(doc, "subsystem", subsystem ? json_object_new_string(subsystem) : NULL);
		json_object_object_add(doc, "driver", driver ? json_object_new_string(driver) : NULL);
		/* whose: a bus's driver, or its class's (docs/design.md §7.6) */
		json_object_object_add(doc, "driver_of",
				       !driver	      ? NULL
				       : class_driver ? json_object_new_string("class")
						      : json_object_new_string("bus"));
		json_object_object_add(doc, "interface", interface ? json_object_new_string(interface) : NULL);
		o.files = json_object_new_object();
		json_object_object_add(doc, "files", o.files);
	} else {
		put_field("path", *rel ? rel : ".", "");
		if (subsystem)
			put_field("subsystem", subsystem, "");
		if (driver)
			put_field("driver", driver, class_driver ? " (class driver)" : "");
		if (interface)
			put_field("interface", interface, "");
	}
	/* its device links, both ways: paths under root/ */
	for (int k = 0; k < 2; k++) {
		const char *which = k ? "consumers" : "suppliers";
		char **ends;
		size_t n;
		if (ctl_device_links(rootfd, rel, which, &ends, &n) < 0 || n == 0) {
			if (doc)
				json_object_object_add(doc, which, json_object_new_array());
			continue;
		}
		json_object *arr = doc ? json_object_new_array() : NULL;
		for (size_t i = 0; i < n; i++) {
			if (arr)
				json_object_array_add(arr, json_object_new_string(*ends[i] ? ends[i] : "."));
			else
				put_field(i ? "" : which, *ends[i] ? ends[i] : ".", "");
		}
		if (doc)
			json_object_object_add(doc, which, arr);
		ctl_names_free(ends, n);
	}
	info_files(rootfd, rel, NULL, &o);
	close(rootfd);
	if (doc) {
		ctl_print_json(doc);
		json_object_put(doc);
	}
	return CTL_OK;
}
