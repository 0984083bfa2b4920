/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* pci-nfd.c - the NFD feature file of the model's PCI functions (pci-nfd.h). */
#include "pci-nfd.h"

#include "pci-functions.h"

#include "fleet/nfd-format.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

int dm_pci_nfd_text(struct dm_model *m, char **ret, size_t *ret_len)
{
	struct dm_pci_fns l = { 0 };
	int r = dm_pci_fns_collect(m, DM_PCI_FN_CLASS | DM_PCI_FN_IOMMU | DM_PCI_FN_LINK |
					     DM_PCI_FN_SRIOV,
				   &l);
	struct dm_nfd_fn *fns = r < 0 ? NULL : calloc(l.n ? l.n : 1, sizeof(*fns));
	size_t n = 0;
	if (r == 0 && !fns)
		r = -ENOMEM;
	for (size_t i = 0; r == 0 && i < l.n; i++) {
		const struct dm_pci_fn *p = &l.v[i];
		struct dm_nfd_fn *f = &fns[n];
		*f = (struct dm_nfd_fn){ .group = p->iommu_group };
		if (!dm_nfd_key(p->class_id, p->vendor, f))
			continue;
		snprintf(f->driver, sizeof(f->driver), "%s", p->driver ? p->driver : "");
		f->degraded = p->has_link && p->link.state == DM_PCIE_LINK_DEGRADED;
		f->has_vfs = p->has_vfs;
		f->numvfs = p->numvfs;
		f->totalvfs = p->totalvfs;
		n++;
	}
	if (r == 0)
		r = dm_nfd_text(fns, n, ret, ret_len);
	dm_pci_fns_free(&l);
	free(fns);
	return r;
}
