/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vfio-pci.h - the "vfio-pci" driver: PCI functions the kernel bound to
 * vfio-pci (devices handed to user space). Suspend opens the device through
 * VFIO and asks for low-power entry (VFIO_DEVICE_FEATURE_LOW_POWER_ENTRY),
 * keeping it open; resume asks for low-power exit and closes it. A device
 * whose VFIO group another process holds (a VM) is its owner's to manage:
 * suspend and resume then do nothing. A function the kernel bound to
 * another driver is let go (dm_device_recheck_claim(), DM_ECLAIM).
 *
 * The ioctls sit behind a thin seam (struct dm_vfio_ops) so that tests can
 * stand in for the kernel; dm_vfio_kernel_ops is the real one.
 */
#ifndef DM_VFIO_PCI_H
#define DM_VFIO_PCI_H

#include "core/model.h"

#include <stdint.h>

#define DM_VFIO_PCI_PRIORITY 60

struct dm_vfio_ops {
	/* Opens @slot ("0000:03:00.0") for VFIO device ioctls; *ret is an
	 * opaque handle. -EBUSY when another process holds it. */
	int (*open)(const char *slot, void **ret, void *ctx);
	/* VFIO_DEVICE_FEATURE_SET of @feature (LOW_POWER_ENTRY or _EXIT). */
	int (*set_feature)(void *handle, uint32_t feature, void *ctx);
	void (*close)(void *handle, void *ctx);
	/* 1 when the kernel has @slot bound to vfio-pci now (sysfs's driver
	 * link), 0 when not, -errno. Suspend asks first: the model learns of
	 * a bind only from its event, which may still be queued. */
	int (*bound_to_vfio)(const char *slot, void *ctx);
};

/* The kernel's VFIO. Its @ctx is NULL, or a struct dm_vfio_sys through
 * which it makes its system calls (a test's stand-in for the kernel at the
 * ioctl level). Without an IOMMU backend for the group (vfio_iommu_type1
 * not loaded) suspend fails with ENOPKG, and says why in the log. */
extern const struct dm_vfio_ops dm_vfio_kernel_ops;

struct dm_vfio_sys {
	int (*open)(const char *path, int flags, void *ctx); /* an fd or -errno */
	int (*ioctl)(int fd, unsigned long request, unsigned long arg, void *ctx); /* >= 0 or -errno */
	void (*close)(int fd, void *ctx);
	int (*iommu_group)(const char *slot, void *ctx); /* the group's number or -errno */
	int (*bound_to_vfio)(const char *slot, void *ctx); /* as the ops' */
	void *ctx;
};

/* Registers the driver on @m's "pci" bus with @ops (and @ctx for them). */
int dm_vfio_pci_register(struct dm_model *m, const struct dm_vfio_ops *ops, void *ctx,
			 struct dm_driver **ret);

#endif
