/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pci-access.h - libpci, made safe under a live mount. libpci's default
 * error hook calls exit(); ours logs and jumps back to the guarded call,
 * which then fails with -EIO. Every libpci call goes through
 * dm_pci_guarded(). A pci_access is not thread-safe: callers serialise.
 */
#ifndef DM_PCI_ACCESS_H
#define DM_PCI_ACCESS_H

#include <pci/pci.h>
#include <stddef.h>

/* A pci_access on the sysfs method with the safe hooks; pci_init() done
 * (guarded). NULL on failure. Free with pci_cleanup(). */
struct pci_access *dm_pci_access_new(void);
/* The same on the sysfs PCI directory @sysfs_path ("/sys/bus/pci" when
 * NULL): libpci's sysfs.path, for tests on a directory of their own. */
struct pci_access *dm_pci_access_new_at(const char *sysfs_path);

/* Runs @fn(@pa, @data); a libpci error inside becomes -EIO. */
int dm_pci_guarded(struct pci_access *pa, int (*fn)(struct pci_access *, void *), void *data);

/* The same with libpci's messages logged at debug level, its error's
 * (empty when none) copied to @err (@size bytes, > 0): for a caller that
 * decides itself what an error means (a function gone from sysfs). */
int dm_pci_guarded_quiet(struct pci_access *pa, int (*fn)(struct pci_access *, void *),
			 void *data, char *err, size_t size);

/* Parses "dddd:bb:dd.f" (a PCI function's kernel name). */
int dm_pci_parse_slot(const char *name, int *domain, int *bus, int *dev, int *func);

#endif
