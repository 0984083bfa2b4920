/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* pci-nfd.c - the NFD feature file of the model's PCI functions (pci-nfd.h). */
#include "pci-nfd.h"

#include "pcie-link.h"

#include "core/array.h"
#include "core/model.h"
#include "drivers/runner.h"
#include "fleet/nfd-format.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct listed {
	char *devpath;
	char driver[64];
};

struct list {
	struct listed *v;
	size_t n, cap;
};

static int collect(struct dm_device *dev, void *data)
{
	struct list *l = data;
	const char *devpath = dm_device_get_devpath(dev);
	if (dm_device_is_dead(dev) || !devpath)
		return 0;
	if (!dm_array_grow((void **)&l->v, &l->cap, l->n, sizeof(*l->v), 64))
		return -ENOMEM;
	struct listed *e = &l->v[l->n];
	*e = (struct listed){ .devpath = strdup(devpath) };
	if (!e->devpath)
		return -ENOMEM;
	l->n++;
	const char *drv = dm_device_get_kernel_driver(dev);
	snprintf(e->driver, sizeof(e->driver), "%s", drv ? drv : "");
	return 0;
}

static int find_pci(struct dm_bus *bus, void *data)
{
	if (strcmp(dm_bus_get_name(bus), "pci") != 0)
		return 0;
	*(struct dm_bus **)data = bus;
	return 1;
}

static bool read_file(const char *dir, const char *name, char *buf, size_t size)
{
	char path[PATH_MAX];
	int n = snprintf(path, sizeof(path), "%s/%s", dir, name);
	return n > 0 && (size_t)n < sizeof(path) && dm_run_read(path, buf, size) > 0;
}

static bool read_ulong(const char *dir, const char *name, unsigned long *ret)
{
	char buf[32], *end;
	if (!read_file(dir, name, buf, sizeof(buf)))
		return false;
	errno = 0;
	*ret = strtoul(buf, &end, 10);
	return end != buf && !*end && !errno;
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

int dm_pci_nfd_text(struct dm_model *m, char **ret, size_t *ret_len)
{
	struct list l = { 0 };
	struct dm_bus *bus = NULL;
	dm_model_read_lock(m);
	dm_model_for_each_bus_locked(m, find_pci, &bus);
	int r = bus ? dm_bus_for_each_device_locked(bus, collect, &l) : 0;
	dm_model_unlock(m);
	struct dm_nfd_fn *fns = r < 0 ? NULL : calloc(l.n ? l.n : 1, sizeof(*fns));
	size_t n = 0;
	if (r == 0 && !fns)
		r = -ENOMEM;
	for (size_t i = 0; r == 0 && i < l.n; i++) {
		char dir[PATH_MAX], class_id[32], vendor[32];
		struct dm_nfd_fn *f = &fns[n];
		*f = (struct dm_nfd_fn){ .group = -1 };
		if (snprintf(dir, sizeof(dir), "/sys%s", l.v[i].devpath) >= (int)sizeof(dir) ||
		    !read_file(dir, "class", class_id, sizeof(class_id)) ||
		    !read_file(dir, "vendor", vendor, sizeof(vendor)) ||
		    !dm_nfd_key(class_id, vendor, f))
			continue;
		memcpy(f->driver, l.v[i].driver, sizeof(f->driver));
		f->group = iommu_group(dir);
		struct dm_pcie_link link;
		f->degraded = dm_pcie_link_read(dir, &link) == 0 &&
			      link.state == DM_PCIE_LINK_DEGRADED;
		f->has_vfs = read_ulong(dir, "sriov_totalvfs", &f->totalvfs) &&
			     read_ulong(dir, "sriov_numvfs", &f->numvfs);
		n++;
	}
	if (r == 0)
		r = dm_nfd_text(fns, n, ret, ret_len);
	for (size_t i = 0; i < l.n; i++)
		free(l.v[i].devpath);
	free(l.v);
	free(fns);
	return r;
}
