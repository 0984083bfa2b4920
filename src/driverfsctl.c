/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * driverfsctl.c - the command-line client. It only reads and writes files of
 * a driverfs mount (-m MNT, else $DRIVERFS_MOUNT, else /devices); it links
 * nothing of the daemon.
 */
#include <dirent.h>
#include <errno.h>
#include <json-c/json.h>
#include <fcntl.h>
#include <getopt.h>
#include <glob.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef DRIVERFSD_VERSION
#define DRIVERFSD_VERSION "0.1.0"
#endif

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: driverfsctl [-m MOUNT] COMMAND [ARGS]\n"
		"A client of a driverfs mount (-m, else $DRIVERFS_MOUNT, else /devices).\n"
		"\n"
		"Commands:\n"
		"  list [--json]              every device's path under root/, in the global\n"
		"                             order (depth first, parents first; resume's order)\n"
		"  tree [DEV] [--json]        the hierarchy (below DEV), with names, drivers\n"
		"                             and power states other than on\n"
		"  info DEV                   every file of DEV, its subsystem, driver and\n"
		"                             interface\n"
		"  dot                        the hierarchy as a Graphviz graph, coloured by\n"
		"                             bus or class (driverfsctl dot | dot -Tsvg)\n"
		"  suspend [DEV] [--dry-run]  suspend DEV's subtree, children first (default: the\n"
		"                             whole system); print the transition's journal\n"
		"  resume [DEV] [--dry-run]   resume DEV (its suspended ancestors first) and its\n"
		"                             subtree, parents first\n"
		"\n"
		"DEV is a path under root/ (pci0000:00/0000:00:02.0) or a bus id (0000:00:02.0,\n"
		"1-1.2). --dry-run records the order in root/power_log and calls no hook.\n"
		"--json prints, for each device, an object {\"path\", \"name\", \"driver\" (null when\n"
		"unbound), \"power\"}: list an array in the global order, tree the device with\n"
		"its \"children\" arrays nested.\n"
		"\n"
		"Options:\n"
		"  -m, --mount MOUNT  the driverfs mount point\n"
		"  -h, --help         show this help\n"
		"  -V, --version      show the version\n"
		"\n"
		"Exit status: 0 done; 1 the transition failed (rolled back) or the device is\n"
		"unknown; 2 bad usage.\n");
}

/* The directory of @dev under @mnt/root, into @out. 0, or -ENOENT. */
static int resolve_device(const char *mnt, const char *dev, char *out, size_t size)
{
	struct stat st;
	if (!dev || !*dev || strcmp(dev, ".") == 0 || strcmp(dev, "root") == 0) {
		snprintf(out, size, "%s/root", mnt);
		return 0;
	}
	if (strncmp(dev, "root/", 5) == 0)
		dev += 5;
	if (strstr(dev, "..") || dev[0] == '/')
		return -EINVAL;
	snprintf(out, size, "%s/root/%s", mnt, dev);
	if (stat(out, &st) == 0 && S_ISDIR(st.st_mode))
		return 0;
	if (strchr(dev, '/'))
		return -ENOENT;
	/* a bus id: the one bus/<bus>/devices/<id> link that matches */
	char pattern[PATH_MAX];
	glob_t g;
	snprintf(pattern, sizeof(pattern), "%s/bus/*/devices/%s", mnt, dev);
	if (glob(pattern, GLOB_NOSORT, NULL, &g) != 0)
		return -ENOENT;
	int r = -ENOENT;
	if (g.gl_pathc == 1 && realpath(g.gl_pathv[0], out))
		r = 0;
	else if (g.gl_pathc > 1)
		r = -ENOTUNIQ;
	globfree(&g);
	return r;
}

/* ---- walking the tree through the mount ---- */

/* A device directory has a power file; an attribute group (pm/) has not. */
static bool is_device_dir(int dirfd, const char *name)
{
	char path[PATH_MAX + 16];
	snprintf(path, sizeof(path), "%s/power", name);
	struct stat st;
	return fstatat(dirfd, path, &st, 0) == 0 && S_ISREG(st.st_mode);
}

static int by_version(const struct dirent **a, const struct dirent **b)
{
	return strverscmp((*a)->d_name, (*b)->d_name);
}

/* Reads a small file of the device @dir (relative to @dirfd) without its
 * newline; "" when it cannot. */
static void read_value(int dirfd, const char *dir, const char *file, char *buf, size_t size)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	buf[0] = '\0';
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, size - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
}

struct walk_out {
	bool tree; /* else: list */
	json_object *json; /* --json: the array this level's devices go in */
	char prefix[4096];
	unsigned devices;
};

/* What list and tree show of a device. */
struct dev_view {
	char name[512];
	char power[32];
	const char *driver; /* into link, or NULL */
	char link[PATH_MAX];
};

static void view_read(int rootfd, const char *path, struct dev_view *v)
{
	char link[PATH_MAX + 16];
	read_value(rootfd, path, "name", v->name, sizeof(v->name));
	read_value(rootfd, path, "power", v->power, sizeof(v->power));
	snprintf(link, sizeof(link), "%s/driver", path);
	ssize_t len = readlinkat(rootfd, link, v->link, sizeof(v->link) - 1);
	v->link[len > 0 ? len : 0] = '\0';
	const char *slash = strrchr(v->link, '/');
	v->driver = slash ? slash + 1 : NULL;
}

/* The --json object of a device: path, name, driver (null when unbound),
 * power; tree adds "children". */
static json_object *view_json(const char *path, const struct dev_view *v)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "path", json_object_new_string(*path ? path : "."));
	json_object_object_add(o, "name", json_object_new_string(v->name));
	json_object_object_add(o, "driver", v->driver ? json_object_new_string(v->driver) : NULL);
	json_object_object_add(o, "power", json_object_new_string(v->power));
	return o;
}

/* Visits the child devices of @path (relative to the root/ directory
 * @rootfd) in the model's global order: depth first, siblings in natural
 * order, which is the order resume takes (suspend takes it backwards). */
static int walk_children(int rootfd, const char *path, struct walk_out *o)
{
	struct dirent **names;
	int n = scandirat(rootfd, *path ? path : ".", &names, NULL, by_version);
	if (n < 0)
		return -errno;
	int kept = 0;
	for (int i = 0; i < n; i++) {
		char child[PATH_MAX];
		snprintf(child, sizeof(child), "%s%s%s", path, *path ? "/" : "", names[i]->d_name);
		if (names[i]->d_type == DT_DIR && names[i]->d_name[0] != '.' &&
		    is_device_dir(rootfd, child))
			names[kept++] = names[i];
		else
			free(names[i]);
	}
	int r = 0;
	for (int i = 0; i < kept && r == 0; i++) {
		char child[PATH_MAX];
		struct dev_view v;
		snprintf(child, sizeof(child), "%s%s%s", path, *path ? "/" : "", names[i]->d_name);
		o->devices++;
		view_read(rootfd, child, &v);
		if (o->json) {
			json_object *node = view_json(child, &v), *level = o->json;
			json_object_array_add(level, node);
			if (o->tree) {
				json_object *kids = json_object_new_array();
				json_object_object_add(node, "children", kids);
				o->json = kids;
			}
			r = walk_children(rootfd, child, o);
			o->json = level;
			continue;
		}
		if (!o->tree) {
			printf("%s\n", child);
			r = walk_children(rootfd, child, o);
			continue;
		}
		bool last = i == kept - 1;
		printf("%s%s %s", o->prefix, last ? "`--" : "|--", names[i]->d_name);
		if (*v.name && strcmp(v.name, names[i]->d_name) != 0)
			printf("  %s", v.name);
		if (v.driver)
			printf("  [%s]", v.driver);
		if (strcmp(v.power, "on") != 0 && *v.power)
			printf("  (%s)", v.power);
		printf("\n");
		size_t plen = strlen(o->prefix);
		snprintf(o->prefix + plen, sizeof(o->prefix) - plen, "%s", last ? "    " : "|   ");
		r = walk_children(rootfd, child, o);
		o->prefix[plen] = '\0';
	}
	for (int i = 0; i < kept; i++)
		free(names[i]);
	free(names);
	return r;
}

static int cmd_walk(const char *mnt, bool tree, int argc, char **argv)
{
	const char *dev = NULL;
	bool json = false;
	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			json = true;
			continue;
		}
		if (dev || !tree) {
			fprintf(stderr, "driverfsctl: %s: unexpected argument '%s'\n",
				tree ? "tree" : "list", argv[i]);
			return 2;
		}
		dev = argv[i];
	}
	char dir[PATH_MAX], root[PATH_MAX + 8];
	int r = resolve_device(mnt, dev, dir, sizeof(dir));
	if (r < 0) {
		fprintf(stderr, "driverfsctl: no device %s under %s (%s)\n", dev ? dev : "root", mnt,
			strerror(-r));
		return 1;
	}
	snprintf(root, sizeof(root), "%s/root", mnt);
	int rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		fprintf(stderr, "driverfsctl: %s: %s (is driverfsd serving %s?)\n", root,
			strerror(errno), mnt);
		return 1;
	}
	/* the device's path under root/ */
	char rp[PATH_MAX], rr[PATH_MAX];
	const char *rel = "";
	if (realpath(dir, rp) && realpath(root, rr) && strncmp(rp, rr, strlen(rr)) == 0)
		rel = rp[strlen(rr)] == '/' ? rp + strlen(rr) + 1 : "";
	struct walk_out o = { .tree = tree };
	json_object *doc = NULL;
	if (json) {
		struct dev_view v;
		view_read(rootfd, *rel ? rel : ".", &v);
		json_object *top = view_json(rel, &v);
		if (tree) {
			doc = top;
			o.json = json_object_new_array();
			json_object_object_add(top, "children", o.json);
		} else {
			doc = o.json = json_object_new_array();
			json_object_array_add(doc, top);
		}
	} else if (tree) {
		char name[512];
		read_value(rootfd, *rel ? rel : ".", "name", name, sizeof(name));
		printf("%s  %s\n", *rel ? rel : "root", name);
	} else {
		printf("%s\n", *rel ? rel : ".");
	}
	r = walk_children(rootfd, rel, &o);
	close(rootfd);
	if (doc) {
		if (r == 0)
			printf("%s\n", json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY |
								       JSON_C_TO_STRING_SPACED |
								       JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(doc);
	}
	if (r < 0) {
		fprintf(stderr, "driverfsctl: walking %s: %s\n", root, strerror(-r));
		return 1;
	}
	return 0;
}

/* ---- info and dot ---- */

static void print_link_target(const char *dir, const char *link, const char *label)
{
	char path[PATH_MAX + 16], target[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", dir, link);
	ssize_t n = readlink(path, target, sizeof(target) - 1);
	if (n <= 0)
		return;
	target[n] = '\0';
	const char *base = strrchr(target, '/');
	printf("%-20s %s\n", label, base ? base + 1 : target);
}

/* Every file of the device (and of its attribute groups, such as pm/),
 * one "name: value" per line; multi-line values indented below. */
static void print_files(const char *dir, const char *group)
{
	char path[PATH_MAX + 300];
	snprintf(path, sizeof(path), "%s%s%s", dir, group ? "/" : "", group ? group : "");
	struct dirent **names;
	int n = scandir(path, &names, NULL, by_version);
	if (n < 0)
		return;
	for (int i = 0; i < n; i++) {
		const char *name = names[i]->d_name;
		char file[PATH_MAX + 600], value[4097];
		snprintf(file, sizeof(file), "%s/%s", path, name);
		if (names[i]->d_type == DT_DIR && name[0] != '.' && !group) {
			char power[PATH_MAX + 700];
			snprintf(power, sizeof(power), "%s/power", file);
			if (access(power, F_OK) != 0) /* a group, not a child device */
				print_files(dir, name);
		} else if (names[i]->d_type == DT_REG) {
			int fd = open(file, O_RDONLY | O_CLOEXEC);
			ssize_t len = fd >= 0 ? read(fd, value, sizeof(value) - 1) : -1;
			if (fd >= 0)
				close(fd);
			if (len < 0) {
				if (errno != EACCES) /* write-only files have no value */
					printf("%s%s%s: (%s)\n", group ? group : "", group ? "/" : "",
					       name, strerror(errno));
			} else {
				value[len] = '\0';
				while (len > 0 && value[len - 1] == '\n')
					value[--len] = '\0';
				printf("%s%s%s: ", group ? group : "", group ? "/" : "", name);
				for (char *p = value; *p; p++) {
					putchar(*p);
					if (*p == '\n')
						fputs("    ", stdout);
				}
				putchar('\n');
			}
		}
		free(names[i]);
	}
	free(names);
}

static int cmd_info(const char *mnt, int argc, char **argv)
{
	if (argc != 1) {
		fprintf(stderr, "driverfsctl: info needs one DEV\n");
		return 2;
	}
	char dir[PATH_MAX];
	int r = resolve_device(mnt, argv[0], dir, sizeof(dir));
	if (r < 0) {
		fprintf(stderr, "driverfsctl: info: no device %s under %s (%s)\n", argv[0], mnt,
			strerror(-r));
		return 1;
	}
	char root[PATH_MAX + 8], rp[PATH_MAX], rr[PATH_MAX];
	snprintf(root, sizeof(root), "%s/root", mnt);
	const char *rel = "";
	if (realpath(dir, rp) && realpath(root, rr) && strncmp(rp, rr, strlen(rr)) == 0)
		rel = rp[strlen(rr)] == '/' ? rp + strlen(rr) + 1 : "";
	printf("%-20s %s\n", "path", *rel ? rel : ".");
	print_link_target(dir, "subsystem", "subsystem");
	print_link_target(dir, "driver", "driver");
	/* the class interface that lists it, if any */
	char pattern[PATH_MAX + 64];
	glob_t g;
	const char *base = strrchr(rp, '/');
	snprintf(pattern, sizeof(pattern), "%s/class/*/*/%s", mnt, base ? base + 1 : rp);
	if (glob(pattern, GLOB_NOSORT, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc; i++) {
			char t[PATH_MAX];
			const char *p = g.gl_pathv[i] + strlen(mnt) + 7; /* "<class>/<iface>/..." */
			if (realpath(g.gl_pathv[i], t) && strcmp(t, rp) == 0 &&
			    strncmp(strchr(p, '/') + 1, "devices/", 8) != 0)
				printf("%-20s %.*s\n", "interface", (int)(strrchr(p, '/') - p), p);
		}
		globfree(&g);
	}
	print_files(dir, NULL);
	return 0;
}

static const char *dot_escape(const char *s, char *buf, size_t size)
{
	size_t n = 0;
	for (; *s && n + 2 < size; s++) {
		if (*s == '"' || *s == '\\')
			buf[n++] = '\\';
		buf[n++] = *s;
	}
	buf[n] = '\0';
	return buf;
}

/* The hierarchy as a Graphviz digraph: one node per device labelled with its
 * name and driver, filled by bus (a colour per bus), edges parent -> child. */
static int dot_children(int rootfd, const char *path)
{
	struct dirent **names;
	int n = scandirat(rootfd, *path ? path : ".", &names, NULL, by_version);
	if (n < 0)
		return -errno;
	for (int i = 0; i < n; i++) {
		char child[PATH_MAX], esc[2 * PATH_MAX], pesc[2 * PATH_MAX];
		snprintf(child, sizeof(child), "%s%s%s", path, *path ? "/" : "", names[i]->d_name);
		if (names[i]->d_type != DT_DIR || names[i]->d_name[0] == '.' ||
		    !is_device_dir(rootfd, child)) {
			free(names[i]);
			continue;
		}
		char name[512], subsystem[PATH_MAX + 16], sub[PATH_MAX] = "", nesc[1024];
		read_value(rootfd, child, "name", name, sizeof(name));
		snprintf(subsystem, sizeof(subsystem), "%s/subsystem", child);
		ssize_t len = readlinkat(rootfd, subsystem, sub, sizeof(sub) - 1);
		sub[len > 0 ? len : 0] = '\0';
		const char *s = strrchr(sub, '/');
		s = s ? s + 1 : "";
		/* a stable colour per bus or class, from its name */
		unsigned h = 5381;
		for (const char *c = s; *c; c++)
			h = h * 33 + (unsigned char)*c;
		printf("  \"%s\" [label=\"%s\\n%s\", style=filled, fillcolor=\"%.3f 0.25 0.95\"];\n",
		       dot_escape(child, esc, sizeof(esc)), dot_escape(names[i]->d_name, pesc, sizeof(pesc)),
		       dot_escape(*name ? name : s, nesc, sizeof(nesc)), *s ? (h % 1000) / 1000.0 : 0.0);
		printf("  \"%s\" -> \"%s\";\n", *path ? dot_escape(path, pesc, sizeof(pesc)) : "root",
		       dot_escape(child, esc, sizeof(esc)));
		int r = dot_children(rootfd, child);
		free(names[i]);
		if (r < 0) {
			for (int k = i + 1; k < n; k++)
				free(names[k]);
			free(names);
			return r;
		}
	}
	free(names);
	return 0;
}

static int cmd_dot(const char *mnt, int argc, char **argv)
{
	(void)argv;
	if (argc) {
		fprintf(stderr, "driverfsctl: dot takes no argument\n");
		return 2;
	}
	char root[PATH_MAX + 8];
	snprintf(root, sizeof(root), "%s/root", mnt);
	int rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		fprintf(stderr, "driverfsctl: %s: %s\n", root, strerror(errno));
		return 1;
	}
	printf("digraph driverfs {\n  rankdir=LR;\n  node [shape=box, fontsize=10];\n"
	       "  \"root\" [label=\"root\"];\n");
	int r = dot_children(rootfd, "");
	printf("}\n");
	close(rootfd);
	if (r < 0) {
		fprintf(stderr, "driverfsctl: walking %s: %s\n", root, strerror(-r));
		return 1;
	}
	return 0;
}

static int print_file(const char *path, FILE *to)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		fwrite(buf, 1, n, to);
	fclose(f);
	return 0;
}

static int cmd_power(const char *mnt, const char *verb, int argc, char **argv)
{
	bool dry_run = false;
	const char *dev = NULL;
	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--dry-run") == 0)
			dry_run = true;
		else if (!dev)
			dev = argv[i];
		else {
			fprintf(stderr, "driverfsctl: %s: unexpected argument '%s'\n", verb, argv[i]);
			return 2;
		}
	}
	char dir[PATH_MAX], file[PATH_MAX + 16];
	int r = resolve_device(mnt, dev, dir, sizeof(dir));
	if (r < 0) {
		fprintf(stderr, "driverfsctl: %s: no device %s under %s (%s)\n", verb,
			dev ? dev : "root", mnt, strerror(-r));
		return 1;
	}
	snprintf(file, sizeof(file), "%s/power", dir);
	char word[32];
	snprintf(word, sizeof(word), "%s%s", verb, dry_run ? "-dry-run" : "");
	FILE *f = fopen(file, "we");
	if (!f) {
		fprintf(stderr, "driverfsctl: %s: %s\n", file, strerror(errno));
		return 1;
	}
	/* one whole value per write, as the file takes it */
	bool ok = fputs(word, f) >= 0;
	ok = fclose(f) == 0 && ok;
	int err = errno;
	snprintf(file, sizeof(file), "%s/root/power_log", mnt);
	print_file(file, stdout);
	if (!ok) {
		const char *rel = dir + strlen(mnt) + 5;
		fprintf(stderr, "driverfsctl: %s %s: %s%s\n", verb, *rel ? rel + 1 : "(system)",
			strerror(err),
			err == EIO ? " (rolled back; see power_error of the device that failed)"
			: err == EBUSY ? " (another transition is running)" : "");
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "mount", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	const char *mnt = getenv("DRIVERFS_MOUNT");
	int c;
	if (!mnt || !*mnt)
		mnt = "/devices";
	/* options before the command; the command's own come after it */
	while ((c = getopt_long(argc, argv, "+m:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'm':
			mnt = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("driverfsctl %s\n", DRIVERFSD_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	const char *cmd = argv[optind++];
	if (strcmp(cmd, "suspend") == 0 || strcmp(cmd, "resume") == 0)
		return cmd_power(mnt, cmd, argc - optind, argv + optind);
	if (strcmp(cmd, "info") == 0)
		return cmd_info(mnt, argc - optind, argv + optind);
	if (strcmp(cmd, "dot") == 0)
		return cmd_dot(mnt, argc - optind, argv + optind);
	if (strcmp(cmd, "list") == 0 || strcmp(cmd, "tree") == 0)
		return cmd_walk(mnt, strcmp(cmd, "tree") == 0, argc - optind, argv + optind);
	fprintf(stderr, "driverfsctl: unknown command '%s'\n", cmd);
	usage(stderr);
	return 2;
}
