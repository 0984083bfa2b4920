/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the metrics file (src/core/metrics.c): the model's gauges on a
 * small model (devices per bus, class and driver, unbound, suspended, with
 * power errors); names from devices escaped so that none ends a sample or
 * adds one; a histogram's buckets cumulative, its count its +Inf bucket's;
 * sources run in their order and cleared.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/metrics.h"
#include "core/model.h"

static char *show(struct dm_model *m)
{
	char *text;
	size_t len;
	assert_int_equal(dm_model_show_metrics(m, &text, &len), 0);
	assert_int_equal(strlen(text), len);
	return text;
}

/* Whether @text has the line @line, whole. */
static int has_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	for (const char *p = text; (p = strstr(p, line)); p++)
		if ((p == text || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0'))
			return 1;
	return 0;
}

static struct dm_device *add(struct dm_model *m, struct dm_device *parent, const char *name,
			     struct dm_bus *bus, const char *kdrv)
{
	struct dm_device *dev;
	assert_int_equal(dm_device_new(m, name, &dev), 0);
	if (bus)
		dm_device_set_bus(dev, bus);
	if (kdrv)
		assert_int_equal(dm_device_set_kernel_driver(dev, kdrv), 0);
	assert_int_equal(dm_device_add(dev, parent), 0);
	return dev;
}

static void test_model_gauges(void **state)
{
	(void)state;
	struct dm_model *m;
	assert_int_equal(dm_model_new(&m), 0);
	struct dm_bus *pci;
	assert_int_equal(dm_bus_get(m, "pci", NULL, &pci), 0);
	struct dm_driver *e1000e;
	assert_int_equal(dm_model_add_driver(m, "pci", "e1000e", DM_DRIVER_KERNEL, 0, NULL, NULL,
					     NULL, &e1000e),
			 0);
	struct dm_device *root = dm_model_get_root(m);
	struct dm_device *host = add(m, root, "pci0000:00", NULL, NULL);
	struct dm_device *nic = add(m, host, "0000:00:19.0", pci, "e1000e");
	struct dm_device *gpu = add(m, host, "0000:00:02.0", pci, NULL);
	struct dm_device *other = add(m, host, "0000:00:1f.0", pci, "lpc_ich");
	struct dm_class *net;
	assert_int_equal(dm_class_get(m, "net", &net), 0);
	struct dm_device *eth;
	assert_int_equal(dm_device_new(m, "eth0", &eth), 0);
	dm_device_set_class(eth, net, NULL);
	assert_int_equal(dm_device_add(eth, nic), 0);
	dm_device_set_power(gpu, DM_POWER_SUSPENDED);
	assert_int_equal(dm_device_set_power_error(gpu, "resume: EIO"), 0);

	char *text = show(m);
	assert_true(has_line(text, "# TYPE driverfsd_devices gauge"));
	assert_true(has_line(text, "driverfsd_devices 5"));
	assert_true(has_line(text, "driverfsd_devices_suspended 1"));
	assert_true(has_line(text, "driverfsd_devices_power_errors 1"));
	assert_true(has_line(text, "driverfsd_bus_devices{bus=\"pci\"} 3"));
	/* the GPU: neither the kernel's driver nor driverfsd's */
	assert_true(has_line(text, "driverfsd_bus_devices_unbound{bus=\"pci\"} 1"));
	assert_true(has_line(text,
			     "driverfsd_driver_devices{bus=\"pci\",driver=\"e1000e\",kind=\"kernel\"} 1"));
	assert_true(has_line(text, "driverfsd_class_devices{class=\"net\"} 1"));
	free(text);

	/* a removed device is no longer counted */
	dm_device_del(other);
	text = show(m);
	assert_true(has_line(text, "driverfsd_bus_devices{bus=\"pci\"} 2"));
	assert_true(has_line(text, "driverfsd_devices 4"));
	free(text);
	struct dm_device *refs[] = { other, host, nic, gpu, eth };
	for (size_t i = 0; i < sizeof(refs) / sizeof(refs[0]); i++)
		dm_device_unref(refs[i]);
	dm_driver_unref(e1000e);
	dm_model_free(m);
}

static void hostile_source(struct dm_metrics *w, void *data)
{
	(void)data;
	dm_metrics_family(w, "t_names", "gauge", "a help with \\ and\na newline");
	dm_metrics_sample(w, "t_names", 1, "name", "a\"b\\c\nd", NULL);
	dm_metrics_sample(w, "t_names", 2, "name", "bad\xff\xc0\x80utf8\x01\x7f", NULL);
	dm_metrics_sample(w, "t_names", 3, "name", "caf\xc3\xa9 \xe2\x82\xac", NULL);
	dm_metrics_sample(w, "t_names", 0.25, NULL);
}

static void test_escaping(void **state)
{
	(void)state;
	struct dm_model *m;
	assert_int_equal(dm_model_new(&m), 0);
	assert_int_equal(dm_model_add_metrics(m, hostile_source, NULL), 0);
	char *text = show(m);
	assert_true(has_line(text, "# HELP t_names a help with \\\\ and\\na newline"));
	assert_true(has_line(text, "t_names{name=\"a\\\"b\\\\c\\nd\"} 1"));
	assert_true(has_line(text, "t_names{name=\"bad???utf8??\"} 2"));
	assert_true(has_line(text, "t_names{name=\"caf\xc3\xa9 \xe2\x82\xac\"} 3"));
	assert_true(has_line(text, "t_names 0.25"));
	free(text);
	/* cleared: the source no longer runs */
	dm_model_clear_metrics(m);
	text = show(m);
	assert_null(strstr(text, "t_names"));
	free(text);
	dm_model_free(m);
}

static struct dm_histogram hist;

static void histogram_source(struct dm_metrics *w, void *data)
{
	dm_metrics_family(w, "t_seconds", "histogram", "durations");
	dm_metrics_histogram(w, "t_seconds", data, "request", "suspend", NULL);
}

static void test_histogram(void **state)
{
	(void)state;
	struct dm_model *m;
	assert_int_equal(dm_model_new(&m), 0);
	dm_histogram_observe(&hist, 500);	  /* 0.0005 s: le 0.001 */
	dm_histogram_observe(&hist, 1000);	  /* on the bound: le 0.001 */
	dm_histogram_observe(&hist, 2000000);	  /* 2 s: le 5 */
	dm_histogram_observe(&hist, 1000000000); /* past the last bound */
	for (int i = 0; i < DM_METRICS_MAX_SOURCES; i++)
		assert_int_equal(dm_model_add_metrics(m, histogram_source, &hist), 0);
	assert_int_equal(dm_model_add_metrics(m, histogram_source, &hist), -ENOSPC);
	char *text = show(m);
	assert_true(has_line(text, "t_seconds_bucket{request=\"suspend\",le=\"0.001\"} 2"));
	assert_true(has_line(text, "t_seconds_bucket{request=\"suspend\",le=\"1\"} 2"));
	assert_true(has_line(text, "t_seconds_bucket{request=\"suspend\",le=\"5\"} 3"));
	assert_true(has_line(text, "t_seconds_bucket{request=\"suspend\",le=\"120\"} 3"));
	assert_true(has_line(text, "t_seconds_bucket{request=\"suspend\",le=\"+Inf\"} 4"));
	assert_true(has_line(text, "t_seconds_sum{request=\"suspend\"} 1002.0015"));
	assert_true(has_line(text, "t_seconds_count{request=\"suspend\"} 4"));
	free(text);
	dm_model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_model_gauges),
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_histogram),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
