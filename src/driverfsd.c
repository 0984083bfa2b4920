/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* driverfsd.c - the daemon: enumerate, mount, serve. */
#define FUSE_USE_VERSION 312
#include "daemon/background.h"
#include "buses/monitor.h"
#include "buses/scan.h"
#include "buses/snapshot.h"
#include "config.h"
#include "drivers/exec.h"
#include "drivers/helper.h"
#include "drivers/pci-pm.h"
#include "drivers/vfio-pci.h"
#include "core/model.h"
#include "fuse/fs.h"
#include "fuse/unmount-watch.h"
#include "log.h"
#include "pm/logind.h"
#include "pm/pm.h"
#include "daemon/service.h"

#include <errno.h>
#include <fuse_lowlevel.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <malloc.h>
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
	const char *mountpoint; /* NULL: the config's */
	const char *config; /* NULL: DEFAULT_CONFIG, which may be missing */
	const char *save; /* --save FILE */
	const char *snapshot; /* --snapshot FILE */
	const char *helper; /* --hotplug-helper CMDLINE */
	const char *record; /* --transition-record FILE */
	struct dm_monitor_config uevents; /* --kernel-uevents, --uevent-buffer */
	bool coldplug;
	bool check_config;
	bool foreground;
	bool debug;
	bool no_io_uring;
	struct fuse_args fuse_args;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: driverfsd [OPTIONS] [MOUNTPOINT]\n"
		"       driverfsd --check-config [-c FILE]\n"
		"Serve the machine's device model as a filesystem at MOUNTPOINT (default: the\n"
		"configuration's MountPoint=, else /devices):\n"
		"root/ (the device hierarchy), bus/ (buses, their devices and drivers) and\n"
		"class/ (classes and their interfaces).\n"
		"\n"
		"  -f, --foreground   stay in the foreground, log to stderr (else to syslog\n"
		"                     once in the background)\n"
		"  -d, --debug        log debug messages and FUSE requests (implies -f)\n"
		"  -o OPTIONS         extra FUSE mount options, comma-separated\n"
		"      --no-io-uring  take every FUSE request through /dev/fuse, even where\n"
		"                     the kernel offers io_uring (fuse.enable_uring=Y)\n"
		"  -c, --config FILE  the configuration file, see driverfsd.conf(5); default\n"
		"                     " DEFAULT_CONFIG ",\n"
		"                     which may be missing. Drivers are read from the\n"
		"                     drivers.d/ directory beside it\n"
		"      --check-config check the configuration file and every drivers.d/*.conf,\n"
		"                     print each error as FILE:LINE: message and exit (status 1\n"
		"                     on any error, 0 and no output when all is valid)\n"
		"      --save FILE    write the model as JSON to FILE and exit (no mount)\n"
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
		"  -h, --help         show this help\n"
		"  -V, --version      show the version\n"
		"\n"
		"Without -f, driverfsd returns once the tree is mounted and keeps serving it\n"
		"in the background. Unmount with `fusermount3 -u MOUNTPOINT` or SIGTERM.\n"
		"SIGHUP reloads drivers.d/ and the configuration's LogLevel= and\n"
		"HookTimeout= without unmounting; a configuration with errors is not taken.\n");
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
		{ "transition-record", required_argument, NULL, 'T' },
		{ "kernel-uevents", no_argument, NULL, 'k' },
		{ "uevent-buffer", required_argument, NULL, 'B' },
		{ "check-config", no_argument, NULL, 'K' },
		{ "no-io-uring", no_argument, NULL, 'U' },
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
		case 'T':
			o->record = optarg;
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
	if (o->record && o->record[0] != '/') {
		fprintf(stderr, "driverfsd: --transition-record needs an absolute path\n");
		return -EINVAL;
	}
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

/* What a reload needs. */
struct daemon {
	const struct options *o;
	struct dm_model *model;
	struct dm_config cfg; /* the configuration in effect */
	struct dm_exec_set *exec;
	struct dm_fs *fs; /* once mounted */
};

/* Logs each line of @text (a FILE:LINE: message list; may be NULL) at
 * @level. */
static void log_lines(int level, char *text)
{
	char *save = NULL;
	for (char *line = text ? strtok_r(text, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save))
		dm_log(level, "%s", line);
}

/* Reads the configuration (--config FILE, which must exist, else the
 * default one, which may be missing) into @cfg; the errors go to @errors.
 * Returns the number of errors or -errno. */
static int config_read(const struct options *o, FILE *errors, struct dm_config *cfg)
{
	return dm_config_load(o->config ? o->config : DEFAULT_CONFIG, o->config != NULL, errors,
			      cfg);
}

/* --check-config: the configuration, then every drivers.d/ *.conf. */
static int check_config(const struct options *o)
{
	struct dm_config cfg;
	int r = config_read(o, stderr, &cfg);
	if (r < 0) {
		fprintf(stderr, "driverfsd: %s\n", strerror(-r));
	} else if (cfg.found || !o->config) {
		/* (a --config FILE that is missing has no drivers.d/ to speak of) */
		int n = dm_exec_check_dir(cfg.drivers_dir, cfg.hook_timeout_s, stderr);
		if (n < 0)
			fprintf(stderr, "%s: %s\n", cfg.drivers_dir, strerror(-n));
		r += n < 0 ? 1 : n;
	}
	dm_config_done(&cfg);
	return r == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

static int effective_log_level(const struct options *o, const struct dm_config *cfg)
{
	return o->debug ? LOG_DEBUG : cfg->log_level;
}

/* Registers the exec drivers of cfg's drivers.d/. A file with errors
 * stops the daemon: they are logged with file and line. */
static int load_drivers(struct daemon *d)
{
	char *text = NULL;
	size_t size;
	FILE *errors = open_memstream(&text, &size);
	if (!errors)
		return -ENOMEM;
	int r = dm_exec_load_dir(d->model, d->cfg.drivers_dir, d->cfg.hook_timeout_s, errors,
				 &d->exec);
	fclose(errors);
	log_lines(LOG_ERR, text);
	free(text);
	if (r > 0)
		log_err("%s: %d error%s; no driver loaded", d->cfg.drivers_dir, r,
			r == 1 ? "" : "s");
	else if (r < 0)
		log_err("%s: %s", d->cfg.drivers_dir, strerror(-r));
	return r;
}

/* The settings a reload cannot change: said, not silently ignored. */
static void warn_unreloadable(const struct dm_config *old, const struct dm_config *new)
{
	const char *changed = NULL;
	if (strcmp(old->mountpoint, new->mountpoint) != 0)
		changed = "MountPoint=";
	else if ((old->hotplug_helper == NULL) != (new->hotplug_helper == NULL) ||
		 (old->hotplug_helper && strcmp(old->hotplug_helper, new->hotplug_helper) != 0))
		changed = "HotplugHelper=";
	else if (old->coldplug != new->coldplug)
		changed = "Coldplug=";
	else if (strcmp(old->transition_record, new->transition_record) != 0)
		changed = "TransitionRecord=";
	else if (old->source_pci != new->source_pci || old->source_usb != new->source_usb)
		changed = "[Sources]";
	if (changed)
		log_warn("%s: %s changed; it takes effect at the next start", new->path, changed);
}

/* SIGHUP, on the service's thread: the configuration and drivers.d/ are
 * read again; either both are valid and taken, or nothing changes. */
static void reload(void *data, char *status, size_t size)
{
	struct daemon *d = data;
	struct dm_config cfg = { 0 };
	char *text = NULL;
	size_t len;
	int r = -ENOMEM;
	FILE *errors = open_memstream(&text, &len);
	if (errors) {
		r = config_read(d->o, errors, &cfg);
		if (r == 0)
			r = dm_exec_reload(d->model, &d->exec, cfg.drivers_dir, cfg.hook_timeout_s,
					   errors);
		fclose(errors);
		log_lines(LOG_ERR, text);
		free(text);
	}
	if (r != 0) {
		if (r > 0)
			snprintf(status, size, "reload failed: %d error%s", r, r == 1 ? "" : "s");
		else
			snprintf(status, size, "reload failed: %s", strerror(-r));
		log_err("%s; the drivers and settings in effect stay", status);
		dm_config_done(&cfg);
		return;
	}
	warn_unreloadable(&d->cfg, &cfg);
	dm_log_set_level(effective_log_level(d->o, &cfg));
	dm_config_done(&d->cfg);
	d->cfg = cfg;
	log_info("reloaded %s and %s", d->cfg.path, d->cfg.drivers_dir);
	snprintf(status, size, "reloaded");
	/* READY=1 follows: by then the mount shows the new bindings */
	if (d->fs)
		dm_fs_sync_invalidations(d->fs);
}

#define HELPER_TIMEOUT_MS 30000

static void helper_done(const char *action, const char *devpath, int result, void *data)
{
	(void)data;
	char path[PATH_MAX];
	if (result < 0)
		log_warn("hotplug helper %s %s: %s", action, devpath, strerror(-result));
	/* a devpath with a newline must not add fields to the message */
	dm_escape(path, sizeof(path), devpath);
	sd_notifyf(0, "STATUS=helper %s %s %d", action, path, result);
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

/* After a run of hotplug events: once the kernel has been told what went
 * stale, report each (systemd status; tests wait on it), one STATUS= line
 * per event in as few notifications as fit in PIPE_BUF bytes, the most
 * systemd reads of one. Runs on the monitor's thread, never in a FUSE
 * handler. */
static void hotplug_done(const struct dm_hotplug_event *evs, size_t n, void *data)
{
	struct dm_fs **fs = data;
	char buf[PIPE_BUF];
	size_t len = 0;
	if (*fs)
		dm_fs_sync_invalidations(*fs);
	for (size_t i = 0; i < n; i++) {
		char line[PIPE_BUF], path[PATH_MAX];
		/* a devpath with a newline must not add fields (READY=,
		 * MAINPID=) to the message */
		dm_escape(path, sizeof(path), evs[i].devpath);
		int l = snprintf(line, sizeof(line), "STATUS=hotplug %s %s %llu\n", evs[i].action,
				 path, (unsigned long long)evs[i].seqnum);
		if (l < 0)
			continue;
		if ((size_t)l >= sizeof(line)) { /* cut: systemd would drop it whole */
			l = sizeof(line) - 1;
			line[l - 1] = '\n';
		}
		if (len + (size_t)l >= sizeof(buf)) {
			buf[len - 1] = '\0';
			sd_notify(0, buf);
			len = 0;
		}
		memcpy(buf + len, line, (size_t)l);
		len += (size_t)l;
	}
	if (len) {
		buf[len - 1] = '\0';
		sd_notify(0, buf);
	}
}

static void note_recorded(const char *devpath, bool present, void *data)
{
	(void)data;
	if (present)
		log_warn("%s: left suspended by a transition that did not end; resuming it",
			 devpath);
	else
		log_warn("%s: left suspended by a transition that did not end, and gone", devpath);
}

/* The transition record, and what an earlier run left suspended in it:
 * resumed before the tree is served. Without a usable record the daemon
 * still serves, and says what it cannot do. */
static void recover_transition(struct dm_pm *pm, const char *path)
{
	int r = dm_pm_set_record(pm, path);
	if (r < 0) {
		log_warn("transition record %s: %s; devices left suspended if the daemon is "
			 "killed will not be resumed at its next start", path, strerror(-r));
		return;
	}
	r = dm_pm_recover(pm, note_recorded, NULL);
	if (r > 0)
		log_info("%s: resumed %d device%s an earlier run left suspended", path, r,
			 r == 1 ? "" : "s");
	else if (r < 0)
		log_err("%s: resuming what an earlier run left suspended: %s", path, strerror(-r));
}

/* The enabled sources, NULL-terminated, into @sources (4 slots): udev,
 * always, and first (it places every device); and into @fillers (3 slots)
 * those that complete a hotplugged device's record. */
static void pick_sources(const struct dm_config *cfg, const struct dm_source_ops **sources,
			 const struct dm_source_ops **fillers)
{
	size_t n = 0, f = 0;
	sources[n++] = &dm_source_udev;
	if (cfg->source_pci)
		sources[n++] = fillers[f++] = &dm_source_pci;
	if (cfg->source_usb)
		sources[n++] = fillers[f++] = &dm_source_usb;
	sources[n] = fillers[f] = NULL;
}

int main(int argc, char **argv)
{
	struct options o = { 0 };
	struct daemon d = { .o = &o };
	const struct dm_source_ops *sources[4], *fillers[3];
	struct dm_model *m = NULL;
	struct dm_pm *pm = NULL;
	struct dm_fs *fs = NULL;
	struct dm_logind *logind = NULL;
	struct dm_driver *pci_pm = NULL, *vfio = NULL;
	struct dm_monitor *monitor = NULL;
	struct dm_helper *helper = NULL;
	struct dm_service *service = NULL;
	const char *mountpoint, *helper_cmd;
	int ready_fd = -1; /* background mode: where the child reports serving */
	int r;

	/* glibc gives each thread that allocates an arena of its own, up to
	 * eight per core (the FUSE workers, the PM pool, the snapshot
	 * parser), and each keeps its own free memory: with four, a walk of
	 * 10^4 devices leaves 2.69 KiB/device instead of 2.84, at no cost in
	 * load time on two cores (one or two arenas slowed the load by the
	 * parser's and loader's contention). MALLOC_ARENA_MAX still wins. */
	if (!getenv("MALLOC_ARENA_MAX"))
		mallopt(M_ARENA_MAX, 4);

	o.fuse_args = (struct fuse_args)FUSE_ARGS_INIT(0, NULL);
	if (fuse_opt_add_arg(&o.fuse_args, argv[0]) < 0)
		return EXIT_FAILURE;
	r = parse_args(argc, argv, &o);
	if (r < 0)
		goto out_args;
	if (o.check_config) {
		r = check_config(&o);
		fuse_opt_free_args(&o.fuse_args);
		return r;
	}
	dm_log_setup(o.debug ? LOG_DEBUG : LOG_INFO, 0);
	{
		char *text = NULL;
		size_t size;
		FILE *errors = open_memstream(&text, &size);
		r = errors ? config_read(&o, errors, &d.cfg) : -ENOMEM;
		if (errors)
			fclose(errors);
		log_lines(LOG_ERR, text);
		free(text);
	}
	if (r != 0) {
		if (r > 0)
			log_err("%s: %d error%s", d.cfg.path, r, r == 1 ? "" : "s");
		r = r > 0 ? -EINVAL : r;
		goto out_config;
	}
	/* the command line wins over the file */
	dm_log_set_level(effective_log_level(&o, &d.cfg));
	mountpoint = o.mountpoint ? o.mountpoint : d.cfg.mountpoint;
	helper_cmd = o.helper ? o.helper : d.cfg.hotplug_helper;
	pick_sources(&d.cfg, sources, fillers);
	/* background mode forks here, before the first thread: a thread
	 * started earlier (the PM pool's, by recovery) would not be in the
	 * child, and the first transition would wait for it for ever */
	if (!o.foreground && !o.save) {
		ready_fd = dm_background_start();
		if (ready_fd < 0) {
			r = ready_fd;
			log_err("cannot go to the background: %s", strerror(-r));
			goto out_config;
		}
	}

	r = dm_model_new(&m);
	if (r < 0)
		goto out_err;
	d.model = m;
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
		r = load_drivers(&d);
		if (r != 0) {
			r = r > 0 ? -EINVAL : r;
			goto out_model;
		}
		/* listening starts before the enumeration, so that no event
		 * falls between the two */
		r = dm_monitor_new(m, fillers, &o.uevents, hotplug_done, &fs, &monitor);
		if (r < 0)
			log_warn("no hotplug (udev monitor: %s); the tree stays as enumerated",
				 strerror(-r));
		r = dm_scan_model(m, sources);
		if (r < 0)
			goto out_err;
		if (!o.save)
			recover_transition(pm, o.record ? o.record : d.cfg.transition_record);
	}
	if (o.save) {
		r = dm_snapshot_save(m, o.save);
		if (r < 0)
			log_err("%s: %s", o.save, strerror(-r));
		goto out_model;
	}

	r = prepare_mountpoint(mountpoint);
	if (r < 0) {
		log_err("mount point %s: %s", mountpoint, strerror(-r));
		goto out_model;
	}

	r = dm_fs_new(m, &o.fuse_args, &fs);
	if (r < 0) {
		log_err("cannot set up the filesystem (bad -o option?)");
		goto out_model;
	}
	dm_fs_set_io_uring(fs, !o.no_io_uring);
	r = dm_fs_mount(fs, mountpoint);
	if (r < 0) {
		log_err("cannot mount at %s", mountpoint);
		goto out_model;
	}
	r = dm_fs_set_signal_handlers(fs);
	if (r < 0)
		goto out_err;
	/* after libfuse's: SIGHUP reloads rather than unmounts */
	r = o.snapshot ? 0 : dm_service_new(m, reload, &d, &service);
	if (r < 0)
		goto out_err;
	log_info("serving %zu devices at %s", dm_model_count_devices(m), mountpoint);
	r = dm_unmount_watch_start(mountpoint);
	if (r < 0)
		log_warn("no unmount watcher (%s): a killed daemon's mount is left to "
			 "fusermount3's auto_unmount", strerror(-r));
	else if (r > 0)
		dm_fs_set_unmount_watched(fs);
	r = dm_fs_start_notifier(fs);
	if (r < 0)
		goto out_err;
	d.fs = fs;
	if (helper_cmd && !o.snapshot) {
		r = dm_helper_new(helper_cmd, HELPER_TIMEOUT_MS, helper_done, NULL, &helper);
		if (r < 0) {
			log_err("hotplug helper '%s': %s", helper_cmd,
				r == -EINVAL ? "needs a program given by its absolute path"
					     : strerror(-r));
			goto out_model;
		}
		if (monitor)
			dm_monitor_set_helper(monitor, helper);
		if (o.coldplug || d.cfg.coldplug)
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
	if (service && dm_service_start(service) < 0)
		log_warn("no reload on SIGHUP and no watchdog: cannot start their threads");
	if (ready_fd >= 0) {
		/* the command returns only now, with the tree mounted and
		 * served; the daemon's stderr goes, so it logs to syslog (the
		 * journal) */
		dm_log_setup(effective_log_level(&o, &d.cfg), 1);
		dm_background_ready(ready_fd);
		ready_fd = -1;
	}
	r = dm_fs_loop(fs);
	sd_notify(0, "STOPPING=1");
	dm_service_free(service);
	service = NULL;
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
	dm_service_free(service);
	dm_monitor_free(monitor);
	dm_helper_free(helper);
	dm_fs_free(fs);
	dm_exec_unload(d.exec);
	driver_drop(pci_pm);
	driver_drop(vfio);
	dm_pm_free(pm);
	dm_model_free(m);
out_config:
	dm_config_done(&d.cfg);
out_args:
	fuse_opt_free_args(&o.fuse_args);
	return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
