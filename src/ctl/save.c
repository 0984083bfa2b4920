/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * save.c - driverfsctl save: the model, read from a mount's files, written
 * in driverfsd's snapshot format (docs/snapshot.md says which file gives
 * which member). Listings are taken in the order the mount gives them,
 * which is the model's, as driverfsd --save writes it.
 */
#include "core/array.h"
#include "commands.h"
#include "ctl.h"

#include "driverfs/driverfs.h"
#include "snapshot/format.h"
#include "util/readall.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What the bus/ and class/ listings say of a device. */
struct membership {
	char *path; /* under root/ */
	const char *bus, *cls, *iface; /* into the document's strings */
	char *sysname; /* the link's name */
};

struct save {
	const struct dm_sanitizer *sanitize; /* NULL: keep everything */
	const char *mnt;
	int rootfd;
	struct membership *m;
	size_t n, cap;
	/* the device links, (supplier, consumer) path pairs */
	char **links;
	size_t n_links, cap_links;
};

/* The device at @path's links to its consumers (its consumers/). */
static int save_links(struct save *s, const char *path)
{
	char **ends;
	size_t n;
	int r = ctl_device_links(s->rootfd, path, "consumers", &ends, &n);
	for (size_t i = 0; r == 0 && i < n; i++) {
		if (s->n_links + 2 > s->cap_links) {
			size_t cap = s->cap_links ? 2 * s->cap_links : 64;
			char **v = realloc(s->links, cap * sizeof(*v));
			if (!v) {
				r = -ENOMEM;
				break;
			}
			s->links = v;
			s->cap_links = cap;
		}
		char *sup = strdup(path);
		if (!sup) {
			r = -ENOMEM;
			break;
		}
		s->links[s->n_links++] = sup;
		s->links[s->n_links++] = ends[i];
		ends[i] = NULL;
	}
	ctl_names_free(ends, n);
	return r;
}

static struct membership *member_add(struct save *s, const char *path, const char *sysname)
{
	if (!dm_array_grow((void **)&s->m, &s->cap, s->n, sizeof(*s->m), 256))
		return NULL;
	struct membership *e = &s->m[s->n];
	*e = (struct membership){ .path = strdup(path), .sysname = strdup(sysname) };
	if (!e->path || !e->sysname) {
		free(e->path);
		free(e->sysname);
		return NULL;
	}
	s->n++;
	return e;
}

/* The entries of MNT/@dir in the mount's order, less "." and "..";
 * @fn(@s, name, d_type, @data) for each until it fails. */
static int for_each_entry(struct save *s, const char *dir,
			  int (*fn)(struct save *, const char *, unsigned char, void *), void *data)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", s->mnt, dir);
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	int r = 0;
	struct dirent *e;
	errno = 0;
	while (r == 0 && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			r = fn(s, e->d_name, e->d_type, data);
	if (r == 0 && errno)
		r = -errno;
	closedir(d);
	return r;
}

struct link_ctx {
	const char *dir; /* "bus/pci/devices" */
	const char *bus, *cls, *iface; /* what the link says of its device */
};

/* A link to a device: its membership. */
static int on_link(struct save *s, const char *name, unsigned char type, void *data)
{
	struct link_ctx *c = data;
	char path[PATH_MAX], target[PATH_MAX];
	if (type != DT_LNK)
		return 0;
	snprintf(path, sizeof(path), "%s/%s/%s", s->mnt, c->dir, name);
	ssize_t n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return -errno;
	target[n] = '\0';
	const char *dev = ctl_link_device(target);
	if (!dev)
		return 0;
	struct membership *e = member_add(s, dev, name);
	if (!e)
		return -ENOMEM;
	e->bus = c->bus;
	e->cls = c->cls;
	e->iface = c->iface;
	return 0;
}

struct bus_ctx {
	json_object *drivers;
	const char *bus;
	const char *cls; /* class/<cls>/drivers/: the class drivers (directories) */
	json_object *drivers_of; /* with cls: the classes, whose last gets "drivers" */
};

static int on_driver(struct save *s, const char *name, unsigned char type, void *data)
{
	struct bus_ctx *c = data;
	char dir[PATH_MAX], kind[32], prio[32];
	if (type != DT_DIR) /* in a class's drivers/, the links to bus drivers */
		return 0;
	snprintf(dir, sizeof(dir), "%s/%s/%s/drivers/%s", s->mnt, c->cls ? "class" : "bus",
		 c->cls ? c->cls : c->bus, name);
	int r = ctl_read(AT_FDCWD, dir, "kind", kind, sizeof(kind));
	if (r >= 0)
		r = ctl_read(AT_FDCWD, dir, "priority", prio, sizeof(prio));
	if (r < 0)
		return r;
	return dm_snapshot_add_driver(c->drivers, name, strcmp(kind, "kernel") == 0, atoi(prio));
}

/* The string (@key NULL) or the @key member of the last element of
 * @array: a name as the document holds it, which outlives a listing. */
static const char *last_string(json_object *array, const char *key)
{
	json_object *o = json_object_array_get_idx(array, json_object_array_length(array) - 1);
	if (key && !json_object_object_get_ex(o, key, &o))
		return NULL;
	return json_object_get_string(o);
}

static int on_bus(struct save *s, const char *name, unsigned char type, void *data)
{
	char dir[PATH_MAX];
	struct bus_ctx c = { 0 };
	if (type != DT_DIR)
		return 0;
	int r = dm_snapshot_add_bus(data, name, &c.drivers);
	if (r < 0)
		return r;
	c.bus = last_string(data, "name");
	snprintf(dir, sizeof(dir), "bus/%s/drivers", name);
	r = for_each_entry(s, dir, on_driver, &c);
	struct link_ctx l = { .dir = dir, .bus = c.bus };
	snprintf(dir, sizeof(dir), "bus/%s/devices", name);
	return r < 0 ? r : for_each_entry(s, dir, on_link, &l);
}

struct class_ctx {
	json_object *classes, *ifaces;
	const char *cls;
	const char *name;
};

/* class/<class>/drivers/: its class drivers (the links are the bus
 * drivers', saved with their buses), where it has any */
static int on_class_drivers(struct save *s, const char *name, unsigned char type, void *data)
{
	struct bus_ctx *c = data;
	if (type != DT_DIR)
		return 0;
	if (!c->drivers) {
		int r = dm_snapshot_add_class_drivers(c->drivers_of, &c->drivers);
		if (r < 0)
			return r;
	}
	return on_driver(s, name, type, c);
}

static int on_class_entry(struct save *s, const char *name, unsigned char type, void *data)
{
	struct class_ctx *c = data;
	char dir[PATH_MAX];
	if (type != DT_DIR)
		return 0;
	snprintf(dir, sizeof(dir), "class/%s/%s", c->name, name);
	if (strcmp(name, "drivers") == 0) {
		struct bus_ctx d = { .cls = c->name, .drivers_of = c->classes };
		return for_each_entry(s, dir, on_class_drivers, &d);
	}
	struct link_ctx l = { .dir = dir };
	if (strcmp(name, "devices") == 0) {
		l.cls = c->cls;
	} else {
		int r = dm_snapshot_add_string(c->ifaces, name);
		if (r < 0)
			return r;
		l.iface = last_string(c->ifaces, NULL);
	}
	return for_each_entry(s, dir, on_link, &l);
}

static int on_class(struct save *s, const char *name, unsigned char type, void *data)
{
	struct class_ctx c = { .name = name, .classes = data };
	if (type != DT_DIR)
		return 0;
	int r = dm_snapshot_add_class(data, name, &c.ifaces);
	if (r < 0)
		return r;
	c.cls = last_string(data, "name");
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "class/%s", name);
	return for_each_entry(s, dir, on_class_entry, &c);
}

static int by_path(const void *a, const void *b)
{
	return strcmp(((const struct membership *)a)->path, ((const struct membership *)b)->path);
}

/* What the listings say of @path, merged into @d. */
static void merge_membership(struct save *s, const char *path, const char *dirname,
			     struct dm_snapshot_device *d)
{
	struct membership key = { .path = (char *)path };
	struct membership *e = s->n ? bsearch(&key, s->m, s->n, sizeof(*s->m), by_path) : NULL;
	if (!e)
		return;
	while (e > s->m && strcmp(e[-1].path, path) == 0)
		e--;
	const char *bus_name = NULL, *class_name = NULL;
	for (; e < s->m + s->n && strcmp(e->path, path) == 0; e++) {
		if (e->bus) {
			d->bus = e->bus;
			bus_name = e->sysname;
		}
		if (e->cls) {
			d->class_name = e->cls;
			class_name = e->sysname;
		}
		if (e->iface)
			d->interface = e->iface;
	}
	/* the kernel's name, as the bus (else the class) lists it */
	const char *sysname = bus_name ? bus_name : class_name;
	if (sysname && strcmp(sysname, dirname) != 0)
		d->sysname = sysname;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

/* The whole content of the file @path under the mount (as much as a
 * snapshot keeps of a value: the daemon's own bound on one): 0, or -errno. */
static int read_whole(int rootfd, const char *path, char **ret, size_t *ret_len)
{
	int fd = openat(rootfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	int r = dm_read_all(fd, 4096, DM_SNAPSHOT_FILE_MAX, ret, ret_len);
	close(fd);
	return r;
}

/* Whether @name, of the @n entries @names, is one of driverfsd's own:
 * no longer DM_OWN_PREFIX form of it is listed (docs/design.md §6.2). */
static bool is_own(struct dirent **names, int n, const char *name)
{
	char longer[512];
	snprintf(longer, sizeof(longer), "%s%s", DM_OWN_PREFIX, name);
	for (int i = 0; i < n; i++)
		if (strcmp(names[i]->d_name, longer) == 0)
			return false;
	return true;
}

/* Whether @name, in the device's own directory, is left out of its entry:
 * one of driverfsd's files the model gives (format.h), or at the top of
 * the mount (the root device's), one of the three views. */
static bool left_out(struct dirent **names, int n, const char *name, bool root)
{
	if (root && (strcmp(name, "root") == 0 || strcmp(name, "bus") == 0 ||
		     strcmp(name, "class") == 0))
		return true;
	return is_own(names, n, name) && dm_snapshot_is_derived(dm_own_name_base(name), root);
}

/* The files of the directory @rel of the device at @path (@rel NULL: its
 * own; the root device's are at the top of the mount) in name order,
 * then its attribute directories (neither devices nor pm/, which passes
 * the machine's sysfs through live), as driverfsd --save lists them
 * (format.h). */
static int save_dir(struct save *s, const char *path, const char *rel, int depth,
		    json_object *owner)
{
	char dir[PATH_MAX];
	struct dirent **names;
	if (rel)
		snprintf(dir, sizeof(dir), "%s%s%s", path, *path ? "/" : "", rel);
	else
		snprintf(dir, sizeof(dir), "%s", *path ? path : "..");
	int n = scandirat(s->rootfd, dir, &names, NULL, by_name);
	if (n < 0)
		return -errno;
	int r = 0;
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; r == 0 && i < n; i++) {
			const char *name = names[i]->d_name;
			char file[PATH_MAX];
			struct stat st;
			if (name[0] == '.' || (!rel && left_out(names, n, name, !*path)) ||
			    (size_t)snprintf(file, sizeof(file), "%s/%s", dir, name) >= sizeof(file) ||
			    fstatat(s->rootfd, file, &st, AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			if (pass == 0 && S_ISREG(st.st_mode)) {
				char *buf = NULL;
				size_t len = 0;
				int e = st.st_mode & 0444 ? read_whole(s->rootfd, file, &buf, &len) : 0;
				if (e < 0)
					buf = NULL; /* saved with its mode and the read's error */
				r = dm_snapshot_add_file(owner, name, st.st_mode & 0777, buf, len, -e,
							 s->sanitize);
				free(buf);
			} else if (pass == 1 && S_ISDIR(st.st_mode)) {
				/* child devices are in the device's own directory */
				if ((!rel && ((strcmp(dm_own_name_base(name), "pm") == 0 &&
					       is_own(names, n, name)) ||
					      ctl_is_device_dir(s->rootfd, file))) ||
				    depth >= DM_SNAPSHOT_DIR_DEPTH_MAX)
					continue;
				char sub[PATH_MAX];
				json_object *o;
				int k = rel ? snprintf(sub, sizeof(sub), "%s/%s", rel, name)
					    : snprintf(sub, sizeof(sub), "%s", name);
				if (k < 0 || (size_t)k > DM_SNAPSHOT_DIR_PATH_MAX)
					continue;
				r = dm_snapshot_add_dir(owner, name, &o);
				if (r == 0)
					r = save_dir(s, path, sub, depth + 1, o);
			}
		}
	}
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return r < 0 ? r : 0;
}

/* @path and its subtree, depth first: the global list's order. */
static int save_device(struct save *s, const char *path, json_object *devices)
{
	char devpath[PATH_MAX], kdriver[256], power[32], driver[256], *slash;
	struct dm_snapshot_device d = { .path = path };
	const char *dirname = (slash = strrchr(path, '/')) ? slash + 1 : path;
	if (ctl_read_own(s->rootfd, path, "devpath", devpath, sizeof(devpath)) >= 0)
		d.devpath = devpath;
	if (ctl_read_own(s->rootfd, path, "kernel_driver", kdriver, sizeof(kdriver)) >= 0)
		d.kernel_driver = kdriver;
	int r = ctl_read_own(s->rootfd, path, "power", power, sizeof(power));
	if (r < 0)
		return r;
	d.suspended = strcmp(power, "suspended") == 0;
	char f[PATH_MAX + 256];
	d.driver = ctl_link_name(s->rootfd, "", ctl_own(s->rootfd, path, "driver", f, sizeof(f)),
				 driver, sizeof(driver));
	merge_membership(s, path, dirname, &d);
	json_object *obj;
	r = dm_snapshot_add_device(devices, &d, &obj);
	if (r == 0)
		r = save_dir(s, path, NULL, 0, obj);
	if (r == 0)
		r = save_links(s, path);
	char **children;
	size_t n;
	if (r == 0)
		r = ctl_children(s->rootfd, path, &children, &n);
	if (r < 0)
		return r;
	for (size_t i = 0; r == 0 && i < n; i++) {
		char child[PATH_MAX];
		ctl_join(child, sizeof(child), path, children[i]);
		r = save_device(s, child, devices);
	}
	ctl_names_free(children, n);
	return r;
}

int ctl_read_model(const char *mnt, bool sanitize, struct json_object **ret)
{
	struct dm_sanitizer rules;
	if (sanitize)
		dm_sanitizer_init(&rules);
	struct save s = { .mnt = mnt, .rootfd = ctl_open_root(mnt),
			  .sanitize = sanitize ? &rules : NULL };
	if (s.rootfd < 0)
		return CTL_FAILED;
	json_object *buses, *classes, *devices;
	json_object *doc = dm_snapshot_doc_new(&buses, &classes, &devices);
	int r = doc ? for_each_entry(&s, "bus", on_bus, buses) : -ENOMEM;
	if (r == 0)
		r = for_each_entry(&s, "class", on_class, classes);
	if (r == 0 && s.n)
		qsort(s.m, s.n, sizeof(*s.m), by_path);
	if (r == 0)
		r = save_device(&s, "", devices);
	if (r == 0)
		r = dm_snapshot_add_links(doc, (const char *const *)s.links, s.n_links / 2);
	for (size_t i = 0; i < s.n_links; i++)
		free(s.links[i]);
	free(s.links);
	close(s.rootfd);
	for (size_t i = 0; i < s.n; i++) {
		free(s.m[i].path);
		free(s.m[i].sysname);
	}
	free(s.m);
	if (r < 0) {
		json_object_put(doc);
		return ctl_fail(mnt, "reading the mount failed", -r);
	}
	*ret = doc;
	return CTL_OK;
}

static int save(const char *mnt, const char *file, bool sanitize)
{
	json_object *doc;
	int ret = ctl_read_model(mnt, sanitize, &doc);
	if (ret != CTL_OK)
		return ret;
	if (strcmp(file, "-") == 0) {
		const char *text = dm_snapshot_to_string(doc);
		if (!text || printf("%s\n", text) < 0 || fflush(stdout) != 0)
			ret = ctl_fail("standard output", NULL, errno ? errno : EIO);
	} else {
		char why[64];
		int r = dm_snapshot_write_file(doc, file, why, sizeof(why));
		if (r < 0)
			ret = ctl_fail(file, *why ? why : NULL, -r);
	}
	json_object_put(doc);
	return ret;
}

int ctl_cmd_save(const char *mnt, int argc, char **argv)
{
	struct ctl_args a;
	int ret = ctl_parse_args("save", argc, argv, CTL_OPT_SANITIZE, 1, false, &a);
	if (ret)
		return ret;
	if (!a.arg)
		return ctl_usage_error("save", "needs a FILE (- for standard output)", NULL);
	return save(mnt, a.arg, a.flags & CTL_OPT_SANITIZE);
}
