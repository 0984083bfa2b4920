/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pci.c - the PCI source: libpci (sysfs access method) completes the records
 * of PCI functions with ids, class, revision, irq, resources, NUMA node,
 * IOMMU group and the pci.ids name. Each value sysfs has too is the
 * function's sysfs file, byte for byte (sysfs-value.h); libpci's data makes
 * it only where sysfs has no such file. libpci goes through pci-access.h,
 * whose error hook never exits the daemon.
 */
#include "scan/scan.h"
#include "sysfs-value.h"

#include "util/log.h"

#include "drivers/pci-access.h"

#include <errno.h>
#include <stdbool.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The sysfs `resource` format: "start end flags" per region, zeros when
 * unused; here the six BARs and the expansion ROM that libpci reports.
 * Only where sysfs has no `resource` of its own: the kernel's has a line
 * per resource it has (13 for a function with SR-IOV BARs, 17 for a bridge
 * with its windows) and keeps regions libpci loses (a legacy IDE
 * controller's one-byte control ports at 0x3f6 and 0x376). */
static void format_resource(struct pci_dev *d, char *buf, size_t size)
{
	size_t len = 0;
	for (int i = 0; i < 7; i++) {
		pciaddr_t base = i < 6 ? d->base_addr[i] : d->rom_base_addr;
		pciaddr_t sz = i < 6 ? d->size[i] : d->rom_size;
		unsigned long flags = i < 6 ? d->flags[i] : d->rom_flags;
		pciaddr_t start = 0, end = 0;
		if (sz) {
			start = (flags & 0x100) /* IORESOURCE_IO */ ? base & PCI_ADDR_IO_MASK
								     : base & PCI_ADDR_MEM_MASK;
			end = start + sz - 1;
		} else {
			flags = 0;
		}
		int n = snprintf(buf + len, size - len, "0x%016llx 0x%016llx 0x%016llx\n",
				 (unsigned long long)start, (unsigned long long)end,
				 (unsigned long long)flags);
		if (n < 0 || (size_t)n >= size - len)
			break;
		len += (size_t)n;
	}
	if (len && buf[len - 1] == '\n')
		buf[len - 1] = '\0';
}

/*
 * The function's sysfs directory as libpci's sysfs access method names it
 * (<sysfs.path>/devices/<slot>), into @buf; NULL with another method (a
 * dump, /proc/bus/pci), where there is no sysfs file to take a value from.
 */
static const char *sysfs_dir(struct pci_access *pa, const char *slot, char *buf, size_t size)
{
	/* libpci's parameter names are not const-qualified */
	const char *path = pa->method == PCI_ACCESS_SYS_BUS_PCI
				   ? pci_get_param(pa, (char *)"sysfs.path") : NULL;
	if (!path || snprintf(buf, size, "%s/devices/%s", path, slot) >= (int)size)
		return NULL;
	return buf;
}

/* @dir: the function's sysfs directory, NULL when it has none. */
static int pci_fill_record(struct pci_access *pa, struct pci_dev *d, const char *dir,
			   struct dm_record *rec)
{
	char buf[DM_ATTR_MAX];
	int r = 0;

	r |= dm_sysfs_value_setf(rec, dir, "vendor", "0x%04x", d->vendor_id);
	r |= dm_sysfs_value_setf(rec, dir, "device", "0x%04x", d->device_id);
	r |= dm_sysfs_value_setf(rec, dir, "class", "0x%04x%02x", d->device_class, d->prog_if);
	r |= dm_sysfs_value_setf(rec, dir, "revision", "0x%02x", d->rev_id);
	r |= dm_sysfs_value_setf(rec, dir, "subsystem_vendor", "0x%04x", d->subsys_vendor_id);
	r |= dm_sysfs_value_setf(rec, dir, "subsystem_device", "0x%04x", d->subsys_id);
	r |= dm_sysfs_value_setf(rec, dir, "irq", "%d", d->irq);
	r |= dm_sysfs_value_setf(rec, dir, "numa_node", "%d", d->numa_node);
	int has = dm_sysfs_value_set(rec, dir, "resource", DM_SYSFS_VALUE_LINES);
	if (has == 0) {
		format_resource(d, buf, sizeof(buf));
		r |= dm_record_set(rec, "resource", buf);
	}
	r |= has < 0;

	char *name = pci_lookup_name(pa, buf, sizeof(buf), PCI_LOOKUP_VENDOR | PCI_LOOKUP_DEVICE,
				     d->vendor_id, d->device_id);
	if (name)
		r |= dm_record_set(rec, "name", name);

	const char *drv = pci_get_string_property(d, PCI_FILL_DRIVER);
	if (drv && !rec->driver)
		r |= dm_record_set_string(&rec->driver, drv);
	/* sysfs's iommu_group is a link out of the device tree: its group's
	 * number is a value of the tree's (docs/design.md §6.7, Links) */
	const char *group = pci_get_string_property(d, PCI_FILL_IOMMU_GROUP);
	if (group)
		r |= dm_record_set(rec, "iommu_group", group);
	if (!rec->bus)
		r |= dm_record_set_string(&rec->bus, "pci");
	return r ? -ENOMEM : 0;
}

static int scan_fn(struct pci_access *pa, void *data)
{
	struct dm_scan *s = data;
	int seen = 0, missing = 0;

	pci_scan_bus(pa);
	for (struct pci_dev *d = pa->devices; d; d = d->next) {
		pci_fill_info(d, PCI_FILL_IDENT | PCI_FILL_CLASS | PCI_FILL_CLASS_EXT |
					 PCI_FILL_SUBSYS | PCI_FILL_IRQ | PCI_FILL_BASES |
					 PCI_FILL_ROM_BASE | PCI_FILL_SIZES | PCI_FILL_IO_FLAGS |
					 PCI_FILL_NUMA_NODE | PCI_FILL_DRIVER | PCI_FILL_IOMMU_GROUP);
		char slot[32];
		snprintf(slot, sizeof(slot), "%04x:%02x:%02x.%d", d->domain, d->bus, d->dev,
			 d->func);
		/* merged by sysfs path: the udev source found the function's place */
		struct dm_record *rec = dm_scan_find_by_name(s, "pci", slot);
		if (!rec) {
			if (!s->partial)
				log_warn("pci %s: no sysfs record for it; skipped", slot);
			missing++;
			continue;
		}
		seen++;
		char dir[PATH_MAX];
		int r = pci_fill_record(pa, d, sysfs_dir(pa, slot, dir, sizeof(dir)), rec);
		if (r < 0)
			return r;
	}
	log_debug("pci: %d functions, %d without a sysfs record", seen, missing);
	return 0;
}

/* Whether libpci's error @err names a file of a function whose sysfs
 * directory is gone now. */
static bool function_gone(const char *err)
{
	static const char devices[] = "/sys/bus/pci/devices/";
	const char *p = strstr(err, devices);
	if (!p)
		return false;
	p += sizeof(devices) - 1;
	size_t len = strcspn(p, "/: ");
	char dir[PATH_MAX];
	if (len == 0 || len > 64)
		return false;
	snprintf(dir, sizeof(dir), "%s%.*s", devices, (int)len, p);
	return access(dir, F_OK) < 0 && errno == ENOENT;
}

static int pci_scan(struct dm_scan *s)
{
	/* a machine without PCI (an ARM board): nothing for libpci, and no
	 * error (it would log one) */
	if (access("/sys/bus/pci", F_OK) < 0 && errno == ENOENT) {
		log_debug("pci: no /sys/bus/pci: a machine without PCI");
		return 0;
	}
	/* A function can go between libpci's listing of the bus and its
	 * reads of the function's files (a VF being disabled, a hot-unplug):
	 * libpci then fails on a file of a directory that is gone. That is
	 * no error: the bus is scanned again without it (its remove comes as
	 * an event); any other failure is logged as libpci said it. */
	char err[512];
	int r = -EIO;
	for (int tries = 0; tries < 3; tries++) {
		struct pci_access *pa = dm_pci_access_new();
		if (!pa)
			return -EIO;
		r = dm_pci_guarded_quiet(pa, scan_fn, s, err, sizeof(err));
		pci_cleanup(pa);
		if (r != -EIO || !function_gone(err))
			break;
		log_debug("pci: a function went while it was read (%s): the bus scanned again", err);
	}
	if (r == -EIO && err[0])
		log_err("libpci: %s", err);
	return r;
}

const struct dm_source_ops dm_source_pci = {
	.name = "pci",
	.fills = "pci",
	.scan = pci_scan,
};
