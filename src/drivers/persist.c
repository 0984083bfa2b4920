/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* persist.c - bindings kept across boots and replugs (see persist.h). */
#include "persist.h"

#include "binding.h"
#include "core/array.h"
#include "log.h"
#include "replace.h"
#include "trust.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WORD_MAX 64

struct entry {
	char bus[WORD_MAX], name[WORD_MAX], driver[WORD_MAX];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry *entries;
static size_t n_entries, cap_entries;
static char *file_path;

static const char *state_file(void)
{
	return file_path ? file_path : DM_PERSIST_FILE;
}

/* A word of a line: what bus, device and driver names are made of. */
static bool is_word(const char *s)
{
	return strlen(s) < WORD_MAX && dm_name_is_plain(s, strlen(s));
}

static struct entry *find_locked(const char *bus, const char *name)
{
	for (size_t i = 0; i < n_entries; i++)
		if (strcmp(entries[i].bus, bus) == 0 && strcmp(entries[i].name, name) == 0)
			return &entries[i];
	return NULL;
}

static int add_locked(const char *bus, const char *name, const char *driver)
{
	struct entry *e = find_locked(bus, name);
	if (!e) {
		if (!dm_array_grow((void **)&entries, &cap_entries, n_entries, sizeof(*entries), 8))
			return -ENOMEM;
		e = &entries[n_entries++];
		snprintf(e->bus, sizeof(e->bus), "%s", bus);
		snprintf(e->name, sizeof(e->name), "%s", name);
	}
	snprintf(e->driver, sizeof(e->driver), "%s", driver);
	return 0;
}

int dm_persist_load(const char *path)
{
	char msg[256];
	pthread_mutex_lock(&lock);
	free(file_path);
	file_path = path ? strdup(path) : NULL;
	n_entries = 0;
	int r = path && !file_path ? -ENOMEM : 0;
	int fd = r < 0 ? r : dm_trust_open(state_file(), O_RDONLY, msg, sizeof(msg));
	if (fd == -ENOENT) {
		pthread_mutex_unlock(&lock);
		return 0;
	}
	if (fd < 0) {
		log_err("%s: %s; no persisted bindings", state_file(), r < 0 ? strerror(-r) : msg);
		pthread_mutex_unlock(&lock);
		return fd;
	}
	FILE *f = fdopen(fd, "re");
	if (!f) {
		close(fd);
		pthread_mutex_unlock(&lock);
		return -errno;
	}
	char line[512];
	unsigned no = 0;
	while (r == 0 && fgets(line, sizeof(line), f)) {
		char bus[WORD_MAX * 2], name[WORD_MAX * 2], driver[WORD_MAX * 2], extra[2];
		no++;
		if (line[0] == '#' || line[strspn(line, " \t\n")] == '\0')
			continue;
		if (sscanf(line, "%127s %127s %127s %1s", bus, name, driver, extra) != 3 ||
		    !is_word(bus) || !is_word(name) || !is_word(driver)) {
			log_err("%s:%u: not a binding (BUS NAME DRIVER); skipped", state_file(), no);
			continue;
		}
		r = add_locked(bus, name, driver);
	}
	fclose(f);
	size_t n = n_entries;
	pthread_mutex_unlock(&lock);
	if (r == 0 && n)
		log_info("%zu persisted binding%s in %s", n, n == 1 ? "" : "s", state_file());
	return r;
}

/* Writes the entries to the state file, whole (dm_replace_file()). Lock
 * held. */
static int save_locked(char *msg, size_t size)
{
	const char *path = state_file();
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return -errno;
	}
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return -ENOMEM;
	fprintf(f, "# driverfsd's persisted bindings: BUS NAME DRIVER (driverfsctl bind "
		   "--persist)\n");
	for (size_t i = 0; i < n_entries; i++)
		fprintf(f, "%s %s %s\n", entries[i].bus, entries[i].name, entries[i].driver);
	bool failed = ferror(f);
	int r = fclose(f) != 0 || failed ? -ENOMEM : dm_replace_file(path, text, len, msg, size);
	free(text);
	return r;
}

int dm_persist_set(const char *bus, const char *name, const char *driver, char *msg,
		   size_t size)
{
	if (size)
		*msg = '\0';
	if (!is_word(bus) || !is_word(name) || (driver && !is_word(driver)))
		return -EINVAL;
	pthread_mutex_lock(&lock);
	int r = 0;
	if (driver) {
		r = add_locked(bus, name, driver);
	} else {
		struct entry *e = find_locked(bus, name);
		if (e)
			*e = entries[--n_entries];
	}
	if (r == 0)
		r = save_locked(msg, size);
	pthread_mutex_unlock(&lock);
	if (r < 0 && size && !*msg)
		snprintf(msg, size, "%s", strerror(-r));
	if (r < 0)
		log_err("%s: cannot record the binding of %s: %s", state_file(), name,
			size ? msg : strerror(-r));
	return r;
}

/* ---- applying them ---- */

/* The recorded driver of @dev into @buf, if any. */
static bool recorded(struct dm_device *dev, char *bus_buf, char *buf)
{
	struct dm_model *m = dm_device_get_model(dev);
	dm_model_read_lock(m);
	struct dm_bus *bus = dm_device_get_bus_locked(dev);
	const char *bus_name = bus ? dm_bus_get_name(bus) : NULL;
	if (bus_name)
		snprintf(bus_buf, WORD_MAX, "%s", bus_name);
	dm_model_unlock(m);
	if (!bus_name)
		return false;
	pthread_mutex_lock(&lock);
	struct entry *e = find_locked(bus_buf, dm_device_get_sysname(dev));
	if (e)
		snprintf(buf, WORD_MAX, "%s", e->driver);
	pthread_mutex_unlock(&lock);
	return e != NULL;
}

/* The kernel's driver of @dev (an interned name, which stays). */
static const char *kernel_driver(struct dm_device *dev)
{
	struct dm_model *m = dm_device_get_model(dev);
	dm_model_read_lock(m);
	const char *now = dm_device_get_kernel_driver(dev);
	dm_model_unlock(m);
	return now;
}

static void apply(struct dm_device *dev)
{
	char bus[WORD_MAX], driver[WORD_MAX];
	if (!recorded(dev, bus, driver))
		return;
	const char *now = kernel_driver(dev);
	bool none = strcmp(driver, "none") == 0;
	if (none ? !now : now && strcmp(now, driver) == 0)
		return; /* in force (a proxy's name is the kernel's) */
	struct dm_bind_request req = {
		.action = none ? DM_BIND_NONE : DM_BIND_TO,
		.driver = none ? NULL : driver,
	};
	int r = dm_bind_device(dev, &req);
	if (r < 0)
		log_warn("persisted binding of %s to %s: %s (its binding file has the report)",
			 dm_device_get_sysname(dev), driver, strerror(-r));
	else
		log_info("persisted binding of %s to %s applied", dm_device_get_sysname(dev), driver);
}

void dm_persist_device_added(struct dm_device *dev)
{
	apply(dev);
}

/* A copy of the entries (to walk without the lock), *ret_n of them; NULL
 * when none, or out of memory. */
static struct entry *copy_entries(size_t *ret_n)
{
	pthread_mutex_lock(&lock);
	size_t n = n_entries;
	struct entry *copy = n ? malloc(n * sizeof(*copy)) : NULL;
	if (copy)
		memcpy(copy, entries, n * sizeof(*copy));
	pthread_mutex_unlock(&lock);
	*ret_n = n;
	return copy;
}

void dm_persist_apply_all(struct dm_model *m)
{
	size_t n;
	struct entry *copy = copy_entries(&n);
	for (size_t i = 0; copy && i < n; i++) {
		struct dm_device *dev = dm_model_find_on_bus(m, copy[i].bus, copy[i].name);
		if (dev) {
			apply(dev);
			dm_device_unref(dev);
		}
	}
	free(copy);
}

/* ---- the bindings file ---- */

static int bindings_show(struct dm_device *root, const struct dm_attribute *attr, char **ret,
			 size_t *ret_len)
{
	(void)attr;
	struct dm_model *m = dm_device_get_model(root);
	size_t n;
	struct entry *copy = copy_entries(&n);
	if (n && !copy)
		return -ENOMEM;
	size_t size = n * (4 * WORD_MAX + 32) + 1, len = 0;
	char *buf = malloc(size);
	if (!buf) {
		free(copy);
		return -ENOMEM;
	}
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		struct dm_device *dev = dm_model_find_on_bus(m, copy[i].bus, copy[i].name);
		const char *now = dev ? kernel_driver(dev) : NULL;
		bool none = strcmp(copy[i].driver, "none") == 0;
		bool in_force = dev && (none ? !now : now && strcmp(now, copy[i].driver) == 0);
		int w = snprintf(buf + len, size - len, "%s %s %s %s%s\n", copy[i].bus, copy[i].name,
				 copy[i].driver,
				 !dev	     ? "absent"
				 : in_force ? "in-force"
					    : "bound-to:",
				 dev && !in_force ? (now ? now : "none") : "");
		if (w > 0 && (size_t)w < size - len)
			len += (size_t)w;
		if (dev)
			dm_device_unref(dev);
	}
	free(copy);
	*ret = buf;
	*ret_len = len;
	return 0;
}

static const struct dm_attribute bindings_attr = {
	.name = "bindings", .mode = 0444, .flags = DM_ATTR_LIVE, .show_alloc = bindings_show,
};
static const struct dm_attribute *const root_attrs[] = { &bindings_attr, NULL };

const struct dm_attribute_group dm_persist_root_group = {
	.attrs = root_attrs,
};
