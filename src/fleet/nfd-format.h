/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nfd-format.h - Kubernetes node labels as a Node Feature Discovery feature
 * file (docs/design.md §6.11), shared by driverfsctl nfd (which reads the
 * mount) and driverfsd's NfdFile= (which reads its model and sysfs), so
 * that both write one text: "NAME=VALUE" lines in NFD's local-source format
 * (NFD adds its feature.node.kubernetes.io/ prefix), what NFD's pci source
 * does not say of the PCI functions, per class and vendor as it names them
 * ("pci-0200_15b3"):
 *   driverfsd.pci-CCCC_VVVV.vfio-pci=N          functions bound to vfio-pci
 *   driverfsd.pci-CCCC_VVVV.vfio-pci-viable=N   of those, in an IOMMU group a
 *                                                VM can be given (every member
 *                                                bound to vfio-pci, to no
 *                                                driver, or a PCI bridge)
 *   driverfsd.pci-CCCC_VVVV.sriov-numvfs=N      VFs its physical functions have
 *   driverfsd.pci-CCCC_VVVV.sriov-totalvfs=N    VFs they can have
 *   driverfsd.pci-CCCC_VVVV.link-degraded=N     links trained below what both
 *                                                ends can do (pcie-link.h)
 *   driverfsd.pci-link-degraded=true            any of those on the node
 * sorted, each name and value checked against NFD's rules.
 */
#ifndef DM_NFD_FORMAT_H
#define DM_NFD_FORMAT_H

#include <stdbool.h>
#include <stddef.h>

/* the default feature file, in NFD's features.d */
#define DM_NFD_FILE "/etc/kubernetes/node-feature-discovery/features.d/driverfsd"
/* NFD reads a feature file of at most this many bytes */
#define DM_NFD_MAX (64 * 1024)

/* A PCI function, as the labels need it. */
struct dm_nfd_fn {
	char key[16]; /* "CCCC_VVVV": dm_nfd_key() */
	char driver[64]; /* its kernel driver, "" for none */
	long group; /* its IOMMU group, -1 for none */
	bool bridge, degraded, has_vfs;
	unsigned long numvfs, totalvfs;
};

/* The key of a function of class @class_id ("0x020000") and vendor
 * @vendor ("0x15b3") as the kernel prints them into @key: false when
 * either is not that (a device's text, checked). Also sets @bridge. */
bool dm_nfd_key(const char *class_id, const char *vendor, struct dm_nfd_fn *f);
/* The feature file's text of the @n functions @v: malloc()ed into *ret,
 * *ret_len bytes. 0, -ENOMEM, -EFBIG (past DM_NFD_MAX). */
int dm_nfd_text(const struct dm_nfd_fn *v, size_t n, char **ret, size_t *ret_len);
/* Writes @text to @path unless the file holds it already (nothing written
 * then: 0), through dm_replace_file() (a dot-file renamed over it, which
 * NFD skips). 1 when written, or -errno with a reason in @msg. */
int dm_nfd_write(const char *path, const char *text, size_t len, char *msg, size_t size);

#endif
