/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * sources.c - the registry of sources: one line per bus enumerator. Adding
 * one is its file (src/buses/<bus>.c, defining its dm_source_ops) and its
 * line here; docs/design.md, "Adding a bus enumerator".
 */
#include "sources.h"

#include "buses/pcie-link.h"
#include "buses/sysfs-attrs.h"
#include "buses/sysfs-pm.h"
#include "drivers/binding.h"
#include "drivers/sriov.h"

#include <string.h>

extern const struct dm_source_ops dm_source_udev, dm_source_pci, dm_source_usb;

const struct dm_source dm_sources[] = {
	/* first: it places every device, the others complete its records */
	{ &dm_source_udev, "Udev", true, DM_SOURCE_PLACES },
	{ &dm_source_pci, "PCI", true, DM_SOURCE_FILLS },
	{ &dm_source_usb, "USB", true, DM_SOURCE_FILLS },
};

#define N_SOURCES (sizeof(dm_sources) / sizeof(dm_sources[0]))
_Static_assert(N_SOURCES <= DM_SCAN_SOURCES_MAX,
	       "more sources than a scan runs: raise DM_SCAN_SOURCES_MAX (scan/scan.h)");
const size_t dm_n_sources = N_SOURCES;

/* Every device added from sysfs, in this order: the kernel's runtime-PM
 * controls where sysfs has them (pm/), a PCIe function's link told with
 * both its ends, the device's own sysfs attributes, bind and binding
 * (moving it between kernel drivers), and a PF's sriov (its VFs). */
static const struct dm_attribute_group *const device_groups[] = {
	&dm_sysfs_pm_group,
	&dm_pcie_link_group,
	&dm_sysfs_attrs_group,
	&dm_binding_group,
	&dm_sriov_group,
	NULL,
};

int dm_source_find_key(const char *key)
{
	for (size_t i = 0; i < N_SOURCES; i++)
		if (strcmp(dm_sources[i].key, key) == 0)
			return (int)i;
	return -1;
}

void dm_sources_pick(const bool *on, struct dm_scan_sources *ret)
{
	size_t n = 0, f = 0;
	for (size_t i = 0; i < N_SOURCES; i++) {
		const struct dm_source *src = &dm_sources[i];
		if (src->role != DM_SOURCE_PLACES && !on[i])
			continue;
		ret->all[n++] = src->ops;
		if (src->role == DM_SOURCE_FILLS)
			ret->fillers[f++] = src->ops;
	}
	ret->all[n] = ret->fillers[f] = NULL;
	ret->groups = device_groups;
}
