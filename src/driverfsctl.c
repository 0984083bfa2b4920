/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * driverfsctl.c - the command-line client. It only reads and writes files of
 * a driverfs mount (-m MNT, else $DRIVERFS_MOUNT, else /devices); it links
 * nothing of the daemon.
 */
#include <errno.h>
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
		"  suspend [DEV] [--dry-run]  suspend DEV's subtree, children first (default: the\n"
		"                             whole system); print the transition's journal\n"
		"  resume [DEV] [--dry-run]   resume DEV (its suspended ancestors first) and its\n"
		"                             subtree, parents first\n"
		"\n"
		"DEV is a path under root/ (pci0000:00/0000:00:02.0) or a bus id (0000:00:02.0,\n"
		"1-1.2). --dry-run records the order in root/power_log and calls no hook.\n"
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
	fprintf(stderr, "driverfsctl: unknown command '%s'\n", cmd);
	usage(stderr);
	return 2;
}
