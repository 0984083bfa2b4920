/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "vfio-pci.h"

#include "log.h"

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

struct kernel_handle {
	int container, group, device;
};

static int iommu_group(const char *slot)
{
	char path[256], target[256];
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/iommu_group", slot);
	ssize_t n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return -errno;
	target[n] = '\0';
	const char *base = strrchr(target, '/');
	char *end;
	long g = strtol(base ? base + 1 : target, &end, 10);
	return *end || g < 0 ? -EINVAL : (int)g;
}

static int kernel_open(const char *slot, void **ret, void *ctx)
{
	(void)ctx;
	struct kernel_handle *h = malloc(sizeof(*h));
	if (!h)
		return -ENOMEM;
	*h = (struct kernel_handle){ -1, -1, -1 };
	struct vfio_group_status status = { .argsz = sizeof(status) };
	char path[64];
	int r = iommu_group(slot);
	if (r < 0)
		goto out_free;
	snprintf(path, sizeof(path), "/dev/vfio/%d", r);
	h->group = open(path, O_RDWR | O_CLOEXEC);
	if (h->group < 0) {
		r = -errno; /* EBUSY: another process (a VM) holds the group */
		goto out_free;
	}
	if (ioctl(h->group, VFIO_GROUP_GET_STATUS, &status) < 0) {
		r = -errno;
		goto out_group;
	}
	if (!(status.flags & VFIO_GROUP_FLAGS_VIABLE)) {
		r = -EBUSY; /* some device of the group is bound elsewhere */
		goto out_group;
	}
	h->container = open("/dev/vfio/vfio", O_RDWR | O_CLOEXEC);
	if (h->container < 0) {
		r = -errno;
		goto out_group;
	}
	if (ioctl(h->group, VFIO_GROUP_SET_CONTAINER, &h->container) < 0 ||
	    (ioctl(h->container, VFIO_SET_IOMMU, VFIO_TYPE1v2_IOMMU) < 0 &&
	     ioctl(h->container, VFIO_SET_IOMMU, VFIO_TYPE1_IOMMU) < 0)) {
		r = -errno;
		goto out_container;
	}
	h->device = ioctl(h->group, VFIO_GROUP_GET_DEVICE_FD, slot);
	if (h->device < 0) {
		r = -errno;
		goto out_container;
	}
	*ret = h;
	return 0;

out_container:
	close(h->container);
out_group:
	close(h->group);
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
	return ioctl(h->device, VFIO_DEVICE_FEATURE, &f) < 0 ? -errno : 0;
}

static void kernel_close(void *handle, void *ctx)
{
	(void)ctx;
	struct kernel_handle *h = handle;
	close(h->device);
	close(h->container);
	close(h->group);
	free(h);
}

static int kernel_bound_to_vfio(const char *slot, void *ctx)
{
	(void)ctx;
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
