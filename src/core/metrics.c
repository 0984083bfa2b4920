/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * metrics.c - the metrics file (metrics.h): the writer of the Prometheus text
 * format, the model's list of sources and the model's own gauges.
 */
#include "metrics.h"

#include "model-private.h"
#include "util/utf8.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct dm_metrics {
	FILE *f;
};

const double dm_histogram_bounds[DM_HISTOGRAM_BUCKETS] = {
	0.001, 0.005, 0.025, 0.1, 0.5, 1, 5, 15, 60, 120,
};

/* ---- the text ---- */

/* @s escaped as a label value (@quote) or a HELP text: backslash and
 * newline as the format says, '"' too in a label; any other control
 * character and any byte that is not UTF-8 as '?'. */
static void put_escaped(FILE *f, const char *s, bool quote)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t left = strlen(s);
	while (*p) {
		size_t n = dm_utf8_seq(p, left);
		if (*p == '\\')
			fputs("\\\\", f);
		else if (*p == '\n')
			fputs("\\n", f);
		else if (*p == '"' && quote)
			fputs("\\\"", f);
		else if (n == 0 || *p < 0x20 || *p == 0x7f)
			fputc('?', f);
		else
			fwrite(p, 1, n, f);
		p += n ? n : 1;
		left -= n ? n : 1;
	}
}

void dm_metrics_family(struct dm_metrics *w, const char *name, const char *type,
		       const char *help)
{
	fprintf(w->f, "# HELP %s ", name);
	put_escaped(w->f, help, false);
	fprintf(w->f, "\n# TYPE %s %s\n", name, type);
}

static void put_value(FILE *f, double v)
{
	if (isinf(v))
		fputs(v > 0 ? "+Inf" : "-Inf", f);
	else if (isnan(v))
		fputs("NaN", f);
	else if (v == floor(v) && fabs(v) < 9007199254740992.0)
		fprintf(f, "%.0f", v);
	else
		fprintf(f, "%.15g", v);
}

/* A sample: @name@suffix, the labels of @ap, then @le (when not NULL) as
 * the last label. */
static void vsample(struct dm_metrics *w, const char *name, const char *suffix, const char *le,
		    double v, va_list ap)
{
	fprintf(w->f, "%s%s", name, suffix);
	const char *sep = "{";
	for (const char *l; (l = va_arg(ap, const char *));) {
		const char *value = va_arg(ap, const char *);
		fprintf(w->f, "%s%s=\"", sep, l);
		put_escaped(w->f, value ? value : "", true);
		fputc('"', w->f);
		sep = ",";
	}
	if (le)
		fprintf(w->f, "%sle=\"%s\"", sep, le);
	fputs(*sep == ',' || le ? "} " : " ", w->f);
	put_value(w->f, v);
	fputc('\n', w->f);
}

void dm_metrics_sample(struct dm_metrics *w, const char *name, double v, ...)
{
	va_list ap;
	va_start(ap, v);
	vsample(w, name, "", NULL, v, ap);
	va_end(ap);
}

void dm_histogram_observe(struct dm_histogram *h, uint64_t usec)
{
	size_t i = 0;
	while (i < DM_HISTOGRAM_BUCKETS && (double)usec > dm_histogram_bounds[i] * 1e6)
		i++;
	atomic_fetch_add_explicit(&h->buckets[i], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->sum_usec, usec, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
}

void dm_metrics_histogram(struct dm_metrics *w, const char *name, struct dm_histogram *h, ...)
{
	va_list ap;
	uint64_t cum = 0;
	for (size_t i = 0; i <= DM_HISTOGRAM_BUCKETS; i++) {
		char le[32];
		cum += atomic_load_explicit(&h->buckets[i], memory_order_relaxed);
		if (i < DM_HISTOGRAM_BUCKETS)
			snprintf(le, sizeof(le), "%g", dm_histogram_bounds[i]);
		else
			strcpy(le, "+Inf");
		va_start(ap, h);
		vsample(w, name, "_bucket", le, (double)cum, ap);
		va_end(ap);
	}
	/* the count is the +Inf bucket's, as the format wants them equal */
	va_start(ap, h);
	vsample(w, name, "_sum", NULL,
		(double)atomic_load_explicit(&h->sum_usec, memory_order_relaxed) / 1e6, ap);
	va_end(ap);
	va_start(ap, h);
	vsample(w, name, "_count", NULL, (double)cum, ap);
	va_end(ap);
}

/* ---- the sources ---- */

int dm_model_add_metrics(struct dm_model *m, dm_metrics_fn fn, void *data)
{
	pthread_mutex_lock(&m->metrics_lock);
	int r = -ENOSPC;
	if (m->n_metrics < DM_METRICS_MAX_SOURCES) {
		m->metrics[m->n_metrics].fn = fn;
		m->metrics[m->n_metrics].data = data;
		m->n_metrics++;
		r = 0;
	}
	pthread_mutex_unlock(&m->metrics_lock);
	return r;
}

void dm_model_clear_metrics(struct dm_model *m)
{
	pthread_mutex_lock(&m->metrics_lock);
	m->n_metrics = 0;
	pthread_mutex_unlock(&m->metrics_lock);
}

static size_t count_live(struct dm_list *head, size_t node_offset)
{
	size_t n = 0;
	struct dm_list *p;
	dm_list_for_each(p, head) {
		const struct dm_device *dev = (const void *)((const char *)p - node_offset);
		n += atomic_load_explicit(&dev->state, memory_order_relaxed) == DM_DEV_ADDED;
	}
	return n;
}

/* The model's own families, under its read lock. */
static void model_metrics_locked(struct dm_model *m, struct dm_metrics *w)
{
	dm_model_assert_held(m);
	size_t devices = 0, suspended = 0, errors = 0;
	struct dm_list *p, *q;
	dm_list_for_each(p, &m->devices) {
		struct dm_device *dev = dm_list_entry(p, struct dm_device, global);
		if (dev == m->root || dm_device_is_dead(dev))
			continue;
		devices++;
		suspended += dm_device_get_power(dev) == DM_POWER_SUSPENDED;
		errors += atomic_load_explicit(&dev->has_power_error, memory_order_relaxed);
	}
	dm_metrics_family(w, "driverfsd_devices", "gauge", "Devices in the tree, root aside.");
	dm_metrics_sample(w, "driverfsd_devices", (double)devices, NULL);
	dm_metrics_family(w, "driverfsd_devices_suspended", "gauge",
			  "Devices whose power state is suspended.");
	dm_metrics_sample(w, "driverfsd_devices_suspended", (double)suspended, NULL);
	dm_metrics_family(w, "driverfsd_devices_power_errors", "gauge",
			  "Devices with a power_error (their last suspend or resume hook failed).");
	dm_metrics_sample(w, "driverfsd_devices_power_errors", (double)errors, NULL);
	dm_metrics_family(w, "driverfsd_device_links", "gauge",
			  "Device links (a consumer depending on a supplier beyond the tree).");
	dm_metrics_sample(w, "driverfsd_device_links", (double)m->n_links, NULL);

	dm_metrics_family(w, "driverfsd_bus_devices", "gauge", "Devices on each bus.");
	dm_list_for_each(p, &m->buses) {
		struct dm_bus *bus = dm_list_entry(p, struct dm_bus, node);
		size_t n = count_live(&bus->devices, offsetof(struct dm_device, bus_node));
		dm_metrics_sample(w, "driverfsd_bus_devices", (double)n, "bus", bus->name, NULL);
	}
	dm_metrics_family(w, "driverfsd_bus_devices_unbound", "gauge",
			  "Devices on each bus bound to no driver, the kernel's or driverfsd's.");
	dm_list_for_each(p, &m->buses) {
		struct dm_bus *bus = dm_list_entry(p, struct dm_bus, node);
		size_t n = 0;
		dm_list_for_each(q, &bus->devices) {
			struct dm_device *dev = dm_list_entry(q, struct dm_device, bus_node);
			n += !dm_device_is_dead(dev) && !dev->driver && !dev->kernel_driver;
		}
		dm_metrics_sample(w, "driverfsd_bus_devices_unbound", (double)n, "bus", bus->name,
				  NULL);
	}
	dm_metrics_family(w, "driverfsd_driver_devices", "gauge",
			  "Devices bound to each driver (kind: kernel, or user for driverfsd's).");
	dm_list_for_each(p, &m->buses) {
		struct dm_bus *bus = dm_list_entry(p, struct dm_bus, node);
		dm_list_for_each(q, &bus->drivers) {
			struct dm_driver *drv = dm_list_entry(q, struct dm_driver, node);
			size_t n = count_live(&drv->devices, offsetof(struct dm_device, driver_node));
			dm_metrics_sample(w, "driverfsd_driver_devices", (double)n, "bus", bus->name,
					  "driver", drv->name, "kind",
					  drv->kind == DM_DRIVER_KERNEL ? "kernel" : "user", NULL);
		}
	}
	dm_metrics_family(w, "driverfsd_class_devices", "gauge", "Devices in each class.");
	dm_list_for_each(p, &m->classes) {
		struct dm_class *c = dm_list_entry(p, struct dm_class, node);
		size_t n = count_live(&c->devices, offsetof(struct dm_device, class_node));
		dm_metrics_sample(w, "driverfsd_class_devices", (double)n, "class", c->name, NULL);
	}
	dm_metrics_family(w, "driverfsd_class_driver_devices", "gauge",
			  "Class devices bound to each class driver.");
	dm_list_for_each(p, &m->classes) {
		struct dm_class *c = dm_list_entry(p, struct dm_class, node);
		dm_list_for_each(q, &c->drivers) {
			struct dm_driver *drv = dm_list_entry(q, struct dm_driver, node);
			size_t n = count_live(&drv->devices, offsetof(struct dm_device, driver_node));
			dm_metrics_sample(w, "driverfsd_class_driver_devices", (double)n, "class",
					  c->name, "driver", drv->name, NULL);
		}
	}
}

int dm_model_show_metrics(struct dm_model *m, char **ret, size_t *ret_len)
{
	char *buf = NULL;
	size_t len = 0;
	struct dm_metrics w = { .f = open_memstream(&buf, &len) };
	if (!w.f)
		return -ENOMEM;
	dm_model_read_lock(m);
	model_metrics_locked(m, &w);
	dm_model_unlock(m);
	pthread_mutex_lock(&m->metrics_lock);
	for (size_t i = 0; i < m->n_metrics; i++)
		m->metrics[i].fn(&w, m->metrics[i].data);
	pthread_mutex_unlock(&m->metrics_lock);
	bool failed = ferror(w.f);
	if (fclose(w.f) != 0 || failed) {
		free(buf);
		return -ENOMEM;
	}
	atomic_store_explicit(&m->metrics_len, len, memory_order_relaxed);
	atomic_fetch_add_explicit(&m->metrics_builds, 1, memory_order_relaxed);
	*ret = buf;
	*ret_len = len;
	return 0;
}

int dm_model_metrics_size(struct dm_model *m, size_t *ret)
{
	*ret = atomic_load_explicit(&m->metrics_len, memory_order_relaxed);
	if (*ret)
		return 0;
	char *buf;
	int r = dm_model_show_metrics(m, &buf, ret);
	if (r == 0)
		free(buf);
	return r;
}

uint64_t dm_model_count_metrics_builds(struct dm_model *m)
{
	return atomic_load_explicit(&m->metrics_builds, memory_order_relaxed);
}
