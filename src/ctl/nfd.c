/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nfd.c - driverfsctl nfd [FILE]: Kubernetes node labels as a Node Feature
 * Discovery feature file (fleet/nfd-format.h has the labels), of the PCI
 * functions the mount's bus/pci/devices/ lists, read from their files.
 * FILE (default DM_NFD_FILE) is written only when its text changed; -
 * prints it.
 */
#include "core/array.h"
#include "commands.h"
#include "ctl.h"
#include "fleet/nfd-format.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool read_ulong(int fd, const char *dir, const char *file, unsigned long *ret)
{
	char buf[32], *end;
	if (ctl_read(fd, dir, file, buf, sizeof(buf)) <= 0)
		return false;
	errno = 0;
	*ret = strtoul(buf, &end, 10);
	return end != buf && !*end && !errno;
}

/* A function of bus/pci/devices/, as its files say; false to leave it out
 * (ids that are not the kernel's hex). */
static bool read_fn(int fd, const char *name, struct dm_nfd_fn *f)
{
	char class_id[32], vendor[32], buf[32];
	*f = (struct dm_nfd_fn){ .group = -1 };
	if (ctl_read(fd, name, "class", class_id, sizeof(class_id)) <= 0 ||
	    ctl_read(fd, name, "vendor", vendor, sizeof(vendor)) <= 0 ||
	    !dm_nfd_key(class_id, vendor, f))
		return false;
	ctl_read_line(fd, name, "kernel_driver", f->driver, sizeof(f->driver));
	unsigned long group;
	if (read_ulong(fd, name, "iommu_group", &group) && group < 1000000)
		f->group = (long)group;
	f->degraded = ctl_read(fd, name, "pcie_link/state", buf, sizeof(buf)) > 0 &&
		      strcmp(buf, "degraded") == 0;
	f->has_vfs = read_ulong(fd, name, "sriov_totalvfs", &f->totalvfs) &&
		     read_ulong(fd, name, "sriov_numvfs", &f->numvfs);
	return true;
}

/* The feature file's text of the mount @mnt. */
static int build(const char *mnt, char **ret, size_t *ret_len)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/bus/pci/devices", mnt);
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int dfd = dup(fd);
	DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		close(fd);
		return -ENOMEM;
	}
	struct dm_nfd_fn *fns = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	int r = 0;
	while (r == 0 && (de = readdir(d))) {
		struct dm_nfd_fn f;
		if (de->d_name[0] == '.' || !read_fn(fd, de->d_name, &f))
			continue;
		if (!dm_array_grow((void **)&fns, &cap, n, sizeof(*fns), 64))
			r = -ENOMEM;
		else
			fns[n++] = f;
	}
	closedir(d);
	close(fd);
	if (r == 0)
		r = dm_nfd_text(fns, n, ret, ret_len);
	free(fns);
	return r;
}

int ctl_cmd_nfd(const char *mnt, int argc, char **argv)
{
	struct ctl_args a;
	int ret = ctl_parse_args("nfd", argc, argv, 0, 1, false, &a);
	if (ret)
		return ret;
	const char *file = a.arg ? a.arg : DM_NFD_FILE;
	char *text;
	size_t len;
	int r = build(mnt, &text, &len);
	if (r < 0)
		return ctl_fail(mnt, r == -ENOENT ? "not a driverfs mount with a PCI bus" : NULL, -r);
	if (strcmp(file, "-") == 0) {
		fwrite(text, 1, len, stdout);
	} else {
		char msg[128];
		r = dm_nfd_write(file, text, len, msg, sizeof(msg));
		if (r < 0) {
			free(text);
			return ctl_fail(file, *msg ? msg : NULL, -r);
		}
	}
	free(text);
	return CTL_OK;
}
