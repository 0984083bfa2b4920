/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* options.c - driverfsd's command line: --help, and the options parsed. */
#include "daemon.h"
#include "version.h"
#include "drivers/journal.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: driverfsd [OPTIONS] [[SOURCE] MOUNTPOINT]\n"
		"       driverfsd --check-config [-c FILE]\n"
		"Serve the machine's device model as a filesystem at MOUNTPOINT (default: the\n"
		"configuration's MountPoint=, else /devices):\n"
		"root/ (the device hierarchy), bus/ (buses, their devices and drivers) and\n"
		"class/ (classes and their interfaces). SOURCE (as mount(8) and fstab give\n"
		"it: \"driverfs /devices fuse.driverfsd defaults 0 0\") names the mount in\n"
		"/proc/mounts (default: driverfs).\n"
		"\n"
		"  -f, --foreground   stay in the foreground, log to stderr (else to syslog\n"
		"                     once in the background)\n"
		"  -d, --debug        log debug messages and FUSE requests (implies -f)\n"
		"  -o OPTIONS         mount options, comma-separated: config=FILE and\n"
		"                     snapshot=FILE (as -c and --snapshot), FUSE's (ro ...);\n"
		"                     mount(8)'s and systemd's (defaults, nofail, x-...) are\n"
		"                     left out\n"
		"      --no-io-uring  take every FUSE request through /dev/fuse, even where\n"
		"                     the kernel offers io_uring (fuse.enable_uring=Y)\n"
		"      --no-passthrough  take every read of a sysfs attribute through the\n"
		"                     daemon, even where the kernel offers FUSE passthrough\n"
		"      --handover     (with -f) let the mount outlive this daemon: its\n"
		"                     connection and state go to the supervisor (FDSTORE=1),\n"
		"                     SIGUSR2 leaves them to the next daemon; started with\n"
		"                     them (LISTEN_FDS), it serves the same mount; requests\n"
		"                     over /dev/fuse (no io_uring), as root\n"
		"      --handover-io-uring  with --handover, serve over io_uring where the\n"
		"                     kernel offers it (a request made as a daemon leaves\n"
		"                     may fail with ECANCELED: see the man page)\n"
		"      --proc-root DIR  read mounts, swaps, routes and processes' open files\n"
		"                     under DIR instead of /proc, for the in-use checks of\n"
		"                     binding requests (for tests)\n"
		"      --modules-dir DIR  look up the kernel modules that could drive a\n"
		"                     device in DIR instead of /lib/modules/RELEASE (for\n"
		"                     tests)\n"
		"  -c, --config FILE  the configuration file, see driverfsd.conf(5); default\n"
		"                     " DEFAULT_CONFIG ",\n"
		"                     which may be missing. Drivers are read from the\n"
		"                     drivers.d/ directory beside it\n"
		"      --check-config check the configuration file and every drivers.d/*.conf,\n"
		"                     print each error as FILE:LINE: message and exit (status 1\n"
		"                     on any error, 0 and no output when all is valid)\n"
		"      --save FILE    write the model as JSON to FILE and exit (no mount)\n"
		"      --sanitize     with --save: mask serial numbers, MAC and WWN\n"
		"                     addresses, UUIDs and the host name, and drop binary\n"
		"                     values (a snapshot to attach to a public bug report)\n"
		"      --snapshot FILE  serve the model saved in FILE, read-only, instead of\n"
		"                     this machine's (with --save: convert, for a round trip)\n"
		"      --hotplug-helper CMDLINE  run this program (an absolute path, with\n"
		"                     arguments) for each device added, changed or removed\n"
		"                     (instead of the configuration's HotplugHelper=)\n"
		"      --coldplug     also run it, as \"add\", for every device present at start\n"
		"      --kernel-uevents  follow the kernel's uevents instead of udevd's (for a\n"
		"                     system without udevd)\n"
		"      --uevent-buffer BYTES  the receive buffer of the uevent socket (default\n"
		"                     128 MiB); an overrun costs a rescan of the whole tree\n"
		"      --transition-record FILE  where to record the devices a suspend left\n"
		"                     suspended (instead of the configuration's\n"
		"                     TransitionRecord=, default " DM_CONFIG_TRANSITION_RECORD "); those\n"
		"                     a killed daemon left there are resumed at start\n"
		"      --binding-journal FILE  where to record the binding transactions under\n"
		"                     way (instead of the configuration's BindingJournal=,\n"
		"                     default " DM_BIND_JOURNAL_FILE "); those a killed\n"
		"                     daemon left there are rolled back (or completed, past\n"
		"                     their verify step) at start\n"
		"  -h, --help         show this help\n"
		"  -V, --version      show the version\n"
		"\n"
		"Without -f, driverfsd returns once the tree is mounted and keeps serving it\n"
		"in the background. Unmount with `fusermount3 -u MOUNTPOINT` or SIGTERM.\n"
		"SIGHUP reloads drivers.d/ and the configuration's LogLevel= and\n"
		"HookTimeout= without unmounting; a configuration with errors is not taken.\n");
}

/* A word of letters, digits, '.', '_', '-' and ':' (mount(8)'s source). */
static bool plain_word(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("._-:", *s))
			return false;
	return true;
}

/* What mount(8), fstab and systemd add that is no business of FUSE's or
 * ours: left out. */
static bool mount_only(const char *opt)
{
	static const char *const words[] = { "defaults", "rw",	   "auto",    "noauto",
					     "nofail",	 "_netdev", "user",    "nouser",
					     "users",	 "owner",   "group",   "sync",
					     "async",	 "relatime", "noatime", "dev", "suid" };
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strcmp(opt, words[i]) == 0)
			return true;
	return strncmp(opt, "x-", 2) == 0 || strncmp(opt, "comment=", 8) == 0;
}

/* -o OPTIONS, comma-separated: driverfsd's own (config=FILE, snapshot=FILE)
 * taken, mount(8)'s left out, the rest given to FUSE. */
static int mount_options(struct options *o, char *list)
{
	char *fuse = malloc(strlen(list) + 1);
	if (!fuse)
		return -ENOMEM;
	fuse[0] = '\0';
	for (char *save = NULL, *opt = strtok_r(list, ",", &save); opt;
	     opt = strtok_r(NULL, ",", &save)) {
		if (strncmp(opt, "config=", 7) == 0 && opt[7]) {
			o->config = opt + 7;
		} else if (strncmp(opt, "snapshot=", 9) == 0 && opt[9]) {
			o->snapshot = opt + 9;
		} else if (!mount_only(opt)) {
			if (fuse[0])
				strcat(fuse, ",");
			strcat(fuse, opt);
		}
	}
	int r = 0;
	if (fuse[0] && (fuse_opt_add_arg(&o->fuse_args, "-o") < 0 ||
			fuse_opt_add_arg(&o->fuse_args, fuse) < 0))
		r = -ENOMEM;
	free(fuse);
	return r;
}

/* A directory option's value must be an absolute path (the daemon's
 * working directory is /). */
static bool absolute(const char *value, const char *option)
{
	if (value[0] == '/')
		return true;
	fprintf(stderr, "driverfsd: %s needs an absolute path, not '%s'\n", option, value);
	return false;
}

int daemon_parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "foreground", no_argument, NULL, 'f' },
		{ "debug", no_argument, NULL, 'd' },
		{ "config", required_argument, NULL, 'c' },
		{ "save", required_argument, NULL, 's' },
		{ "sanitize", no_argument, NULL, 'Z' },
		{ "snapshot", required_argument, NULL, 'S' },
		{ "hotplug-helper", required_argument, NULL, 'H' },
		{ "coldplug", no_argument, NULL, 'C' },
		{ "transition-record", required_argument, NULL, 'T' },
		{ "binding-journal", required_argument, NULL, 'J' },
		{ "kernel-uevents", no_argument, NULL, 'k' },
		{ "uevent-buffer", required_argument, NULL, 'B' },
		{ "check-config", no_argument, NULL, 'K' },
		{ "no-io-uring", no_argument, NULL, 'U' },
		{ "no-passthrough", no_argument, NULL, 'P' },
		{ "handover", no_argument, NULL, 'O' },
		{ "handover-io-uring", no_argument, NULL, 'I' },
		{ "proc-root", required_argument, NULL, 'R' },
		{ "modules-dir", required_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "fdo:c:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			o->config = optarg;
			break;
		case 's':
			o->save = optarg;
			break;
		case 'Z':
			o->sanitize = true;
			break;
		case 'S':
			o->snapshot = optarg;
			break;
		case 'H':
			o->helper = optarg;
			break;
		case 'C':
			o->coldplug = true;
			break;
		case 'T':
			o->record = optarg;
			break;
		case 'J':
			o->journal = optarg;
			break;
		case 'k':
			o->uevents.kernel = true;
			break;
		case 'B': {
			char *end;
			errno = 0;
			long long n = strtoll(optarg, &end, 10);
			if (errno || end == optarg || *end || n <= 0 || n > INT_MAX) {
				fprintf(stderr, "driverfsd: --uevent-buffer needs a number of bytes "
						"from 1 to %d, not '%s'\n", INT_MAX, optarg);
				return -EINVAL;
			}
			o->uevents.buffer = (int)n;
			break;
		}
		case 'K':
			o->check_config = true;
			break;
		case 'U':
			o->no_io_uring = true;
			break;
		case 'I':
			o->handover_io_uring = true;
			break;
		case 'P':
			o->no_passthrough = true;
			break;
		case 'O':
			o->handover = true;
			break;
		case 'R':
			if (!absolute(optarg, "--proc-root"))
				return -EINVAL;
			o->proc_root = optarg;
			break;
		case 'M':
			if (!absolute(optarg, "--modules-dir"))
				return -EINVAL;
			o->modules_dir = optarg;
			break;
		case 'f':
			o->foreground = true;
			break;
		case 'd':
			o->debug = o->foreground = true;
			if (fuse_opt_add_arg(&o->fuse_args, "-d") < 0)
				return -ENOMEM;
			break;
		case 'o': {
			int r = mount_options(o, optarg);
			if (r < 0)
				return r;
			break;
		}
		case 'h':
			usage(stdout);
			exit(EXIT_SUCCESS);
		case 'V':
			printf("driverfsd %s\n", DRIVERFSD_VERSION);
			exit(EXIT_SUCCESS);
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (o->handover && (!o->foreground || o->snapshot || o->save)) {
		/* the next daemon is given the connection by its supervisor,
		 * for its own pid (LISTEN_PID): it may not fork */
		fprintf(stderr, "driverfsd: --handover goes with -f (a supervisor runs the "
				"daemon), not with --snapshot or --save\n");
		return -EINVAL;
	}
	if (o->sanitize && !o->save) {
		fprintf(stderr, "driverfsd: --sanitize goes with --save\n");
		return -EINVAL;
	}
	/* checked before anything is mounted: the helper starts only later */
	if (o->record && o->record[0] != '/') {
		fprintf(stderr, "driverfsd: --transition-record needs an absolute path\n");
		return -EINVAL;
	}
	if (o->journal && o->journal[0] != '/') {
		fprintf(stderr, "driverfsd: --binding-journal needs an absolute path\n");
		return -EINVAL;
	}
	if (o->helper && o->helper[strspn(o->helper, " \t")] != '/') {
		fprintf(stderr, "driverfsd: --hotplug-helper needs a program given by its "
				"absolute path\n");
		return -EINVAL;
	}
	/* mount(8) through mount.fuse3 (and fstab): SOURCE MOUNTPOINT */
	if (argc - optind == 2) {
		const char *source = argv[optind++];
		char fsname[80];
		if (!plain_word(source) || strlen(source) > 64) {
			fprintf(stderr, "driverfsd: bad source '%s' (letters, digits, '.', '_', "
					"'-' and ':', at most 64)\n", source);
			return -EINVAL;
		}
		snprintf(fsname, sizeof(fsname), "fsname=%s", source);
		if (fuse_opt_add_arg(&o->fuse_args, "-o") < 0 ||
		    fuse_opt_add_arg(&o->fuse_args, fsname) < 0)
			return -ENOMEM;
	}
	if (optind < argc)
		o->mountpoint = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "driverfsd: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return -EINVAL;
	}
	return 0;
}
