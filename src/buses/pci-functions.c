/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* pci-functions.c - the model's PCI functions, read from sysfs (pci-functions.h). */
#include "pci-functions.h"

#include "core/array.h"
#include "core/model.h"
#include "drivers/runner.h"
#include "fleet/aer.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct {
	const char *file, *key;
} aer_files[DM_PCI_AER_N] = {
	[DM_PCI_AER_CORRECTABLE] = { "aer_dev_correctable", "TOTAL_ERR_COR" },
	[DM_PCI_AER_NONFATAL] = { "aer_dev_nonfatal", "TOTAL_ERR_NONFATAL" },
	[DM_PCI_AER_FATAL] = { "aer_dev_fatal", "TOTAL_ERR_FATAL" },
};

const char *dm_pci_aer_file(enum dm_pci_aer k)
{
	return aer_files[k].file;
}

const char *dm_pci_aer_key(enum dm_pci_aer k)
{
	return aer_files[k].key;
}

/* ---- under the model's lock: which functions, and their names ---- */

struct listing {
	struct dm_pci_fns *fns;
	unsigned want;
};

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
	struct dm_pci_fn *f = data;
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
	struct listing *l = data;
	struct dm_pci_fns *fs = l->fns;
	const char *devpath = dm_device_get_devpath(dev);
	if (dm_device_is_dead(dev) || !devpath)
		return 0;
	if (!dm_array_grow((void **)&fs->v, &fs->cap, fs->n, sizeof(*fs->v), 64))
		return -ENOMEM;
	struct dm_pci_fn *f = &fs->v[fs->n];
	*f = (struct dm_pci_fn){ .devpath = strdup(devpath), .iommu_group = -1 };
	if (!f->devpath)
		return -ENOMEM;
	fs->n++;
	if (strlen(kernel_name(dev)) < sizeof(f->name))
		snprintf(f->name, sizeof(f->name), "%s", kernel_name(dev));
	const char *drv = dm_device_get_kernel_driver(dev);
	if (drv && !(f->driver = strdup(drv)))
		return -ENOMEM;
	struct dm_device *parent = dm_device_get_parent_locked(dev);
	struct dm_bus *pbus = parent ? dm_device_get_bus_locked(parent) : NULL;
	if (pbus && strcmp(dm_bus_get_name(pbus), "pci") == 0 &&
	    strlen(kernel_name(parent)) < sizeof(f->parent))
		snprintf(f->parent, sizeof(f->parent), "%s", kernel_name(parent));
	return l->want & DM_PCI_FN_JOINS ? dm_device_for_each_child_locked(dev, joins_of, f) : 0;
}

static int find_pci(struct dm_bus *bus, void *data)
{
	if (strcmp(dm_bus_get_name(bus), "pci") != 0)
		return 0;
	*(struct dm_bus **)data = bus;
	return 1;
}

/* ---- without it: what sysfs says of each ---- */

static bool read_file(const char *dir, const char *name, char *buf, size_t size)
{
	char path[PATH_MAX];
	int n = snprintf(path, sizeof(path), "%s/%s", dir, name);
	return n > 0 && (size_t)n < sizeof(path) && dm_run_read(path, buf, size) > 0;
}

static void read_id(const char *dir, const char *name, char *buf, size_t size)
{
	if (!read_file(dir, name, buf, size))
		buf[0] = '\0';
}

static bool read_ull(const char *dir, const char *name, unsigned long long *ret)
{
	char buf[32], *end;
	if (!read_file(dir, name, buf, sizeof(buf)))
		return false;
	errno = 0;
	*ret = strtoull(buf, &end, 10);
	return end != buf && !*end && !errno;
}

/* "-1": no node */
static void read_numa(const char *dir, char numa[16])
{
	char buf[32], *end;
	if (read_file(dir, "numa_node", buf, sizeof(buf)) && buf[0] >= '0' && buf[0] <= '9') {
		errno = 0;
		unsigned long long n = strtoull(buf, &end, 10);
		if (!*end && !errno)
			snprintf(numa, 16, "%llu", n);
	}
}

/* sysfs's iommu_group: a link to .../iommu_groups/N */
static long iommu_group(const char *dir)
{
	char path[PATH_MAX], target[PATH_MAX];
	int n = snprintf(path, sizeof(path), "%s/iommu_group", dir);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -1;
	ssize_t len = readlink(path, target, sizeof(target) - 1);
	if (len <= 0)
		return -1;
	target[len] = '\0';
	const char *base = strrchr(target, '/');
	base = base ? base + 1 : target;
	char *end;
	errno = 0;
	long g = strtol(base, &end, 10);
	return end != base && !*end && !errno && g >= 0 && g < 1000000 ? g : -1;
}

static void read_sysfs(struct dm_pci_fn *f, unsigned want)
{
	char dir[PATH_MAX];
	if (snprintf(dir, sizeof(dir), "/sys%s", f->devpath) >= (int)sizeof(dir))
		return;
	if (want & (DM_PCI_FN_IDS | DM_PCI_FN_CLASS)) {
		read_id(dir, "vendor", f->vendor, sizeof(f->vendor));
		read_id(dir, "class", f->class_id, sizeof(f->class_id));
	}
	if (want & DM_PCI_FN_IDS) {
		read_id(dir, "device", f->device, sizeof(f->device));
		read_id(dir, "subsystem_vendor", f->sub_vendor, sizeof(f->sub_vendor));
		read_id(dir, "subsystem_device", f->sub_device, sizeof(f->sub_device));
		read_id(dir, "revision", f->revision, sizeof(f->revision));
	}
	if (want & DM_PCI_FN_NUMA)
		read_numa(dir, f->numa);
	if (want & DM_PCI_FN_IOMMU)
		f->iommu_group = iommu_group(dir);
	if (want & DM_PCI_FN_LINK)
		f->has_link = dm_pcie_link_read(dir, &f->link) == 0;
	for (int k = 0; (want & DM_PCI_FN_AER) && k < DM_PCI_AER_N; k++) {
		char buf[4096];
		f->has_aer[k] = read_file(dir, aer_files[k].file, buf, sizeof(buf)) &&
				dm_aer_count(buf, aer_files[k].key, &f->aer[k]);
	}
	if (want & DM_PCI_FN_SRIOV)
		f->has_vfs = read_ull(dir, "sriov_totalvfs", &f->totalvfs) &&
			     read_ull(dir, "sriov_numvfs", &f->numvfs);
}

int dm_pci_fns_collect(struct dm_model *m, unsigned want, struct dm_pci_fns *ret)
{
	struct listing l = { .fns = ret, .want = want };
	struct dm_bus *bus = NULL;
	dm_model_read_lock(m);
	dm_model_for_each_bus_locked(m, find_pci, &bus);
	int r = bus ? dm_bus_for_each_device_locked(bus, collect, &l) : 0;
	dm_model_unlock(m);
	/* what was listed, even when listing the rest failed */
	for (size_t i = 0; i < ret->n; i++)
		read_sysfs(&ret->v[i], want);
	return r < 0 ? r : 0;
}

static void fn_free(struct dm_pci_fn *f)
{
	free(f->devpath);
	free(f->driver);
	free(f->netdev);
	free(f->nvme);
	free(f->block);
}

void dm_pci_fns_keep(struct dm_pci_fns *fns, bool (*keep)(const struct dm_pci_fn *f))
{
	size_t k = 0;
	for (size_t i = 0; i < fns->n; i++) {
		if (keep(&fns->v[i]))
			fns->v[k++] = fns->v[i];
		else
			fn_free(&fns->v[i]);
	}
	fns->n = k;
}

void dm_pci_fns_free(struct dm_pci_fns *fns)
{
	for (size_t i = 0; i < fns->n; i++)
		fn_free(&fns->v[i]);
	free(fns->v);
	*fns = (struct dm_pci_fns){ 0 };
}
