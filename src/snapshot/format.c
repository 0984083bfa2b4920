/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* format.c - the snapshot's JSON layout, shared by driverfsd and
 * driverfsctl. */
#include "format.h"

#include "util/replace.h"
#include "util/utf8.h"

#include "base64.h"

#include <driverfs/driverfs.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Adds @value (taken) under @key; a NULL @value is an allocation failure. */
static int add_owned(json_object *o, const char *key, json_object *value)
{
	if (!value || json_object_object_add(o, key, value) < 0) {
		json_object_put(value);
		return -ENOMEM;
	}
	return 0;
}

static int add_string(json_object *o, const char *key, const char *value)
{
	return value ? add_owned(o, key, json_object_new_string(value)) : 0;
}

static int append_owned(json_object *array, json_object *o)
{
	if (!o || json_object_array_add(array, o) < 0) {
		json_object_put(o);
		return -ENOMEM;
	}
	return 0;
}

/* A new object named @name with an empty array @key, appended to @array. */
static int append_named(json_object *array, const char *name, const char *key, json_object **ret)
{
	json_object *o = json_object_new_object(), *a = json_object_new_array();
	int r = o ? add_string(o, "name", name) : -ENOMEM;
	if (r == 0)
		r = add_owned(o, key, a);
	else
		json_object_put(a);
	if (r == 0)
		r = append_owned(array, o);
	else
		json_object_put(o);
	if (r == 0)
		*ret = a;
	return r;
}

json_object *dm_snapshot_doc_new(json_object **ret_buses, json_object **ret_classes,
				 json_object **ret_devices)
{
	json_object *doc = json_object_new_object();
	json_object *buses = json_object_new_array(), *classes = json_object_new_array();
	json_object *devices = json_object_new_array();
	int r = doc ? add_string(doc, "format", DM_SNAPSHOT_FORMAT) : -ENOMEM;
	if (r == 0)
		r = add_owned(doc, "version", json_object_new_int(DM_SNAPSHOT_VERSION));
	/* each add takes its array, also when it fails */
	r = r ? r : add_owned(doc, "buses", json_object_get(buses));
	r = r ? r : add_owned(doc, "classes", json_object_get(classes));
	r = r ? r : add_owned(doc, "devices", json_object_get(devices));
	json_object_put(buses);
	json_object_put(classes);
	json_object_put(devices);
	if (r < 0) {
		json_object_put(doc);
		return NULL;
	}
	*ret_buses = buses;
	*ret_classes = classes;
	*ret_devices = devices;
	return doc;
}

int dm_snapshot_add_bus(json_object *buses, const char *name, json_object **ret_drivers)
{
	return append_named(buses, name, "drivers", ret_drivers);
}

int dm_snapshot_add_driver(json_object *drivers, const char *name, bool kernel, int priority)
{
	json_object *o = json_object_new_object();
	int r = o ? add_string(o, "name", name) : -ENOMEM;
	if (r == 0)
		r = add_string(o, "kind", kernel ? "kernel" : "user");
	if (r == 0)
		r = add_owned(o, "priority", json_object_new_int(priority));
	if (r < 0) {
		json_object_put(o);
		return r;
	}
	return append_owned(drivers, o);
}

int dm_snapshot_add_class(json_object *classes, const char *name, json_object **ret_interfaces)
{
	return append_named(classes, name, "interfaces", ret_interfaces);
}

int dm_snapshot_add_class_drivers(json_object *classes, json_object **ret_drivers)
{
	size_t n = json_object_array_length(classes);
	json_object *c = n ? json_object_array_get_idx(classes, n - 1) : NULL;
	json_object *a = json_object_new_array();
	int r = c ? add_owned(c, "drivers", json_object_get(a)) : -EINVAL;
	json_object_put(a); /* the class holds it, or it goes */
	if (r == 0)
		*ret_drivers = a;
	return r;
}

int dm_snapshot_add_string(json_object *array, const char *s)
{
	return append_owned(array, json_object_new_string(s));
}

int dm_snapshot_add_device(json_object *devices, const struct dm_snapshot_device *d,
			   json_object **ret_dev)
{
	json_object *o = json_object_new_object();
	int r = o ? 0 : -ENOMEM;
	r = r ? r : add_string(o, "path", d->path);
	r = r ? r : add_string(o, "devpath", d->devpath);
	r = r ? r : add_string(o, "sysname", d->sysname);
	r = r ? r : add_string(o, "bus", d->bus);
	r = r ? r : add_string(o, "class", d->class_name);
	r = r ? r : add_string(o, "interface", d->interface);
	r = r ? r : add_string(o, "driver", d->driver);
	r = r ? r : add_string(o, "kernel_driver", d->kernel_driver);
	r = r ? r : add_string(o, "power", d->suspended ? "suspended" : "on");
	r = r ? r : add_owned(o, "values", json_object_new_object());
	r = r ? r : append_owned(devices, json_object_get(o));
	json_object_put(o);
	if (r == 0)
		*ret_dev = o;
	return r;
}

/* The object @key of @owner, added (empty) when it has none. */
static json_object *member(json_object *owner, const char *key)
{
	json_object *o;
	if (json_object_object_get_ex(owner, key, &o))
		return o;
	o = json_object_new_object();
	return add_owned(owner, key, o) < 0 ? NULL : o;
}

/* Adds @len bytes of @text as the string @key of @o. */
static int add_bytes(json_object *o, const char *key, const char *text, size_t len)
{
	return add_owned(o, key, json_object_new_string_len(text, (int)len));
}

int dm_snapshot_add_file(json_object *owner, const char *name, mode_t mode, const char *content,
			 size_t len, int err, const struct dm_sanitizer *sanitize)
{
	char *masked = NULL;
	bool text = content && dm_snapshot_value_is_text(content, len);
	if (content && len > DM_SNAPSHOT_FILE_MAX)
		return 0; /* no attribute holds as much: left out */
	if (sanitize && content && !text)
		return 0; /* a format it does not parse may hide a serial */
	if (sanitize && text) {
		masked = dm_sanitize_text(sanitize, name, content, len, &len);
		if (!masked)
			return -ENOMEM;
		content = masked;
	}
	int r;
	mode &= 0777;
	if (text && mode == 0444 && len > 0 && content[len - 1] == '\n') {
		json_object *values = member(owner, "values");
		r = values ? add_bytes(values, name, content, len - 1) : -ENOMEM;
	} else {
		char m[8];
		json_object *files = member(owner, "files"), *f = json_object_new_object();
		snprintf(m, sizeof(m), "%04o", (unsigned)mode);
		r = files && f ? add_string(f, "mode", m) : -ENOMEM;
		if (r == 0 && text) {
			r = add_bytes(f, "text", content, len);
		} else if (r == 0 && content) {
			char *b64 = dm_base64_encode(content, len);
			r = b64 ? add_string(f, "base64", b64) : -ENOMEM;
			free(b64);
		} else if (r == 0 && err > 0 && strerrorname_np(err)) {
			r = add_string(f, "error", strerrorname_np(err));
		}
		if (r == 0)
			r = add_owned(files, name, f);
		else
			json_object_put(f);
	}
	free(masked);
	return r;
}

bool dm_snapshot_is_derived(const char *name, bool root)
{
	/* the daemon's, and the kernel's deferred probes (debugfs's, not
	 * the device's) */
	if (root && (strcmp(name, "metrics") == 0 || strcmp(name, "devices_deferred") == 0))
		return true;
	/* driverfsd's own files, and its binding control files (the serving
	 * daemon's state: docs/design.md §7.5) */
	static const char *const derived[] = { "devpath",     "kernel_driver", "power",
					       "power_error", "power_log",     "binding",
					       "bindings",    "suppliers",     "consumers",
					       "sriov" };
	for (size_t i = 0; i < sizeof(derived) / sizeof(derived[0]); i++)
		if (strcmp(name, derived[i]) == 0)
			return true;
	return false;
}

/* docs/snapshot.md, "Volatile values", in its notation: a name, "*SUFFIX"
 * or "DIR/" (every file under a directory of that name). The unit test
 * holds the two equal. */
static const char *const volatile_rules[] = {
	/* counters and meters */
	"stat", "vmstat", "numastat", "meminfo", "inflight", "energy_uj", "uptime", "urbnum",
	"carrier_changes", "carrier_up_count", "carrier_down_count", "statistics/",
	/* a backing device's share of the dirty-page limit: follows free memory */
	"max_bytes",
	/* what moves with power management: clocks, link speeds, runtime PM */
	"scaling_cur_freq", "cpuinfo_cur_freq", "current_link_speed", "current_link_width",
	"power_state", "runtime_status", "runtime_active_time", "runtime_suspended_time",
	"active_duration", "connected_duration", "cpuidle/", "pcie_link/",
	/* sensors (hwmon, power supplies) */
	"*_input", "*_now", "*_avg",
};

const char *dm_snapshot_volatile_rule(size_t i)
{
	return i < sizeof(volatile_rules) / sizeof(volatile_rules[0]) ? volatile_rules[i] : NULL;
}

bool dm_snapshot_is_volatile(const char *name)
{
	const char *base = strrchr(name, '/');
	base = base ? base + 1 : name;
	size_t len = strlen(base);
	for (const char *rule, **r = (const char **)volatile_rules;
	     r < volatile_rules + sizeof(volatile_rules) / sizeof(volatile_rules[0]); r++) {
		rule = *r;
		size_t n = strlen(rule);
		if (rule[0] == '*') {
			if (len >= n && strcmp(base + len - (n - 1), rule + 1) == 0)
				return true;
		} else if (rule[n - 1] == '/') {
			/* a directory of that name anywhere above the file */
			for (const char *p = name; p < base; p = strchr(p, '/') + 1)
				if (strncmp(p, rule, n) == 0)
					return true;
		} else if (strcmp(base, rule) == 0) {
			return true;
		}
	}
	return false;
}

int dm_snapshot_add_dir(json_object *owner, const char *name, json_object **ret_dir)
{
	json_object *dirs = member(owner, "dirs"), *d = json_object_new_object();
	int r = dirs && d ? add_owned(d, "values", json_object_new_object()) : -ENOMEM;
	if (r == 0) {
		r = add_owned(dirs, name, d);
		if (r == 0)
			*ret_dir = d;
		return r;
	}
	json_object_put(d);
	return r;
}

bool dm_snapshot_name_is_clean(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	if (!s)
		return true;
	/* printable ASCII, most names, byte by byte up to the first other */
	while (*p >= 0x20 && *p < 0x7f)
		p++;
	if (!*p)
		return true;
	size_t len = strlen((const char *)p);
	for (size_t i = 0; i < len;) {
		size_t n = dm_utf8_seq(p + i, len - i);
		/* U+0080..U+009F: 0xc2 0x80..0x9f */
		if (!n || p[i] < 0x20 || p[i] == 0x7f || (p[i] == 0xc2 && p[i + 1] < 0xa0))
			return false;
		i += n;
	}
	return true;
}

bool dm_snapshot_value_is_text(const char *value, size_t len)
{
	const unsigned char *s = (const unsigned char *)value;
	if (len > DM_ATTR_MAX)
		return false;
	for (size_t i = 0; i < len;) {
		size_t n = s[i] ? dm_utf8_seq(s + i, len - i) : 0;
		if (!n)
			return false;
		i += n;
	}
	return true;
}

const char *dm_snapshot_to_string(json_object *doc)
{
	return json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
							   JSON_C_TO_STRING_NOSLASHESCAPE);
}

/* Writes @text and a newline to @f and closes it; false on any error. */
int dm_snapshot_write_file(json_object *doc, const char *path, char *msg, size_t size)
{
	if (msg && size)
		*msg = '\0';
	const char *text = dm_snapshot_to_string(doc);
	size_t len = text ? strlen(text) : 0;
	char *buf = text ? malloc(len + 1) : NULL;
	if (!buf)
		return -ENOMEM;
	memcpy(buf, text, len);
	buf[len] = '\n';
	int r = dm_replace_file(path, buf, len + 1, msg, size);
	free(buf);
	return r;
}

int dm_snapshot_errno(const char *name)
{
	/* the names glibc gives, for the numbers this machine has */
	for (int e = 1; e < 4096; e++) {
		const char *n = strerrorname_np(e);
		if (n && strcmp(n, name) == 0)
			return e;
	}
	return 0;
}

/* A device's place in the document's devices[] by its path. */
struct placed {
	const char *path;
	size_t index;
};

static int by_placed_path(const void *a, const void *b)
{
	return strcmp(((const struct placed *)a)->path, ((const struct placed *)b)->path);
}

struct link_pair {
	size_t s, c;
	const char *supplier, *consumer;
};

static int by_places(const void *a, const void *b)
{
	const struct link_pair *x = a, *y = b;
	return x->s != y->s ? (x->s < y->s ? -1 : 1) : x->c != y->c ? (x->c < y->c ? -1 : 1) : 0;
}

int dm_snapshot_add_links(json_object *doc, const char *const *pairs, size_t n)
{
	json_object *devices;
	if (n == 0)
		return 0;
	if (!json_object_object_get_ex(doc, "devices", &devices))
		return -EINVAL;
	size_t nd = json_object_array_length(devices);
	struct placed *places = calloc(nd ? nd : 1, sizeof(*places));
	struct link_pair *v = calloc(n, sizeof(*v));
	int r = places && v ? 0 : -ENOMEM;
	for (size_t i = 0; r == 0 && i < nd; i++) {
		json_object *path = NULL;
		json_object_object_get_ex(json_object_array_get_idx(devices, i), "path", &path);
		const char *p = path ? json_object_get_string(path) : NULL;
		places[i] = (struct placed){ p ? p : "", i };
	}
	if (r == 0)
		qsort(places, nd, sizeof(*places), by_placed_path);
	size_t kept = 0;
	for (size_t i = 0; r == 0 && i < n; i++) {
		struct placed ks = { .path = pairs[2 * i] }, kc = { .path = pairs[2 * i + 1] };
		const struct placed *ps = bsearch(&ks, places, nd, sizeof(*places), by_placed_path);
		const struct placed *pc = bsearch(&kc, places, nd, sizeof(*places), by_placed_path);
		if (ps && pc)
			v[kept++] = (struct link_pair){ ps->index, pc->index, ks.path, kc.path };
	}
	json_object *links = r == 0 && kept ? json_object_new_array() : NULL;
	if (r == 0 && kept) {
		qsort(v, kept, sizeof(*v), by_places);
		for (size_t i = 0; r == 0 && i < kept; i++) {
			json_object *o = json_object_new_object();
			r = o ? add_string(o, "supplier", v[i].supplier) : -ENOMEM;
			r = r ? r : add_string(o, "consumer", v[i].consumer);
			if (r == 0 && json_object_array_add(links, o) < 0)
				r = -ENOMEM;
			if (r < 0)
				json_object_put(o);
		}
		r = r ? r : add_owned(doc, "links", json_object_get(links));
		json_object_put(links);
	}
	free(places);
	free(v);
	return r;
}
