/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* persist.c - bindings kept across boots and replugs (see persist.h). */
#include "persist.h"

#include "binding.h"
#include "core/array.h"
#include "core/thread.h"
#include "sriov.h"
#include "util/log.h"
#include "util/replace.h"
#include "util/trust.h"

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
#define ID_MAX DM_PERSIST_ID_MAX
/* a state file's line: three words and an identity, with room to spare */
#define LINE_MAX_LEN (3 * WORD_MAX + ID_MAX + 64)

struct entry {
	char bus[WORD_MAX], name[WORD_MAX], driver[WORD_MAX];
	char id[ID_MAX]; /* the device's identity; "" for none (an old line) */
	bool other_logged; /* another device there was logged */
};

/* A PF's VFs kept: "sriov pci NAME N DRIVER IDENTITY" (DRIVER "default":
 * the kernel's own probe). */
struct sriov_entry {
	char name[WORD_MAX], driver[WORD_MAX];
	int numvfs;
	char id[ID_MAX];
	bool other_logged;
};

/* A device the monitor saw added, for the worker to apply. */
struct queued {
	struct dm_device *dev; /* referenced */
	char bus[WORD_MAX];
};

struct dm_persist {
	struct dm_binder *binder; /* what applies the records (NULL: nothing does) */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct entry *entries;
	size_t n_entries, cap_entries;
	char *file_path;
	struct queued *queue;
	size_t n_queue, cap_queue;
	struct sriov_entry *sriovs;
	size_t n_sriovs, cap_sriovs;
	pthread_t worker;
	bool worker_started, stopping;
};

static const char *state_file(struct dm_persist *ps)
{
	return ps->file_path;
}

/* A word of a line: what bus, device and driver names are made of. */
static bool is_word(const char *s)
{
	return strlen(s) < WORD_MAX && dm_name_is_plain(s, strlen(s));
}

static struct entry *find_locked(struct dm_persist *ps, const char *bus, const char *name)
{
	for (size_t i = 0; i < ps->n_entries; i++)
		if (strcmp(ps->entries[i].bus, bus) == 0 && strcmp(ps->entries[i].name, name) == 0)
			return &ps->entries[i];
	return NULL;
}

static int add_locked(struct dm_persist *ps, const char *bus, const char *name, const char *driver,
		      const char *id)
{
	struct entry *e = find_locked(ps, bus, name);
	if (!e) {
		if (!dm_array_grow((void **)&ps->entries, &ps->cap_entries, ps->n_entries,
				   sizeof(*ps->entries), 8))
			return -ENOMEM;
		e = &ps->entries[ps->n_entries++];
		snprintf(e->bus, sizeof(e->bus), "%s", bus);
		snprintf(e->name, sizeof(e->name), "%s", name);
	}
	snprintf(e->driver, sizeof(e->driver), "%s", driver);
	snprintf(e->id, sizeof(e->id), "%s", id);
	e->other_logged = false;
	return 0;
}

static struct sriov_entry *find_sriov_locked(struct dm_persist *ps, const char *name)
{
	for (size_t i = 0; i < ps->n_sriovs; i++)
		if (strcmp(ps->sriovs[i].name, name) == 0)
			return &ps->sriovs[i];
	return NULL;
}

static int add_sriov_locked(struct dm_persist *ps, const char *name, int numvfs, const char *driver,
			    const char *id)
{
	struct sriov_entry *e = find_sriov_locked(ps, name);
	if (!e) {
		if (!dm_array_grow((void **)&ps->sriovs, &ps->cap_sriovs, ps->n_sriovs, sizeof(*ps->sriovs), 4))
			return -ENOMEM;
		e = &ps->sriovs[ps->n_sriovs++];
		snprintf(e->name, sizeof(e->name), "%s", name);
	}
	e->numvfs = numvfs;
	snprintf(e->driver, sizeof(e->driver), "%s", driver);
	snprintf(e->id, sizeof(e->id), "%s", id);
	e->other_logged = false;
	return 0;
}

/* ---- identities ---- */

/* What a serial keeps as it is; every other byte is %XX. */
static bool serial_plain(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-';
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

size_t dm_persist_encode_serial(const char *s, size_t len, char *buf, size_t size)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;
	if (len > DM_PERSIST_SERIAL_MAX)
		len = DM_PERSIST_SERIAL_MAX;
	for (size_t i = 0; i < len && size; i++) {
		unsigned char c = (unsigned char)s[i];
		if (serial_plain(c)) {
			if (o + 1 >= size)
				break;
			buf[o++] = (char)c;
		} else {
			if (o + 3 >= size)
				break;
			buf[o++] = '%';
			buf[o++] = hex[c >> 4];
			buf[o++] = hex[c & 15];
		}
	}
	if (size)
		buf[o] = '\0';
	return o;
}

/* A 16-bit id as sysfs has it ("0x8086", "05f3", a newline after it) into
 * @out as four lower-case hex digits. */
static bool parse_id16(const char *s, char out[5])
{
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	unsigned v = 0;
	size_t n = 0;
	for (; hex_digit(s[n]) >= 0; n++)
		v = v * 16 + (unsigned)hex_digit(s[n]);
	if (n == 0 || n > 4 || (s[n] && strcmp(s + n, "\n") != 0))
		return false;
	snprintf(out, 5, "%04x", v);
	return true;
}

/* The id in @dev's file @name: 0, -ENOENT (no such file), -ENODEV
 * (removed) or -EINVAL (not an id). */
static int read_id16(struct dm_device *dev, const char *name, char out[5])
{
	char buf[32];
	int n = dm_device_show(dev, NULL, name, buf, sizeof(buf));
	if (n < 0)
		return n;
	return parse_id16(buf, out) ? 0 : -EINVAL;
}

static int pci_identity(struct dm_device *dev, char *buf, size_t size)
{
	static const char *const files[] = { "vendor", "device", "subsystem_vendor",
					     "subsystem_device" };
	char ids[4][5];
	for (size_t i = 0; i < 4; i++) {
		int r = read_id16(dev, files[i], ids[i]);
		if (r < 0)
			return r == -ENODEV ? r : 0;
	}
	snprintf(buf, size, "pci:%s:%s:%s:%s", ids[0], ids[1], ids[2], ids[3]);
	return 1;
}

/* A USB device's identity; an interface's is its device's (its parent). */
static int usb_identity(struct dm_device *dev, char *buf, size_t size)
{
	char vendor[5], product[5];
	struct dm_device *usb = dm_device_ref(dev);
	int r = read_id16(usb, "idVendor", vendor);
	if (r == -ENOENT) {
		struct dm_model *m = dm_device_get_model(dev);
		dm_model_read_lock(m);
		struct dm_device *parent = dm_device_get_parent_locked(dev);
		if (parent)
			dm_device_ref(parent);
		dm_model_unlock(m);
		dm_device_unref(usb);
		usb = parent;
		r = usb ? read_id16(usb, "idVendor", vendor) : -ENOENT;
	}
	if (r == 0)
		r = read_id16(usb, "idProduct", product);
	char *raw = NULL;
	int n = -ENOENT;
	if (r == 0) {
		raw = malloc(DM_ATTR_MAX + 1);
		n = raw ? dm_device_show(usb, NULL, "serial", raw, DM_ATTR_MAX + 1) : -ENOMEM;
	}
	if (usb)
		dm_device_unref(usb);
	if (r == 0 && n < 0 && n != -ENOENT)
		r = n; /* there, and unreadable: no identity */
	if (r < 0) {
		free(raw);
		return r == -ENODEV ? r : 0;
	}
	size_t len = n > 0 ? (size_t)n : 0;
	if (len && raw[len - 1] == '\n')
		len--; /* sysfs's */
	int w = snprintf(buf, size, "usb:%s:%s%s", vendor, product, len ? ":" : "");
	if (len && w > 0 && (size_t)w < size)
		dm_persist_encode_serial(raw, len, buf + w, size - (size_t)w);
	free(raw);
	return 1;
}

int dm_persist_identity(struct dm_device *dev, const char *bus, char *buf, size_t size)
{
	if (size)
		*buf = '\0';
	if (dm_device_is_dead(dev))
		return -ENODEV;
	if (strcmp(bus, "pci") == 0)
		return pci_identity(dev, buf, size);
	if (strcmp(bus, "usb") == 0)
		return usb_identity(dev, buf, size);
	return 0;
}

/* @n hex digits, lower-case, then @end. */
static const char *hex_field(const char *s, size_t n, char end)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return NULL;
	return s[n] == end ? s + n + (end != '\0') : NULL;
}

bool dm_persist_normalize_id(const char *id, char *buf, size_t size)
{
	const char *p;
	if (strlen(id) >= ID_MAX || size < ID_MAX)
		return false;
	if (strncmp(id, "pci:", 4) == 0) {
		p = id + 4;
		for (int i = 0; i < 3 && p; i++)
			p = hex_field(p, 4, ':');
		if (!p || !hex_field(p, 4, '\0'))
			return false;
		snprintf(buf, size, "%s", id);
		return true;
	}
	if (strncmp(id, "usb:", 4) != 0 || !(p = hex_field(id + 4, 4, ':')))
		return false;
	const char *serial = hex_field(p, 4, ':');
	if (!serial) {
		if (!hex_field(p, 4, '\0'))
			return false;
		snprintf(buf, size, "%s", id);
		return true;
	}
	/* the serial: decoded, then encoded again (one spelling of each) */
	char raw[DM_PERSIST_SERIAL_MAX];
	size_t len = 0;
	for (const char *s = serial; *s; s++) {
		int c;
		if (*s == '%') {
			int hi = hex_digit(s[1]), lo = hi < 0 ? -1 : hex_digit(s[2]);
			if (lo < 0)
				return false;
			c = hi * 16 + lo;
			s += 2;
		} else if (serial_plain((unsigned char)*s)) {
			c = (unsigned char)*s;
		} else {
			return false;
		}
		if (len == sizeof(raw))
			return false;
		raw[len++] = (char)c;
	}
	if (len == 0)
		return false;
	int w = snprintf(buf, size, "%.*s", (int)(serial - id), id);
	dm_persist_encode_serial(raw, len, buf + w, size - (size_t)w);
	return true;
}

/* The rest of a line longer than the buffer (@line, with no newline) is
 * skipped. */
static bool skip_long_line(FILE *f, const char *line)
{
	if (strchr(line, '\n'))
		return false;
	int c;
	bool skipped = false;
	while ((c = getc(f)) != EOF && c != '\n')
		skipped = true;
	return skipped;
}

int dm_persist_load(struct dm_persist *ps)
{
	char msg[256];
	pthread_mutex_lock(&ps->lock);
	ps->n_entries = 0;
	ps->n_sriovs = 0;
	int r = 0;
	int fd = dm_trust_open(state_file(ps), O_RDONLY, msg, sizeof(msg));
	if (fd == -ENOENT) {
		pthread_mutex_unlock(&ps->lock);
		return 0;
	}
	if (fd < 0) {
		log_err("%s: %s; no persisted bindings", state_file(ps), msg);
		pthread_mutex_unlock(&ps->lock);
		return fd;
	}
	FILE *f = fdopen(fd, "re");
	if (!f) {
		close(fd);
		pthread_mutex_unlock(&ps->lock);
		return -errno;
	}
	char line[LINE_MAX_LEN];
	unsigned no = 0, old = 0;
	while (r == 0 && fgets(line, sizeof(line), f)) {
		/* (a word of the line is shorter than the line: %s fits id) */
		char bus[WORD_MAX * 2], name[WORD_MAX * 2], driver[WORD_MAX * 2], id[LINE_MAX_LEN],
			norm[ID_MAX], extra[2];
		no++;
		if (skip_long_line(f, line)) {
			log_err("%s:%u: too long for a binding; skipped", state_file(ps), no);
			continue;
		}
		if (line[0] == '#' || line[strspn(line, " \t\n")] == '\0')
			continue;
		/* sriov pci NAME N DRIVER IDENTITY: a PF's VFs */
		if (strncmp(line, "sriov ", 6) == 0) {
			char count[16];
			int k = sscanf(line, "sriov %127s %127s %15s %127s %s %1s", bus, name, count,
				       driver, id, extra);
			char *end;
			long vfs = k == 5 ? strtol(count, &end, 10) : -1;
			if (k != 5 || strcmp(bus, "pci") != 0 || !is_word(name) || !is_word(driver) ||
			    count[0] < '0' || count[0] > '9' || *end || vfs > 65535 ||
			    !dm_persist_normalize_id(id, norm, sizeof(norm)) ||
			    strncmp(norm, "pci:", 4) != 0) {
				log_err("%s:%u: not an SR-IOV record (sriov pci NAME N DRIVER "
					"IDENTITY); skipped",
					state_file(ps), no);
				continue;
			}
			r = add_sriov_locked(ps, name, (int)vfs, driver, norm);
			continue;
		}
		/* BUS NAME DRIVER IDENTITY, or an older BUS NAME DRIVER */
		int n = sscanf(line, "%127s %127s %127s %s %1s", bus, name, driver, id, extra);
		if ((n != 3 && n != 4) || !is_word(bus) || !is_word(name) || !is_word(driver) ||
		    (n == 4 && !dm_persist_normalize_id(id, norm, sizeof(norm)))) {
			log_err("%s:%u: not a binding (BUS NAME DRIVER [IDENTITY]); skipped",
				state_file(ps), no);
			continue;
		}
		old += n == 3;
		r = add_locked(ps, bus, name, driver, n == 4 ? norm : "");
	}
	fclose(f);
	size_t n = ps->n_entries + ps->n_sriovs;
	pthread_mutex_unlock(&ps->lock);
	if (r == 0 && n)
		log_info("%zu persisted binding%s in %s%s", n, n == 1 ? "" : "s", state_file(ps),
			 old ? " (some without the device's identity: applied to whatever device is "
			       "there, and given its identity then)"
			     : "");
	return r;
}

/* Writes the entries to the state file, whole (dm_replace_file()). Lock
 * held. */
static int save_locked(struct dm_persist *ps, char *msg, size_t size)
{
	const char *path = state_file(ps);
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
	fprintf(f, "# driverfsd's persisted bindings: BUS NAME DRIVER IDENTITY (driverfsctl bind "
		   "--persist)\n");
	for (size_t i = 0; i < ps->n_entries; i++)
		fprintf(f, "%s %s %s%s%s\n", ps->entries[i].bus, ps->entries[i].name, ps->entries[i].driver,
			ps->entries[i].id[0] ? " " : "", ps->entries[i].id);
	for (size_t i = 0; i < ps->n_sriovs; i++)
		fprintf(f, "sriov pci %s %d %s %s\n", ps->sriovs[i].name, ps->sriovs[i].numvfs,
			ps->sriovs[i].driver, ps->sriovs[i].id);
	bool failed = ferror(f);
	int r = fclose(f) != 0 || failed ? -ENOMEM : dm_replace_file(path, text, len, msg, size);
	free(text);
	return r;
}

/* A change of the entries (@r: 0, or its -errno) written to the state
 * file; the lock held, and let go. 0 or -errno, the reason in @msg, and
 * logged (@what of @name cannot be recorded). */
static int saved(struct dm_persist *ps, int r, const char *what, const char *name, char *msg,
		 size_t size)
{
	if (r == 0)
		r = save_locked(ps, msg, size);
	pthread_mutex_unlock(&ps->lock);
	if (r < 0 && size && !*msg)
		snprintf(msg, size, "%s", strerror(-r));
	if (r < 0)
		log_err("%s: cannot record %s of %s: %s", state_file(ps), what, name,
			size ? msg : strerror(-r));
	return r;
}

int dm_persist_set(struct dm_persist *ps, struct dm_device *dev, const char *bus, const char *name,
		   const char *driver, char *msg, size_t size)
{
	if (size)
		*msg = '\0';
	if (!is_word(bus) || !is_word(name) || (driver && !is_word(driver)))
		return -EINVAL;
	char id[ID_MAX] = "";
	if (driver && dev && dm_persist_identity(dev, bus, id, sizeof(id)) <= 0) {
		id[0] = '\0';
		if (strcmp(bus, "pci") == 0 || strcmp(bus, "usb") == 0)
			log_warn("%s: its identity could not be read: the binding is recorded by "
				 "its place alone",
				 name);
	}
	pthread_mutex_lock(&ps->lock);
	int r = 0;
	if (driver) {
		r = add_locked(ps, bus, name, driver, id);
	} else {
		struct entry *e = find_locked(ps, bus, name);
		if (e)
			*e = ps->entries[--ps->n_entries];
	}
	return saved(ps, r, "the binding", name, msg, size);
}

int dm_persist_set_sriov(struct dm_persist *ps, struct dm_device *pf, const char *name, int numvfs,
			 const char *driver, char *msg, size_t size)
{
	if (size)
		*msg = '\0';
	if (!is_word(name) || (driver && !is_word(driver)) || numvfs < 0)
		return -EINVAL;
	char id[ID_MAX] = "";
	if (dm_persist_identity(pf, "pci", id, sizeof(id)) <= 0) {
		snprintf(msg, size, "the PF's identity cannot be read");
		return -ENODEV;
	}
	pthread_mutex_lock(&ps->lock);
	int r = add_sriov_locked(ps, name, numvfs, driver ? driver : "default", id);
	return saved(ps, r, "the VFs", name, msg, size);
}

static int observe_persisted(void *data, struct dm_device *dev, const char *bus, const char *name,
			     const char *driver, char *msg, size_t size)
{
	struct dm_persist *ps = data;
	return dm_persist_set(ps, dev, bus, name, driver, msg, size);
}

static int observe_sriov_persisted(void *data, struct dm_device *pf, const char *name,
				   int numvfs, const char *driver, char *msg, size_t size)
{
	struct dm_persist *ps = data;
	return dm_persist_set_sriov(ps, pf, name, numvfs, driver, msg, size);
}

static int observe_sriov_forgotten(void *data, const char *name, char *msg, size_t size)
{
	struct dm_persist *ps = data;
	return dm_persist_forget_sriov(ps, name, msg, size);
}

int dm_persist_new(struct dm_binder *b, const char *path, struct dm_persist **ret)
{
	struct dm_persist *ps = calloc(1, sizeof(*ps));
	if (!ps)
		return -ENOMEM;
	ps->file_path = strdup(path ? path : DM_PERSIST_FILE);
	if (!ps->file_path) {
		free(ps);
		return -ENOMEM;
	}
	ps->binder = b;
	pthread_mutex_init(&ps->lock, NULL);
	pthread_cond_init(&ps->wake, NULL);
	if (b) {
		const struct dm_binder_observer o = {
			.persisted = observe_persisted,
			.sriov_persisted = observe_sriov_persisted,
			.sriov_forgotten = observe_sriov_forgotten,
			.data = ps,
		};
		dm_binder_set_observer(b, &o);
	}
	*ret = ps;
	return 0;
}

void dm_persist_free(struct dm_persist *ps)
{
	if (!ps)
		return;
	dm_persist_stop(ps);
	if (ps->binder)
		dm_binder_set_observer(ps->binder, NULL);
	free(ps->entries);
	free(ps->sriovs);
	free(ps->file_path);
	pthread_cond_destroy(&ps->wake);
	pthread_mutex_destroy(&ps->lock);
	free(ps);
}

/* The persistence the binder of @dev's model tells (dm_persist_new()),
 * NULL when none. */
static struct dm_persist *persist_of(struct dm_device *dev)
{
	struct dm_binder *b = dm_binder_of(dev);
	struct dm_binder_observer o;
	if (!b)
		return NULL;
	dm_binder_get_observer(b, &o);
	return o.persisted == observe_persisted ? o.data : NULL;
}

int dm_persist_forget_sriov(struct dm_persist *ps, const char *name, char *msg, size_t size)
{
	if (size)
		*msg = '\0';
	pthread_mutex_lock(&ps->lock);
	struct sriov_entry *e = find_sriov_locked(ps, name);
	int r = 0;
	if (e) {
		*e = ps->sriovs[--ps->n_sriovs];
		r = save_locked(ps, msg, size);
	}
	pthread_mutex_unlock(&ps->lock);
	return r;
}

/* ---- applying them ---- */

/* @dev's bus into @bus_buf (WORD_MAX); false when it has none. */
static bool bus_of(struct dm_device *dev, char *bus_buf)
{
	struct dm_model *m = dm_device_get_model(dev);
	dm_model_read_lock(m);
	struct dm_bus *bus = dm_device_get_bus_locked(dev);
	const char *bus_name = bus ? dm_bus_get_name(bus) : NULL;
	if (bus_name)
		snprintf(bus_buf, WORD_MAX, "%s", bus_name);
	dm_model_unlock(m);
	return bus_name != NULL;
}

/* The record of @dev, copied into @out, if any; its bus into @bus_buf. */
static bool recorded(struct dm_persist *ps, struct dm_device *dev, char *bus_buf, struct entry *out)
{
	if (!bus_of(dev, bus_buf))
		return false;
	pthread_mutex_lock(&ps->lock);
	struct entry *e = find_locked(ps, bus_buf, dm_device_get_sysname(dev));
	if (e && out)
		*out = *e;
	pthread_mutex_unlock(&ps->lock);
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

/* Whether the record @e names the device @dev is (its identity @seen when
 * read, else NULL): a record without an identity names any. */
static bool names_device(const struct entry *e, const char *seen)
{
	return !e->id[0] || (seen && strcmp(e->id, seen) == 0);
}

/* The record @e of @bus was in force on its device, whose identity is
 * @seen (NULL: unknown): an old record takes it, and the file is rewritten. */
static void note_in_force(struct dm_persist *ps, const char *bus, const struct entry *e,
			  const char *seen)
{
	char msg[256];
	pthread_mutex_lock(&ps->lock);
	struct entry *now = find_locked(ps, bus, e->name);
	bool same = now && strcmp(now->driver, e->driver) == 0 && strcmp(now->id, e->id) == 0;
	if (same)
		now->other_logged = false;
	bool upgrade = same && !now->id[0] && seen;
	int r = 0;
	if (upgrade) {
		snprintf(now->id, sizeof(now->id), "%s", seen);
		r = save_locked(ps, msg, sizeof(msg));
	}
	pthread_mutex_unlock(&ps->lock);
	if (upgrade && r == 0)
		log_info("persisted binding of %s to %s: recorded as the device's %s", e->name,
			 e->driver, seen);
	else if (upgrade)
		log_warn("%s: cannot record the identity of %s (%s): %s", state_file(ps), e->name, seen,
			 msg[0] ? msg : strerror(-r));
}

/* Whether @dev's VFs are as @e records them: its count, and each VF on
 * the driver (any, for "default"); the count in *ret_count (-1 unread). */
static bool sriov_in_force(struct dm_persist *ps, struct dm_device *dev,
			   const struct sriov_entry *e, long *ret_count)
{
	char dir[PATH_MAX], buf[32], path[PATH_MAX + 64], target[PATH_MAX];
	const char *devpath = dm_device_get_devpath(dev);
	*ret_count = -1;
	if (!devpath)
		return false;
	if (!ps->binder)
		return false;
	snprintf(dir, sizeof(dir), "%s%.4000s", dm_binder_sysfs(ps->binder), devpath);
	snprintf(path, sizeof(path), "%s/sriov_numvfs", dir);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	*ret_count = strtol(buf, NULL, 10);
	if (*ret_count != e->numvfs)
		return false;
	if (strcmp(e->driver, "default") == 0)
		return true;
	for (int i = 0; i < e->numvfs; i++) {
		snprintf(path, sizeof(path), "%s/virtfn%d/driver", dir, i);
		ssize_t t = readlink(path, target, sizeof(target) - 1);
		if (t <= 0)
			return false;
		target[t] = '\0';
		const char *base = strrchr(target, '/') ? strrchr(target, '/') + 1 : target;
		if (strcmp(base, e->driver) != 0)
			return false;
	}
	return true;
}

/* @dev's recorded VFs, applied when it is the PF the record names and
 * they are not in force. */
static void apply_sriov(struct dm_persist *ps, struct dm_device *dev)
{
	char bus[WORD_MAX], seen[ID_MAX];
	if (!bus_of(dev, bus) || strcmp(bus, "pci") != 0)
		return;
	pthread_mutex_lock(&ps->lock);
	struct sriov_entry *found = find_sriov_locked(ps, dm_device_get_sysname(dev));
	struct sriov_entry e = found ? *found : (struct sriov_entry){ 0 };
	pthread_mutex_unlock(&ps->lock);
	if (!found)
		return;
	int id = dm_persist_identity(dev, "pci", seen, sizeof(seen));
	if (id == -ENODEV)
		return;
	if (id <= 0 || strcmp(seen, e.id) != 0) {
		pthread_mutex_lock(&ps->lock);
		struct sriov_entry *now = find_sriov_locked(ps, e.name);
		bool first = now && !now->other_logged;
		if (first)
			now->other_logged = true;
		pthread_mutex_unlock(&ps->lock);
		if (first)
			log_warn("persisted VFs of %s not applied: another device is there (%s; the "
				 "record is %s's)",
				 e.name, id > 0 ? seen : "its identity unreadable", e.id);
		return;
	}
	long count;
	if (sriov_in_force(ps, dev, &e, &count))
		return;
	struct dm_sriov_request req = {
		.numvfs = (unsigned)e.numvfs,
		.driver = strcmp(e.driver, "default") == 0 ? NULL : e.driver,
	};
	int r = dm_sriov_request(dev, &req);
	if (r < 0)
		log_warn("persisted VFs of %s (%d on %s): %s (its sriov file has the report)", e.name,
			 e.numvfs, e.driver, strerror(-r));
	else
		log_info("persisted VFs of %s applied: %d on %s", e.name, e.numvfs, e.driver);
}

static void apply_binding(struct dm_persist *ps, struct dm_device *dev)
{
	char bus[WORD_MAX], seen[ID_MAX];
	struct entry e;
	if (!recorded(ps, dev, bus, &e))
		return;
	int id = dm_persist_identity(dev, bus, seen, sizeof(seen));
	if (id == -ENODEV)
		return; /* removed meanwhile */
	if (!names_device(&e, id > 0 ? seen : NULL)) {
		pthread_mutex_lock(&ps->lock);
		struct entry *now = find_locked(ps, bus, e.name);
		bool first = now && strcmp(now->id, e.id) == 0 && !now->other_logged;
		if (first)
			now->other_logged = true;
		pthread_mutex_unlock(&ps->lock);
		if (first)
			log_warn("persisted binding of %s to %s not applied: another device is there "
				 "(%s; the binding is %s's)",
				 e.name, e.driver, id > 0 ? seen : "its identity unreadable", e.id);
		return;
	}
	const char *now = kernel_driver(dev);
	bool none = strcmp(e.driver, "none") == 0;
	struct dm_binder *b = ps->binder;
	int r = 0;
	if (!b)
		return; /* nothing applies records */
	if (!(none ? !now : now && strcmp(now, e.driver) == 0)) {
		/* not in force (a proxy's name is the kernel's) */
		struct dm_bind_request req = {
			.action = none ? DM_BIND_NONE : DM_BIND_TO,
			.driver = none ? NULL : e.driver,
		};
		r = dm_bind_device(b, dev, &req);
		if (r < 0)
			log_warn("persisted binding of %s to %s: %s (its binding file has the report)",
				 e.name, e.driver, strerror(-r));
		else
			log_info("persisted binding of %s to %s applied", e.name, e.driver);
	}
	if (r == 0)
		note_in_force(ps, bus, &e, id > 0 ? seen : NULL);
}

/* A device's persisted binding, then its persisted VFs (a PF's own
 * binding first: its driver makes them). */
static void apply(struct dm_persist *ps, struct dm_device *dev)
{
	apply_binding(ps, dev);
	if (!dm_device_is_dead(dev))
		apply_sriov(ps, dev);
}

/* ---- the worker: what the monitor saw added, applied off its thread ---- */

static void *work(void *arg)
{
	struct dm_persist *ps = arg;
	pthread_mutex_lock(&ps->lock);
	for (;;) {
		while (!ps->stopping && ps->n_queue == 0)
			pthread_cond_wait(&ps->wake, &ps->lock);
		if (ps->stopping)
			break;
		struct queued q = ps->queue[0];
		memmove(ps->queue, ps->queue + 1, --ps->n_queue * sizeof(*ps->queue));
		pthread_mutex_unlock(&ps->lock);
		/* removed before its turn: nothing to apply */
		if (!dm_device_is_dead(q.dev))
			apply(ps, q.dev);
		dm_device_unref(q.dev);
		pthread_mutex_lock(&ps->lock);
	}
	pthread_mutex_unlock(&ps->lock);
	return NULL;
}

/* Queues @dev of @bus for the worker, started the first time (lock
 * held). A device of the same place already queued (one that replugs in
 * a loop) is replaced by it: one apply per place waits at most. */
static int queue_locked(struct dm_persist *ps, struct dm_device *dev, const char *bus)
{
	if (ps->stopping)
		return -ESHUTDOWN;
	if (!ps->worker_started) {
		int r = dm_thread_start(&ps->worker, 0, work, ps);
		if (r < 0)
			return r;
		ps->worker_started = true;
	}
	const char *name = dm_device_get_sysname(dev);
	for (size_t i = 0; i < ps->n_queue; i++)
		if (strcmp(ps->queue[i].bus, bus) == 0 &&
		    strcmp(dm_device_get_sysname(ps->queue[i].dev), name) == 0) {
			dm_device_unref(ps->queue[i].dev);
			ps->queue[i].dev = dm_device_ref(dev);
			return 0;
		}
	if (!dm_array_grow((void **)&ps->queue, &ps->cap_queue, ps->n_queue, sizeof(*ps->queue), 8))
		return -ENOMEM;
	ps->queue[ps->n_queue].dev = dm_device_ref(dev);
	snprintf(ps->queue[ps->n_queue].bus, sizeof(ps->queue[ps->n_queue].bus), "%s", bus);
	ps->n_queue++;
	pthread_cond_signal(&ps->wake);
	return 0;
}

void dm_persist_device_added(struct dm_device *dev)
{
	char bus[WORD_MAX] = "";
	struct dm_persist *ps = persist_of(dev);
	if (!ps)
		return;
	if (!recorded(ps, dev, bus, NULL)) {
		if (strcmp(bus, "pci") != 0)
			return;
		pthread_mutex_lock(&ps->lock);
		bool pf = find_sriov_locked(ps, dm_device_get_sysname(dev)) != NULL;
		pthread_mutex_unlock(&ps->lock);
		if (!pf)
			return;
	}
	pthread_mutex_lock(&ps->lock);
	int r = queue_locked(ps, dev, bus);
	pthread_mutex_unlock(&ps->lock);
	if (r < 0 && r != -ESHUTDOWN)
		log_warn("persisted binding of %s: not applied: %s", dm_device_get_sysname(dev),
			 strerror(-r));
}

void dm_persist_stop(struct dm_persist *ps)
{
	dm_thread_stop_worker(&ps->lock, &ps->wake, &ps->stopping, &ps->worker_started, ps->worker);
	while (ps->n_queue)
		dm_device_unref(ps->queue[--ps->n_queue].dev);
	free(ps->queue);
	ps->queue = NULL;
	ps->cap_queue = 0;
	pthread_mutex_unlock(&ps->lock);
}

/* A copy of the entries (to walk without the lock), *ret_n of them; NULL
 * when none, or out of memory. */
static struct entry *copy_entries(struct dm_persist *ps, size_t *ret_n)
{
	pthread_mutex_lock(&ps->lock);
	size_t n = ps->n_entries;
	struct entry *copy = n ? malloc(n * sizeof(*copy)) : NULL;
	if (copy)
		memcpy(copy, ps->entries, n * sizeof(*copy));
	pthread_mutex_unlock(&ps->lock);
	*ret_n = n;
	return copy;
}

/* A copy of the SR-IOV records, as copy_entries(ps). */
static struct sriov_entry *copy_sriovs(struct dm_persist *ps, size_t *ret_n)
{
	pthread_mutex_lock(&ps->lock);
	size_t n = ps->n_sriovs;
	struct sriov_entry *copy = n ? malloc(n * sizeof(*copy)) : NULL;
	if (copy)
		memcpy(copy, ps->sriovs, n * sizeof(*copy));
	pthread_mutex_unlock(&ps->lock);
	*ret_n = n;
	return copy;
}

void dm_persist_apply_all(struct dm_persist *ps, struct dm_model *m)
{
	size_t n;
	struct entry *copy = copy_entries(ps, &n);
	for (size_t i = 0; copy && i < n; i++) {
		struct dm_device *dev = dm_model_find_on_bus(m, copy[i].bus, copy[i].name);
		if (dev) {
			apply(ps, dev);
			dm_device_unref(dev);
		}
	}
	free(copy);
	/* the PFs without a binding of their own */
	size_t ns;
	struct sriov_entry *pfs = copy_sriovs(ps, &ns);
	for (size_t i = 0; pfs && i < ns; i++) {
		struct dm_device *dev = dm_model_find_on_bus(m, "pci", pfs[i].name);
		if (dev) {
			apply_sriov(ps, dev);
			dm_device_unref(dev);
		}
	}
	free(pfs);
}

/* ---- the bindings file ---- */

static int bindings_show(struct dm_device *root, const struct dm_attribute *attr, char **ret,
			 size_t *ret_len)
{
	(void)attr;
	struct dm_model *m = dm_device_get_model(root);
	struct dm_persist *ps = persist_of(root);
	if (!ps) {
		*ret = NULL;
		*ret_len = 0;
		return 0;
	}
	size_t n;
	struct entry *copy = copy_entries(ps, &n);
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
		char seen[ID_MAX];
		int id = dev && copy[i].id[0] ? dm_persist_identity(dev, copy[i].bus, seen,
								    sizeof(seen))
					      : 0;
		if (id == -ENODEV) {
			dm_device_unref(dev);
			dev = NULL;
		}
		bool other = dev && !names_device(&copy[i], id > 0 ? seen : NULL);
		const char *now = dev && !other ? kernel_driver(dev) : NULL;
		bool none = strcmp(copy[i].driver, "none") == 0;
		bool in_force =
			dev && !other && (none ? !now : now && strcmp(now, copy[i].driver) == 0);
		int w = snprintf(buf + len, size - len, "%s %s %s %s%s\n", copy[i].bus, copy[i].name,
				 copy[i].driver,
				 !dev	     ? "absent"
				 : other    ? "other-device"
				 : in_force ? "in-force"
					    : "bound-to:",
				 dev && !other && !in_force ? (now ? now : "none") : "");
		if (w > 0 && (size_t)w < size - len)
			len += (size_t)w;
		if (dev)
			dm_device_unref(dev);
	}
	free(copy);
	/* a PF's VFs: "pci NAME sriov:N:DRIVER STATE", STATE in-force,
	 * absent, other-device or numvfs:M (its count now, or VFs not on the
	 * driver) */
	size_t ns;
	struct sriov_entry *pfs = copy_sriovs(ps, &ns);
	if (ns && !pfs)
		ns = 0;
	char *grown = ns ? realloc(buf, len + ns * (3 * WORD_MAX + 64) + 1) : buf;
	if (!grown)
		ns = 0;
	else
		buf = grown;
	size = len + ns * (3 * WORD_MAX + 64) + 1;
	for (size_t i = 0; i < ns; i++) {
		struct dm_device *dev = dm_model_find_on_bus(m, "pci", pfs[i].name);
		char seen[ID_MAX];
		int id = dev ? dm_persist_identity(dev, "pci", seen, sizeof(seen)) : 0;
		if (id == -ENODEV) {
			dm_device_unref(dev);
			dev = NULL;
		}
		bool other = dev && (id <= 0 || strcmp(seen, pfs[i].id) != 0);
		long count = -1;
		bool in_force = dev && !other && sriov_in_force(ps, dev, &pfs[i], &count);
		char state[32];
		snprintf(state, sizeof(state), "numvfs:%ld", count);
		int w = snprintf(buf + len, size - len, "pci %s sriov:%d:%s %s\n", pfs[i].name,
				 pfs[i].numvfs, pfs[i].driver,
				 !dev	     ? "absent"
				 : other    ? "other-device"
				 : in_force ? "in-force"
					    : state);
		if (w > 0 && (size_t)w < size - len)
			len += (size_t)w;
		if (dev)
			dm_device_unref(dev);
	}
	free(pfs);
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
