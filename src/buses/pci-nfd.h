/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pci-nfd.h - the NFD feature file's text (fleet/nfd-format.h) of the PCI
 * functions in the model, read from sysfs: what driverfsd's NfdFile= keeps
 * current, the same text driverfsctl nfd writes from the mount.
 */
#ifndef DM_PCI_NFD_H
#define DM_PCI_NFD_H

#include <stddef.h>

struct dm_model;

/* The text, malloc()ed into *ret (*ret_len bytes): 0 or -errno. Takes the
 * model's read lock to list the PCI bus's functions, reads sysfs without
 * it. */
int dm_pci_nfd_text(struct dm_model *m, char **ret, size_t *ret_len);

#endif
