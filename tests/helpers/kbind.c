/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kbind.c - a preload library that plays the kernel's side of binding on a
 * umockdev testbed, for the tests. A testbed's driver_override, bind,
 * unbind and drivers_probe are plain files; this library turns the
 * daemon's writes to them into what the kernel does (drivers/base/bus.c,
 * dd.c, drivers/pci/pci-sysfs.c):
 *
 *   .../driver_override      the value (one trailing newline stripped), or
 *                            "(null)" when empty; binds nothing
 *   bus/B/drivers/D/bind     DEV: -ENODEV unless DEV is on bus B and D
 *                            matches it (its driver_override names D;
 *                            without one, D's ids take DEV); then -EBUSY
 *                            when it has a driver, -ENODEV when it is
 *                            deauthorized (USB's authorized 0)
 *   bus/B/drivers/D/unbind   DEV: -ENODEV unless DEV is bound to D; its
 *                            consumers over managed device links are
 *                            unbound first
 *   bus/B/drivers_probe      DEV: binds DEV to the driver its override
 *                            names, else to the first whose ids take it
 *                            and whose probe does (a refusal of D's bind
 *                            file is D's probe refusing: the device stays
 *                            unbound and the write succeeds)
 *
 * Checked against Linux 6.1 in the vm tier's guest
 * (tests/vm/guest/test_binding.sh; tests/mount/test_binding.py's
 * test_direct_binding_writes_get_the_kernels_answers).
 *
 * A bind makes the device's driver link and the driver's link to the
 * device and adds DRIVER= to the device's uevent file; an unbind takes
 * them away. Then it tells the test, which owns the testbed and sends the
 * uevent: a datagram "bind /devices/..." or "unbind /devices/..." to the
 * socket DRIVERFS_KBIND_EVENTS names. A driver's ids are given as
 *
 *   DRIVERFS_KBIND_IDS="D=DEV[ DEV...][;D=...]"
 *
 * (a driver without any, vfio-pci or pci-stub, matches only by override).
 * Refusals are read, at each write of one of these files, from the file
 * DRIVERFS_KBIND_FAIL names, which the test may change at any time: lines
 * "SUFFIX ERRNO", where a write to a file whose path ends in SUFFIX fails
 * with ERRNO and does nothing ("SUFFIX=VALUE ERRNO": only a write of
 * VALUE there); ERRNO 0 takes the write and does nothing
 * (a probe deferred, a driver that declines quietly); ERRNO -1 makes the
 * write wait 7 s, then act (an unbind waiting for whoever holds the device
 * open), and -2 wait 2 s (a slow probe); -3 holds the write until the
 * test lets it go: it writes the path to the file "<FAIL>.held", waits for
 * "<FAIL>.go" to exist, then acts (the test kills the daemon meanwhile, a
 * write it never finishes). An unlink() of a path ending in a SUFFIX of a
 * -3 line is held so too (the daemon's own files: its binding journal
 * dropped after the verify step). Every other write goes on as usual.
 *
 * SR-IOV (drivers/pci/iov.c, sriov_numvfs_store()): a PF's
 *
 *   .../sriov_numvfs         N: -EINVAL unless a number, -ERANGE above
 *                            sriov_totalvfs, nothing for the count it has,
 *                            -ENOENT when the PF has no driver, -EBUSY from
 *                            one non-zero count to another; 0 removes the
 *                            VFs, VF 0 first (each unbound, then its
 *                            "remove"), N creates them: VF i at routing id
 *                            PF + sriov_offset + i * sriov_stride, a
 *                            sibling of the PF with its ids (device:
 *                            sriov_vf_device), physfn and the PF's virtfnI
 *                            links, an IOMMU group of its own (number
 *                            65536 + routing id), its "add" and "change",
 *                            then probed as drivers_probe does when the
 *                            PF's sriov_drivers_autoprobe is not 0; the
 *                            PF's "change" after all of them (the order
 *                            the vm tier's guest shows, test_sriov.sh)
 *
 * A VF's removal asks the test for its "remove" ("remove /devices/..."),
 * which the test sends while the directory is there and then deletes the
 * directory (the subtree's own devices' removes first); this waits until
 * it has (at most 20 s), then takes the links to it away. Without a test
 * (no DRIVERFS_KBIND_EVENTS) the directory is deleted here. The suffixes
 * "sriov_numvfs" and "sriov_drivers_autoprobe" may be refused like the
 * binding files.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "preload.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static ssize_t (*real_write)(int, const void *, size_t);

/* The testbed's sys directory, "<UMOCKDEV_DIR>/sys". */
static bool sys_dir(char *buf, size_t size)
{
	const char *root = getenv("UMOCKDEV_DIR");
	return root && (size_t)snprintf(buf, size, "%s/sys", root) < size;
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t len = strlen(text);
	ssize_t n = real_write(fd, text, len);
	int r = n == (ssize_t)len ? 0 : -EIO;
	close(fd);
	return r;
}

static int read_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -EIO;
	buf[n] = '\0';
	return (int)n;
}

/* The value written: one trailing newline stripped; a name of sysfs's
 * kind, else -EINVAL. */
static int value_of(const void *data, size_t count, char *buf, size_t size)
{
	if (count >= size)
		return -EINVAL;
	memcpy(buf, data, count);
	buf[count] = '\0';
	if (count && buf[count - 1] == '\n')
		buf[--count] = '\0';
	for (size_t i = 0; i < count; i++)
		if (buf[i] == '/' || buf[i] == '\n' || buf[i] == ' ')
			return -EINVAL;
	return (int)count;
}

static void tell_test(const char *action, const char *devrel)
{
	const char *path = getenv("DRIVERFS_KBIND_EVENTS");
	if (!path)
		return;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path))
		return;
	strcpy(sa.sun_path, path);
	char msg[PATH_MAX + 16];
	int n = snprintf(msg, sizeof(msg), "%s %s", action, devrel);
	int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return;
	(void)sendto(s, msg, (size_t)n, 0, (struct sockaddr *)&sa, sizeof(sa));
	close(s);
}

/* Whether driver @drv's ids take device @dev. */
static bool ids_take(const char *drv, const char *dev)
{
	const char *spec = getenv("DRIVERFS_KBIND_IDS");
	size_t dl = strlen(drv), nl = strlen(dev);
	for (const char *p = spec; p && *p;) {
		const char *end = strchr(p, ';');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len > dl && strncmp(p, drv, dl) == 0 && p[dl] == '=') {
			for (const char *q = p + dl + 1; q < p + len;) {
				const char *sp = memchr(q, ' ', (size_t)(p + len - q));
				size_t wl = sp ? (size_t)(sp - q) : (size_t)(p + len - q);
				if (wl == nl && strncmp(q, dev, nl) == 0)
					return true;
				q += wl + 1;
			}
		}
		p = end ? end + 1 : NULL;
	}
	return false;
}

/* @dev's path under sys ("devices/..."), from bus @bus's devices link. */
static int device_rel(const char *sys, const char *bus, const char *dev, char *buf, size_t size)
{
	char link[PATH_MAX], real[PATH_MAX], realsys[PATH_MAX];
	snprintf(link, sizeof(link), "%s/bus/%s/devices/%s", sys, bus, dev);
	if (!realpath(link, real) || !realpath(sys, realsys))
		return -ENODEV;
	size_t sl = strlen(realsys);
	if (strncmp(real, realsys, sl) != 0 || real[sl] != '/')
		return -ENODEV;
	return (size_t)snprintf(buf, size, "%s", real + sl + 1) < size ? 0 : -ENAMETOOLONG;
}

/* The last component of the link @dir/@name's target, into @buf ("" when
 * it is no link). */
static void link_base(const char *dir, const char *name, char *buf, size_t size)
{
	char link[PATH_MAX], target[PATH_MAX];
	snprintf(link, sizeof(link), "%s/%s", dir, name);
	ssize_t n = readlink(link, target, sizeof(target) - 1);
	buf[0] = '\0';
	if (n > 0) {
		target[n] = '\0';
		const char *slash = strrchr(target, '/');
		snprintf(buf, size, "%s", slash ? slash + 1 : target);
	}
}

/* The driver @devdir is bound to, into @buf ("" when none). */
static void bound_driver(const char *devdir, char *buf, size_t size)
{
	link_base(devdir, "driver", buf, size);
}

/* Rewrites the DRIVER= line of @devdir's uevent file: @drv, or none. */
static void set_uevent_driver(const char *devdir, const char *drv)
{
	char path[PATH_MAX], text[8192], out[8300];
	snprintf(path, sizeof(path), "%s/uevent", devdir);
	if (read_file(path, text, sizeof(text)) < 0)
		return;
	size_t len = 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
		if (strncmp(line, "DRIVER=", 7) != 0)
			len += (size_t)snprintf(out + len, sizeof(out) - len, "%s\n", line);
	if (drv)
		snprintf(out + len, sizeof(out) - len, "DRIVER=%s\n", drv);
	write_file(path, out);
}

static int do_bind(const char *sys, const char *bus, const char *drv, const char *dev)
{
	char rel[PATH_MAX], devdir[PATH_MAX], drvdir[PATH_MAX], cur[256], ovr[256];
	int r = device_rel(sys, bus, dev, rel, sizeof(rel));
	if (r < 0)
		return r;
	snprintf(devdir, sizeof(devdir), "%s/%s", sys, rel);
	snprintf(drvdir, sizeof(drvdir), "%s/bus/%s/drivers/%s", sys, bus, drv);
	struct stat st;
	if (stat(drvdir, &st) < 0)
		return -ENODEV;
	char path[PATH_MAX];
	/* bind_store(): a driver that does not match the device, ENODEV */
	snprintf(path, sizeof(path), "%s/driver_override", devdir);
	bool has_ovr = read_file(path, ovr, sizeof(ovr)) >= 0;
	if (has_ovr && ovr[0] && ovr[strlen(ovr) - 1] == '\n')
		ovr[strlen(ovr) - 1] = '\0';
	if (has_ovr && strcmp(ovr, "(null)") != 0 ? strcmp(ovr, drv) != 0 : !ids_take(drv, dev))
		return -ENODEV;
	/* then __driver_probe_device(): a device bound already, EBUSY (Linux
	 * >= 5.13; the vm tier's guest, 6.1: tests/vm/guest/test_binding.sh) */
	bound_driver(devdir, cur, sizeof(cur));
	if (cur[0])
		return -EBUSY;
	/* USB: a deauthorized device or interface is not probed */
	snprintf(path, sizeof(path), "%s/authorized", devdir);
	if (read_file(path, ovr, sizeof(ovr)) > 0 && ovr[0] == '0')
		return -ENODEV;
	/* the links, as sysfs makes them: relative */
	char target[PATH_MAX * 2];
	size_t depth = 1;
	for (const char *p = rel; *p; p++)
		depth += *p == '/';
	size_t len = 0;
	for (size_t i = 0; i < depth; i++)
		len += (size_t)snprintf(target + len, sizeof(target) - len, "../");
	snprintf(target + len, sizeof(target) - len, "bus/%s/drivers/%s", bus, drv);
	snprintf(path, sizeof(path), "%s/driver", devdir);
	if (symlink(target, path) < 0)
		return -errno;
	snprintf(target, sizeof(target), "../../../../%s", rel);
	snprintf(path, sizeof(path), "%s/%s", drvdir, dev);
	(void)symlink(target, path);
	set_uevent_driver(devdir, drv);
	char devpath[PATH_MAX + 2];
	snprintf(devpath, sizeof(devpath), "/%s", rel);
	tell_test("bind", devpath);
	return 0;
}

static int do_unbind(const char *sys, const char *bus, const char *drv, const char *dev);

/* Before a device's driver goes, the kernel unbinds the consumers bound
 * over its managed device links (device_links_unbind_consumers()): each
 * "consumer:BUS:NAME" link of @devdir whose devlink is neither stateless
 * (status "not tracked") nor sync_state_only, consumers of consumers
 * first. */
static void unbind_consumers(const char *sys, const char *devdir)
{
	DIR *d = opendir(devdir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (strncmp(e->d_name, "consumer:", 9) != 0)
			continue;
		char link[PATH_MAX], devlink[PATH_MAX], cdir[PATH_MAX], path[PATH_MAX];
		char status[64] = "", sso[8] = "", cbus[256], cdrv[256];
		snprintf(link, sizeof(link), "%s/%s", devdir, e->d_name);
		if (!realpath(link, devlink))
			continue;
		snprintf(path, sizeof(path), "%s/status", devlink);
		(void)read_file(path, status, sizeof(status));
		snprintf(path, sizeof(path), "%s/sync_state_only", devlink);
		(void)read_file(path, sso, sizeof(sso));
		if (strncmp(status, "not tracked", 11) == 0 || sso[0] == '1')
			continue;
		snprintf(path, sizeof(path), "%s/consumer", devlink);
		if (!realpath(path, cdir))
			continue;
		link_base(cdir, "subsystem", cbus, sizeof(cbus));
		bound_driver(cdir, cdrv, sizeof(cdrv));
		const char *cname = strrchr(cdir, '/') ? strrchr(cdir, '/') + 1 : cdir;
		if (cbus[0] && cdrv[0])
			(void)do_unbind(sys, cbus, cdrv, cname);
	}
	if (d)
		closedir(d);
}

static int do_unbind(const char *sys, const char *bus, const char *drv, const char *dev)
{
	char rel[PATH_MAX], devdir[PATH_MAX], cur[256], path[PATH_MAX];
	int r = device_rel(sys, bus, dev, rel, sizeof(rel));
	if (r < 0)
		return r;
	snprintf(devdir, sizeof(devdir), "%s/%s", sys, rel);
	bound_driver(devdir, cur, sizeof(cur));
	if (strcmp(cur, drv) != 0)
		return -ENODEV;
	unbind_consumers(sys, devdir);
	snprintf(path, sizeof(path), "%s/driver", devdir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/bus/%s/drivers/%s/%s", sys, bus, drv, dev);
	unlink(path);
	set_uevent_driver(devdir, NULL);
	char devpath[PATH_MAX + 2];
	snprintf(devpath, sizeof(devpath), "/%s", rel);
	tell_test("unbind", devpath);
	return 0;
}

static int chosen(const char *path, const char *value);

/* A probe of @dev by @drv inside drivers_probe: what a write of @dev to
 * @drv's bind file would do, its refusal (the test's line for that file)
 * the probe's own: the device is left unbound and the write to
 * drivers_probe still succeeds, as the kernel ignores a probe's error
 * there (__device_attach_driver()) and bind_store() returns it. 0 when
 * it bound. */
static int probe_with(const char *sys, const char *bus, const char *drv, const char *dev)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/bus/%s/drivers/%s/bind", sys, bus, drv);
	int refusal = chosen(path, dev);
	if (refusal <= 0)
		return refusal < 0 ? refusal : -ENODEV;
	return do_bind(sys, bus, drv, dev);
}

/* drivers_probe: the override's driver, else the first whose ids take it
 * and whose probe takes it. */
static int do_probe(const char *sys, const char *bus, const char *dev)
{
	char rel[PATH_MAX], devdir[PATH_MAX], cur[256], ovr[256], path[PATH_MAX];
	int r = device_rel(sys, bus, dev, rel, sizeof(rel));
	if (r < 0)
		return r;
	snprintf(devdir, sizeof(devdir), "%s/%s", sys, rel);
	bound_driver(devdir, cur, sizeof(cur));
	if (cur[0])
		return 0;
	snprintf(path, sizeof(path), "%s/driver_override", devdir);
	if (read_file(path, ovr, sizeof(ovr)) > 0) {
		ovr[strcspn(ovr, "\n")] = '\0';
		if (strcmp(ovr, "(null)") != 0) {
			(void)probe_with(sys, bus, ovr, dev);
			return 0;
		}
	}
	const char *spec = getenv("DRIVERFS_KBIND_IDS");
	for (const char *p = spec; p && *p;) {
		const char *eq = strchr(p, '='), *end = strchr(p, ';');
		if (!eq || (end && eq > end))
			break;
		char drv[256];
		snprintf(drv, sizeof(drv), "%.*s", (int)(eq - p), p);
		if (ids_take(drv, dev) && probe_with(sys, bus, drv, dev) == 0)
			return 0;
		p = end ? end + 1 : NULL;
	}
	return 0;
}


/* ---- SR-IOV: sriov_numvfs ---- */

/* @path's content replaced by @text (O_TRUNC is kept off for the played
 * files: truncated here). */
static int replace_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t len = strlen(text);
	int r = ftruncate(fd, 0) == 0 && real_write(fd, text, len) == (ssize_t)len ? 0 : -EIO;
	close(fd);
	return r;
}

/* A number in the file @dir/@name (decimal, or hex with 0x); @dflt when
 * there is none. */
static long number_in(const char *dir, const char *name, long dflt)
{
	char path[PATH_MAX], buf[64];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (read_file(path, buf, sizeof(buf)) <= 0)
		return dflt;
	char *end;
	long v = strtol(buf, &end, 0);
	return end == buf ? dflt : v;
}

static void put_file(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0) {
		(void)real_write(fd, text, strlen(text));
		close(fd);
	}
}

/* A link @dir/@name to @target (both absolute), relative as sysfs makes
 * them. */
static void put_link(const char *dir, const char *name, const char *target)
{
	char from[PATH_MAX], rel[PATH_MAX * 2];
	snprintf(from, sizeof(from), "%s/%s", dir, name);
	/* the components @dir and @target share */
	size_t common = 0;
	for (size_t i = 0;; i++) {
		bool dir_end = dir[i] == '\0' || dir[i] == '/';
		bool target_end = target[i] == '\0' || target[i] == '/';
		if (dir_end && target_end)
			common = i;
		if (dir[i] != target[i] || dir[i] == '\0')
			break;
	}
	size_t len = 0;
	for (const char *p = dir + common; *p; p++)
		if (*p == '/')
			len += (size_t)snprintf(rel + len, sizeof(rel) - len, "../");
	snprintf(rel + len, sizeof(rel) - len, "%s", target[common] ? target + common + 1 : ".");
	(void)unlink(from);
	(void)symlink(rel, from);
}

static void remove_tree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		char path[PATH_MAX];
		struct stat st;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
			remove_tree(path);
		else
			(void)unlink(path);
	}
	if (d)
		closedir(d);
	(void)rmdir(dir);
}

/* The VFs of the PF at @pfdir: virtfn0 ... while they are there. */
static int vf_count(const char *pfdir)
{
	char path[PATH_MAX];
	struct stat st;
	int n = 0;
	for (;; n++) {
		snprintf(path, sizeof(path), "%s/virtfn%d", pfdir, n);
		if (lstat(path, &st) < 0)
			return n;
	}
}

/* VF @i of the PF at @pfdir goes as pci_iov_remove_virtfn() has it:
 * unbound, its "remove", its directory and the links to it. */
static void remove_vf(const char *sys, const char *pfdir, int i)
{
	char link[PATH_MAX], vfdir[PATH_MAX], name[64], drv[256], path[PATH_MAX];
	snprintf(link, sizeof(link), "%s/virtfn%d", pfdir, i);
	if (!realpath(link, vfdir)) {
		(void)unlink(link);
		return;
	}
	snprintf(name, sizeof(name), "%s", strrchr(vfdir, '/') + 1);
	char group[64];
	link_base(vfdir, "iommu_group", group, sizeof(group));
	bound_driver(vfdir, drv, sizeof(drv));
	if (drv[0])
		(void)do_unbind(sys, "pci", drv, name);
	const char *events = getenv("DRIVERFS_KBIND_EVENTS");
	if (events) {
		tell_test("remove", vfdir + strlen(sys));
		struct stat st;
		for (int t = 0; t < 2000 && stat(vfdir, &st) == 0; t++) {
			struct timespec ts = { 0, 10 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
	}
	remove_tree(vfdir);
	(void)unlink(link);
	snprintf(path, sizeof(path), "%s/bus/pci/devices/%s", sys, name);
	(void)unlink(path);
	if (group[0]) {
		snprintf(path, sizeof(path), "%s/kernel/iommu_groups/%s", sys, group);
		remove_tree(path);
	}
}

/* VF @i of the PF at @pfdir (named @pfname) made as pci_iov_add_virtfn()
 * has it, then its "add", then probed when autoprobe is on. */
static int add_vf(const char *sys, const char *pfdir, const char *pfname, int i)
{
	unsigned dom, bus, slot, fn;
	if (sscanf(pfname, "%x:%x:%x.%x", &dom, &bus, &slot, &fn) != 4)
		return -EINVAL;
	long rid = (long)((bus << 8) | (slot << 3) | fn) + number_in(pfdir, "sriov_offset", 1) +
		   (long)i * number_in(pfdir, "sriov_stride", 1);
	if (rid > 0xffff)
		return -ERANGE;
	char name[64], vfdir[PATH_MAX], parent[PATH_MAX], text[4096], buf[64], path[PATH_MAX];
	snprintf(name, sizeof(name), "%04x:%02lx:%02lx.%lx", dom, rid >> 8, (rid >> 3) & 0x1f,
		 rid & 7);
	snprintf(parent, sizeof(parent), "%s", pfdir);
	*strrchr(parent, '/') = '\0';
	snprintf(vfdir, sizeof(vfdir), "%s/%s", parent, name);
	if (mkdir(vfdir, 0755) < 0)
		return -errno;
	long vendor = number_in(pfdir, "vendor", 0), device = number_in(pfdir, "sriov_vf_device", 0);
	long svendor = number_in(pfdir, "subsystem_vendor", 0);
	long sdevice = number_in(pfdir, "subsystem_device", 0);
	long class = number_in(pfdir, "class", 0);
	snprintf(buf, sizeof(buf), "0x%04lx\n", vendor);
	put_file(vfdir, "vendor", buf);
	snprintf(buf, sizeof(buf), "0x%04lx\n", device);
	put_file(vfdir, "device", buf);
	snprintf(buf, sizeof(buf), "0x%04lx\n", svendor);
	put_file(vfdir, "subsystem_vendor", buf);
	snprintf(buf, sizeof(buf), "0x%04lx\n", sdevice);
	put_file(vfdir, "subsystem_device", buf);
	snprintf(buf, sizeof(buf), "0x%06lx\n", class);
	put_file(vfdir, "class", buf);
	put_file(vfdir, "driver_override", "(null)\n");
	put_file(vfdir, "irq", "0\n");
	/* its config space: the PF's, its device id the VF's (a VF's vendor
	 * and device ids read 0xffff from the hardware; Linux's sysfs has
	 * them from the PF) */
	unsigned char config[4096];
	snprintf(path, sizeof(path), "%s/config", pfdir);
	int cfd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t clen = cfd >= 0 ? read(cfd, config, sizeof(config)) : -1;
	if (cfd >= 0)
		close(cfd);
	if (clen >= 4) {
		config[2] = (unsigned char)(device & 0xff);
		config[3] = (unsigned char)(device >> 8);
		snprintf(path, sizeof(path), "%s/config", vfdir);
		int wfd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (wfd >= 0) {
			(void)real_write(wfd, config, (size_t)clen);
			close(wfd);
		}
	}
	char modalias[128];
	snprintf(modalias, sizeof(modalias), "pci:v%08lXd%08lXsv%08lXsd%08lXbc%02lXsc%02lXi%02lX",
		 vendor, device, svendor, sdevice, class >> 16, (class >> 8) & 0xff, class & 0xff);
	snprintf(buf, sizeof(buf), "%s\n", modalias);
	put_file(vfdir, "modalias", buf);
	snprintf(text, sizeof(text),
		 "PCI_CLASS=%lX\nPCI_ID=%04lX:%04lX\nPCI_SUBSYS_ID=%04lX:%04lX\n"
		 "PCI_SLOT_NAME=%s\nMODALIAS=%s\n",
		 class, vendor, device, svendor, sdevice, name, modalias);
	put_file(vfdir, "uevent", text);
	snprintf(path, sizeof(path), "%s/bus/pci", sys);
	put_link(vfdir, "subsystem", path);
	put_link(vfdir, "physfn", pfdir);
	snprintf(buf, sizeof(buf), "virtfn%d", i);
	put_link(pfdir, buf, vfdir);
	snprintf(path, sizeof(path), "%s/bus/pci/devices", sys);
	put_link(path, name, vfdir);
	char group[PATH_MAX];
	snprintf(group, sizeof(group), "%s/kernel/iommu_groups/%ld/devices", sys, 65536 + rid);
	snprintf(path, sizeof(path), "%s/kernel/iommu_groups/%ld", sys, 65536 + rid);
	(void)mkdir(path, 0755);
	(void)mkdir(group, 0755);
	put_link(group, name, vfdir);
	put_link(vfdir, "iommu_group", path);
	/* the kernel's add, then its change once the links are made (seen in
	 * the vm tier's guest, tests/vm/guest/test_sriov.sh), then the probe */
	tell_test("add", vfdir + strlen(sys));
	tell_test("change", vfdir + strlen(sys));
	if (number_in(pfdir, "sriov_drivers_autoprobe", 1) != 0)
		(void)do_probe(sys, "pci", name);
	return 0;
}

static int set_numvfs(const char *sys, const char *pfdir, const char *value)
{
	char *end;
	long n = strtol(value, &end, 10);
	if (!value[0] || *end || n < 0 || n > 65535)
		return -EINVAL;
	if (n > number_in(pfdir, "sriov_totalvfs", 0))
		return -ERANGE;
	int now = vf_count(pfdir);
	if (n == now)
		return 0;
	char drv[256], path[PATH_MAX], text[32];
	bound_driver(pfdir, drv, sizeof(drv));
	if (!drv[0])
		return -ENOENT; /* no driver, or none that configures SR-IOV */
	if (n && now)
		return -EBUSY; /* "%d VFs already enabled. Disable before enabling %d VFs" */
	snprintf(path, sizeof(path), "%s/sriov_numvfs", pfdir);
	const char *pfname = strrchr(pfdir, '/') + 1;
	int r = 0;
	if (n == 0) {
		/* sriov_disable(): VF 0 first, each unbound then removed (the
		 * guest's order, test_sriov.sh); no event for the PF */
		for (int i = 0; i < now; i++)
			remove_vf(sys, pfdir, i);
	} else {
		for (int i = 0; i < n && r == 0; i++)
			r = add_vf(sys, pfdir, pfname, i);
		if (r < 0) /* the kernel disables what it enabled, last first */
			for (int i = vf_count(pfdir) - 1; i >= 0; i--)
				remove_vf(sys, pfdir, i);
		else /* and the PF's change, after all its VFs */
			tell_test("change", pfdir + strlen(sys));
	}
	snprintf(text, sizeof(text), "%d\n", vf_count(pfdir));
	(void)replace_file(path, text);
	return r;
}

/* -3: tells the test @path is held, and waits until it lets it go. */
static void hold(const char *file, const char *path)
{
	char held[PATH_MAX], go[PATH_MAX];
	snprintf(held, sizeof(held), "%s.held", file);
	snprintf(go, sizeof(go), "%s.go", file);
	char tmp[PATH_MAX + 8];
	snprintf(tmp, sizeof(tmp), "%s.tmp", held);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0) {
		(void)real_write(fd, path, strlen(path));
		close(fd);
	}
	rename(tmp, held); /* whole, for a reader polling it */
	struct stat st;
	while (stat(go, &st) < 0) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
}

/* The refusal the test chose for @path: -ERRNO, 0 (do nothing), or 1;
 * @holds_only: only a -3 line is taken (an unlink). */
static int chosen_of(const char *path, const char *value, bool holds_only)
{
	const char *file = getenv("DRIVERFS_KBIND_FAIL");
	char text[4096];
	if (!file || read_file(file, text, sizeof(text)) < 0)
		return 1;
	size_t pl = strlen(path);
	for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char suffix[512];
		int err;
		if (sscanf(line, "%511s %d", suffix, &err) != 2)
			continue;
		/* SUFFIX=VALUE: only a write of VALUE */
		char *eq = strchr(suffix, '=');
		if (eq) {
			*eq = '\0';
			if (!value || strcmp(value, eq + 1) != 0)
				continue;
		}
		size_t sl = strlen(suffix);
		bool match = sl <= pl && strcmp(path + pl - sl, suffix) == 0;
		if (match && err == -3) {
			hold(file, path);
			return 1;
		}
		if (holds_only)
			continue;
		if (sl <= pl && strcmp(path + pl - sl, suffix) == 0 && (err == -1 || err == -2)) {
			sleep(err == -1 ? 7 : 2);
			return 1;
		}
		if (sl <= pl && strcmp(path + pl - sl, suffix) == 0)
			return -err;
	}
	return 1;
}

static int chosen(const char *path, const char *value)
{
	return chosen_of(path, value, false);
}

int unlink(const char *path)
{
	static int (*real_unlink)(const char *);
	if (!real_unlink)
		real_unlink = (int (*)(const char *))dlsym(RTLD_NEXT, "unlink");
	if (!real_write)
		real_write = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	if (getenv("DRIVERFS_KBIND_FAIL"))
		(void)chosen_of(path, NULL, true);
	return real_unlink(path);
}

/* No binding file: the write goes on as usual. */
#define NOT_MINE (-100000)

/* The kernel's answer to writing @count bytes of @data to @path (under
 * the testbed's @sys): count or -errno; NOT_MINE for any other file. */
static ssize_t emulate(const char *sys, const char *path, const void *data, size_t count)
{
	char value[256], bus[256], drv[256], rest[16];
	const char *rel = path + strlen(sys);
	int len = value_of(data, count, value, sizeof(value));
	size_t pl0 = strlen(rel);
	bool sriov_file = (pl0 > 13 && strcmp(rel + pl0 - 13, "/sriov_numvfs") == 0) ||
			  (pl0 > 24 && strcmp(rel + pl0 - 24, "/sriov_drivers_autoprobe") == 0);
	bool binding_file = sriov_file ||
			    (pl0 > 16 && strcmp(rel + pl0 - 16, "/driver_override") == 0) ||
			    (pl0 > 5 && strcmp(rel + pl0 - 5, "/bind") == 0) ||
			    (pl0 > 7 && strcmp(rel + pl0 - 7, "/unbind") == 0) ||
			    (pl0 > 14 && strcmp(rel + pl0 - 14, "/drivers_probe") == 0);
	int refusal = binding_file ? chosen(path, len >= 0 ? value : NULL) : 1;
	if (refusal <= 0)
		return refusal < 0 ? refusal : (ssize_t)count;
	size_t pl = strlen(rel);
	if (pl > 13 && strcmp(rel + pl - 13, "/sriov_numvfs") == 0) {
		char pfdir[PATH_MAX], realsys[PATH_MAX];
		snprintf(pfdir, sizeof(pfdir), "%.*s", (int)(strlen(path) - 13), path);
		if (!realpath(sys, realsys))
			return -EIO;
		int r = len < 0 ? len : set_numvfs(realsys, pfdir, value);
		return r < 0 ? r : (ssize_t)count;
	}
	if (pl > 24 && strcmp(rel + pl - 24, "/sriov_drivers_autoprobe") == 0) {
		/* kstrtobool's */
		if (len < 0 || !strchr("01yYnN", value[0]) || !value[0])
			return -EINVAL;
		int r = replace_file(path, strchr("1yY", value[0]) ? "1\n" : "0\n");
		return r < 0 ? r : (ssize_t)count;
	}
	if (pl > 16 && strcmp(rel + pl - 16, "/driver_override") == 0) {
		if (len < 0)
			return len;
		char text[260];
		snprintf(text, sizeof(text), "%s\n", len ? value : "(null)");
		int r = write_file(path, text);
		return r < 0 ? r : (ssize_t)count;
	}
	if (sscanf(rel, "/bus/%255[^/]/drivers/%255[^/]/%15s", bus, drv, rest) == 3 &&
	    (strcmp(rest, "bind") == 0 || strcmp(rest, "unbind") == 0)) {
		if (len <= 0)
			return -ENODEV;
		int r = rest[0] == 'b' ? do_bind(sys, bus, drv, value)
				       : do_unbind(sys, bus, drv, value);
		return r < 0 ? r : (ssize_t)count;
	}
	if (sscanf(rel, "/bus/%255[^/]/%15s", bus, rest) == 2 &&
	    strcmp(rest, "drivers_probe") == 0) {
		if (len <= 0)
			return -ENODEV;
		int r = do_probe(sys, bus, value);
		return r < 0 ? r : (ssize_t)count;
	}
	return NOT_MINE;
}

/* Whether @path names one of the files played here (under /sys). */
static bool binding_path(const char *path)
{
	static const char *const names[] = { "/driver_override", "/bind", "/unbind",
					     "/drivers_probe", "/sriov_numvfs",
					     "/sriov_drivers_autoprobe" };
	size_t pl = strlen(path);
	if (strncmp(path, "/sys/", 5) != 0)
		return false;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t nl = strlen(names[i]);
		if (pl > nl && strcmp(path + pl - nl, names[i]) == 0)
			return true;
	}
	return false;
}

PRELOAD_OPEN_KEEPING_CONTENT(binding_path)

ssize_t write(int fd, const void *buf, size_t count)
{
	if (!real_write)
		real_write = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	char sys[PATH_MAX], link[64], path[PATH_MAX];
	if (fd <= 2 || !sys_dir(sys, sizeof(sys)))
		return real_write(fd, buf, count);
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, path, sizeof(path) - 1);
	size_t sl = strlen(sys);
	if (n <= (ssize_t)sl || strncmp(path, sys, sl) != 0 || path[sl] != '/')
		return real_write(fd, buf, count);
	path[n] = '\0';
	ssize_t r = emulate(sys, path, buf, count);
	if (r == NOT_MINE)
		return real_write(fd, buf, count);
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return r;
}
