/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* driverfsd.c - the daemon: enumerate, mount, serve. */
#define FUSE_USE_VERSION 312
#include "buses/monitor.h"
#include "buses/scan.h"
#include "buses/snapshot.h"
#include "drivers/exec.h"
#include "drivers/helper.h"
#include "drivers/pci-pm.h"
#include "drivers/vfio-pci.h"
#include "core/model.h"
#include "fuse/fs.h"
#include "log.h"
#include "pm/logind.h"
#include "pm/pm.h"

#include <errno.h>
#include <fuse_lowlevel.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#ifndef DEFAULT_CONFIG
#define DEFAULT_CONFIG "/etc/driverfsd/driverfsd.conf"
#endif

#ifndef DRIVERFSD_VERSION
#define DRIVERFSD_VERSION "0.1.0"
#endif

struct options {
	const char *mountpoint;
	const char *config;
	const char *save; /* --save FILE */
	const char *snapshot; /* --snapshot FILE */
	const char *helper; /* --hotplug-helper CMDLINE */
	bool coldplug;
	bool foreground;
	bool debug;
	struct fuse_args fuse_args;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: driverfsd [OPTIONS] [MOUNTPOINT]\n"
		"Serve the machine's device model as a filesystem at MOUNTPOINT (default /devices):\n"
		"root/ (the device hierarchy), bus/ (buses, their devices and drivers) and\n"
		"class/ (classes and their interfaces).\n"
		"\n"
		"  -f, --foreground   stay in the foreground, log to stderr (else to syslog\n"
		"                     once in the background)\n"
		"  -d, --debug        log debug messages and FUSE requests (implies -f)\n"
		"  -o OPTIONS         extra FUSE mount options, comma-separated\n"
		"  -c, --config FILE  the configuration file (default " DEFAULT_CONFIG ");\n"
		"                     drivers are read from the drivers.d/ directory beside it\n"
		"      --save FILE    write the model as JSON to FILE and exit (no mount)\n"
		"      --snapshot FILE  serve the model saved in FILE, read-only, instead of\n"
		"                     this machine's (with --save: convert, for a round trip)\n"
		"      --hotplug-helper CMDLINE  run this program (an absolute path, with\n"
		"                     arguments) for each device added, changed or removed\n"
		"      --coldplug     also run it, as \"add\", for every device present at start\n"
		"  -h, --help         show this help\n"
		"  -V, --version      show the version\n"
		"\n"
		"Without -f, driverfsd returns once the tree is mounted and keeps serving it\n"
		"in the background. Unmount with `fusermount3 -u MOUNTPOINT` or SIGTERM.\n");
}

static int parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "foreground", no_argument, NULL, 'f' },
		{ "debug", no_argument, NULL, 'd' },
		{ "config", required_argument, NULL, 'c' },
		{ "save", required_argument, NULL, 's' },
		{ "snapshot", required_argument, NULL, 'S' },
		{ "hotplug-helper", required_argument, NULL, 'H' },
		{ "coldplug", no_argument, NULL, 'C' },
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
		case 'S':
			o->snapshot = optarg;
			break;
		case 'H':
			o->helper = optarg;
			break;
		case 'C':
			o->coldplug = true;
			break;
		case 'f':
			o->foreground = true;
			break;
		case 'd':
			o->debug = o->foreground = true;
			if (fuse_opt_add_arg(&o->fuse_args, "-d") < 0)
				return -ENOMEM;
			break;
		case 'o':
			if (fuse_opt_add_arg(&o->fuse_args, "-o") < 0 ||
			    fuse_opt_add_arg(&o->fuse_args, optarg) < 0)
				return -ENOMEM;
			break;
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
	/* checked before anything is mounted: the helper starts only later */
	if (o->helper && o->helper[strspn(o->helper, " \t")] != '/') {
		fprintf(stderr, "driverfsd: --hotplug-helper needs a program given by its "
				"absolute path\n");
		return -EINVAL;
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

/* Makes @path a usable mount point: created when missing, and a dead FUSE
 * mount left by a killed daemon (ENOTCONN) detached first. */
static int prepare_mountpoint(const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0 && errno == ENOTCONN) {
		log_warn("%s: a dead mount is left there; detaching it", path);
		if (umount2(path, MNT_DETACH) < 0)
			return -errno;
	}
	if (stat(path, &st) < 0) {
		if (errno != ENOENT || mkdir(path, 0755) < 0)
			return -errno;
		return 0;
	}
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

/* root's name: the machine's model where the firmware says it, else the
 * host name. */
static void name_root(struct dm_model *m)
{
	char buf[256] = "";
	FILE *f = fopen("/sys/class/dmi/id/product_name", "re");
	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = '\0';
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = '\0';
	if (!*buf && gethostname(buf, sizeof(buf) - 1) < 0)
		snprintf(buf, sizeof(buf), "root");
	dm_device_set_value(dm_model_get_root(m), "name", buf);
}

static void driver_drop(struct dm_driver *drv)
{
	if (!drv)
		return;
	dm_driver_unregister(drv);
	dm_driver_unref(drv);
}

/* Registers the exec drivers of the drivers.d/ beside @config. A file
 * with errors stops the daemon: they are printed with file and line. */
static int load_drivers(struct dm_model *m, const char *config, struct dm_exec_set **ret)
{
	char *copy = strdup(config ? config : DEFAULT_CONFIG);
	if (!copy)
		return -ENOMEM;
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/drivers.d", dirname(copy));
	free(copy);
	int r = dm_exec_load_dir(m, dir, stderr, ret);
	if (r > 0)
		log_err("%s: %d error%s; no driver loaded", dir, r, r == 1 ? "" : "s");
	else if (r < 0)
		log_err("%s: %s", dir, strerror(-r));
	return r;
}

#define HELPER_TIMEOUT_MS 30000

static void helper_done(const char *action, const char *devpath, int result, void *data)
{
	(void)data;
	if (result < 0)
		log_warn("hotplug helper %s %s: %s", action, devpath, strerror(-result));
	sd_notifyf(0, "STATUS=helper %s %s %d", action, devpath, result);
}

/* --coldplug: the helper's "add" for every device present at start. */
static void coldplug(struct dm_model *m, struct dm_helper *helper)
{
	struct dm_device **devs;
	size_t n;
	if (dm_model_snapshot(m, NULL, &devs, &n) < 0)
		return;
	for (size_t i = 1; i < n; i++) /* not root */
		dm_helper_queue_device(helper, devs[i], "add", 0);
	dm_device_array_free(devs, n);
}

/* What completes a hotplugged device's record. */
static const struct dm_source_ops *const fillers[] = {
	&dm_source_pci,
	&dm_source_usb,
	NULL,
};

/* After each hotplug event: once the kernel has been told what went stale,
 * report it (systemd status; tests wait on it). Runs on the monitor's
 * thread, never in a FUSE handler. */
static void hotplug_done(const char *action, const char *devpath, uint64_t seqnum, void *data)
{
	struct dm_fs **fs = data;
	if (*fs)
		dm_fs_sync_invalidations(*fs);
	sd_notifyf(0, "STATUS=hotplug %s %s %llu", action, devpath, (unsigned long long)seqnum);
}

static const struct dm_source_ops *const sources[] = {
	&dm_source_udev, /* first: it places every device */
	&dm_source_pci,
	&dm_source_usb,
	NULL,
};

int main(int argc, char **argv)
{
	struct options o = { .mountpoint = "/devices" };
	struct dm_model *m = NULL;
	struct dm_pm *pm = NULL;
	struct dm_fs *fs = NULL;
	struct dm_logind *logind = NULL;
	struct dm_driver *pci_pm = NULL, *vfio = NULL;
	struct dm_exec_set *exec = NULL;
	struct dm_monitor *monitor = NULL;
	struct dm_helper *helper = NULL;
	int r;

	o.fuse_args = (struct fuse_args)FUSE_ARGS_INIT(0, NULL);
	if (fuse_opt_add_arg(&o.fuse_args, argv[0]) < 0)
		return EXIT_FAILURE;
	r = parse_args(argc, argv, &o);
	if (r < 0)
		goto out_args;
	dm_log_setup(o.debug ? LOG_DEBUG : LOG_INFO, 0);

	r = dm_model_new(&m);
	if (r < 0)
		goto out_err;
	if (o.snapshot) {
		/* a saved model, served as it was: nothing to enumerate, no
		 * hooks to run, nothing to write */
		char err[512];
		r = dm_snapshot_load(m, o.snapshot, err, sizeof(err));
		if (r < 0) {
			log_err("%s", r == -EINVAL ? err : strerror(-r));
			goto out_model;
		}
		if (fuse_opt_add_arg(&o.fuse_args, "-o") < 0 ||
		    fuse_opt_add_arg(&o.fuse_args, "ro") < 0) {
			r = -ENOMEM;
			goto out_err;
		}
	} else {
		r = dm_pm_new(m, &pm);
		if (r < 0)
			goto out_err;
		name_root(m);
		/* User drivers are registered before enumeration so that they
		 * are offered every device first, as DESIGN.md section 6 says. */
		r = dm_pci_pm_register(m, &pci_pm);
		if (r < 0)
			log_warn("pci-pm driver not available: %s", strerror(-r));
		r = dm_vfio_pci_register(m, &dm_vfio_kernel_ops, NULL, &vfio);
		if (r < 0)
			log_warn("vfio-pci driver not available: %s", strerror(-r));
		r = load_drivers(m, o.config, &exec);
		if (r != 0) {
			r = r > 0 ? -EINVAL : r;
			goto out_model;
		}
		/* listening starts before the enumeration, so that no event
		 * falls between the two */
		r = dm_monitor_new(m, fillers, hotplug_done, &fs, &monitor);
		if (r < 0)
			log_warn("no hotplug (udev monitor: %s); the tree stays as enumerated",
				 strerror(-r));
		r = dm_scan_model(m, sources);
		if (r < 0)
			goto out_err;
	}
	if (o.save) {
		r = dm_snapshot_save(m, o.save);
		if (r < 0)
			log_err("%s: %s", o.save, strerror(-r));
		goto out_model;
	}

	r = prepare_mountpoint(o.mountpoint);
	if (r < 0) {
		log_err("mount point %s: %s", o.mountpoint, strerror(-r));
		goto out_model;
	}

	r = dm_fs_new(m, &o.fuse_args, &fs);
	if (r < 0) {
		log_err("cannot set up the filesystem (bad -o option?)");
		goto out_model;
	}
	r = dm_fs_mount(fs, o.mountpoint);
	if (r < 0) {
		log_err("cannot mount at %s", o.mountpoint);
		goto out_model;
	}
	r = dm_fs_set_signal_handlers(fs);
	if (r < 0)
		goto out_err;
	log_info("serving %zu devices at %s", dm_model_count_devices(m), o.mountpoint);
	/* the parent returns only now, with the tree mounted and complete; a
	 * daemon's stderr is gone, so it logs to syslog (the journal) */
	if (!o.foreground)
		dm_log_setup(o.debug ? LOG_DEBUG : LOG_INFO, 1);
	if (fuse_daemonize(o.foreground) != 0) {
		r = -ECHILD;
		goto out_model;
	}
	r = dm_fs_start_notifier(fs);
	if (r < 0)
		goto out_err;
	if (o.helper && !o.snapshot) {
		r = dm_helper_new(o.helper, HELPER_TIMEOUT_MS, helper_done, NULL, &helper);
		if (r < 0) {
			log_err("--hotplug-helper '%s': %s", o.helper,
				r == -EINVAL ? "needs a program given by its absolute path"
					     : strerror(-r));
			goto out_model;
		}
		if (monitor)
			dm_monitor_set_helper(monitor, helper);
		if (o.coldplug)
			coldplug(m, helper);
	}
	if (monitor && dm_monitor_run(monitor) < 0)
		log_warn("no hotplug: cannot start the monitor thread");
	r = pm ? dm_logind_start(pm, &logind) : 0;
	if (r < 0)
		log_info("no system sleep integration (logind: %s)", strerror(-r));
	/* for systemd (Type=notify) and for tests waiting for the mount */
	sd_notifyf(0, "READY=1\nMAINPID=%d\nSTATUS=serving %zu devices", (int)getpid(),
		   dm_model_count_devices(m));
	r = dm_fs_loop(fs);
	sd_notify(0, "STOPPING=1");
	char stats[512];
	if (dm_fs_format_stats(fs, stats, sizeof(stats)) >= 0)
		log_info("%s", stats);
	dm_logind_stop(logind);
	if (r < 0)
		log_err("session ended: %s", strerror(-r));
	goto out_model;

out_err:
	log_err("%s", strerror(-r));
out_model:
	dm_monitor_free(monitor);
	dm_helper_free(helper);
	dm_fs_free(fs);
	dm_exec_unload(exec);
	driver_drop(pci_pm);
	driver_drop(vfio);
	dm_pm_free(pm);
	dm_model_free(m);
out_args:
	fuse_opt_free_args(&o.fuse_args);
	return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
