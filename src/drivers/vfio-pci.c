/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "vfio-pci.h"

#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/vfio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

struct vfio_pci {
	const struct dm_vfio_ops *ops;
	void *ctx;
};

/* ---- the kernel's VFIO, through the group interface ---- */

static int sys_open(const char *path, int flags, void *ctx)
{
	(void)ctx;
	int fd = open(path, flags);
	return fd < 0 ? -errno : fd;
}

static int sys_ioctl(int fd, unsigned long req, unsigned long arg, void *ctx)
{
	(void)ctx;
	int r = ioctl(fd, req, arg);
	return r < 0 ? -errno : r;
}

static void sys_close(int fd, void *ctx)
{
	(void)ctx;
	close(fd);
}

static int sys_iommu_group(const char *slot, void *ctx)
{
	(void)ctx;
	char path[256], target[256];
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/iommu_group", slot);
	ssize_t n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return -errno;
	target[n] = '\0';
	const char *base = strrchr(target, '/');
	char *end;
	long g = strtol(base ? base + 1 : target, &end, 10);
	return *end || g < 0 || g > 1000000 ? -EINVAL : (int)g;
}

static const struct dm_vfio_sys real_sys = {
	.open = sys_open, .ioctl = sys_ioctl, .close = sys_close, .iommu_group = sys_iommu_group,
};

struct kernel_handle {
	const struct dm_vfio_sys *sys;
	int container, group, device;
};

/* Which type1 IOMMU backend the container offers: 0 when none is
 * registered (the module vfio_iommu_type1 not loaded: vfio names it as a
 * softdep, which modprobe honours and insmod or busybox's modprobe do not;
 * VFIO_SET_IOMMU then answers ENODEV, read as "no such device"). */
static unsigned long type1_backend(const struct dm_vfio_sys *sys, int container)
{
	if (sys->ioctl(container, VFIO_CHECK_EXTENSION, VFIO_TYPE1v2_IOMMU, sys->ctx) > 0)
		return VFIO_TYPE1v2_IOMMU;
	if (sys->ioctl(container, VFIO_CHECK_EXTENSION, VFIO_TYPE1_IOMMU, sys->ctx) > 0)
		return VFIO_TYPE1_IOMMU;
	return 0;
}

static int kernel_open(const char *slot, void **ret, void *ctx)
{
	const struct dm_vfio_sys *sys = ctx ? ctx : &real_sys;
	struct kernel_handle *h = malloc(sizeof(*h));
	if (!h)
		return -ENOMEM;
	*h = (struct kernel_handle){ sys, -1, -1, -1 };
	struct vfio_group_status status = { .argsz = sizeof(status) };
	char path[64];
	unsigned long backend;
	int r = sys->iommu_group(slot, sys->ctx);
	if (r < 0)
		goto out_free;
	snprintf(path, sizeof(path), "/dev/vfio/%d", r);
	h->group = sys->open(path, O_RDWR | O_CLOEXEC, sys->ctx);
	if (h->group < 0) {
		r = h->group; /* EBUSY: another process (a VM) holds the group */
		goto out_free;
	}
	r = sys->ioctl(h->group, VFIO_GROUP_GET_STATUS, (unsigned long)&status, sys->ctx);
	if (r < 0)
		goto out_group;
	if (!(status.flags & VFIO_GROUP_FLAGS_VIABLE)) {
		r = -EBUSY; /* some device of the group is bound elsewhere */
		goto out_group;
	}
	h->container = sys->open("/dev/vfio/vfio", O_RDWR | O_CLOEXEC, sys->ctx);
	if (h->container < 0) {
		r = h->container;
		goto out_group;
	}
	r = sys->ioctl(h->group, VFIO_GROUP_SET_CONTAINER, (unsigned long)&h->container, sys->ctx);
	if (r < 0)
		goto out_container;
	backend = type1_backend(sys, h->container);
	if (!backend) {
		log_warn("%s: vfio-pci: VFIO has no IOMMU backend for its group (the kernel module "
			 "vfio_iommu_type1 is not loaded): no low-power entry",
			 slot);
		r = -ENOPKG;
		goto out_container;
	}
	r = sys->ioctl(h->container, VFIO_SET_IOMMU, backend, sys->ctx);
	if (r < 0) {
		log_warn("%s: vfio-pci: VFIO_SET_IOMMU: %s", slot, strerror(-r));
		goto out_container;
	}
	h->device = sys->ioctl(h->group, VFIO_GROUP_GET_DEVICE_FD, (unsigned long)slot, sys->ctx);
	if (h->device < 0) {
		r = h->device;
		goto out_container;
	}
	*ret = h;
	return 0;

out_container:
	sys->close(h->container, sys->ctx);
out_group:
	sys->close(h->group, sys->ctx);
out_free:
	free(h);
	return r;
}

static int kernel_set_feature(void *handle, uint32_t feature, void *ctx)
{
	(void)ctx;
	struct kernel_handle *h = handle;
	struct vfio_device_feature f = {
		.argsz = sizeof(f),
		.flags = VFIO_DEVICE_FEATURE_SET | feature,
	};
	int r = h->sys->ioctl(h->device, VFIO_DEVICE_FEATURE, (unsigned long)&f, h->sys->ctx);
	return r < 0 ? r : 0;
}

static void kernel_close(void *handle, void *ctx)
{
	(void)ctx;
	struct kernel_handle *h = handle;
	h->sys->close(h->device, h->sys->ctx);
	h->sys->close(h->container, h->sys->ctx);
	h->sys->close(h->group, h->sys->ctx);
	free(h);
}

static int kernel_bound_to_vfio(const char *slot, void *ctx)
{
	const struct dm_vfio_sys *sys = ctx;
	if (sys && sys->bound_to_vfio)
		return sys->bound_to_vfio(slot, sys->ctx);
	char path[256], target[256];
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver", slot);
	ssize_t n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return errno == ENOENT ? 0 : -errno;
	target[n] = '\0';
	const char *base = strrchr(target, '/');
	return strcmp(base ? base + 1 : target, "vfio-pci") == 0;
}

const struct dm_vfio_ops dm_vfio_kernel_ops = {
	.open = kernel_open,
	.set_feature = kernel_set_feature,
	.close = kernel_close,
	.bound_to_vfio = kernel_bound_to_vfio,
};

/* ---- the driver ---- */

static int vfio_probe(struct dm_device *dev, void *data)
{
	(void)data;
	const char *k = dm_device_get_kernel_driver(dev);
	return k && strcmp(k, "vfio-pci") == 0 ? 0 : -ENODEV;
}

static int vfio_suspend(struct dm_device *dev, void *data)
{
	struct vfio_pci *v = data;
	void *h;
	int r = v->ops->bound_to_vfio ? v->ops->bound_to_vfio(dm_device_get_name(dev), v->ctx) : 1;
	if (r < 0)
		return r;
	if (r == 0) {
		log_warn("%s: vfio-pci: the kernel bound another driver to it; left alone",
			 dm_device_get_name(dev));
		return -DM_ECLAIM;
	}
	r = v->ops->open(dm_device_get_name(dev), &h, v->ctx);
	if (r == -EBUSY) {
		log_info("%s: its VFIO group is held by another process; left to it",
			 dm_device_get_name(dev));
		return 0;
	}
	if (r < 0)
		return r;
	r = v->ops->set_feature(h, VFIO_DEVICE_FEATURE_LOW_POWER_ENTRY, v->ctx);
	if (r < 0) {
		v->ops->close(h, v->ctx);
		return r;
	}
	/* low power lasts while the device is open: keep it until resume */
	dm_device_set_driver_data(dev, h);
	return 0;
}

static int vfio_resume(struct dm_device *dev, void *data)
{
	struct vfio_pci *v = data;
	void *h = dm_device_get_driver_data(dev);
	if (!h)
		return 0;
	int r = v->ops->set_feature(h, VFIO_DEVICE_FEATURE_LOW_POWER_EXIT, v->ctx);
	v->ops->close(h, v->ctx);
	dm_device_set_driver_data(dev, NULL);
	return r;
}

static void vfio_remove(struct dm_device *dev, void *data)
{
	struct vfio_pci *v = data;
	void *h = dm_device_get_driver_data(dev);
	if (h)
		v->ops->close(h, v->ctx);
	dm_device_set_driver_data(dev, NULL);
}

static const struct dm_driver_ops vfio_ops = {
	.probe = vfio_probe,
	.remove = vfio_remove,
	.suspend = vfio_suspend,
	.resume = vfio_resume,
};

int dm_vfio_pci_register(struct dm_model *m, const struct dm_vfio_ops *ops, void *ctx,
			 struct dm_driver **ret)
{
	struct vfio_pci *v = malloc(sizeof(*v));
	if (!v)
		return -ENOMEM;
	*v = (struct vfio_pci){ .ops = ops, .ctx = ctx };
	return dm_model_add_driver(m, "pci", "vfio-pci", DM_DRIVER_USER, DM_VFIO_PCI_PRIORITY,
				   &vfio_ops, v, free, ret);
}
