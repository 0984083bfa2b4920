/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* pci-metrics.c - per-device PCI families of the metrics file (pci-metrics.h). */
#include "pci-metrics.h"

#include "pci-functions.h"

#include "core/metrics.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the AER families, by severity (pci-functions.h) */
static const struct {
	const char *family, *help;
} aer_families[DM_PCI_AER_N] = {
	[DM_PCI_AER_CORRECTABLE] = { "driverfsd_pcidevice_aer_correctable_errors_total",
				     "PCIe AER correctable errors the kernel counted for the "
				     "function (aer_dev_correctable)." },
	[DM_PCI_AER_NONFATAL] = { "driverfsd_pcidevice_aer_nonfatal_errors_total",
				  "PCIe AER non-fatal uncorrectable errors the kernel counted "
				  "(aer_dev_nonfatal)." },
	[DM_PCI_AER_FATAL] = { "driverfsd_pcidevice_aer_fatal_errors_total",
			       "PCIe AER fatal uncorrectable errors the kernel counted "
			       "(aer_dev_fatal)." },
};

/* what the families show of each function */
#define WANT                                                                              \
	(DM_PCI_FN_JOINS | DM_PCI_FN_IDS | DM_PCI_FN_NUMA | DM_PCI_FN_LINK | DM_PCI_FN_AER | \
	 DM_PCI_FN_SRIOV)

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

static void info_family(struct dm_metrics *w, const struct dm_pci_fns *fs)
{
	dm_metrics_family(w, "driverfsd_pcidevice_info", "gauge",
			  "A PCI function: its place, its parent's, its ids, and what joins it to "
			  "other data (kernel driver, NUMA node, network interfaces, NVMe "
			  "controllers, disks); always 1.");
	for (size_t i = 0; i < fs->n; i++) {
		const struct dm_pci_fn *f = &fs->v[i];
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

/* One gauge of each function with a link: @field of struct dm_pci_fn or its
 * link, by @which. */
enum link_value { CUR_TS, CUR_W, MAX_TS, MAX_W, CAP_TS, CAP_W, DEGRADED };

static double link_value(const struct dm_pci_fn *f, enum link_value which)
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

static void link_family(struct dm_metrics *w, const struct dm_pci_fns *fs, const char *name,
			const char *help, enum link_value which)
{
	dm_metrics_family(w, name, "gauge", help);
	for (size_t i = 0; i < fs->n; i++) {
		const struct dm_pci_fn *f = &fs->v[i];
		if (!f->has_link)
			continue;
		LOC(f);
		dm_metrics_sample(w, name, link_value(f, which), LOC_LABELS, NULL);
	}
}

static void aer_family(struct dm_metrics *w, const struct dm_pci_fns *fs, int k)
{
	dm_metrics_family(w, aer_families[k].family, "counter", aer_families[k].help);
	for (size_t i = 0; i < fs->n; i++) {
		const struct dm_pci_fn *f = &fs->v[i];
		if (!f->has_aer[k])
			continue;
		LOC(f);
		dm_metrics_sample(w, aer_families[k].family, (double)f->aer[k], LOC_LABELS, NULL);
	}
}

static void numa_family(struct dm_metrics *w, const struct dm_pci_fns *fs)
{
	dm_metrics_family(w, "driverfsd_pcidevice_numa_node", "gauge",
			  "The NUMA node of the function (numa_node), where the kernel says.");
	for (size_t i = 0; i < fs->n; i++) {
		const struct dm_pci_fn *f = &fs->v[i];
		if (!f->numa[0])
			continue;
		LOC(f);
		dm_metrics_sample(w, "driverfsd_pcidevice_numa_node", strtod(f->numa, NULL), LOC_LABELS,
				  NULL);
	}
}

static void vf_family(struct dm_metrics *w, const struct dm_pci_fns *fs, bool total)
{
	const char *name = total ? "driverfsd_pcidevice_sriov_totalvfs"
				 : "driverfsd_pcidevice_sriov_numvfs";
	dm_metrics_family(w, name, "gauge",
			  total ? "SR-IOV virtual functions the physical function can have."
				: "SR-IOV virtual functions the physical function has now.");
	for (size_t i = 0; i < fs->n; i++) {
		const struct dm_pci_fn *f = &fs->v[i];
		if (!f->has_vfs)
			continue;
		LOC(f);
		dm_metrics_sample(w, name, (double)(total ? f->totalvfs : f->numvfs), LOC_LABELS, NULL);
	}
}

/* a name the location labels can hold (dm_pci_fn.name) */
static bool named(const struct dm_pci_fn *f)
{
	return f->name[0] != '\0';
}

void dm_pci_metrics(struct dm_metrics *w, void *data)
{
	struct dm_model *m = data;
	struct dm_pci_fns fs = { 0 };
	/* out of memory: the families of the functions listed */
	dm_pci_fns_collect(m, WANT, &fs);
	dm_pci_fns_keep(&fs, named);

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
	for (int k = 0; k < DM_PCI_AER_N; k++)
		aer_family(w, &fs, k);
	numa_family(w, &fs);
	vf_family(w, &fs, false);
	vf_family(w, &fs, true);

	dm_pci_fns_free(&fs);
}
