/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pci-pm.h - the "pci-pm" driver: PCI functions that no kernel driver owns
 * and that have the PCI power-management capability. Suspend saves the
 * config header and puts the function in D3hot through PMCSR; resume
 * returns it to D0, waits the function's recovery time (10 ms) and
 * restores the header (command register last), each step only once the
 * vendor/device ID and the PM capability show the function is still the
 * one suspended. Suspend leaves a function alone once sysfs shows a kernel
 * driver bound to it (dm_device_recheck_claim(), DM_ECLAIM). All
 * config access goes through libpci (pci-access.h).
 */
#ifndef DM_PCI_PM_H
#define DM_PCI_PM_H

#include "core/model.h"

#define DM_PCI_PM_PRIORITY 50

/* Registers the driver on @m's "pci" bus; *ret is the driver (a reference)
 * for dm_driver_unregister() + dm_driver_unref(). */
int dm_pci_pm_register(struct dm_model *m, struct dm_driver **ret);

/* What the driver takes from its surroundings, for tests: NULL fields (or
 * no env at all) are the machine's. */
struct dm_pci_pm_env {
	const char *sysfs_path; /* libpci's sysfs.path ("/sys/bus/pci") */
	/* waits @ms milliseconds: a function's recovery after D3hot -> D0 */
	void (*sleep_ms)(unsigned ms, void *ctx);
	void *ctx;
};
/* dm_pci_pm_register() with @env (copied; NULL: the machine's). @env's
 * sleep_ms is called from resume hooks, on PM pool threads, without any
 * lock of the driver's held. */
int dm_pci_pm_register_env(struct dm_model *m, const struct dm_pci_pm_env *env,
			   struct dm_driver **ret);

#endif
