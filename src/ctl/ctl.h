/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ctl.h - what driverfsctl's commands share: reading a driverfs mount's
 * files, walking its device directories, the --bus/--class filter, and
 * error messages, a command's arguments and its --json output. Everything
 * here only reads and writes files of the mount.
 */
#ifndef DM_CTL_H
#define DM_CTL_H

#include <stdbool.h>
#include <stddef.h>

/* Exit statuses. */
enum { CTL_OK = 0, CTL_FAILED = 1, CTL_USAGE = 2 };

/* Prints "driverfsctl: WHAT: MESSAGE (ENAME)" (MESSAGE: @msg, or errno's
 * text when NULL) and returns CTL_FAILED. @err is a positive errno. */
int ctl_fail(const char *what, const char *msg, int err);
/* The same for a device argument: "driverfsctl: DEV: no such device (ENOENT)". */
int ctl_fail_device(const char *dev, int err);
/* "driverfsctl: CMD: MESSAGE" and returns CTL_USAGE. */
int ctl_usage_error(const char *cmd, const char *msg, const char *arg);

/* Opens MNT/root, checking that it is a driverfs mount (the whole
 * system's power file is at its top); prints why not and returns -1. */
int ctl_open_root(const char *mnt);

/* Where driverfsd's own entry @own ("power", "name", "driver", "pm" ...)
 * of the device at @path is, relative to the root/ fd @rootfd, into @buf
 * (returned): "<path>/<own>", or "<path>/driverfs:<own>" where a kernel's
 * entry has the name (docs/design.md §6.2); "../<own>" for the root
 * device, whose files are at the top of the mount. */
const char *ctl_own(int rootfd, const char *path, const char *own, char *buf, size_t size);
/* The same as a path: MNT/root/<rel>/... (MNT/<own> for the root device). */
const char *ctl_own_file(const char *mnt, const char *rel, const char *own, char *buf,
			 size_t size);
/* ctl_read() of that entry. */
int ctl_read_own(int rootfd, const char *path, const char *own, char *buf, size_t size);

/* The path under root/ of @dev (a path under root/ or a bus id) into @out
 * ("" for root). 0, -ENOENT, -ENOTUNIQ (a bus id on two buses) or -EINVAL. */
int ctl_resolve(const char *mnt, const char *dev, char *out, size_t size);

/* The path under root/ that a link's target names ("../../../root/a/b" ->
 * "a/b", "../root" -> ""); NULL when it names no device. */
const char *ctl_link_device(const char *target);

/* Reads the file @file of the directory @dir (relative to @dirfd, "" for
 * @dirfd itself) into @buf: the length read without one trailing newline,
 * or -errno. */
int ctl_read(int dirfd, const char *dir, const char *file, char *buf, size_t size);
/* The same, as read: nothing taken off (@buf is still NUL-terminated). */
int ctl_read_raw(int dirfd, const char *dir, const char *file, char *buf, size_t size);
/* The same, "" when it cannot, and without any newline after the first line. */
void ctl_read_line(int dirfd, const char *dir, const char *file, char *buf, size_t size);
/* The last component of the link @dir/@link's target into @buf ("" when
 * there is no such link); returns @buf, or NULL when there is none. */
const char *ctl_link_name(int dirfd, const char *dir, const char *link, char *buf, size_t size);
/* The whole target of the link @dir/@link into @buf; returns @buf, or NULL
 * when there is no such link. Its last component: ctl_link_base(). */
const char *ctl_link_target(int dirfd, const char *dir, const char *link, char *buf,
			    size_t size);
const char *ctl_link_base(const char *target);
/* Whether a device's driver link @target leads to a class driver
 * (class/<class>/drivers/<name>: docs/design.md §7.6), not a bus's. */
bool ctl_is_class_driver(const char *target);

/* The child devices of the device @path (relative to the root/ fd
 * @rootfd) in the model's order (natural order, as the global list has
 * them): a malloc()ed array of *ret_n malloc()ed names; free with
 * ctl_names_free(). 0 or -errno. */
/* Whether @path (under the root/ fd @rootfd) is a device's directory rather
 * than an attribute directory (pm/, queue/): it has a power file. */
bool ctl_is_device_dir(int rootfd, const char *path);
int ctl_children(int rootfd, const char *path, char ***ret, size_t *ret_n);
void ctl_names_free(char **names, size_t n);
/* The device links of the device at @path: the devices (paths under root/)
 * its @which ("suppliers" or "consumers") entries point to, in name order,
 * into *ret (free with ctl_names_free()); none when it has no such
 * directory. 0 or -errno. */
int ctl_device_links(int rootfd, const char *path, const char *which, char ***ret, size_t *ret_n);
/* "@path/@name" (or @name under root) into @out. */
void ctl_join(char *out, size_t size, const char *path, const char *name);

/* A sorted set of device paths. */
struct ctl_set {
	char **paths;
	size_t n, cap;
};
int ctl_set_add(struct ctl_set *s, const char *path);
void ctl_set_sort(struct ctl_set *s);
bool ctl_set_has(const struct ctl_set *s, const char *path);
void ctl_set_free(struct ctl_set *s);

/* --bus BUS and --class CLASS: the devices on BUS or of CLASS, and, to
 * keep the tree's shape, their ancestors. */
struct ctl_filter {
	bool on;
	struct ctl_set match; /* matching devices */
	struct ctl_set kept; /* matching devices and their ancestors */
};
/* Fills @f from the mount; prints the error (naming the bus or class) and
 * returns CTL_FAILED when there is no such bus or class. */
int ctl_filter_init(struct ctl_filter *f, const char *mnt, const char *bus, const char *cls);
bool ctl_filter_keeps(const struct ctl_filter *f, const char *path);
bool ctl_filter_matches(const struct ctl_filter *f, const char *path);
void ctl_filter_free(struct ctl_filter *f);

/* A command's options: the flags given, and the filter's values. */
enum {
	CTL_OPT_JSON = 1 << 0,
	CTL_OPT_DRY_RUN = 1 << 1,
	CTL_OPT_PM_ORDER = 1 << 2,
	CTL_OPT_FILTER = 1 << 3,
	CTL_OPT_OUTPUT = 1 << 4, /* -o NAME[,NAME...] */
	CTL_OPT_SANITIZE = 1 << 5,
};

struct ctl_args {
	unsigned flags; /* CTL_OPT_* given */
	const char *bus, *cls;
	const char *output; /* -o: the files to show of each device, comma-separated */
	const char *arg; /* the one positional argument, or NULL */
};

/* Parses a command's arguments: the options in @allowed and up to
 * @max_args positional ones (@need_arg: exactly one). CTL_OK, or prints
 * the error and returns CTL_USAGE. */
int ctl_parse_args(const char *cmd, int argc, char **argv, unsigned allowed, int max_args,
		   bool need_arg, struct ctl_args *a);

/* Text for a terminal (every command's human output): @len bytes of @s to
 * standard output, each byte that is not printable ASCII escaped (\n, \t,
 * else \xNN: C0 and C1 controls, DEL, ESC sequences, invalid UTF-8, and
 * valid UTF-8 too, whose continuation bytes an 8-bit terminal takes for C1
 * controls), and '\' as \\. A device, a snapshot or a process name
 * cannot move the cursor, retitle the window or forge a line. --json keeps
 * the exact text. */
enum {
	CTL_TEXT_QUOTED = 1 << 0, /* '"' as \" too, for text shown in quotes */
	CTL_TEXT_LINES = 1 << 1, /* a newline stays one (a report of several lines) */
};
void ctl_put_text(const char *s, size_t len, unsigned flags);
/* ctl_put_text() of the string @s, no flags. */
void ctl_put(const char *s);

/* Prints a --json document, laid out as snapshots are. */
struct json_object;
void ctl_print_json(struct json_object *doc);

/* save.c: the model a mount shows, read from its files, as a snapshot
 * document (*ret, json_object_put() it; masked with @sanitize). CTL_OK,
 * or prints why not and returns CTL_FAILED. */
int ctl_read_model(const char *mnt, bool sanitize, struct json_object **ret);

#endif
