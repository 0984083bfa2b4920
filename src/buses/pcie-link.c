/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* pcie-link.c - a PCIe device's link, told hop by hop (pcie-link.h). */
#include "pcie-link.h"

#include "drivers/runner.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The PCIe capability's device/port types (PCI_EXP_TYPE_*). */
enum {
	TYPE_ENDPOINT = 0,
	TYPE_LEG_END = 1,
	TYPE_ROOT_PORT = 4,
	TYPE_UPSTREAM = 5,
	TYPE_DOWNSTREAM = 6,
	TYPE_PCIE_BRIDGE = 7, /* PCIe to PCI: its link is above it */
	TYPE_PCI_BRIDGE = 8, /* PCI to PCIe: its link is below it */
	TYPE_UNKNOWN = -1,
};

/* A path's deepest walk: PCIe hierarchies are a few switches deep. */
#define HOPS_MAX 16

/* One end of a link, as its function's sysfs directory shows it. */
struct end {
	unsigned speed, width, max_speed, max_width;
	int type;
};

unsigned dm_pcie_speed_parse(const char *text)
{
	/* "2.5 GT/s PCIe" ... "64.0 GT/s PCIe" (drivers/pci/pci.h PCI_SPEED2STR) */
	unsigned whole = 0, tenth = 0;
	const char *p = text;
	if (*p < '0' || *p > '9')
		return 0;
	while (*p >= '0' && *p <= '9' && whole < 1000)
		whole = whole * 10 + (unsigned)(*p++ - '0');
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return 0;
		tenth = (unsigned)(*p++ - '0');
	}
	if (strncmp(p, " GT/s", 5) != 0 || whole >= 1000)
		return 0;
	return whole * 10 + tenth;
}

const char *dm_pcie_link_state_name(enum dm_pcie_link_state s)
{
	switch (s) {
	case DM_PCIE_LINK_OK:
		return "ok";
	case DM_PCIE_LINK_DEGRADED:
		return "degraded";
	case DM_PCIE_LINK_IDLE:
		return "idle";
	case DM_PCIE_LINK_DOWN:
		return "down";
	}
	return "?";
}

static int read_attr(const char *dir, const char *name, char *buf, size_t size)
{
	char path[PATH_MAX];
	int n = snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	return dm_run_read(path, buf, size);
}

static bool read_uint(const char *dir, const char *name, unsigned *ret)
{
	char buf[32], *end;
	if (read_attr(dir, name, buf, sizeof(buf)) <= 0)
		return false;
	errno = 0;
	unsigned long v = strtoul(buf, &end, 10);
	if (end == buf || *end || errno || v > 64)
		return false;
	*ret = (unsigned)v;
	return true;
}

static bool read_speed(const char *dir, const char *name, unsigned *ret)
{
	char buf[32];
	if (read_attr(dir, name, buf, sizeof(buf)) <= 0)
		return false;
	*ret = dm_pcie_speed_parse(buf);
	return true;
}

/* "/sys/a/b" to "/sys/a" in @buf; false at the top. */
static bool parent_dir(const char *dir, char *buf, size_t size);

/* Whether @dir is a PCI function: it has a class. A bridge's class is
 * 0x0604xx. */
static bool pci_class(const char *dir, bool *bridge)
{
	char buf[32];
	if (read_attr(dir, "class", buf, sizeof(buf)) <= 0 || strncmp(buf, "0x", 2) != 0)
		return false;
	*bridge = strncmp(buf + 2, "0604", 4) == 0;
	return true;
}

/* Which way the function at @dir faces, told from sysfs's class files
 * alone (never the config space: a device's config read can take seconds
 * or hang, and a reader of pcie_link/ or of the metrics file must not wait
 * for it, docs/design.md §6.7): a function that is no bridge is an
 * endpoint; a bridge whose parent is no PCI function is a root port; one
 * below a root or downstream port is a switch's upstream port (or a
 * PCIe-to-PCI bridge: both face up); one below an upstream port is a
 * downstream port. */
static int port_type(const char *dir)
{
	bool bridge;
	if (!pci_class(dir, &bridge))
		return TYPE_UNKNOWN;
	if (!bridge)
		return TYPE_ENDPOINT;
	char up[PATH_MAX];
	strncpy(up, dir, sizeof(up) - 1);
	up[sizeof(up) - 1] = '\0';
	/* the bridges above it, up to the first that is no bridge or no
	 * function: their count's parity says which way it faces */
	int bridges = 0;
	for (int k = 0; k < HOPS_MAX; k++) {
		char next[PATH_MAX];
		bool b;
		if (!parent_dir(up, next, sizeof(next)) || !pci_class(next, &b) || !b)
			break;
		bridges++;
		memcpy(up, next, strlen(next) + 1);
	}
	/* 0 above: a root port; then up, down, up ... */
	return bridges == 0 ? TYPE_ROOT_PORT : bridges % 2 ? TYPE_UPSTREAM : TYPE_DOWNSTREAM;
}

static int read_end(const char *dir, struct end *e)
{
	if (!read_speed(dir, "current_link_speed", &e->speed) ||
	    !read_uint(dir, "current_link_width", &e->width) ||
	    !read_speed(dir, "max_link_speed", &e->max_speed) ||
	    !read_uint(dir, "max_link_width", &e->max_width))
		return -ENOENT;
	e->type = port_type(dir);
	return 0;
}

static bool faces_down(int type)
{
	return type == TYPE_ROOT_PORT || type == TYPE_DOWNSTREAM || type == TYPE_PCI_BRIDGE;
}

static bool faces_up(int type)
{
	return type == TYPE_ENDPOINT || type == TYPE_LEG_END || type == TYPE_UPSTREAM ||
	       type == TYPE_PCIE_BRIDGE;
}

/* "/sys/a/b" to "/sys/a" in @buf; false at the top. */
static bool parent_dir(const char *dir, char *buf, size_t size)
{
	const char *slash = strrchr(dir, '/');
	size_t len = slash ? (size_t)(slash - dir) : 0;
	if (len <= strlen("/sys/devices") || len >= size)
		return false;
	memcpy(buf, dir, len);
	buf[len] = '\0';
	return true;
}

/* A PCI function's name: "dddd:bb:dd.f". */
static bool is_function_name(const char *s)
{
	unsigned d, b, dv, f;
	char tail;
	return strlen(s) == 12 && sscanf(s, "%4x:%2x:%2x.%1x%c", &d, &b, &dv, &f, &tail) == 4;
}

/* The first function below the port @dir that shows a link: the other end
 * of the port's link, in @buf. */
static bool first_function_below(const char *dir, char *buf, size_t size, struct end *e)
{
	DIR *d = opendir(dir);
	if (!d)
		return false;
	char best[32] = "";
	struct dirent *de;
	while ((de = readdir(d)))
		if (is_function_name(de->d_name) && (!best[0] || strcmp(de->d_name, best) < 0)) {
			char path[PATH_MAX];
			struct end tmp;
			int n = snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			if (n > 0 && (size_t)n < sizeof(path) && read_end(path, &tmp) == 0)
				snprintf(best, sizeof(best), "%s", de->d_name);
		}
	closedir(d);
	if (!best[0])
		return false;
	int n = snprintf(buf, size, "%s/%s", dir, best);
	return n > 0 && (size_t)n < size && read_end(buf, e) == 0;
}

/* Whether the function at @dir is asleep: runtime-suspended or in D3. */
static bool asleep(const char *dir)
{
	char buf[32];
	if (read_attr(dir, "power/runtime_status", buf, sizeof(buf)) > 0 &&
	    strcmp(buf, "suspended") == 0)
		return true;
	return read_attr(dir, "power_state", buf, sizeof(buf)) > 0 && strncmp(buf, "D3", 2) == 0;
}

static unsigned min_known(unsigned a, unsigned b)
{
	return !a ? b : !b ? a : a < b ? a : b;
}

int dm_pcie_link_read(const char *sysdir, struct dm_pcie_link *ret)
{
	struct end x, other;
	char path[PATH_MAX];
	if (read_end(sysdir, &x) < 0)
		return -ENOENT;
	/* the link's lower end, whose power state tells an idle link */
	const char *lower = sysdir;
	bool paired = false;
	if (faces_down(x.type)) {
		paired = first_function_below(sysdir, path, sizeof(path), &other);
		if (paired)
			lower = path;
	} else if (parent_dir(sysdir, path, sizeof(path)) && read_end(path, &other) == 0 &&
		   (faces_up(x.type) ? faces_down(other.type) || other.type == TYPE_UNKNOWN
				     : x.type == TYPE_UNKNOWN)) {
		paired = true;
	}
	*ret = (struct dm_pcie_link){
		.speed = x.speed, .width = x.width,
		.dev_max_speed = x.max_speed, .dev_max_width = x.max_width,
		.max_speed = paired ? min_known(x.max_speed, other.max_speed) : x.max_speed,
		.max_width = paired ? min_known(x.max_width, other.max_width) : x.max_width,
	};
	if (!x.width || !x.speed)
		ret->state = DM_PCIE_LINK_DOWN;
	else if ((ret->max_speed && x.speed < ret->max_speed) ||
		 (ret->max_width && x.width < ret->max_width))
		ret->state = asleep(lower) ? DM_PCIE_LINK_IDLE : DM_PCIE_LINK_DEGRADED;
	else
		ret->state = DM_PCIE_LINK_OK;
	return 0;
}

int dm_pcie_link_bottleneck(const char *sysdir, char *where, size_t size,
			    struct dm_pcie_link *ret)
{
	char dir[PATH_MAX];
	if (snprintf(dir, sizeof(dir), "%s", sysdir) >= (int)sizeof(dir))
		return -ENAMETOOLONG;
	for (int k = 0; k < HOPS_MAX; k++) {
		if (dm_pcie_link_read(dir, ret) < 0)
			return -ENOENT; /* above the root port */
		if (ret->state == DM_PCIE_LINK_DEGRADED) {
			int n = snprintf(where, size, "%s", dir);
			return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
		}
		char up[PATH_MAX];
		if (!parent_dir(dir, up, sizeof(up)))
			return -ENOENT;
		memcpy(dir, up, strlen(up) + 1);
	}
	return -ENOENT;
}

/* ---- the pcie_link/ directory ---- */

static int sys_dir(struct dm_device *dev, char *buf, size_t size)
{
	const char *devpath = dm_device_get_devpath(dev);
	if (!devpath)
		return -ENOENT;
	int n = snprintf(buf, size, "/sys%s", devpath);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static int put_speed(char *buf, size_t size, unsigned speed)
{
	return speed ? snprintf(buf, size, "%u.%u GT/s PCIe\n", speed / 10, speed % 10)
		     : snprintf(buf, size, "Unknown\n");
}

static int link_show(struct dm_device *dev, const struct dm_attribute *attr, char *buf,
		     size_t size)
{
	char dir[PATH_MAX];
	struct dm_pcie_link l;
	int r = sys_dir(dev, dir, sizeof(dir));
	if (r < 0 || (r = dm_pcie_link_read(dir, &l)) < 0)
		return r;
	const char *name = attr->name;
	if (strcmp(name, "speed") == 0)
		return put_speed(buf, size, l.speed);
	if (strcmp(name, "max_speed") == 0)
		return put_speed(buf, size, l.max_speed);
	if (strcmp(name, "width") == 0)
		return snprintf(buf, size, "%u\n", l.width);
	if (strcmp(name, "max_width") == 0)
		return snprintf(buf, size, "%u\n", l.max_width);
	if (strcmp(name, "state") == 0)
		return snprintf(buf, size, "%s\n", dm_pcie_link_state_name(l.state));
	/* bottleneck */
	char where[PATH_MAX];
	if (dm_pcie_link_bottleneck(dir, where, sizeof(where), &l) < 0)
		return snprintf(buf, size, "none\n");
	const char *fn = strrchr(where, '/');
	return snprintf(buf, size, "%s %u.%u GT/s x%u of %u.%u GT/s x%u\n", fn ? fn + 1 : where,
			l.speed / 10, l.speed % 10, l.width, l.max_speed / 10, l.max_speed % 10,
			l.max_width);
}

#define LINK_ATTR(_name)                                                                \
	static const struct dm_attribute _name##_attr = {                               \
		.name = #_name, .mode = 0444, .flags = DM_ATTR_LIVE, .show = link_show, \
	}
LINK_ATTR(speed);
LINK_ATTR(width);
LINK_ATTR(max_speed);
LINK_ATTR(max_width);
LINK_ATTR(state);
LINK_ATTR(bottleneck);

static const struct dm_attribute *const link_attrs[] = {
	&speed_attr, &width_attr, &max_speed_attr, &max_width_attr, &state_attr, &bottleneck_attr,
	NULL,
};

/* Under the model lock: stats of sysfs, which block on nothing. */
static bool link_visible(struct dm_device *dev, const struct dm_attribute *attr)
{
	(void)attr;
	char dir[PATH_MAX], path[PATH_MAX];
	if (sys_dir(dev, dir, sizeof(dir)) < 0)
		return false;
	static const char *const need[] = { "current_link_speed", "current_link_width",
					     "max_link_speed", "max_link_width" };
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		struct stat st;
		int n = snprintf(path, sizeof(path), "%s/%s", dir, need[i]);
		if (n < 0 || (size_t)n >= sizeof(path) || stat(path, &st) < 0 || !S_ISREG(st.st_mode))
			return false;
	}
	return true;
}

const struct dm_attribute_group dm_pcie_link_group = {
	.name = "pcie_link",
	.attrs = link_attrs,
	.is_visible = link_visible,
};
