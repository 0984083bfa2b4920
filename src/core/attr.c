/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* attr.c - a device's files: static values and attribute tables. */
#include "model-private.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool dm_streq(const char *buf, size_t len, const char *word)
{
	size_t wl = strlen(word);
	if (len > 0 && buf[len - 1] == '\n')
		len--;
	return len == wl && memcmp(buf, word, wl) == 0;
}

int dm_emit(char *buf, size_t size, const char *fmt, ...)
{
	if (size == 0)
		return 0;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	if (n < 0) {
		buf[0] = '\0';
		return 0;
	}
	return (size_t)n >= size ? (int)size - 1 : n;
}

/* ---- static values ---- */

static struct dm_value *value_find(const struct dm_device *dev, const char *name, size_t *ret_pos)
{
	size_t lo = 0, hi = dev->n_values;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(dev->values[mid].name, name);
		if (c == 0)
			return &dev->values[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (ret_pos)
		*ret_pos = lo;
	return NULL;
}

static const char *value_bytes(const struct dm_device *dev, const struct dm_value *v)
{
	return dev->value_data + v->off;
}

/* Room for @more entries and @bytes more bytes, doubling what is kept
 * unless @exact (a device's values are mostly set one by one before it is
 * added; then dm_device_values_pack() gives back the rest). */
static int values_reserve(struct dm_device *dev, size_t more, size_t bytes, bool exact)
{
	if (dev->n_values + more > dev->cap_values) {
		size_t cap = dev->cap_values && !exact ? dev->cap_values * 2 : 4;
		if (cap < dev->n_values + more || exact)
			cap = dev->n_values + more;
		struct dm_value *v = cap > UINT32_MAX ? NULL : realloc(dev->values, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		dev->values = v;
		dev->cap_values = (uint32_t)cap;
	}
	if (dev->data_len + bytes > dev->data_cap) {
		size_t cap = dev->data_cap && !exact ? dev->data_cap * 2 : 64;
		if (cap < dev->data_len + bytes || exact)
			cap = dev->data_len + bytes;
		char *d = cap > UINT32_MAX ? NULL : realloc(dev->value_data, cap);
		if (!d)
			return -ENOMEM;
		dev->value_data = d;
		dev->data_cap = (uint32_t)cap;
	}
	return 0;
}

/* Drops the bytes of @e from the buffer (a value being replaced). */
static void value_cut(struct dm_device *dev, const struct dm_value *e)
{
	uint32_t off = e->off, gone = e->len + 1;
	memmove(dev->value_data + off, dev->value_data + off + gone, dev->data_len - off - gone);
	dev->data_len -= gone;
	for (size_t i = 0; i < dev->n_values; i++)
		if (dev->values[i].off > off)
			dev->values[i].off -= gone;
}

static int value_set(struct dm_device *dev, const char *name, const char *value)
{
	size_t len = strlen(value), pos;
	struct dm_value *e = value_find(dev, name, &pos);
	if (e)
		pos = (size_t)(e - dev->values);
	int r = values_reserve(dev, e ? 0 : 1, len + 1, false);
	if (r < 0)
		return r;
	if (e) {
		e = &dev->values[pos]; /* the array may have moved */
		value_cut(dev, e);
	} else {
		const char *n = dm_strpool_intern(&dev->model->names, name);
		if (!n)
			return -ENOMEM;
		e = &dev->values[pos];
		memmove(e + 1, e, (dev->n_values - pos) * sizeof(*e));
		e->name = n;
		dev->n_values++;
	}
	e->off = dev->data_len;
	e->len = (uint32_t)len;
	memcpy(dev->value_data + dev->data_len, value, len + 1);
	dev->data_len += (uint32_t)len + 1;
	return 0;
}

int dm_device_set_value(struct dm_device *dev, const char *name, const char *value)
{
	if (!dm_name_is_valid(name) || !value || strlen(value) >= DM_ATTR_MAX)
		return -EINVAL;
	if (atomic_load(&dev->state) == DM_DEV_INIT)
		return value_set(dev, name, value);
	dm_model_write_lock(dev->model);
	int r = value_set(dev, name, value);
	if (r == 0 && !dm_device_is_dead(dev))
		dm_model_notify_changed_locked(dev->model, dev);
	dm_model_unlock(dev->model);
	return r;
}

int dm_device_reserve_values(struct dm_device *dev, size_t n, size_t bytes)
{
	if (atomic_load(&dev->state) != DM_DEV_INIT)
		return -EBUSY;
	return values_reserve(dev, n, bytes, true);
}

int dm_device_get_value(struct dm_device *dev, const char *name, char *buf, size_t size)
{
	dm_model_read_lock(dev->model);
	struct dm_value *e = value_find(dev, name, NULL);
	int r;
	if (!e)
		r = -ENOENT;
	else if (e->len >= size)
		r = -ENOBUFS;
	else {
		memcpy(buf, value_bytes(dev, e), e->len + 1);
		r = (int)e->len;
	}
	dm_model_unlock(dev->model);
	return r;
}

int dm_device_for_each_value_locked(struct dm_device *dev,
				    int (*fn)(const char *name, const char *value, void *), void *data)
{
	dm_model_assert_held(dev->model);
	for (size_t i = 0; i < dev->n_values; i++) {
		int r = fn(dev->values[i].name, value_bytes(dev, &dev->values[i]), data);
		if (r)
			return r;
	}
	return 0;
}

void dm_device_values_pack(struct dm_device *dev)
{
	/* shrinking in place: a failure keeps the larger block */
	if (dev->cap_values > dev->n_values && dev->n_values) {
		struct dm_value *v = realloc(dev->values, dev->n_values * sizeof(*v));
		if (v) {
			dev->values = v;
			dev->cap_values = dev->n_values;
		}
	}
	if (dev->data_cap > dev->data_len && dev->data_len) {
		char *d = realloc(dev->value_data, dev->data_len);
		if (d) {
			dev->value_data = d;
			dev->data_cap = dev->data_len;
		}
	}
}

void dm_device_values_free(struct dm_device *dev)
{
	free(dev->values);
	free(dev->value_data);
	dev->values = NULL;
	dev->value_data = NULL;
	dev->n_values = dev->cap_values = dev->data_len = dev->data_cap = 0;
}

/* ---- the core attributes every device has ---- */

static int power_show(struct dm_device *dev, const struct dm_attribute *attr, char *buf,
		      size_t size)
{
	(void)attr;
	return dm_emit(buf, size, "%s\n",
		       dm_device_get_power(dev) == DM_POWER_SUSPENDED ? "suspended" : "on");
}

static int power_store(struct dm_device *dev, const struct dm_attribute *attr, const char *buf,
		       size_t len)
{
	(void)attr;
	enum dm_pm_request req;
	if (dm_streq(buf, len, "suspend"))
		req = DM_PM_SUSPEND;
	else if (dm_streq(buf, len, "resume"))
		req = DM_PM_RESUME;
	else if (dm_streq(buf, len, "suspend-dry-run"))
		req = DM_PM_SUSPEND_DRY_RUN;
	else if (dm_streq(buf, len, "resume-dry-run"))
		req = DM_PM_RESUME_DRY_RUN;
	else
		return -EINVAL;
	struct dm_model *m = dev->model;
	dm_model_read_lock(m);
	const struct dm_pm_handler *h = m->pm_handler;
	void *data = m->pm_data;
	dm_model_unlock(m);
	if (!h || !h->request)
		return -EOPNOTSUPP;
	return h->request(dev, req, data);
}

/* A copy of the model's shared copy: the journal is built again only
 * when it changed (dm_model_show_log()). dm_device_show_blob() hands out
 * the shared copy itself. */
static int power_log_show(struct dm_device *dev, const struct dm_attribute *attr, char **ret,
			  size_t *ret_len)
{
	(void)attr;
	struct dm_blob *b;
	int r = dm_model_show_log(dev->model, &b);
	if (r < 0)
		return r;
	*ret = malloc(b->len + 1); /* never malloc(0): an empty journal is no error */
	if (*ret) {
		memcpy(*ret, b->data, b->len);
		(*ret)[b->len] = '\0';
		*ret_len = b->len;
	}
	dm_blob_unref(b);
	return *ret ? 0 : -ENOMEM;
}

/* the metrics file (metrics.h): built at each open, as a counter's file is
 * read whole once per scrape; a stat gives the last text's length, and
 * builds nothing (issue 30: each stat of any user built it all). */
static int metrics_show(struct dm_device *dev, const struct dm_attribute *attr, char **ret,
			size_t *ret_len)
{
	(void)attr;
	return dm_model_show_metrics(dev->model, ret, ret_len);
}

static int metrics_size(struct dm_device *dev, const struct dm_attribute *attr, size_t *ret)
{
	(void)attr;
	return dm_model_metrics_size(dev->model, ret);
}

static int power_error_show(struct dm_device *dev, const struct dm_attribute *attr, char *buf,
			    size_t size)
{
	(void)attr;
	int n = dm_device_get_power_error(dev, buf, size - 1);
	if (n < 0)
		return n;
	if (n > 0)
		buf[n++] = '\n';
	return n;
}

static int devpath_show(struct dm_device *dev, const struct dm_attribute *attr, char *buf,
			size_t size)
{
	(void)attr;
	return dm_emit(buf, size, "%s\n", dev->devpath);
}

/* Live: hotplug's bind and unbind change it (under the model lock). */
static int kernel_driver_show(struct dm_device *dev, const struct dm_attribute *attr, char *buf,
			      size_t size)
{
	(void)attr;
	dm_model_read_lock(dev->model);
	int n = dev->kernel_driver ? dm_emit(buf, size, "%s\n", dev->kernel_driver) : -ENOENT;
	dm_model_unlock(dev->model);
	return n;
}

static const struct dm_attribute power_attr = {
	.name = "power", .mode = 0644, .flags = DM_ATTR_ANNOUNCED,
	.show = power_show, .store = power_store,
};
static const struct dm_attribute power_error_attr = {
	.name = "power_error", .mode = 0444, .flags = DM_ATTR_ANNOUNCED, .show = power_error_show,
};
static const struct dm_attribute power_log_attr = {
	.name = "power_log", .mode = 0444, .flags = DM_ATTR_LIVE | DM_ATTR_UNBOUNDED,
	.show_alloc = power_log_show,
};
static const struct dm_attribute metrics_attr = {
	.name = "metrics", .mode = 0444, .flags = DM_ATTR_LIVE | DM_ATTR_UNBOUNDED,
	.show_alloc = metrics_show, .size = metrics_size,
};
static const struct dm_attribute devpath_attr = DM_ATTR_RO(devpath, devpath_show);
static const struct dm_attribute kernel_driver_attr = {
	.name = "kernel_driver", .mode = 0444, .flags = DM_ATTR_LIVE, .show = kernel_driver_show,
};

static const struct dm_attribute *const core_attrs[] = {
	&devpath_attr,	  &kernel_driver_attr, &power_attr, &power_error_attr,
	&power_log_attr, &metrics_attr,	      NULL,
};

static bool core_visible(struct dm_device *dev, const struct dm_attribute *attr)
{
	if (attr == &devpath_attr)
		return dev->devpath != NULL;
	if (attr == &kernel_driver_attr)
		return dev->kernel_driver != NULL;
	if (attr == &power_log_attr || attr == &metrics_attr)
		return dev == dev->model->root || (!dev->parent && !dev->model->root);
	return true;
}

static const struct dm_attribute_group core_group = {
	.attrs = core_attrs,
	.is_visible = core_visible,
};

const struct dm_attribute_group *dm_core_device_group(void)
{
	return &core_group;
}

/* ---- lookups over a device's groups ---- */

/* Calls @fn on each attribute group the device has: its own, then its bus's. */
static int for_each_group_locked(struct dm_device *dev,
				 int (*fn)(const struct dm_attribute_group *, void *), void *data)
{
	dm_model_assert_held(dev->model);
	for (size_t i = 0; i < dev->n_groups; i++) {
		int r = fn(dev->groups[i], data);
		if (r)
			return r;
	}
	return 0;
}

static bool same_group(const struct dm_attribute_group *g, const char *group)
{
	return group ? g->name && strcmp(g->name, group) == 0 : !g->name;
}

static bool attr_visible(struct dm_device *dev, const struct dm_attribute_group *g,
			 const struct dm_attribute *a)
{
	return !g->is_visible || g->is_visible(dev, a);
}

/* A group of attributes found in sysfs rather than a table (driverfs.h). */
static bool is_dynamic(const struct dm_attribute_group *g)
{
	return !g->attrs;
}

struct find_ctx {
	struct dm_device *dev;
	const char *group;
	const char *name; /* NULL: any visible attribute of the group */
	bool dynamic; /* look in the dynamic groups (else in the tables) */
	const struct dm_attribute *found;
};

static int take_first(const struct dm_attribute *a, void *data)
{
	*(const struct dm_attribute **)data = a;
	return 1;
}

static int find_in_group(const struct dm_attribute_group *g, void *data)
{
	struct find_ctx *c = data;
	if (is_dynamic(g) != c->dynamic)
		return 0;
	if (c->dynamic) {
		/* a dynamic group's tree holds any directory: its own say */
		const struct dm_attribute *a = NULL;
		if (c->name)
			a = g->find(c->dev, c->group, c->name);
		else
			g->for_each(c->dev, c->group, take_first, &a);
		c->found = a;
		return a != NULL;
	}
	if (!same_group(g, c->group))
		return 0;
	for (const struct dm_attribute *const *a = g->attrs; *a; a++)
		if ((!c->name || strcmp((*a)->name, c->name) == 0) && attr_visible(c->dev, g, *a)) {
			c->found = *a;
			return 1;
		}
	return 0;
}

/* What a static value is, as a file: its name is the value's. */
static const struct dm_attribute value_attr = { .mode = 0444 };

/* The table attribute @name of @group, or a static value when @group is
 * NULL; NULL when there is none. */
static const struct dm_attribute *fixed_find_locked(struct dm_device *dev, const char *group,
						    const char *name, const struct dm_value **ret_value)
{
	dm_model_assert_held(dev->model);
	struct find_ctx c = { .dev = dev, .group = group, .name = name };
	*ret_value = NULL;
	if (for_each_group_locked(dev, find_in_group, &c))
		return c.found;
	if (!group) {
		const struct dm_value *v = value_find(dev, name, NULL);
		if (v) {
			*ret_value = v;
			return &value_attr;
		}
	}
	return NULL;
}

/* ---- the device's own directory: the kernel's names first ----
 *
 * docs/design.md §6.2. In a device's directory every name the kernel uses
 * (a child device, a sysfs attribute or attribute directory, a static value
 * holding sysfs's value of that name) is the kernel's. An entry of
 * driverfsd's own (a table attribute or group, one of its own static
 * values, and the view's links and link directories) is served under its
 * name where the kernel uses none of that name there, else as
 * DM_OWN_PREFIX "<name>", the prefix repeated past every such name the
 * kernel uses (dm_device_own_name_locked()). No list of names to dodge:
 * the rule asks the device what it has.
 */

/* The static values of driverfsd's own meaning: the description (lspci's,
 * lsusb's, udev's) and the node udev made. Every other static value holds
 * sysfs's value of that name (the per-bus values, dev, modalias, uevent). */
static bool is_own_value(const char *name)
{
	return strcmp(name, "name") == 0 || strcmp(name, "devnode") == 0;
}

struct dyn_has {
	struct dm_device *dev;
	const char *name;
};

static int dynamic_has_one(const struct dm_attribute_group *g, void *data)
{
	struct dyn_has *h = data;
	if (!is_dynamic(g))
		return 0;
	if (g->has)
		return g->has(h->dev, h->name);
	return g->find(h->dev, NULL, h->name) || (g->has_dir && g->has_dir(h->dev, h->name));
}

/* The names of driverfsd's asked most (every listing and every read of a
 * device's own files asks them): whether the kernel uses one is kept per
 * device until its files or children change (own_names in
 * model-private.h). Any other name is asked afresh. */
static const char *const own_names[] = {
	"name",	     "devpath", "devnode",   "kernel_driver", "power",	   "power_error",
	"power_log", "binding", "pm",	     "subsystem",     "driver",	   "suppliers",
	"consumers", "supplier", "consumer", "metrics",
};

#define N_OWN_NAMES (sizeof(own_names) / sizeof(own_names[0]))
_Static_assert(N_OWN_NAMES <= 16, "own_names holds a bit per name in 16");

static bool kernel_has_uncached(struct dm_device *dev, const char *name);

/* Whether a live child device of @dev is called @name. */
static bool has_child(const struct dm_device *dev, const char *name)
{
	struct dm_device *child = dm_device_find_child_locked(dev, name);
	return child && !dm_device_is_dead(child);
}

bool dm_device_kernel_has_locked(struct dm_device *dev, const char *name)
{
	dm_model_assert_held(dev->model);
	/* the root device's files are at the top of the mount, where no
	 * device is (its directory root/ holds its children only) */
	if (dev == dev->model->root)
		return false;
	size_t i = 0;
	while (i < N_OWN_NAMES && strcmp(own_names[i], name) != 0)
		i++;
	if (i == N_OWN_NAMES)
		return kernel_has_uncached(dev, name);
	uint64_t gen = atomic_load(&dev->names_gen), word = atomic_load(&dev->own_names);
	uint64_t bit = (uint64_t)1 << i;
	if (word >> 32 == gen && (word & bit << 16))
		return word & bit;
	bool has = kernel_has_uncached(dev, name);
	/* kept for this generation, beside the answers it already has (a
	 * lost race costs a look, never a wrong answer: every answer of one
	 * generation is the same) */
	uint64_t next;
	do {
		next = word >> 32 == gen ? word : gen << 32;
		next |= bit << 16 | (has ? bit : 0);
	} while (!atomic_compare_exchange_weak(&dev->own_names, &word, next) && word >> 32 <= gen);
	return has;
}

static bool kernel_has_uncached(struct dm_device *dev, const char *name)
{
	if (has_child(dev, name))
		return true;
	if (!is_own_value(name) && value_find(dev, name, NULL))
		return true;
	struct dyn_has h = { .dev = dev, .name = name };
	return for_each_group_locked(dev, dynamic_has_one, &h) != 0;
}

bool dm_own_name_prefixed(const char *own, int k, char *buf, size_t size)
{
	size_t n = sizeof(DM_OWN_PREFIX) - 1, len = strlen(own);
	if ((size_t)k * n + len > DM_NAME_MAX || (size_t)k * n + len >= size)
		return false;
	for (int i = 0; i < k; i++)
		memcpy(buf + (size_t)i * n, DM_OWN_PREFIX, n);
	memcpy(buf + (size_t)k * n, own, len + 1);
	return true;
}

int dm_device_own_name_locked(struct dm_device *dev, const char *own, char *buf, size_t size)
{
	dm_model_assert_held(dev->model);
	char name[DM_NAME_MAX + 1];
	int k = 0;
	if (dm_device_kernel_has_locked(dev, own)) {
		k = 1;
		for (int j = 1; j < DM_OWN_PREFIX_MAX; j++)
			if (dm_own_name_prefixed(own, j, name, sizeof(name)) &&
			    dm_device_kernel_has_locked(dev, name))
				k = j + 1;
	}
	return dm_own_name_prefixed(own, k, buf, size) ? 0 : -ENAMETOOLONG;
}

/* Whether @served is the name the device's own entry dm_own_name_base()
 * of it is served under. */
static bool own_served_as(struct dm_device *dev, const char *served)
{
	char name[DM_NAME_MAX + 1];
	return dm_device_own_name_locked(dev, dm_own_name_base(served), name, sizeof(name)) == 0 &&
	       strcmp(name, served) == 0;
}

bool dm_device_is_own_name_locked(struct dm_device *dev, const char *served, const char *own)
{
	dm_model_assert_held(dev->model);
	return strcmp(dm_own_name_base(served), own) == 0 && own_served_as(dev, served);
}

/* The table group a group path of the device's directory names ("pm", or
 * DM_OWN_PREFIX "pm" where the kernel has a "pm"), or NULL: a path of the
 * kernel's attribute directories then. */
static const char *table_group_of(struct dm_device *dev, const char *group)
{
	const char *own = dm_own_name_base(group);
	struct find_ctx c = { .dev = dev, .group = own };
	if (strchr(group, '/') || !for_each_group_locked(dev, find_in_group, &c))
		return NULL;
	return own_served_as(dev, group) ? own : NULL;
}

/* The kernel's file @name of the device's own directory: a static value
 * of sysfs's, else an attribute of a dynamic group. */
static const struct dm_attribute *kernel_find_locked(struct dm_device *dev, const char *name,
						     const struct dm_value **ret_value)
{
	dm_model_assert_held(dev->model);
	const struct dm_value *v = is_own_value(name) ? NULL : value_find(dev, name, NULL);
	*ret_value = v;
	if (v)
		return &value_attr;
	struct find_ctx c = { .dev = dev, .name = name, .dynamic = true };
	return for_each_group_locked(dev, find_in_group, &c) ? c.found : NULL;
}

/* The file @name of @group as the directory serves it: a table attribute
 * or a static value, else an attribute of a dynamic group; NULL when there
 * is none. */
static const struct dm_attribute *attr_find_locked(struct dm_device *dev, const char *group,
						   const char *name, const struct dm_value **ret_value)
{
	dm_model_assert_held(dev->model);
	*ret_value = NULL;
	if (group) {
		const char *table = table_group_of(dev, group);
		if (table)
			return fixed_find_locked(dev, table, name, ret_value);
		struct find_ctx c = { .dev = dev, .group = group, .name = name, .dynamic = true };
		return for_each_group_locked(dev, find_in_group, &c) ? c.found : NULL;
	}
	/* one of driverfsd's names, plain: its file unless the kernel uses
	 * the name (one look in sysfs, not two) */
	const char *own = dm_own_name_base(name);
	const struct dm_value *v;
	/* driverfsd's own file @own (a table attribute, or one of its own
	 * static values), whatever name it is served under */
	const struct dm_attribute *a = fixed_find_locked(dev, NULL, own, &v);
	if (a && v && !is_own_value(own)) {
		/* a static value holding sysfs's (most reads): the kernel's
		 * file, no own one; under its plain name it is the file
		 * kernel_find_locked() would look up again and find */
		if (own == name) {
			*ret_value = v;
			return a;
		}
		a = NULL;
		v = NULL;
	}
	if (a && own == name && !dm_device_kernel_has_locked(dev, name)) {
		*ret_value = v;
		return a;
	}
	const struct dm_attribute *k = kernel_find_locked(dev, name, ret_value);
	if (k || !a || own == name)
		return k;
	if (own_served_as(dev, name)) {
		*ret_value = v;
		return a;
	}
	*ret_value = NULL;
	return NULL;
}

struct list_ctx {
	struct dm_device *dev;
	const char *group;
	int (*fn)(const struct dm_file_info *, void *);
	void *data;
};

/* An attribute of a dynamic group: the kernel's, listed under its name,
 * unless a static value of sysfs's has that name (then that is the file)
 * or a child device has it (the device is). */
static int list_dynamic_one(const struct dm_attribute *a, void *data)
{
	struct list_ctx *c = data;
	struct dm_file_info fi = { .name = a->name, .mode = a->mode, .flags = a->flags };
	const struct dm_value *v;
	if (!c->group && (kernel_find_locked(c->dev, a->name, &v) != a || has_child(c->dev, a->name)))
		return 0;
	return c->fn(&fi, c->data);
}

static int list_dynamic_group(const struct dm_attribute_group *g, void *data)
{
	struct list_ctx *c = data;
	if (!is_dynamic(g))
		return 0;
	return g->for_each(c->dev, c->group, list_dynamic_one, c);
}

/* @fi, named as the device's own entry @fi->name is served (the group's
 * files are: only the device's own directory holds the kernel's names). */
static int emit_own(struct list_ctx *c, struct dm_file_info fi)
{
	char served[DM_NAME_MAX + 1];
	if (!c->group) {
		if (dm_device_own_name_locked(c->dev, fi.name, served, sizeof(served)) < 0)
			return 0;
		fi.name = served;
	}
	return c->fn(&fi, c->data);
}

static int list_group(const struct dm_attribute_group *g, void *data)
{
	struct list_ctx *c = data;
	if (!same_group(g, c->group) || is_dynamic(g))
		return 0;
	for (const struct dm_attribute *const *a = g->attrs; *a; a++) {
		if (!attr_visible(c->dev, g, *a))
			continue;
		struct dm_file_info fi = { .name = (*a)->name, .mode = (*a)->mode, .flags = (*a)->flags };
		int r = emit_own(c, fi);
		if (r)
			return r;
	}
	return 0;
}

int dm_device_for_each_file_locked(struct dm_device *dev, const char *group,
				   int (*fn)(const struct dm_file_info *, void *), void *data)
{
	dm_model_assert_held(dev->model);
	struct list_ctx c = { .dev = dev, .group = group, .fn = fn, .data = data };
	if (group) {
		/* a table group's files, or the kernel's attribute directory's */
		c.group = table_group_of(dev, group);
		if (c.group)
			return for_each_group_locked(dev, list_group, &c);
		c.group = group;
		return for_each_group_locked(dev, list_dynamic_group, &c);
	}
	/* the table attributes, then the static values (driverfsd's own under
	 * the names they are served under), then what sysfs has that no
	 * static value has taken */
	int r = for_each_group_locked(dev, list_group, &c);
	for (size_t i = 0; !r && i < dev->n_values; i++) {
		const struct dm_value *v = &dev->values[i], *t;
		struct dm_file_info fi = { .name = v->name, .mode = value_attr.mode };
		if (!is_own_value(v->name))
			r = fn(&fi, data);
		else if (fixed_find_locked(dev, NULL, v->name, &t) && t == v)
			r = emit_own(&c, fi); /* else a table attribute has the name */
	}
	if (!r)
		r = for_each_group_locked(dev, list_dynamic_group, &c);
	return r;
}

struct group_ctx {
	struct dm_device *dev;
	int (*fn)(const char *, void *);
	void *data;
	const char *seen[DM_DEVICE_MAX_GROUPS * 2];
	size_t n_seen;
};

/* A table group with a visible file, once, under the name it is served
 * under. */
static int list_named_group(const struct dm_attribute_group *g, void *data)
{
	struct group_ctx *c = data;
	char served[DM_NAME_MAX + 1];
	if (!g->name || is_dynamic(g))
		return 0;
	for (size_t i = 0; i < c->n_seen; i++)
		if (strcmp(c->seen[i], g->name) == 0)
			return 0;
	struct find_ctx f = { .dev = c->dev, .group = g->name };
	if (!find_in_group(g, &f))
		return 0; /* nothing visible */
	if (c->n_seen < sizeof(c->seen) / sizeof(c->seen[0]))
		c->seen[c->n_seen++] = g->name;
	if (dm_device_own_name_locked(c->dev, g->name, served, sizeof(served)) < 0)
		return 0;
	return c->fn(served, c->data);
}

struct dir_ctx {
	struct dm_device *dev;
	const char *parent;
	int (*fn)(const char *, void *);
	void *data;
};

/* A directory of a dynamic group: the kernel's, unless a child device has
 * its name. */
static int list_dynamic_dir(const char *name, void *data)
{
	struct dir_ctx *c = data;
	return !c->parent && has_child(c->dev, name) ? 0 : c->fn(name, c->data);
}

static int list_dynamic_dirs(const struct dm_attribute_group *g, void *data)
{
	struct dir_ctx *c = data;
	if (!is_dynamic(g) || !g->for_each_dir)
		return 0;
	return g->for_each_dir(c->dev, c->parent, list_dynamic_dir, c);
}

int dm_device_for_each_dir_locked(struct dm_device *dev, const char *parent,
				  int (*fn)(const char *, void *), void *data)
{
	dm_model_assert_held(dev->model);
	struct group_ctx c = { .dev = dev, .fn = fn, .data = data };
	struct dir_ctx d = { .dev = dev, .parent = parent, .fn = fn, .data = data };
	if (parent && table_group_of(dev, parent))
		return 0; /* a table group has no subdirectories */
	int r = parent ? 0 : for_each_group_locked(dev, list_named_group, &c);
	return r ? r : for_each_group_locked(dev, list_dynamic_dirs, &d);
}

int dm_device_for_each_group_locked(struct dm_device *dev, int (*fn)(const char *, void *),
				    void *data)
{
	dm_model_assert_held(dev->model);
	return dm_device_for_each_dir_locked(dev, NULL, fn, data);
}

static int has_dynamic_dir(const struct dm_attribute_group *g, void *data)
{
	struct find_ctx *c = data;
	return is_dynamic(g) && g->has_dir && g->has_dir(c->dev, c->group);
}

int dm_device_stat_file_locked(struct dm_device *dev, const char *group, const char *name,
			       struct dm_file_info *ret)
{
	dm_model_assert_held(dev->model);
	if (dm_device_is_dead(dev))
		return -ENODEV;
	if (!name) {
		struct find_ctx c = { .dev = dev, .group = group };
		if (!group ||
		    (!table_group_of(dev, group) && !for_each_group_locked(dev, has_dynamic_dir, &c)))
			return -ENOENT;
		*ret = (struct dm_file_info){ .name = group, .mode = 0755 };
		return 0;
	}
	const struct dm_value *v;
	const struct dm_attribute *a = attr_find_locked(dev, group, name, &v);
	if (!a)
		return -ENOENT;
	*ret = (struct dm_file_info){ .name = v ? v->name : a->name, .mode = a->mode,
				      .flags = a->flags, .attr = v ? NULL : a };
	return 0;
}

/*
 * Finds the file @name of @group under the read lock. A table attribute is
 * returned in *ret (to be called without the lock); a static value is copied,
 * with its newline, into @buf when there is one, and *ret is NULL. Returns
 * the copied length (0 for a table attribute), -ENODEV or -ENOENT.
 */
static int attr_resolve(struct dm_device *dev, const char *group, const char *name,
			const struct dm_attribute **ret, char *buf, size_t size)
{
	struct dm_model *m = dev->model;
	const struct dm_value *v = NULL;
	int r = 0;

	dm_model_read_lock(m);
	const struct dm_attribute *a =
		dm_device_is_dead(dev) ? NULL : attr_find_locked(dev, group, name, &v);
	if (dm_device_is_dead(dev))
		r = -ENODEV;
	else if (!a)
		r = -ENOENT;
	else if (v && buf)
		r = dm_emit(buf, size, "%s\n", value_bytes(dev, v));
	dm_model_unlock(m);
	*ret = v ? NULL : a;
	return r;
}

/* dm_device_show() of the attribute @a attr_resolve() found. */
static int show_resolved(struct dm_device *dev, const struct dm_attribute *a, char *buf,
			 size_t size)
{
	int r;
	if (a->show_alloc && (a->mode & 0444)) {
		/* a large value into a bounded buffer: its first bytes */
		char *all;
		size_t len;
		r = a->show_alloc(dev, a, &all, &len);
		if (r < 0)
			return r;
		/* cut, as dm_emit() cuts: room for the NUL */
		if (len > size - 1)
			len = size - 1;
		memcpy(buf, all, len);
		buf[len] = '\0';
		free(all);
		return (int)len;
	}
	if (!a->show || !(a->mode & 0444))
		return -EACCES;
	int n = a->show(dev, a, buf, size < DM_ATTR_MAX ? size : DM_ATTR_MAX);
	if (n < 0)
		return n;
	/* a show() that filled all of @size: its last byte gives way to the NUL */
	if ((size_t)n > size - 1)
		n = (int)(size - 1);
	buf[n] = '\0';
	return n;
}

int dm_device_show(struct dm_device *dev, const char *group, const char *name, char *buf,
		   size_t size)
{
	const struct dm_attribute *a;
	if (size == 0)
		return -ENOBUFS;
	int r = attr_resolve(dev, group, name, &a, buf, size);
	if (r < 0 || !a)
		return r;
	return show_resolved(dev, a, buf, size);
}

int dm_device_show_alloc(struct dm_device *dev, const char *group, const char *name, char **ret,
			 size_t *ret_len)
{
	const struct dm_attribute *a;
	/* a bounded value and its NUL */
	char *buf = malloc(DM_ATTR_MAX + 1);
	if (!buf)
		return -ENOMEM;
	int r = attr_resolve(dev, group, name, &a, buf, DM_ATTR_MAX + 1);
	if (r >= 0 && a && a->show_alloc && (a->mode & 0444)) {
		free(buf);
		return a->show_alloc(dev, a, ret, ret_len);
	}
	if (r >= 0 && a)
		r = show_resolved(dev, a, buf, DM_ATTR_MAX + 1);
	if (r < 0) {
		free(buf);
		return r;
	}
	*ret = buf;
	*ret_len = (size_t)r;
	return 0;
}

/* Whether @attr of @dev may be read through one of its own ways (@has: it
 * has that way, else @missing): readable, that way there, the device not
 * gone, in that order. */
static int attr_readable(struct dm_device *dev, const struct dm_attribute *attr, bool has,
			 int missing)
{
	if (!(attr->mode & 0444))
		return -EACCES; /* as dm_device_show() answers it */
	if (!has)
		return missing;
	return dm_device_is_dead(dev) ? -ENODEV : 0;
}

static _Thread_local uid_t reader = DM_READER_UNKNOWN;

uid_t dm_attr_reader(void)
{
	return reader;
}

void dm_attr_set_reader(uid_t uid)
{
	reader = uid;
}

int dm_device_show_attr_blob(struct dm_device *dev, const struct dm_attribute *attr,
			     struct dm_blob **ret)
{
	int r = attr_readable(dev, attr, attr->show_alloc && attr != &power_log_attr, -EINVAL);
	if (r < 0)
		return r;
	char *buf;
	size_t len;
	r = attr->show_alloc(dev, attr, &buf, &len);
	return r < 0 ? r : dm_blob_new(buf, len, ret);
}

ssize_t dm_device_read_attr_range(struct dm_device *dev, const struct dm_attribute *attr,
				  char *buf, size_t size, off_t off)
{
	int r = attr_readable(dev, attr, attr->read_range != NULL, -EOPNOTSUPP);
	if (r < 0)
		return r;
	if (off < 0)
		return -EINVAL;
	return attr->read_range(dev, attr, buf, size, off);
}

int dm_device_open_attr_source(struct dm_device *dev, const struct dm_attribute *attr)
{
	int r = attr_readable(dev, attr, attr->open_source != NULL, -EOPNOTSUPP);
	return r < 0 ? r : attr->open_source(dev, attr);
}

int dm_device_show_blob(struct dm_device *dev, const char *group, const char *name,
			struct dm_blob **ret)
{
	const struct dm_attribute *a;
	/* the file found once (it was two or three times: every read and
	 * stat of a static value or table attribute comes here): a static
	 * value is copied out under the same lock, a table attribute shown
	 * from what was found, a value read whole (a sysfs attribute passed
	 * through) read whole */
	char buf[DM_ATTR_MAX + 1];
	int r = attr_resolve(dev, group, name, &a, buf, sizeof(buf));
	if (r < 0)
		return r;
	if (a == &power_log_attr)
		return dm_model_show_log(dev->model, ret);
	if (a && a->show_alloc && (a->mode & 0444))
		return dm_device_show_attr_blob(dev, a, ret);
	if (a)
		r = show_resolved(dev, a, buf, sizeof(buf));
	if (r < 0)
		return r;
	char *copy = malloc((size_t)r + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, buf, (size_t)r + 1);
	return dm_blob_new(copy, (size_t)r, ret);
}

int dm_device_store(struct dm_device *dev, const char *group, const char *name, const char *buf,
		    size_t len)
{
	const struct dm_attribute *a;
	int r = attr_resolve(dev, group, name, &a, NULL, 0);
	if (r == -ENOENT) /* the file went away under its writer */
		return -ENODEV;
	if (r < 0)
		return r;
	if (!a) /* a static value */
		return -EACCES;
	if (!a->store || !(a->mode & 0222))
		return -EACCES;
	if (len > DM_ATTR_MAX)
		return -EFBIG;
	if (len == 0 || memchr(buf, '\0', len))
		return -EINVAL;
	char copy[DM_ATTR_MAX + 1];
	memcpy(copy, buf, len);
	copy[len] = '\0';
	r = a->store(dev, a, copy, len);
	/* ENOENT from the store: its file gone meanwhile (a sysfs file removed
	 * with its device) is ENODEV; with the file still there it is the
	 * kernel's answer and the writer's (sriov_numvfs of a PF no driver
	 * holds) */
	if (r == -ENOENT && attr_resolve(dev, group, name, &a, NULL, 0) < 0)
		r = -ENODEV;
	return r;
}
