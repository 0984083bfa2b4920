/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* inuse.c - what uses a device's subtree (see inuse.h). */
#include "inuse.h"

#include "core/array.h"
#include "runner.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- what the subtree has ---- */

#define NAME_LEN 64

/* A block device (of the subtree, or a holder above one), a network
 * interface, or a /dev node. */
struct thing {
	char name[NAME_LEN];
	char devt[32]; /* "MAJ:MIN" of a block device */
	char node[PATH_MAX]; /* its /dev node */
	char via[NAME_LEN]; /* a holder: the device of the subtree it holds; a
			     * multipath namespace: its controller */
	bool namespace; /* an NVMe multipath namespace (or its partition) */
	bool vfio; /* a VFIO node of the device via, bound to driver */
	char driver[NAME_LEN];
};

struct things {
	struct thing *v;
	size_t n, cap;
};

static struct thing *add(struct things *t, const char *name)
{
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->v[i].name, name) == 0)
			return NULL; /* known */
	if (!dm_array_grow((void **)&t->v, &t->cap, t->n, sizeof(*t->v), 8))
		return NULL;
	struct thing *x = &t->v[t->n++];
	memset(x, 0, sizeof(*x));
	snprintf(x->name, sizeof(x->name), "%s", name);
	return x;
}

struct member {
	struct dm_device *dev; /* a reference */
	const char *cls; /* its class's name, or NULL */
};

struct subtree {
	struct member *v;
	size_t n, cap;
	bool failed;
};

static int collect(struct dm_device *dev, void *data)
{
	struct subtree *s = data;
	if (!dm_array_grow((void **)&s->v, &s->cap, s->n, sizeof(*s->v), 16)) {
		s->failed = true;
		return 1;
	}
	struct dm_class *c = dm_device_get_class_locked(dev);
	s->v[s->n++] = (struct member){ .dev = dm_device_ref(dev),
					.cls = c ? dm_class_get_name(c) : NULL };
	return dm_device_for_each_child_locked(dev, collect, s);
}

/* Adds the holders of block device @name (dm, md ...), transitively. */
static void add_holders(const struct dm_inuse_roots *r, struct things *blocks, const char *name,
			const char *via)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/class/block/%s/holders", r->sysfs, name);
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || strlen(e->d_name) >= NAME_LEN)
			continue;
		struct thing *h = add(blocks, e->d_name);
		if (!h)
			continue;
		char path[PATH_MAX + 64];
		snprintf(h->via, sizeof(h->via), "%s", via);
		snprintf(path, sizeof(path), "%s/class/block/%s/dev", r->sysfs, e->d_name);
		if (dm_run_read(path, h->devt, sizeof(h->devt)) < 0)
			h->devt[0] = '\0';
		snprintf(h->node, sizeof(h->node), "/dev/%s", e->d_name);
		char holder[NAME_LEN];
		snprintf(holder, sizeof(holder), "%s", e->d_name);
		add_holders(r, blocks, holder, via);
	}
	closedir(d);
}

/* Whether @name is a controller's name, "nvme<N>". */
static bool is_nvme_ctrl(const char *name)
{
	if (strncmp(name, "nvme", 4) != 0 || !name[4])
		return false;
	for (const char *p = name + 4; *p; p++)
		if (!isdigit((unsigned char)*p))
			return false;
	return true;
}

/* Adds block device @name of directory @dir as the namespace (or its
 * partition) of controller @ctrl; its partitions too. */
static void add_namespace(struct things *blocks, const char *dir, const char *name,
			  const char *ctrl)
{
	char path[2 * PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s/dev", dir, name);
	struct thing probe;
	if (dm_run_read(path, probe.devt, sizeof(probe.devt)) < 0)
		return; /* not a block device (a controller's link, a file) */
	struct thing *x = add(blocks, name);
	if (!x)
		return;
	memcpy(x->devt, probe.devt, sizeof(x->devt));
	snprintf(x->node, sizeof(x->node), "/dev/%s", name);
	snprintf(x->via, sizeof(x->via), "%s", ctrl);
	x->namespace = true;
	/* its partitions are directories of its own with a "partition" */
	char sub[PATH_MAX + NAME_LEN];
	snprintf(sub, sizeof(sub), "%s/%s", dir, name);
	DIR *d = opendir(sub);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || strlen(e->d_name) >= NAME_LEN)
			continue;
		snprintf(path, sizeof(path), "%s/%s/partition", sub, e->d_name);
		if (access(path, F_OK) == 0)
			add_namespace(blocks, sub, e->d_name, ctrl);
	}
	closedir(d);
}

/*
 * NVMe multipath: a controller's namespaces are not below it but in its
 * subsystem (/devices/virtual/nvme-subsystem/nvme-subsysN/nvmeNnM, which
 * links to each controller by name). Each subsystem of a controller of the
 * subtree (@ctrls) whose every controller is in the subtree loses its
 * namespaces with it: they, and their partitions, are the subtree's.
 */
static void add_nvme_namespaces(const struct dm_inuse_roots *r, struct things *blocks,
				const struct things *ctrls)
{
	if (ctrls->n == 0)
		return;
	char top[PATH_MAX];
	snprintf(top, sizeof(top), "%s/class/nvme-subsystem", r->sysfs);
	DIR *d = opendir(top);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || strlen(e->d_name) >= NAME_LEN)
			continue;
		char dir[PATH_MAX + NAME_LEN];
		snprintf(dir, sizeof(dir), "%s/%s", top, e->d_name);
		DIR *s = opendir(dir);
		if (!s)
			continue;
		char ours[NAME_LEN] = "";
		bool other = false;
		struct dirent *c;
		while ((c = readdir(s)))
			if (is_nvme_ctrl(c->d_name)) {
				bool in = false;
				for (size_t i = 0; i < ctrls->n && !in; i++)
					in = strcmp(ctrls->v[i].name, c->d_name) == 0;
				if (!in)
					other = true; /* another path stays */
				else if (!ours[0])
					snprintf(ours, sizeof(ours), "%.63s", c->d_name);
			}
		if (ours[0] && !other) {
			rewinddir(s);
			while ((c = readdir(s)))
				if (c->d_name[0] != '.' && !is_nvme_ctrl(c->d_name) &&
				    strlen(c->d_name) < NAME_LEN)
					add_namespace(blocks, dir, c->d_name, ours);
		}
		closedir(s);
	}
	closedir(d);
}

/* ---- the reasons ---- */

/* The reasons' text: root's, and what others read. */
struct text {
	char *buf;
	size_t size, len;
};

struct out {
	struct text full, pub;
	int n;
};

/* "in use: @line\n" appended to @t, cut where it is full; not again when
 * @once and @t has that line already. */
static void put_line(struct text *t, const char *line, bool once)
{
	if (!t->buf || t->size == 0 || t->len + 1 >= t->size)
		return;
	char whole[PATH_MAX * 2 + 16];
	int w = snprintf(whole, sizeof(whole), "in use: %s\n", line);
	if (w <= 0)
		return;
	if (once) {
		/* a line of its own: at the start or after a newline */
		for (const char *p = strstr(t->buf, whole); p; p = strstr(p + 1, whole))
			if (p == t->buf || p[-1] == '\n')
				return;
	}
	size_t n = strlen(whole);
	if (t->len + n > t->size - 1)
		n = t->size - 1 - t->len;
	memcpy(t->buf + t->len, whole, n);
	t->len += n;
	t->buf[t->len] = '\0';
}

/* A reason, the same for every reader (@pub NULL), or as @pub for others
 * than root (each such line once). */
static void reason_as(struct out *o, const char *pub, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void reason_as(struct out *o, const char *pub, const char *fmt, ...)
{
	char line[PATH_MAX * 2];
	o->n++;
	va_list ap;
	va_start(ap, fmt);
	int w = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (w < 0)
		return;
	put_line(&o->full, line, false);
	put_line(&o->pub, pub ? pub : line, pub != NULL);
}

#define reason(o, ...) reason_as(o, NULL, __VA_ARGS__)

/* What a holder holds, for a reason's words. */
static void describe(const struct dm_inuse_roots *r, const struct thing *b, char *buf,
		     size_t size)
{
	char path[PATH_MAX], dm[NAME_LEN];
	if (!b->via[0]) {
		snprintf(buf, size, "%s", b->name);
		return;
	}
	if (b->namespace) {
		snprintf(buf, size, "%s (a multipath namespace of %s)", b->name, b->via);
		return;
	}
	snprintf(path, sizeof(path), "%s/class/block/%s/dm/name", r->sysfs, b->name);
	if (dm_run_read(path, dm, sizeof(dm)) >= 0) {
		/* a volume's name is its creator's, newlines allowed: never
		 * a line of the report of its own (escaped by driverfsctl) */
		for (char *c = dm; *c; c++)
			if (*c == '\n')
				*c = '?';
		snprintf(buf, size, "%s (%s, holding %s)", b->name, dm, b->via);
	}
	else
		snprintf(buf, size, "%s (holding %s)", b->name, b->via);
}

static void check_mounts(const struct dm_inuse_roots *r, struct out *o,
			 const struct things *blocks)
{
	char path[PATH_MAX], line[PATH_MAX * 2];
	snprintf(path, sizeof(path), "%s/self/mountinfo", r->proc);
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char devt[32], mnt[PATH_MAX];
		if (sscanf(line, "%*s %*s %31s %*s %4095s", devt, mnt) != 2)
			continue;
		for (size_t i = 0; i < blocks->n; i++) {
			if (!blocks->v[i].devt[0] || strcmp(blocks->v[i].devt, devt) != 0)
				continue;
			char what[3 * NAME_LEN + 32], pub[4 * NAME_LEN + 64];
			describe(r, &blocks->v[i], what, sizeof(what));
			/* the daemon's mount points (its namespace's, /proc's
			 * own for others may differ): root's alone */
			snprintf(pub, sizeof(pub), "%s is mounted (where: details for root only)",
				 what);
			reason_as(o, pub, "%s is mounted at %s", what, mnt);
		}
	}
	fclose(f);
}

static void check_swaps(const struct dm_inuse_roots *r, struct out *o,
			 const struct things *blocks)
{
	char path[PATH_MAX], line[PATH_MAX + 128];
	snprintf(path, sizeof(path), "%s/swaps", r->proc);
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char file[PATH_MAX];
		if (sscanf(line, "%4095s", file) != 1 || file[0] != '/')
			continue; /* the header */
		const char *base = strrchr(file, '/') + 1;
		for (size_t i = 0; i < blocks->n; i++) {
			const struct thing *b = &blocks->v[i];
			if (strcmp(base, b->name) != 0 && strcmp(file, b->node) != 0)
				continue;
			char what[3 * NAME_LEN + 32];
			describe(r, b, what, sizeof(what));
			reason(o, "%s is used as swap", what);
		}
	}
	fclose(f);
}

static void check_holders(const struct dm_inuse_roots *r, struct out *o,
			 const struct things *blocks)
{
	for (size_t i = 0; i < blocks->n; i++) {
		const struct thing *b = &blocks->v[i];
		if (!b->via[0] || b->namespace)
			continue; /* the subtree's own: in use only when used */
		char what[3 * NAME_LEN + 32];
		describe(r, b, what, sizeof(what));
		reason(o, "%s", what);
	}
}

/* An IPv4 route's destination, from /proc/net/route's hex. */
static void route4(const char *hex, const char *mask, char *buf, size_t size)
{
	unsigned long d = strtoul(hex, NULL, 16), m = strtoul(mask, NULL, 16);
	int bits = __builtin_popcountl(m);
	if (d == 0 && m == 0)
		snprintf(buf, size, "the default route");
	else
		snprintf(buf, size, "a route to %lu.%lu.%lu.%lu/%d", d & 0xff, (d >> 8) & 0xff,
			 (d >> 16) & 0xff, (d >> 24) & 0xff, bits);
}

static void check_routes(const struct dm_inuse_roots *r, struct out *o, const struct things *nets)
{
	char path[PATH_MAX], line[512];
	snprintf(path, sizeof(path), "%s/net/route", r->proc);
	FILE *f = fopen(path, "re");
	if (f) {
		while (fgets(line, sizeof(line), f)) {
			char iface[NAME_LEN], dest[16], gw[16], mask[16];
			if (sscanf(line, "%63s %15s %15s %*s %*s %*s %*s %15s", iface, dest, gw,
				   mask) != 4 ||
			    !isxdigit((unsigned char)dest[0]))
				continue;
			for (size_t i = 0; i < nets->n; i++)
				if (strcmp(iface, nets->v[i].name) == 0) {
					char what[64];
					route4(dest, mask, what, sizeof(what));
					reason(o, "interface %s carries %s", iface, what);
				}
		}
		fclose(f);
	}
	snprintf(path, sizeof(path), "%s/net/ipv6_route", r->proc);
	f = fopen(path, "re");
	if (!f)
		return;
	bool seen[64] = { false };
	while (fgets(line, sizeof(line), f)) {
		char iface[NAME_LEN], dest[40];
		unsigned plen;
		if (sscanf(line, "%39s %x %*s %*s %*s %*s %*s %*s %*s %63s", dest, &plen, iface) != 3)
			continue;
		/* link-local and multicast routes every interface has */
		if (strncmp(dest, "fe80", 4) == 0 || strncmp(dest, "ff00", 4) == 0)
			continue;
		for (size_t i = 0; i < nets->n && i < 64; i++)
			if (strcmp(iface, nets->v[i].name) == 0 && !seen[i]) {
				seen[i] = true;
				reason(o, "interface %s carries IPv6 routes", iface);
			}
	}
	fclose(f);
}

static void check_open_nodes(const struct dm_inuse_roots *r, struct out *o,
			     const struct things *nodes)
{
	DIR *procs = opendir(r->proc);
	if (!procs)
		return;
	bool real = strcmp(r->proc, "/proc") == 0;
	struct dirent *p;
	while ((p = readdir(procs))) {
		char *end;
		long pid = strtol(p->d_name, &end, 10);
		if (*end || pid <= 0 || (real && pid == getpid()))
			continue;
		char dir[PATH_MAX];
		snprintf(dir, sizeof(dir), "%s/%ld/fd", r->proc, pid);
		DIR *fds = opendir(dir);
		if (!fds)
			continue;
		struct dirent *e;
		bool *held = calloc(nodes->n ? nodes->n : 1, sizeof(*held));
		while (held && (e = readdir(fds))) {
			char link[PATH_MAX * 2], target[PATH_MAX];
			snprintf(link, sizeof(link), "%s/%s", dir, e->d_name);
			ssize_t n = readlink(link, target, sizeof(target) - 1);
			if (n <= 0)
				continue;
			target[n] = '\0';
			for (size_t i = 0; i < nodes->n; i++)
				if (!held[i] && strcmp(target, nodes->v[i].node) == 0)
					held[i] = true;
		}
		closedir(fds);
		char comm[64] = "?", path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/%ld/comm", r->proc, pid);
		if (dm_run_read(path, comm, sizeof(comm)) < 0)
			snprintf(comm, sizeof(comm), "?");
		/* a process names itself, newlines included: quoted as it is
		 * (driverfsctl escapes what reaches a terminal), but never a
		 * line of the report of its own (a "failed: ..." a reader would
		 * take for the daemon's) */
		for (char *c = comm; *c; c++)
			if (*c == '\n')
				*c = '?';
		for (size_t i = 0; held && i < nodes->n; i++)
			if (held[i]) {
				/* other users' processes, which /proc hides
				 * from them: root's alone, nor how many */
				char pub[PATH_MAX + 160], node[PATH_MAX + 96];
				if (nodes->v[i].vfio)
					snprintf(node, sizeof(node), "%.4000s (VFIO, %s on %s)",
						 nodes->v[i].node, nodes->v[i].via, nodes->v[i].driver);
				else
					snprintf(node, sizeof(node), "%.4000s", nodes->v[i].node);
				snprintf(pub, sizeof(pub),
					 "%.4090s is open in a process (which: details for root only)",
					 node);
				reason_as(o, pub, "%s is open in process %ld (%s)", node, pid, comm);
			}
		free(held);
	}
	closedir(procs);
}

bool dm_inuse_is_vfio_driver(const char *drv)
{
	size_t l = strlen(drv);
	return strcmp(drv, "vfio-pci") == 0 ||
	       (l > 8 && (strcmp(drv + l - 8, "vfio-pci") == 0 || strcmp(drv + l - 8, "vfio_pci") == 0));
}

/* The VFIO node /dev/vfio/@node of @name (bound to @drv) in @nodes. */
static void add_vfio_node(struct things *nodes, const char *node, const char *drv,
			  const char *name)
{
	char key[NAME_LEN];
	snprintf(key, sizeof(key), "vfio:%.40s", node);
	struct thing *x = add(nodes, key);
	if (!x)
		return; /* known: a group's members share it */
	snprintf(x->node, sizeof(x->node), "/dev/vfio/%.40s", node);
	snprintf(x->driver, sizeof(x->driver), "%s", drv);
	snprintf(x->via, sizeof(x->via), "%s", name);
	x->vfio = true;
}

/* A device bound to a vfio driver (read in sysfs: the kernel's binding
 * now) is held by whoever has its VFIO nodes open: its IOMMU group's
 * /dev/vfio/G (a VM, DPDK; /dev/vfio/noiommu-G in the kernel's no-IOMMU
 * mode) and its iommufd cdev /dev/vfio/devices/vfioN. */
static void add_vfio_nodes(const struct dm_inuse_roots *r, struct things *nodes,
			   const char *devpath, const char *name)
{
	char devdir[PATH_MAX], drv[NAME_LEN], group[NAME_LEN], node[NAME_LEN];
	if (!devpath || (size_t)snprintf(devdir, sizeof(devdir), "%s%s", r->sysfs, devpath) >= sizeof(devdir))
		return;
	dm_run_read_link_base(devdir, "driver", drv, sizeof(drv));
	if (!dm_inuse_is_vfio_driver(drv))
		return;
	dm_run_read_link_base(devdir, "iommu_group", group, sizeof(group));
	if (group[0] && dm_name_is_plain(group, strlen(group))) {
		add_vfio_node(nodes, group, drv, name);
		snprintf(node, sizeof(node), "noiommu-%.40s", group);
		add_vfio_node(nodes, node, drv, name);
	}
	/* the cdev's directory, vfio-dev/vfioN */
	char dir[PATH_MAX + 16];
	snprintf(dir, sizeof(dir), "%s/vfio-dev", devdir);
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (strncmp(e->d_name, "vfio", 4) == 0 &&
		    dm_name_is_plain(e->d_name, strlen(e->d_name))) {
			snprintf(node, sizeof(node), "devices/%.40s", e->d_name);
			add_vfio_node(nodes, node, drv, name);
		}
	if (d)
		closedir(d);
}

int dm_inuse_check(const struct dm_inuse_roots *roots, struct dm_device *dev, char *buf,
		   size_t size, char *pub, size_t pub_size)
{
	struct dm_inuse_roots rr = {
		.sysfs = roots && roots->sysfs ? roots->sysfs : "/sys",
		.proc = roots && roots->proc ? roots->proc : "/proc",
	};
	const struct dm_inuse_roots *r = &rr;
	struct dm_model *m = dm_device_get_model(dev);
	struct subtree s = { 0 };
	dm_model_read_lock(m);
	collect(dev, &s);
	dm_model_unlock(m);

	struct things blocks = { 0 }, nets = { 0 }, nodes = { 0 }, ctrls = { 0 };
	for (size_t i = 0; i < s.n; i++) {
		char devt[32] = "", node[PATH_MAX] = "";
		struct dm_device *dev_i = s.v[i].dev;
		(void)dm_device_get_value(dev_i, "dev", devt, sizeof(devt));
		(void)dm_device_get_value(dev_i, "devnode", node, sizeof(node));
		const char *name = dm_device_get_sysname(dev_i);
		const char *cls = s.v[i].cls;
		struct thing *x;
		if (cls && strcmp(cls, "block") == 0 && (x = add(&blocks, name))) {
			snprintf(x->devt, sizeof(x->devt), "%s", devt);
			snprintf(x->node, sizeof(x->node), "%s", node);
		} else if (cls && strcmp(cls, "net") == 0) {
			add(&nets, name);
		} else if (cls && strcmp(cls, "nvme") == 0) {
			add(&ctrls, name);
		}
		if (node[0] && (x = add(&nodes, name)))
			snprintf(x->node, sizeof(x->node), "%s", node);
		add_vfio_nodes(r, &nodes, dm_device_get_devpath(dev_i), name);
		dm_device_unref(dev_i);
	}
	bool failed = s.failed;
	free(s.v);
	add_nvme_namespaces(r, &blocks, &ctrls);
	free(ctrls.v);
	size_t n_own = blocks.n;
	for (size_t i = 0; i < n_own; i++) {
		char name[NAME_LEN];
		snprintf(name, sizeof(name), "%s", blocks.v[i].name);
		add_holders(r, &blocks, name, name);
	}
	/* a holder's node (and a namespace's) counts as the subtree's */
	for (size_t i = 0; i < blocks.n; i++) {
		if (i < n_own && !blocks.v[i].namespace)
			continue; /* added with the subtree's nodes */
		struct thing *x = add(&nodes, blocks.v[i].name);
		if (x)
			snprintf(x->node, sizeof(x->node), "%s", blocks.v[i].node);
	}

	struct out o = {
		.full = { .buf = buf, .size = size, .len = strlen(buf) },
		.pub = { .buf = pub, .size = pub_size, .len = pub ? strlen(pub) : 0 },
	};
	if (!failed) {
		check_mounts(r, &o, &blocks);
		check_swaps(r, &o, &blocks);
		check_holders(r, &o, &blocks);
		check_routes(r, &o, &nets);
		check_open_nodes(r, &o, &nodes);
	}
	free(blocks.v);
	free(nets.v);
	free(nodes.v);
	return failed ? -ENOMEM : o.n;
}
