/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pcie-link.h - a PCIe device's link, told hop by hop (docs/design.md §6.10).
 *
 * The kernel shows each end of a link by itself: a function's
 * current_link_speed/width (its Link Status) and max_link_speed/width (its
 * Link Capabilities). Whether a link trained below what it could do needs
 * both ends: the function and the port above it (a root port or a switch's
 * downstream port), and a device behind a switch also sits behind the
 * switch's own link. A device's pcie_link/ directory says:
 *   pcie_link/speed, width          the link's current speed and width
 *   pcie_link/max_speed, max_width  the most both of its ends can do
 *   pcie_link/state                 ok | degraded | idle | down
 *   pcie_link/bottleneck            the first degraded link on the way to
 *                                   the root port, this one included:
 *                                   "<function> <speed> x<width> of <speed>
 *                                   x<width>", or "none"
 * A function's link is the one above it (an endpoint, a switch's upstream
 * port, a PCIe-to-PCI bridge); a root or downstream port's is the one
 * below it, to its first function. Which a function is, its class and its
 * ancestors' say (bridges alternate down the tree: root port, upstream,
 * downstream ...): the config space, whose reads a device can make take
 * seconds, is never read. "idle" is a link below what it could
 * do whose lower end is runtime-suspended or in D3, where a slower link is
 * power saving, not a fault. Values are read from sysfs at each read.
 * The directory is there only for a function with both link attributes.
 */
#ifndef DM_PCIE_LINK_H
#define DM_PCIE_LINK_H

#include "core/model.h"

#include <stdbool.h>

extern const struct dm_attribute_group dm_pcie_link_group;

enum dm_pcie_link_state {
	DM_PCIE_LINK_OK,
	DM_PCIE_LINK_DEGRADED,
	DM_PCIE_LINK_IDLE,
	DM_PCIE_LINK_DOWN,
};

/* One link as sysfs shows its two ends. Speeds in tenths of GT/s (80:
 * 8.0 GT/s), 0 when unknown. */
struct dm_pcie_link {
	unsigned speed, width; /* now */
	unsigned max_speed, max_width; /* the most both ends can do */
	unsigned dev_max_speed, dev_max_width; /* the most the function itself can do */
	enum dm_pcie_link_state state;
};

/* The link of the function whose sysfs directory is @sysdir ("/sys/..."):
 * 0, -ENOENT when it has none (not PCIe, no link attributes). */
int dm_pcie_link_read(const char *sysdir, struct dm_pcie_link *ret);
/* The first degraded link from @sysdir's up to the root port: 0 and its
 * lower end's directory in @where (@size bytes) with the link in *ret, or
 * -ENOENT when none is. */
int dm_pcie_link_bottleneck(const char *sysdir, char *where, size_t size,
			    struct dm_pcie_link *ret);
/* "8.0 GT/s PCIe" as the kernel prints it: tenths of GT/s, 0 for another
 * text ("Unknown"). */
unsigned dm_pcie_speed_parse(const char *text);
const char *dm_pcie_link_state_name(enum dm_pcie_link_state s);

#endif
