/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vfio-hold SLOT: the vm tier's stand-in for QEMU or DPDK (issue 32):
 * opens the PCI function SLOT through VFIO (its group, a container with a
 * type1 IOMMU, the device fd), prints "held" and keeps it all open until
 * killed. Prints the step and its errno when one fails (exit 1). Built
 * static: the guest has no loader for it beyond what vm.py copies.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/vfio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static int fail(const char *step)
{
	printf("failed: %s: %s\n", step, strerror(errno));
	return 1;
}

int main(int argc, char **argv)
{
	char path[256], target[256];
	const char *g;
	if (argc != 2 || strlen(argv[1]) > 64) {
		fprintf(stderr, "usage: vfio-hold SLOT\n");
		return 2;
	}
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/iommu_group", argv[1]);
	ssize_t n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return fail("iommu_group");
	target[n] = '\0';
	g = strrchr(target, '/') ? strrchr(target, '/') + 1 : target;
	if (strlen(g) > 16)
		return fail("iommu_group's name");
	snprintf(path, sizeof(path), "/dev/vfio/%.16s", g);
	int group = open(path, O_RDWR);
	if (group < 0)
		return fail(path);
	int container = open("/dev/vfio/vfio", O_RDWR);
	if (container < 0)
		return fail("/dev/vfio/vfio");
	if (ioctl(group, VFIO_GROUP_SET_CONTAINER, &container) < 0)
		return fail("VFIO_GROUP_SET_CONTAINER");
	if (ioctl(container, VFIO_SET_IOMMU, VFIO_TYPE1v2_IOMMU) < 0)
		return fail("VFIO_SET_IOMMU");
	int device = ioctl(group, VFIO_GROUP_GET_DEVICE_FD, argv[1]);
	if (device < 0)
		return fail("VFIO_GROUP_GET_DEVICE_FD");
	printf("held\n");
	fflush(stdout);
	for (;;)
		pause();
}
