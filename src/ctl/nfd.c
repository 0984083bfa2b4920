/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nfd.c - driverfsctl nfd [FILE]: Kubernetes node labels through Node
 * Feature Discovery's local source (docs/design.md §6.11): a feature file of
 * "NAME=VALUE" lines, NFD's own prefix (feature.node.kubernetes.io/) added
 * by NFD, what NFD's pci source does not say of the PCI functions, per
 * class and vendor as it names them ("pci-0200_15b3"):
 *   driverfsd.pci-CCCC_VVVV.vfio-pci=N          functions bound to vfio-pci
 *   driverfsd.pci-CCCC_VVVV.vfio-pci-viable=N   of those, in an IOMMU group a
 *                                                VM can be given (every member
 *                                                bound to vfio-pci, to no
 *                                                driver, or a PCI bridge)
 *   driverfsd.pci-CCCC_VVVV.sriov-numvfs=N      VFs its physical functions have
 *   driverfsd.pci-CCCC_VVVV.sriov-totalvfs=N    VFs they can have
 *   driverfsd.pci-CCCC_VVVV.link-degraded=N     links trained below what both
 *                                                ends can do (pcie_link/)
 *   driverfsd.pci-link-degraded=true            any of those on the node
 * FILE (default /etc/kubernetes/node-feature-discovery/features.d/driverfsd)
 * is written only when its text changed, whole, through a dot-file renamed
 * over it (NFD skips dot-files); - prints it. Every name and value is
 * checked against NFD's rules before it is written.
 */
#include "commands.h"
#include "ctl.h"
#include "replace.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NFD_FILE "/etc/kubernetes/node-feature-discovery/features.d/driverfsd"
/* NFD reads a feature file of at most this many bytes */
#define NFD_MAX (64 * 1024)

struct fn {
	char key[16]; /* "CCCC_VVVV" */
	char driver[64];
	long group; /* -1: none */
	bool bridge, degraded, has_vfs;
	unsigned long numvfs, totalvfs;
};

struct kind {
	char key[16];
	unsigned long vfio, viable, numvfs, totalvfs, degraded;
	bool has_vfs;
};

static bool is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return s[n] == '\0';
}

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
static bool read_fn(int fd, const char *name, struct fn *f)
{
	char class_id[32], vendor[32], buf[32];
	*f = (struct fn){ .group = -1 };
	if (ctl_read(fd, name, "class", class_id, sizeof(class_id)) != 8 ||
	    strncmp(class_id, "0x", 2) != 0 || !is_hex(class_id + 2, 6) ||
	    ctl_read(fd, name, "vendor", vendor, sizeof(vendor)) != 6 ||
	    strncmp(vendor, "0x", 2) != 0 || !is_hex(vendor + 2, 4))
		return false;
	snprintf(f->key, sizeof(f->key), "%.4s_%.4s", class_id + 2, vendor + 2);
	f->bridge = strncmp(class_id + 2, "0604", 4) == 0;
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

/* Whether the IOMMU group @group can be given to a VM: vfio's rule, every
 * member bound to vfio-pci, to no driver, or a bridge. */
static bool viable(const struct fn *fns, size_t n, long group)
{
	for (size_t i = 0; i < n; i++)
		if (fns[i].group == group && !fns[i].bridge && fns[i].driver[0] &&
		    strcmp(fns[i].driver, "vfio-pci") != 0)
			return false;
	return true;
}

static struct kind *kind_of(struct kind **v, size_t *n, const char *key)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp((*v)[i].key, key) == 0)
			return &(*v)[i];
	struct kind *p = realloc(*v, (*n + 1) * sizeof(**v));
	if (!p)
		return NULL;
	*v = p;
	p[*n] = (struct kind){ 0 };
	snprintf(p[*n].key, sizeof(p[*n].key), "%s", key);
	return &p[(*n)++];
}

static int cmp_kind(const void *a, const void *b)
{
	return strcmp(((const struct kind *)a)->key, ((const struct kind *)b)->key);
}

/* NFD's label names (the part after its prefix: at most 63 characters,
 * alphanumeric at both ends, '-', '_' and '.' inside) and values (the
 * same, or empty). */
static bool nfd_valid(const char *s)
{
	size_t n = strlen(s);
	if (n > 63)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
		if (!alnum && ((i == 0 || i == n - 1) || (c != '-' && c != '_' && c != '.')))
			return false;
	}
	return true;
}

/* "NAME=V", when both are valid as NFD requires (left out otherwise) */
static void put(FILE *out, const char *name, unsigned long v)
{
	char value[32];
	snprintf(value, sizeof(value), "%lu", v);
	if (nfd_valid(name) && nfd_valid(value))
		fprintf(out, "%s=%s\n", name, value);
}

/* The feature file's text, malloc()ed, of the mount @mnt. */
static int build(const char *mnt, char **ret, size_t *ret_len)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/bus/pci/devices", mnt);
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	DIR *d = fdopendir(dup(fd));
	if (!d) {
		close(fd);
		return -errno;
	}
	struct fn *fns = NULL;
	size_t n = 0;
	struct dirent *de;
	int r = 0;
	while (r == 0 && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		struct fn f;
		if (!read_fn(fd, de->d_name, &f))
			continue;
		struct fn *p = realloc(fns, (n + 1) * sizeof(*fns));
		if (!p)
			r = -ENOMEM;
		else
			(fns = p)[n++] = f;
	}
	closedir(d);
	close(fd);

	struct kind *kinds = NULL;
	size_t nk = 0;
	bool any_degraded = false;
	for (size_t i = 0; r == 0 && i < n; i++) {
		struct kind *k = kind_of(&kinds, &nk, fns[i].key);
		if (!k) {
			r = -ENOMEM;
			break;
		}
		if (strcmp(fns[i].driver, "vfio-pci") == 0) {
			k->vfio++;
			k->viable += fns[i].group >= 0 && viable(fns, n, fns[i].group);
		}
		if (fns[i].has_vfs) {
			k->has_vfs = true;
			k->numvfs += fns[i].numvfs;
			k->totalvfs += fns[i].totalvfs;
		}
		k->degraded += fns[i].degraded;
		any_degraded |= fns[i].degraded;
	}
	free(fns);
	if (r < 0) {
		free(kinds);
		return r;
	}
	qsort(kinds, nk, sizeof(*kinds), cmp_kind);
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	if (!out) {
		free(kinds);
		return -ENOMEM;
	}
	fputs("# driverfsd: what NFD's pci source does not say (driverfsctl nfd)\n", out);
	for (size_t i = 0; i < nk; i++) {
		char name[80];
		const struct kind *k = &kinds[i];
#define NAME(suffix) (snprintf(name, sizeof(name), "driverfsd.pci-%s." suffix, k->key), name)
		if (k->vfio) {
			put(out, NAME("vfio-pci"), k->vfio);
			put(out, NAME("vfio-pci-viable"), k->viable);
		}
		if (k->has_vfs) {
			put(out, NAME("sriov-numvfs"), k->numvfs);
			put(out, NAME("sriov-totalvfs"), k->totalvfs);
		}
		if (k->degraded)
			put(out, NAME("link-degraded"), k->degraded);
#undef NAME
	}
	if (any_degraded)
		fputs("driverfsd.pci-link-degraded=true\n", out);
	free(kinds);
	if (fclose(out) != 0)
		return -ENOMEM;
	if (len > NFD_MAX) {
		free(text);
		return -EFBIG;
	}
	*ret = text;
	*ret_len = len;
	return 0;
}

/* Whether @path holds exactly @len bytes of @text. */
static bool same_as(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	char buf[NFD_MAX + 1];
	size_t n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	return n == len && memcmp(buf, text, len) == 0;
}

int ctl_cmd_nfd(const char *mnt, int argc, char **argv)
{
	struct ctl_args a;
	int ret = ctl_parse_args("nfd", argc, argv, 0, 1, false, &a);
	if (ret)
		return ret;
	const char *file = a.arg ? a.arg : NFD_FILE;
	char *text;
	size_t len;
	int r = build(mnt, &text, &len);
	if (r < 0)
		return ctl_fail(mnt, r == -ENOENT ? "not a driverfs mount with a PCI bus" : NULL, -r);
	if (strcmp(file, "-") == 0) {
		fwrite(text, 1, len, stdout);
	} else if (!same_as(file, text, len)) {
		char msg[128];
		r = dm_replace_file(file, text, len, msg, sizeof(msg));
		if (r < 0) {
			free(text);
			return ctl_fail(file, *msg ? msg : NULL, -r);
		}
	}
	free(text);
	return CTL_OK;
}
