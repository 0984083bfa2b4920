/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* mount.c - driverfsctl's reading of a driverfs mount, its filter and errors. */
#include "core/array.h"
#include "ctl.h"

#include "driverfs/driverfs.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- errors ---- */

int ctl_fail(const char *what, const char *msg, int err)
{
	char text[256];
	if (!msg) {
		/* errno's text, in the lower case of the rest of the line */
		snprintf(text, sizeof(text), "%s", strerror(err));
		text[0] = (char)tolower((unsigned char)text[0]);
		msg = text;
	}
	const char *name = strerrorname_np(err);
	fprintf(stderr, "driverfsctl: %s: %s (%s)\n", what, msg, name ? name : "?");
	return CTL_FAILED;
}

int ctl_fail_device(const char *dev, int err)
{
	const char *msg = err == ENOENT	  ? "no such device"
			  : err == ENOTUNIQ ? "bus id of more than one device; give its path"
			  : err == EINVAL   ? "not a path under root/ nor a bus id"
					    : NULL;
	return ctl_fail(dev && *dev ? dev : "root", msg, err);
}

int ctl_usage_error(const char *cmd, const char *msg, const char *arg)
{
	fprintf(stderr, "driverfsctl: %s: %s%s%s%s\n", cmd, msg, arg ? " '" : "", arg ? arg : "",
		arg ? "'" : "");
	fprintf(stderr, "Try 'driverfsctl --help'.\n");
	return CTL_USAGE;
}

/* ---- files ---- */

int ctl_open_root(const char *mnt)
{
	char root[PATH_MAX];
	struct stat st;
	snprintf(root, sizeof(root), "%s/root", mnt);
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC), err = 0;
	if (fd < 0 || fstatat(fd, "../power", &st, 0) < 0)
		err = errno;
	else if (!S_ISREG(st.st_mode))
		err = ENOENT;
	if (err) {
		if (fd >= 0)
			close(fd);
		ctl_fail(mnt, "not a driverfs mount: no power file at its top", err);
		return -1;
	}
	return fd;
}

const char *ctl_own(int rootfd, const char *path, const char *own, char *buf, size_t size)
{
	char name[256];
	struct stat st;
	if (!*path) {
		/* the root device's files are at the top of the mount */
		snprintf(buf, size, "../%s", own);
		return buf;
	}
	snprintf(buf, size, "%s/%s", path, own);
	/* the longest DM_OWN_PREFIX form present: the kernel's names come
	 * first, and driverfsd's entry takes the prefix past them */
	snprintf(name, sizeof(name), "%s", own);
	for (int k = 1; k <= DM_OWN_PREFIX_MAX; k++) {
		char probe[PATH_MAX + 256];
		if ((size_t)snprintf(probe, sizeof(probe), "%s/%s%s", path, DM_OWN_PREFIX, name) >=
			    sizeof(probe) ||
		    fstatat(rootfd, probe, &st, AT_SYMLINK_NOFOLLOW) < 0)
			break;
		snprintf(buf, size, "%s", probe);
		snprintf(name, sizeof(name), "%s", probe + strlen(path) + 1);
	}
	return buf;
}

const char *ctl_own_file(const char *mnt, const char *rel, const char *own, char *buf,
			 size_t size)
{
	char dir[PATH_MAX];
	if (!*rel) {
		snprintf(buf, size, "%s/%s", mnt, own);
		return buf;
	}
	snprintf(dir, sizeof(dir), "%s/root/%s", mnt, rel);
	return ctl_own(AT_FDCWD, dir, own, buf, size);
}

int ctl_read_own(int rootfd, const char *path, const char *own, char *buf, size_t size)
{
	char file[PATH_MAX + 256];
	return ctl_read(rootfd, "", ctl_own(rootfd, path, own, file, sizeof(file)), buf, size);
}

const char *ctl_link_device(const char *target)
{
	while (strncmp(target, "../", 3) == 0)
		target += 3;
	if (strncmp(target, "root", 4) != 0 || (target[4] != '/' && target[4] != '\0'))
		return NULL;
	return target[4] ? target + 5 : "";
}

/* Whether @dev, a directory under MNT/root, is a device's. */
static bool is_device_path(const char *mnt, const char *dev)
{
	char root[PATH_MAX];
	snprintf(root, sizeof(root), "%s/root", mnt);
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	bool r = fd >= 0 && ctl_is_device_dir(fd, dev);
	if (fd >= 0)
		close(fd);
	return r;
}

int ctl_resolve(const char *mnt, const char *dev, char *out, size_t size)
{
	char path[PATH_MAX];
	struct stat st;
	if (!dev || !*dev || strcmp(dev, ".") == 0 || strcmp(dev, "root") == 0) {
		snprintf(out, size, "%s", "");
		return 0;
	}
	if (strncmp(dev, "root/", 5) == 0)
		dev += 5;
	if (strstr(dev, "..") || dev[0] == '/')
		return -EINVAL;
	snprintf(path, sizeof(path), "%s/root/%s", mnt, dev);
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode) && is_device_path(mnt, dev)) {
		snprintf(out, size, "%s", dev);
		size_t len = strlen(out);
		while (len > 0 && out[len - 1] == '/')
			out[--len] = '\0';
		return 0;
	}
	if (strchr(dev, '/'))
		return -ENOENT;
	/* a bus id: the one bus/<bus>/devices/<id> link that has it */
	char pattern[PATH_MAX], target[PATH_MAX];
	glob_t g;
	snprintf(pattern, sizeof(pattern), "%s/bus/*/devices/%s", mnt, dev);
	if (glob(pattern, GLOB_NOSORT, NULL, &g) != 0)
		return -ENOENT;
	int r = -ENOENT;
	if (g.gl_pathc > 1) {
		r = -ENOTUNIQ;
	} else {
		ssize_t n = readlink(g.gl_pathv[0], target, sizeof(target) - 1);
		target[n > 0 ? n : 0] = '\0';
		const char *p = n > 0 ? ctl_link_device(target) : NULL;
		if (p) {
			snprintf(out, size, "%s", p);
			r = 0;
		}
	}
	globfree(&g);
	return r;
}

int ctl_read_raw(int dirfd, const char *dir, const char *file, char *buf, size_t size)
{
	char path[PATH_MAX + 256];
	snprintf(path, sizeof(path), "%s%s%s", dir, *dir ? "/" : "", file);
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t len = 0;
	while (len + 1 < size) {
		ssize_t n = read(fd, buf + len, size - 1 - len);
		if (n < 0) {
			int r = -errno;
			close(fd);
			return r;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	return (int)len;
}

int ctl_read(int dirfd, const char *dir, const char *file, char *buf, size_t size)
{
	int len = ctl_read_raw(dirfd, dir, file, buf, size);
	if (len > 0 && buf[len - 1] == '\n')
		buf[--len] = '\0';
	return len;
}

void ctl_read_line(int dirfd, const char *dir, const char *file, char *buf, size_t size)
{
	if (ctl_read(dirfd, dir, file, buf, size) < 0)
		buf[0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
}

const char *ctl_link_target(int dirfd, const char *dir, const char *link, char *buf,
			    size_t size)
{
	char path[PATH_MAX + 256];
	snprintf(path, sizeof(path), "%s%s%s", dir, *dir ? "/" : "", link);
	ssize_t n = size ? readlinkat(dirfd, path, buf, size - 1) : -1;
	if (n <= 0) {
		if (size)
			buf[0] = '\0';
		return NULL;
	}
	buf[n] = '\0';
	return buf;
}

const char *ctl_link_base(const char *target)
{
	const char *base = strrchr(target, '/');
	return base ? base + 1 : target;
}

const char *ctl_link_name(int dirfd, const char *dir, const char *link, char *buf, size_t size)
{
	char target[PATH_MAX];
	buf[0] = '\0';
	if (!ctl_link_target(dirfd, dir, link, target, sizeof(target)))
		return NULL;
	snprintf(buf, size, "%s", ctl_link_base(target));
	return buf;
}

bool ctl_is_class_driver(const char *target)
{
	/* ../../class/<class>/drivers/<name> */
	const char *cls = strstr(target, "class/");
	return cls && (cls == target || cls[-1] == '/') && strstr(cls, "/drivers/");
}

void ctl_join(char *out, size_t size, const char *path, const char *name)
{
	snprintf(out, size, "%s%s%s", path, *path ? "/" : "", name);
}

static int by_version(const struct dirent **a, const struct dirent **b)
{
	return strverscmp((*a)->d_name, (*b)->d_name);
}

bool ctl_is_device_dir(int rootfd, const char *path)
{
	char power[PATH_MAX + 256];
	struct stat st;
	/* a device directory has a power file of driverfsd's; an attribute
	 * directory has not */
	return fstatat(rootfd, ctl_own(rootfd, path, "power", power, sizeof(power)), &st,
		       AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISREG(st.st_mode);
}

int ctl_children(int rootfd, const char *path, char ***ret, size_t *ret_n)
{
	struct dirent **names;
	int n = scandirat(rootfd, *path ? path : ".", &names, NULL, by_version);
	if (n < 0)
		return -errno;
	char **out = calloc((size_t)n + 1, sizeof(*out));
	size_t kept = 0;
	for (int i = 0; i < n; i++) {
		char child[PATH_MAX];
		ctl_join(child, sizeof(child), path, names[i]->d_name);
		if (out && names[i]->d_type == DT_DIR && names[i]->d_name[0] != '.' &&
		    ctl_is_device_dir(rootfd, child))
			out[kept++] = strdup(names[i]->d_name);
		free(names[i]);
	}
	free(names);
	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < kept; i++)
		if (!out[i]) {
			ctl_names_free(out, kept);
			return -ENOMEM;
		}
	*ret = out;
	*ret_n = kept;
	return 0;
}

int ctl_device_links(int rootfd, const char *path, const char *which, char ***ret, size_t *ret_n)
{
	char dir[PATH_MAX + 256];
	ctl_own(rootfd, path, which, dir, sizeof(dir));
	*ret = NULL;
	*ret_n = 0;
	struct dirent **names;
	int n = scandirat(rootfd, dir, &names, NULL, by_version);
	if (n < 0)
		return errno == ENOENT ? 0 : -errno;
	char **out = calloc((size_t)n + 1, sizeof(*out));
	size_t kept = 0;
	int r = out ? 0 : -ENOMEM;
	for (int i = 0; i < n; i++) {
		char link[PATH_MAX + 512], target[PATH_MAX];
		snprintf(link, sizeof(link), "%s/%s", dir, names[i]->d_name);
		ssize_t k = names[i]->d_type == DT_LNK
				    ? readlinkat(rootfd, link, target, sizeof(target) - 1)
				    : -1;
		target[k > 0 ? k : 0] = '\0';
		const char *dev = k > 0 ? ctl_link_device(target) : NULL;
		if (r == 0 && dev && !(out[kept++] = strdup(dev)))
			r = -ENOMEM;
		free(names[i]);
	}
	free(names);
	if (r < 0 || kept == 0) {
		/* none: a directory of no links (a child device called
		 * suppliers, where the device has no links of its own) */
		ctl_names_free(out, kept);
		return r;
	}
	*ret = out;
	*ret_n = kept;
	return 0;
}

void ctl_names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* ---- sets and the filter ---- */

int ctl_set_add(struct ctl_set *s, const char *path)
{
	if (!dm_array_grow((void **)&s->paths, &s->cap, s->n, sizeof(*s->paths), 64))
		return -ENOMEM;
	if (!(s->paths[s->n] = strdup(path)))
		return -ENOMEM;
	s->n++;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void ctl_set_sort(struct ctl_set *s)
{
	if (s->n)
		qsort(s->paths, s->n, sizeof(*s->paths), cmp_str);
}

bool ctl_set_has(const struct ctl_set *s, const char *path)
{
	return s->n && bsearch(&path, s->paths, s->n, sizeof(*s->paths), cmp_str);
}

void ctl_set_free(struct ctl_set *s)
{
	ctl_names_free(s->paths, s->n);
	*s = (struct ctl_set){ 0 };
}

/* The devices that the links of MNT/@dir/devices name, into @s. */
static int read_links(const char *mnt, const char *dir, struct ctl_set *s)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s/devices", mnt, dir);
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	int r = 0;
	struct dirent *e;
	while (r == 0 && (e = readdir(d))) {
		char target[PATH_MAX];
		if (e->d_type != DT_LNK)
			continue;
		ssize_t n = readlinkat(dirfd(d), e->d_name, target, sizeof(target) - 1);
		target[n > 0 ? n : 0] = '\0';
		const char *p = n > 0 ? ctl_link_device(target) : NULL;
		if (p)
			r = ctl_set_add(s, p);
	}
	closedir(d);
	ctl_set_sort(s);
	return r;
}

int ctl_filter_init(struct ctl_filter *f, const char *mnt, const char *bus, const char *cls)
{
	struct ctl_set on_bus = { 0 }, of_class = { 0 };
	char dir[PATH_MAX];
	int r = 0;
	*f = (struct ctl_filter){ .on = bus || cls };
	if (!f->on)
		return CTL_OK;
	if (bus) {
		snprintf(dir, sizeof(dir), "bus/%s", bus);
		r = strchr(bus, '/') || bus[0] == '.' ? -ENOENT : read_links(mnt, dir, &on_bus);
		if (r < 0) {
			ctl_set_free(&on_bus);
			return ctl_fail(dir, r == -ENOENT ? "no such bus" : NULL, -r);
		}
	}
	if (cls) {
		snprintf(dir, sizeof(dir), "class/%s", cls);
		r = strchr(cls, '/') || cls[0] == '.' ? -ENOENT : read_links(mnt, dir, &of_class);
		if (r < 0) {
			ctl_set_free(&on_bus);
			ctl_set_free(&of_class);
			return ctl_fail(dir, r == -ENOENT ? "no such class" : NULL, -r);
		}
	}
	/* both given: the devices of either (a device has one subsystem) */
	for (size_t i = 0; r == 0 && i < on_bus.n; i++)
		r = ctl_set_add(&f->match, on_bus.paths[i]);
	for (size_t i = 0; r == 0 && i < of_class.n; i++)
		if (!ctl_set_has(&on_bus, of_class.paths[i]))
			r = ctl_set_add(&f->match, of_class.paths[i]);
	ctl_set_free(&on_bus);
	ctl_set_free(&of_class);
	ctl_set_sort(&f->match);
	/* every ancestor of a match, root ("") included */
	for (size_t i = 0; r == 0 && i < f->match.n; i++) {
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "%s", f->match.paths[i]);
		r = ctl_set_add(&f->kept, p);
		for (char *slash; r == 0 && (slash = strrchr(p, '/'));) {
			*slash = '\0';
			r = ctl_set_add(&f->kept, p);
		}
		if (r == 0)
			r = ctl_set_add(&f->kept, "");
	}
	ctl_set_sort(&f->kept);
	if (r < 0) {
		ctl_filter_free(f);
		return ctl_fail(mnt, NULL, -r);
	}
	return CTL_OK;
}

bool ctl_filter_keeps(const struct ctl_filter *f, const char *path)
{
	return !f->on || ctl_set_has(&f->kept, path);
}

bool ctl_filter_matches(const struct ctl_filter *f, const char *path)
{
	return !f->on || ctl_set_has(&f->match, path);
}

void ctl_filter_free(struct ctl_filter *f)
{
	ctl_set_free(&f->match);
	ctl_set_free(&f->kept);
}
