/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pci-pm.h - the "pci-pm" driver: PCI functions that no kernel driver owns
 * and that have the PCI power-management capability. Suspend saves the
 * config header and puts the function in D3hot through PMCSR; resume
 * returns it to D0 and restores the header (command register last). All
 * config access goes through libpci (pci-access.h).
 */
#ifndef DM_PCI_PM_H
#define DM_PCI_PM_H

#include "core/model.h"

#define DM_PCI_PM_PRIORITY 50

/* Registers the driver on @m's "pci" bus; *ret is the driver (a reference)
 * for dm_driver_unregister() + dm_driver_unref(). */
int dm_pci_pm_register(struct dm_model *m, struct dm_driver **ret);

#endif
