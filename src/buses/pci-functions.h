/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pci-functions.h - the model's PCI functions and what their sysfs
 * directories say of them, collected one way for what fleets read: the
 * metrics file's per-device PCI families (pci-metrics.h) and the NFD
 * feature file (pci-nfd.h). The PCI bus's functions are listed under the
 * model's read lock (with their names and, when asked, the names below
 * each); their sysfs files are read after it is dropped, only those a
 * reader asks for, at each call: nothing is kept between calls.
 */
#ifndef DM_PCI_FUNCTIONS_H
#define DM_PCI_FUNCTIONS_H

#include "pcie-link.h"

#include <stdbool.h>
#include <stddef.h>

struct dm_model;

/* the severities of the kernel's AER counter files */
enum dm_pci_aer { DM_PCI_AER_CORRECTABLE, DM_PCI_AER_NONFATAL, DM_PCI_AER_FATAL, DM_PCI_AER_N };

/* What a reader asks for, beyond the devpath, name, parent and kernel
 * driver every function has. */
enum dm_pci_fn_want {
	DM_PCI_FN_JOINS = 1 << 0, /* netdev, nvme, block (from the model) */
	DM_PCI_FN_IDS = 1 << 1, /* vendor, device, subsystem_*, class, revision */
	DM_PCI_FN_CLASS = 1 << 2, /* vendor and class alone */
	DM_PCI_FN_NUMA = 1 << 3,
	DM_PCI_FN_LINK = 1 << 4, /* pcie-link.h's answer */
	DM_PCI_FN_AER = 1 << 5,
	DM_PCI_FN_SRIOV = 1 << 6,
	DM_PCI_FN_IOMMU = 1 << 7,
};

/* A PCI function, as the model and its sysfs directory say. A value not
 * asked for, or that sysfs does not give, is "" (strings), false (has_*)
 * or -1 (iommu_group). */
struct dm_pci_fn {
	char *devpath, *driver; /* driver NULL for none */
	char name[16], parent[16]; /* "dddd:bb:dd.f"; "" for a longer name; parent "" for none */
	char *netdev, *nvme, *block; /* the names below it, comma-separated, or NULL */
	char vendor[16], device[16], sub_vendor[16], sub_device[16], class_id[16], revision[16];
	char numa[16]; /* "" when the kernel does not say ("-1") */
	bool has_link;
	struct dm_pcie_link link; /* the function's own, and with both ends */
	bool has_aer[DM_PCI_AER_N];
	unsigned long long aer[DM_PCI_AER_N]; /* the TOTAL_ERR_* lines */
	bool has_vfs;
	unsigned long long numvfs, totalvfs;
	long iommu_group;
};

struct dm_pci_fns {
	struct dm_pci_fn *v;
	size_t n, cap;
};

/* The kernel's AER counter file of @k and its TOTAL_ERR_* key. */
const char *dm_pci_aer_file(enum dm_pci_aer k);
const char *dm_pci_aer_key(enum dm_pci_aer k);

/* Lists the model's live PCI functions into @ret (zeroed by the caller)
 * and reads what @want (enum dm_pci_fn_want) names of each: 0 or -ENOMEM
 * (@ret holds what was listed then; dm_pci_fns_free() it either way).
 * Takes the model's read lock to list them, reads sysfs without it. */
int dm_pci_fns_collect(struct dm_model *m, unsigned want, struct dm_pci_fns *ret);
/* Drops the functions @keep says false of, in order. */
void dm_pci_fns_keep(struct dm_pci_fns *fns, bool (*keep)(const struct dm_pci_fn *f));
void dm_pci_fns_free(struct dm_pci_fns *fns);

#endif
