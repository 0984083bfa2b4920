/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemon.h - the steps of driverfsd's main() and the state they share.
 *
 * main() (src/driverfsd.c) runs them in order: options.c parses the
 * command line; reload.c reads the configuration and drivers.d/ (and reads
 * them again on SIGHUP); setup.c forks to the background, builds the model
 * and mounts it; serve.c serves the mount until it is unmounted. Each step
 * logs its own failure and returns 0 or -errno.
 */
#ifndef DM_DAEMON_H
#define DM_DAEMON_H

#include "config.h"
#include "hotplug/monitor.h"
#include "scan/scan.h"

#include <fuse_opt.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#ifndef DEFAULT_CONFIG
#define DEFAULT_CONFIG "/etc/driverfsd/driverfsd.conf"
#endif

/* The command line. */
struct options {
	const char *mountpoint; /* NULL: the config's */
	const char *config; /* NULL: DEFAULT_CONFIG, which may be missing */
	const char *save; /* --save FILE */
	bool sanitize; /* --sanitize (with --save) */
	const char *snapshot; /* --snapshot FILE */
	const char *helper; /* --hotplug-helper CMDLINE */
	const char *record; /* --transition-record FILE */
	const char *journal; /* --binding-journal FILE */
	struct dm_monitor_config uevents; /* --kernel-uevents, --uevent-buffer */
	bool coldplug;
	bool check_config;
	bool foreground;
	bool debug;
	bool no_io_uring;
	bool handover_io_uring; /* --handover-io-uring */
	bool no_passthrough;
	bool handover; /* --handover */
	const char *proc_root; /* --proc-root, or NULL */
	const char *modules_dir; /* --modules-dir, or NULL */
	struct fuse_args fuse_args;
};

/* The daemon, from start-up to shutdown; what is not made yet is NULL. */
struct daemon {
	struct options *o;
	struct dm_config cfg; /* the configuration in effect */
	const char *mountpoint; /* the command line's, else the config's */
	const char *helper_cmd; /* the same; NULL: no hotplug helper */
	/* the enabled sources, picked from the registry by the configuration
	 * (dm_sources_pick()): the enumeration's and the monitor's */
	struct dm_scan_sources sources;
	int ready_fd; /* background mode: where the child reports serving; else -1 */
	/* --handover: the connection and state the last daemon left
	 * (LISTEN_FDS), taken at start-up, until taken over; else -1 */
	int handed_fuse, handed_state;
	bool taken_over; /* that connection is the fs's (dm_fs_adopt()) */
	bool left; /* the mount left to the next daemon (daemon_serve()) */
	struct dm_model *model;
	/* binding's state (binding.h): made at set-up, sysfs at "/sys";
	 * persistence is attached to it. NULL with --snapshot */
	struct dm_binder *binder;
	/* KernelDriver='s moves (needs.h), on the binder, for the exec
	 * drivers; NULL with --snapshot */
	struct dm_needs *needs;
	/* the persisted bindings (persist.h), on the binder; NULL with
	 * --snapshot */
	struct dm_persist *persist;
	struct dm_pm *pm; /* NULL with --snapshot */
	struct dm_driver *pci_pm, *vfio;
	struct dm_exec_set *exec; /* drivers.d's exec drivers */
	struct dm_monitor *monitor;
	struct dm_fs *fs; /* once created; reload and the monitor use it once it serves */
	struct dm_service *service;
	struct dm_helper *helper;
	struct dm_logind *logind;
	long long started; /* when serving began (time(2)), for the metrics file */
	atomic_uint_fast64_t reloads[2]; /* SIGHUP's reloads: done, failed */
};

/* options.c: parses the command line into @o (whose fuse_args holds
 * argv[0] already). --help and --version print and exit here. 0, or
 * -EINVAL (said on stderr) or -ENOMEM. */
int daemon_parse_options(int argc, char **argv, struct options *o);

/* reload.c: --check-config: the configuration, then every drivers.d/
 * *.conf; the errors on stderr. Returns the exit status. */
int daemon_check_config(const struct options *o);
/* Reads the configuration into d->cfg, logging each error, and applies
 * what the command line does not override: the log level, the mount
 * point and the hotplug helper. */
int daemon_load_config(struct daemon *d);
/* Registers the exec drivers of d->cfg's drivers.d/: 0, the number of
 * errors (logged with file and line; no driver loaded), or -errno. */
int daemon_load_drivers(struct daemon *d);
/* The log level: debug with -d, else the configuration's. */
int daemon_log_level(const struct options *o, const struct dm_config *cfg);
/* SIGHUP, on the service's thread (a dm_service_reload_fn; @data is the
 * struct daemon). */
void daemon_reload(void *data, char *status, size_t size);

/* setup.c: the steps before serving, and the teardown after. */
/* Logs @r (-errno) alone, for a failure no other message says; returns @r. */
int daemon_fail(int r);
/* Without -f (and --save): forks; only the child returns. */
int daemon_go_background(struct daemon *d);
/* The model: the --snapshot file's, else this machine's, enumerated with
 * the drivers registered and the hotplug monitor listening. */
int daemon_set_up_model(struct daemon *d);
/* --save: writes the model to the file. */
int daemon_save(struct daemon *d);
/* Creates the FUSE session and mounts it at d->mountpoint. */
int daemon_mount(struct daemon *d);
/* Frees all the steps made, in the reverse order. */
void daemon_tear_down(struct daemon *d);

/* metrics.c: the heap's bytes in use (every arena and mapped block) and
 * the free bytes it keeps, from whichever allocator the build has. */
void daemon_heap(size_t *in_use, size_t *free);

/* metrics.c: adds the metrics file's sources of the parts made (call before
 * the monitor runs; daemon_tear_down() drops them first). */
void daemon_register_metrics(struct daemon *d);

/* The exit status of a daemon that left its mount to the next one
 * (--handover, SIGUSR2): EX_TEMPFAIL, "start the next one" (the unit's
 * RestartForceExitStatus=). */
#define DAEMON_EXIT_HANDOVER 75

/* restart.c: whether a restart job is queued for this daemon's unit (the
 * service manager is stopping it to start it again). */
bool daemon_restart_queued(void);

/* serve.c: starts the threads, reports ready and serves until unmounted;
 * returns the session's end (0 or -errno), or 1 when the mount was left to
 * the next daemon. */
int daemon_serve(struct daemon *d);
/* The monitor's report after a run of hotplug events (a
 * dm_monitor_done_fn; @data points at d->fs). */
void daemon_hotplug_done(const struct dm_hotplug_event *evs, size_t n, void *data);

#endif
