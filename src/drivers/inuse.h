/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * inuse.h - what would break if a device lost its driver (docs/design.md
 * §7.5): for every device of its subtree,
 *
 *   - a block device (or a holder above it: dm, md, LVM; found through
 *     sysfs holders/, transitively) that is mounted (mountinfo), used as
 *     swap (swaps), or held at all;
 *   - a network interface that carries a route (IPv4 or IPv6: an address
 *     gives its interface the route of its prefix);
 *   - a /dev node (of the subtree or of a holder) that a process holds
 *     open, named with its pid and command;
 *   - for a device bound to vfio-pci (or a variant), its VFIO nodes that a
 *     process holds open (a VM, DPDK): its IOMMU group's /dev/vfio/G (or
 *     /dev/vfio/noiommu-G) and its cdev /dev/vfio/devices/vfioN.
 *
 * Mounts, swaps, routes and processes are read under the caller's proc
 * root, holders, dm names, NVMe subsystems and VFIO bindings under its
 * sysfs root (struct dm_inuse_roots: the binder's, binding.h). Each reason
 * is one line.
 */
#ifndef DM_INUSE_H
#define DM_INUSE_H

#include "core/model.h"

#include <stdbool.h>
#include <stddef.h>

/* Where a check reads: @sysfs ("/sys", or a test's directory laid out as
 * sysfs) and @proc (mounts, swaps, routes and PID/fd; "/proc", or
 * --proc-root). NULL members (or no roots): those. */
struct dm_inuse_roots {
	const char *sysfs;
	const char *proc;
};

/*
 * Appends to @buf (of @size bytes, holding a NUL-terminated text) one line
 * per reason @dev's subtree is in use, each prefixed "in use: ", and the
 * same reasons as a user other than root may read them to @pub (of
 * @pub_size bytes, likewise): a mount's point and the processes holding a
 * node (pid and command, which /proc hides from other users) left out,
 * "(where: details for root only)", one line for a node however many hold
 * it. Returns the number of reasons, or -errno when the subtree cannot be
 * read. Under @roots. Call without the model lock.
 */
int dm_inuse_check(const struct dm_inuse_roots *roots, struct dm_device *dev, char *buf,
		   size_t size, char *pub, size_t pub_size);

/* vfio-pci, or one of its variants (mlx5_vfio_pci, hisi_acc_vfio_pci ...):
 * a name ending in vfio-pci or vfio_pci. */
bool dm_inuse_is_vfio_driver(const char *drv);

#endif
