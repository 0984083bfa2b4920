/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * inode.h - the filesystem's node table.
 *
 * A FUSE inode number is an index into this table; each slot has a
 * generation that changes when the slot is reused, so a number the kernel
 * still holds can never reach another object. Nodes are never cast to or from
 * pointers. A node is found again by (parent inode, name) while it is the
 * current node for that name.
 *
 * Counts: nlookup is the kernel's lookup count (lookup/forget); a node holds
 * one model reference on its device or driver for as long as it exists,
 * separate from that count. Node 1 (the mount root) is never freed.
 *
 * Memory: after a full walk the kernel knows some twenty nodes per device,
 * so the table is most of the daemon's memory; a node is 48 bytes with its
 * generation, and its name (and group) is one shared, counted copy per
 * distinct string, not one per node (device "vendor" files share one).
 *
 * All functions take the table's own mutex; callers may hold the model's
 * read lock (the order is always model lock, then table), but for
 * fs_table_get(), which may take it (the lock is writer-first: a thread
 * must never take it twice).
 */
#ifndef DM_FS_INODE_H
#define DM_FS_INODE_H

#include "core/model.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

enum fs_kind {
	FS_TOP = 1, /* the mount root */
	FS_DEV, /* a device directory (root/ is the root device) */
	FS_GROUP, /* an attribute group subdirectory of a device, such as pm/ */
	FS_ATTR, /* an attribute file */
	FS_LINK_FROM_DEV, /* a device's "subsystem" or "driver" link, to its bus,
			   * class or driver */
	FS_BUSES, /* bus/ */
	FS_BUS, /* bus/<bus>/ */
	FS_BUS_DEVICES, /* bus/<bus>/devices/ */
	FS_BUS_DRIVERS, /* bus/<bus>/drivers/ */
	FS_DRIVER, /* bus/<bus>/drivers/<driver>/ */
	FS_DRV_ATTR, /* a driver's "kind" or "priority" file */
	FS_CLASSES, /* class/ */
	FS_CLASS, /* class/<class>/ */
	FS_CLASS_DEVICES, /* class/<class>/devices/ */
	FS_IFACE, /* class/<class>/<interface>/ */
	FS_LINK_TO_DEV, /* a link to a device directory, from a bus, driver or class */
	FS_DEV_SUPPLIERS, /* a device's suppliers/: a link per device link */
	FS_DEV_CONSUMERS, /* a device's consumers/ */
	FS_CLASS_DRIVERS, /* class/<class>/drivers/ */
	FS_LINK_TO_DRV, /* class/<class>/drivers/<bus>:<driver>, to the driver's directory */
};

/* The longest group path a node may have ("pm", "queue/iosched": the
 * device's attribute directories, nested), with its NUL. */
#define FS_GROUP_MAX 256

/* Whether a node of @kind is a symbolic link. */
static inline bool fs_kind_is_link(enum fs_kind kind)
{
	return kind == FS_LINK_FROM_DEV || kind == FS_LINK_TO_DEV || kind == FS_LINK_TO_DRV;
}

/* Whether a node of @kind is a directory (else a file or a link). */
static inline bool fs_kind_is_dir(enum fs_kind kind)
{
	return kind != FS_ATTR && kind != FS_DRV_ATTR && !fs_kind_is_link(kind);
}

/* What a node refers to; which fields are used depends on the kind. */
struct fs_target {
	enum fs_kind kind;
	struct dm_device *dev; /* FS_DEV, FS_GROUP, FS_ATTR, FS_LINK_FROM_DEV, FS_LINK_TO_DEV,
				* FS_DEV_SUPPLIERS, FS_DEV_CONSUMERS */
	union {
		struct dm_driver *drv; /* FS_DRIVER, FS_DRV_ATTR, FS_LINK_TO_DRV */
		struct dm_bus *bus; /* FS_BUS* */
		struct dm_class *class; /* FS_CLASS, FS_CLASS_DEVICES, FS_CLASS_DRIVERS */
		struct dm_interface *iface; /* FS_IFACE */
	};
	const char *group; /* FS_GROUP, FS_ATTR: the group name or NULL */
};

/* The references a target holds: on its device, and on its driver for
 * FS_DRIVER, FS_DRV_ATTR and FS_LINK_TO_DRV (a driver's files name it as its directory
 * does: a SIGHUP reload may unregister and free it while a node or a kept
 * listing still does). Buses, classes and interfaces are not counted: they
 * live as long as the model (model.h). */
void fs_target_ref(const struct fs_target *t);
void fs_target_unref(const struct fs_target *t);

struct fs_table;

int fs_table_new(struct fs_table **ret);
void fs_table_free(struct fs_table *t);

/*
 * Finds the current node of (@parent, @name) when it refers to @target, or
 * makes a new one (taking references), and counts one lookup. Returns the
 * inode and generation.
 */
int fs_table_lookup(struct fs_table *t, uint64_t parent, unsigned depth, const char *name,
		    const struct fs_target *target, uint64_t *ret_ino, uint64_t *ret_gen);
/* The inode of the current node for (@parent, @name) if any, else 0. */
uint64_t fs_table_peek(struct fs_table *t, uint64_t parent, const char *name);
/* Drops @n lookups; frees the node at zero and then returns true (its
 * number may name another node from then on, under a new generation). */
bool fs_table_forget(struct fs_table *t, uint64_t ino, uint64_t n);
/* A caller's copy of a node, holding its own references. */
struct fs_ref {
	struct fs_target t;
	char group[FS_GROUP_MAX];
	char name[256];
	uint64_t ino;
	uint64_t gen; /* with ino, names this node and no later one */
	uint64_t parent;
	unsigned depth;
};

/* Copies the node @ino (taking references; release with fs_ref_release()).
 * -ESTALE for a number not in use. A node taken over and not made yet
 * (fs_table_adopt()) is made first, which takes the model's read lock:
 * call without it. */
int fs_table_get(struct fs_table *t, uint64_t ino, struct fs_ref *ret);
void fs_ref_release(struct fs_ref *r);
size_t fs_table_count(struct fs_table *t);

/* Where a node is: for invalidating what the kernel cached of it. */
struct fs_place {
	uint64_t ino;
	uint64_t parent;
	bool dir; /* a directory: its listing may be cached */
	char name[256];
};

/* The places of every node that refers to @dev: *ret malloc()ed (NULL
 * when there is none), *ret_n of them. 0 or -ENOMEM. */
int fs_table_device_places(struct fs_table *t, const struct dm_device *dev,
			   struct fs_place **ret, size_t *ret_n);

/*
 * Handover (handover.h): the nodes the kernel holds, mirrored as they are
 * made and freed into memory shared with the next daemon of the same
 * connection (a memfd that outlives a killed daemon), which makes them
 * again under the same numbers and generations, each when first used
 * (fs_table_adopt()).
 */
struct fs_mirror_slot {
	/* the node's device's identity (dm_device_identity()), 0 for none:
	 * a device swapped at the same path is not the node's */
	uint64_t ident;
	uint32_t gen, parent;
	uint16_t depth;
	_Atomic uint8_t kind; /* 0: no node; written last */
	uint8_t keyed; /* the current node of its (parent, name) */
	uint32_t name_off; /* into the names */
	/* the lookups the kernel was answered, less those it forgot: written
	 * before a reply goes, so never below the kernel's own count (a
	 * FORGET the last daemon never read leaves it above: a node kept
	 * that could have gone, never one freed that the kernel holds) */
	_Atomic uint32_t nlookup;
	/* where its value comes from (fs_table_mirror_source()), for a next
	 * daemon to open it before it has a model: on FS_DEV, the offset of
	 * its devpath in the names (0: none yet); on FS_ATTR, FS_SOURCE_SYSFS
	 * when it is read through a backing from the sysfs file at its path
	 * below its device's node, FS_SOURCE_KEPT when it is a value whose
	 * pages the kernel keeps (keep_cache), with its mode's permission bits
	 * (FS_SOURCE_MODE_SHIFT); else 0. Written before it is set; cleared
	 * with the node. */
	_Atomic uint32_t source;
	/* what the kernel was last told of an FS_ATTR's attributes
	 * (fs_table_mirror_told()): its size + 1 in the high half, its mtime
	 * past the daemon's time base (the header's files_time) in ns in the
	 * low half; 0: nothing (yet) */
	_Atomic uint64_t told;
};
#define FS_SOURCE_SYSFS 0x1u
#define FS_SOURCE_KEPT 0x400u
#define FS_SOURCE_MODE_SHIFT 1
/* shared with every daemon of a connection, whatever its build */
_Static_assert(sizeof(struct fs_mirror_slot) == 40, "a mirrored node is 40 bytes");
struct fs_mirror {
	struct fs_mirror_slot *slots; /* by node number */
	size_t slots_cap;
	char *names; /* NUL-terminated, from offset 1 */
	size_t names_cap;
	_Atomic uint32_t *names_used, *high; /* names written; 1 + the highest node mirrored */
	_Atomic uint32_t *ok; /* 0: something did not fit; not to be taken over */
};
/* A node as read from a mirror. */
struct fs_saved_node {
	uint64_t ident;
	uint32_t ino, gen, parent;
	uint16_t depth;
	uint8_t kind;
	uint8_t keyed;
	uint16_t name_len;
	uint32_t nlookup;
};
/* From now on every node made or freed is mirrored in @m, those already
 * there at once; NULL: no more (before the mirror goes, and before the
 * table is freed: its nodes stay in the mirror for a successor). */
void fs_table_set_mirror(struct fs_table *t, const struct fs_mirror *m);
/* Calls @fn on every node @m holds, in number order, with its name (not
 * NUL-terminated: name_len bytes). -EINVAL when @m does not hold together,
 * else @fn's first non-zero return, or 0. */
int fs_mirror_each(const struct fs_mirror *m,
		   int (*fn)(const struct fs_saved_node *n, const char *name, void *data),
		   void *data);
/* How a node taken over is found again in the model: the object named
 * @name in the directory @dir (fs_view_find_locked(); called with the
 * model's read lock held). */
typedef int (*fs_find_fn)(struct dm_model *m, const struct fs_ref *dir, const char *name,
			  struct fs_target *ret, char group[FS_GROUP_MAX]);
/*
 * Takes over the nodes the mirror (fs_table_set_mirror(), first) holds,
 * on demand: the table, new, reserves each mirrored number (never handed
 * to another node while its slot has a kind) and indexes the current ones
 * by (parent, name), reading only the mirror (no model lookup). The mirror
 * is left as it is, right for a next daemon whatever this one does. A
 * node is made when first used, with its number, generation and the
 * mirror's lookup count (its parents first, each found by its parent and
 * name in @m with @find, of the same kind and, for a device's, the same
 * device: dm_device_identity()): by fs_table_get() of its number, or by
 * fs_table_lookup() of its name; one no longer there stays, unnamed, its
 * number reserved, until the kernel forgets it (its requests get
 * -ESTALE). A FORGET of a node not made yet lowers the mirror's count and
 * frees it at zero. @each is called on every node taken over (with the
 * table's lock held). The number of nodes taken over, -EINVAL for a
 * mirror that does not hold together, -ENOMEM, or @each's error.
 */
int fs_table_adopt(struct fs_table *t, struct dm_model *m, fs_find_fn find,
		   int (*each)(uint64_t ino, uint64_t parent, enum fs_kind kind, void *data),
		   void *data);
/* The nodes taken over and not made yet. */
size_t fs_table_pending(struct fs_table *t);
/* The node @ino is a sysfs attribute opened for passthrough from
 * "/sys@devpath/@rel", or (@rel NULL) a value whose pages the kernel
 * keeps: mirrored (its device's devpath once, on the device's node; @rel
 * only when it is its path below its device's node) so that a next daemon
 * answers its opens before it has a model (early.h). */
void fs_table_mirror_source(struct fs_table *t, uint64_t ino, const char *devpath,
			    const char *rel, unsigned mode);
/* The kernel is told that the file @ino's size is @size and its mtime
 * @mtime_ns past the daemon's time base: mirrored (written before the
 * reply goes, without the table's lock: of two replies racing, the
 * mirror may keep the one the kernel did not, which only costs the next
 * daemon an answer), so that a next daemon can say the same before it has
 * a model, and the kernel keeps the pages of a value kept (early.h). */
void fs_table_mirror_told(struct fs_table *t, uint64_t ino, uint64_t size, uint64_t mtime_ns);
/* What fs_table_mirror_told() mirrored of @ino: 0, or -ENOENT. */
int fs_mirror_told(const struct fs_mirror *m, uint64_t ino, uint64_t *ret_size,
		   uint32_t *ret_mtime_ns);
/* Where the mirrored node @ino's value comes from (mirrored so): its
 * source (FS_SOURCE_SYSFS with its file "/sys<devpath>/<rel>" in @buf,
 * or FS_SOURCE_KEPT with its device's "/sys<devpath>"), the length of
 * that "/sys<devpath>" into *ret_dir_len, its device's identity into
 * *ret_ident, its permission bits (as the daemon serves them) into
 * *ret_mode. Reads only @m,
 * checking whatever it holds (offsets, names, a devpath with no "." or
 * ".." in it). -ENOENT when @ino has none, -ENAMETOOLONG. */
int fs_mirror_source(const struct fs_mirror *m, uint64_t ino, char *buf, size_t size,
		     size_t *ret_dir_len, uint64_t *ret_ident, unsigned *ret_mode);
/* Whether the mirrored node @ino (FUSE_ROOT_ID too) is a directory: 0,
 * with, for a device's (its device's devpath mirrored), "/sys<devpath>"
 * in @buf, its length in *ret_len and the device's identity in
 * *ret_ident to check it by (0 and 0 for one of no device: the mount
 * root, bus/, class/ ...). -ENOENT when it is not one or its device's
 * devpath is not mirrored, -ENAMETOOLONG. Reads only @m, as
 * fs_mirror_source() does. */
int fs_mirror_dir(const struct fs_mirror *m, uint64_t ino, char *buf, size_t size,
		  size_t *ret_len, uint64_t *ret_ident);

#endif
