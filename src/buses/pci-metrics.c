/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* pci-metrics.c - per-device PCI families of the metrics file (pci-metrics.h). */
#include "pci-metrics.h"

#include "pcie-link.h"

#include "core/array.h"
#include "core/metrics.h"
#include "core/model.h"
#include "drivers/runner.h"
#include "fleet/aer.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the severities of the kernel's AER counter files, by family */
enum { AER_CORRECTABLE, AER_NONFATAL, AER_FATAL, AER_N };
static const struct {
	const char *file, *total, *family, *help;
} aer_files[AER_N] = {
	{ "aer_dev_correctable", "TOTAL_ERR_COR", "driverfsd_pcidevice_aer_correctable_errors_total",
	  "PCIe AER correctable errors the kernel counted for the function (aer_dev_correctable)." },
	{ "aer_dev_nonfatal", "TOTAL_ERR_NONFATAL", "driverfsd_pcidevice_aer_nonfatal_errors_total",
	  "PCIe AER non-fatal uncorrectable errors the kernel counted (aer_dev_nonfatal)." },
	{ "aer_dev_fatal", "TOTAL_ERR_FATAL", "driverfsd_pcidevice_aer_fatal_errors_total",
	  "PCIe AER fatal uncorrectable errors the kernel counted (aer_dev_fatal)." },
};

/* A PCI function, as the model and its sysfs directory say. */
struct fn {
	char *devpath, *driver;
	char name[16], parent[16]; /* "dddd:bb:dd.f"; parent "" for none */
	char *netdev, *nvme, *block; /* the names below it, comma-separated */
	char vendor[16], device[16], sub_vendor[16], sub_device[16], class_id[16], revision[16];
	char numa[16]; /* "" when the kernel does not say */
	bool has_link;
	struct dm_pcie_link link; /* the function's own, and with both ends */
	bool has_aer[AER_N];
	unsigned long long aer[AER_N];
	bool has_vfs;
	unsigned long long numvfs, totalvfs;
};

struct fns {
	struct fn *v;
	size_t n, cap;
};

/* ---- under the model's lock: which functions, and their names ---- */

/* Appends @name to the comma-separated list *@list. */
static void list_add(char **list, const char *name)
{
	size_t old = *list ? strlen(*list) : 0, len = strlen(name);
	char *p = realloc(*list, old + len + 2);
	if (!p)
		return;
	if (old)
		p[old++] = ',';
	memcpy(p + old, name, len + 1);
	*list = p;
}

static const char *class_of(struct dm_device *dev)
{
	struct dm_class *c = dm_device_get_class_locked(dev);
	return c ? dm_class_get_name(c) : "";
}

static const char *kernel_name(const struct dm_device *dev)
{
	const char *s = dm_device_get_sysname(dev);
	return s ? s : dm_device_get_name(dev);
}

/* The network interfaces, NVMe controllers and disks below a function
 * (a partition is its disk's, not listed). */
static int joins_of(struct dm_device *dev, void *data)
{
	struct fn *f = data;
	if (dm_device_is_dead(dev))
		return 0;
	const char *cls = class_of(dev);
	struct dm_device *parent = dm_device_get_parent_locked(dev);
	if (strcmp(cls, "net") == 0)
		list_add(&f->netdev, kernel_name(dev));
	else if (strcmp(cls, "nvme") == 0)
		list_add(&f->nvme, kernel_name(dev));
	else if (strcmp(cls, "block") == 0 && !(parent && strcmp(class_of(parent), "block") == 0))
		list_add(&f->block, kernel_name(dev));
	return dm_device_for_each_child_locked(dev, joins_of, f);
}

static int collect(struct dm_device *dev, void *data)
{
	struct fns *fs = data;
	const char *devpath = dm_device_get_devpath(dev);
	if (dm_device_is_dead(dev) || !devpath || strlen(kernel_name(dev)) >= sizeof(fs->v->name))
		return 0;
	if (!dm_array_grow((void **)&fs->v, &fs->cap, fs->n, sizeof(*fs->v), 64))
		return -ENOMEM;
	struct fn *f = &fs->v[fs->n];
	*f = (struct fn){ .devpath = strdup(devpath) };
	if (!f->devpath)
		return -ENOMEM;
	fs->n++;
	snprintf(f->name, sizeof(f->name), "%s", kernel_name(dev));
	const char *drv = dm_device_get_kernel_driver(dev);
	f->driver = drv ? strdup(drv) : NULL;
	struct dm_device *parent = dm_device_get_parent_locked(dev);
	struct dm_bus *pbus = parent ? dm_device_get_bus_locked(parent) : NULL;
	if (pbus && strcmp(dm_bus_get_name(pbus), "pci") == 0 &&
	    strlen(kernel_name(parent)) < sizeof(f->parent))
		snprintf(f->parent, sizeof(f->parent), "%s", kernel_name(parent));
	return dm_device_for_each_child_locked(dev, joins_of, f);
}

static int find_pci(struct dm_bus *bus, void *data)
{
	if (strcmp(dm_bus_get_name(bus), "pci") != 0)
		return 0;
	*(struct dm_bus **)data = bus;
	return 1;
}

/* ---- without it: what sysfs says of each ---- */

static bool read_file(const struct fn *f, const char *name, char *buf, size_t size)
{
	char path[PATH_MAX];
	int n = snprintf(path, sizeof(path), "/sys%s/%s", f->devpath, name);
	return n > 0 && (size_t)n < sizeof(path) && dm_run_read(path, buf, size) > 0;
}

static void read_id(const struct fn *f, const char *name, char *buf, size_t size)
{
	if (!read_file(f, name, buf, size))
		buf[0] = '\0';
}

static bool read_ull(const struct fn *f, const char *name, unsigned long long *ret)
{
	char buf[32], *end;
	if (!read_file(f, name, buf, sizeof(buf)))
		return false;
	errno = 0;
	*ret = strtoull(buf, &end, 10);
	return end != buf && !*end && !errno;
}

/* The count on @key's line of the AER counter file @file. */
static bool read_aer(const struct fn *f, const char *file, const char *key,
		     unsigned long long *ret)
{
	char buf[4096];
	return read_file(f, file, buf, sizeof(buf)) && dm_aer_count(buf, key, ret);
}

static void read_sysfs(struct fn *f)
{
	read_id(f, "vendor", f->vendor, sizeof(f->vendor));
	read_id(f, "device", f->device, sizeof(f->device));
	read_id(f, "subsystem_vendor", f->sub_vendor, sizeof(f->sub_vendor));
	read_id(f, "subsystem_device", f->sub_device, sizeof(f->sub_device));
	read_id(f, "class", f->class_id, sizeof(f->class_id));
	read_id(f, "revision", f->revision, sizeof(f->revision));
	char buf[32], *end;
	/* "-1": no node */
	if (read_file(f, "numa_node", buf, sizeof(buf)) && buf[0] >= '0' && buf[0] <= '9') {
		errno = 0;
		unsigned long long numa = strtoull(buf, &end, 10);
		if (!*end && !errno)
			snprintf(f->numa, sizeof(f->numa), "%llu", numa);
	}
	char dir[PATH_MAX];
	f->has_link = snprintf(dir, sizeof(dir), "/sys%s", f->devpath) < (int)sizeof(dir) &&
		      dm_pcie_link_read(dir, &f->link) == 0;
	for (int k = 0; k < AER_N; k++)
		f->has_aer[k] = read_aer(f, aer_files[k].file, aer_files[k].total, &f->aer[k]);
	f->has_vfs = read_ull(f, "sriov_totalvfs", &f->totalvfs) &&
		     read_ull(f, "sriov_numvfs", &f->numvfs);
}

/* ---- the families ---- */

/* "dddd:bb:dd.f" into its four labels' values; "*" each for none, as
 * node_exporter says of a function with no parent. */
static void location(const char *name, char seg[8], char bus[4], char dev[4], char fn[4])
{
	unsigned d, b, s, f;
	char tail;
	if (sscanf(name, "%4x:%2x:%2x.%1x%c", &d, &b, &s, &f, &tail) == 4) {
		snprintf(seg, 8, "%04x", d);
		snprintf(bus, 4, "%02x", b);
		snprintf(dev, 4, "%02x", s);
		snprintf(fn, 4, "%x", f);
	} else {
		strcpy(seg, "*");
		strcpy(bus, "*");
		strcpy(dev, "*");
		strcpy(fn, "*");
	}
}

#define LOC(f)                                                              \
	char seg[8], bus[4], dev[4], fnn[4];                                \
	location((f)->name, seg, bus, dev, fnn)
#define LOC_LABELS "segment", seg, "bus", bus, "device", dev, "function", fnn

static void info_family(struct dm_metrics *w, const struct fns *fs)
{
	dm_metrics_family(w, "driverfsd_pcidevice_info", "gauge",
			  "A PCI function: its place, its parent's, its ids, and what joins it to "
			  "other data (kernel driver, NUMA node, network interfaces, NVMe "
			  "controllers, disks); always 1.");
	for (size_t i = 0; i < fs->n; i++) {
		const struct fn *f = &fs->v[i];
		LOC(f);
		char pseg[8], pbus[4], pdev[4], pfn[4];
		location(f->parent, pseg, pbus, pdev, pfn);
		dm_metrics_sample(w, "driverfsd_pcidevice_info", 1, LOC_LABELS, "parent_segment", pseg,
				  "parent_bus", pbus, "parent_device", pdev, "parent_function", pfn,
				  "class_id", f->class_id, "vendor_id", f->vendor, "device_id", f->device,
				  "subsystem_vendor_id", f->sub_vendor, "subsystem_device_id",
				  f->sub_device, "revision", f->revision, "driver",
				  f->driver ? f->driver : "", "numa_node", f->numa, "netdev",
				  f->netdev ? f->netdev : "", "nvme", f->nvme ? f->nvme : "", "block",
				  f->block ? f->block : "", NULL);
	}
}

/* One gauge of each function with a link: @field of struct fn or its
 * link, by @which. */
enum link_value { CUR_TS, CUR_W, MAX_TS, MAX_W, CAP_TS, CAP_W, DEGRADED };

static double link_value(const struct fn *f, enum link_value which)
{
	switch (which) {
	case CUR_TS:
		return f->link.speed ? f->link.speed * 1e8 : -1;
	case CUR_W:
		return f->link.width;
	case MAX_TS:
		return f->link.dev_max_speed ? f->link.dev_max_speed * 1e8 : -1;
	case MAX_W:
		return f->link.dev_max_width;
	case CAP_TS:
		return f->link.max_speed ? f->link.max_speed * 1e8 : -1;
	case CAP_W:
		return f->link.max_width;
	case DEGRADED:
		return f->link.state == DM_PCIE_LINK_DEGRADED;
	}
	return 0;
}

static void link_family(struct dm_metrics *w, const struct fns *fs, const char *name,
			const char *help, enum link_value which)
{
	dm_metrics_family(w, name, "gauge", help);
	for (size_t i = 0; i < fs->n; i++) {
		const struct fn *f = &fs->v[i];
		if (!f->has_link)
			continue;
		LOC(f);
		dm_metrics_sample(w, name, link_value(f, which), LOC_LABELS, NULL);
	}
}

static void aer_family(struct dm_metrics *w, const struct fns *fs, int k)
{
	dm_metrics_family(w, aer_files[k].family, "counter", aer_files[k].help);
	for (size_t i = 0; i < fs->n; i++) {
		const struct fn *f = &fs->v[i];
		if (!f->has_aer[k])
			continue;
		LOC(f);
		dm_metrics_sample(w, aer_files[k].family, (double)f->aer[k], LOC_LABELS, NULL);
	}
}

static void numa_family(struct dm_metrics *w, const struct fns *fs)
{
	dm_metrics_family(w, "driverfsd_pcidevice_numa_node", "gauge",
			  "The NUMA node of the function (numa_node), where the kernel says.");
	for (size_t i = 0; i < fs->n; i++) {
		const struct fn *f = &fs->v[i];
		if (!f->numa[0])
			continue;
		LOC(f);
		dm_metrics_sample(w, "driverfsd_pcidevice_numa_node", strtod(f->numa, NULL), LOC_LABELS,
				  NULL);
	}
}

static void vf_family(struct dm_metrics *w, const struct fns *fs, bool total)
{
	const char *name = total ? "driverfsd_pcidevice_sriov_totalvfs"
				 : "driverfsd_pcidevice_sriov_numvfs";
	dm_metrics_family(w, name, "gauge",
			  total ? "SR-IOV virtual functions the physical function can have."
				: "SR-IOV virtual functions the physical function has now.");
	for (size_t i = 0; i < fs->n; i++) {
		const struct fn *f = &fs->v[i];
		if (!f->has_vfs)
			continue;
		LOC(f);
		dm_metrics_sample(w, name, (double)(total ? f->totalvfs : f->numvfs), LOC_LABELS, NULL);
	}
}

void dm_pci_metrics(struct dm_metrics *w, void *data)
{
	struct dm_model *m = data;
	struct fns fs = { 0 };
	struct dm_bus *bus = NULL;
	dm_model_read_lock(m);
	dm_model_for_each_bus_locked(m, find_pci, &bus);
	if (bus)
		dm_bus_for_each_device_locked(bus, collect, &fs);
	dm_model_unlock(m);
	for (size_t i = 0; i < fs.n; i++)
		read_sysfs(&fs.v[i]);

	info_family(w, &fs);
	link_family(w, &fs, "driverfsd_pcidevice_current_link_transfers_per_second",
		    "The function's link speed now, in transfers per second (current_link_speed).",
		    CUR_TS);
	link_family(w, &fs, "driverfsd_pcidevice_current_link_width",
		    "The function's link width now, in lanes (current_link_width).", CUR_W);
	link_family(w, &fs, "driverfsd_pcidevice_max_link_transfers_per_second",
		    "The most the function itself can do, in transfers per second (max_link_speed).",
		    MAX_TS);
	link_family(w, &fs, "driverfsd_pcidevice_max_link_width",
		    "The most lanes the function itself can use (max_link_width).", MAX_W);
	link_family(w, &fs, "driverfsd_pcidevice_link_capable_transfers_per_second",
		    "The most both ends of the function's link can do, in transfers per second "
		    "(pcie_link/max_speed).",
		    CAP_TS);
	link_family(w, &fs, "driverfsd_pcidevice_link_capable_width",
		    "The most lanes both ends of the function's link can use (pcie_link/max_width).",
		    CAP_W);
	link_family(w, &fs, "driverfsd_pcidevice_link_degraded",
		    "1 when the function's link trained below what both its ends can do while it "
		    "is awake (pcie_link/state degraded), else 0.",
		    DEGRADED);
	for (int k = 0; k < AER_N; k++)
		aer_family(w, &fs, k);
	numa_family(w, &fs);
	vf_family(w, &fs, false);
	vf_family(w, &fs, true);

	for (size_t i = 0; i < fs.n; i++) {
		free(fs.v[i].devpath);
		free(fs.v[i].driver);
		free(fs.v[i].netdev);
		free(fs.v[i].nvme);
		free(fs.v[i].block);
	}
	free(fs.v);
}
