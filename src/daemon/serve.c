/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * serve.c - driverfsd serving its mount: the threads started, READY=1, the
 * FUSE loop until unmounted or signalled; and what hotplug events and the
 * hotplug helper report to systemd meanwhile.
 */
#include "daemon.h"
#include "logind.h"
#include "nfd.h"

#include "background.h"
#include "core/model.h"
#include "drivers/binding.h"
#include "drivers/modules.h"
#include "drivers/needs.h"
#include "fuse/fs.h"
#include "fuse/unmount-watch.h"
#include "hotplug/helper.h"
#include "hotplug/monitor.h"
#include "service.h"
#include "util/log.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

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
	if (dm_model_ref_devices(m, NULL, &devs, &n) < 0)
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
void daemon_hotplug_done(const struct dm_hotplug_event *evs, size_t n, void *data)
{
	struct dm_fs **fs = data;
	char buf[PIPE_BUF];
	size_t len = 0;
	if (*fs)
		dm_fs_sync_invalidations(*fs);
	/* a binding moved, VFs made, a device came or went: the node labels */
	daemon_nfd_kick();
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

/* The hotplug helper, when one is set (not for a snapshot), and --coldplug. */
static int start_helper(struct daemon *d)
{
	if (!d->helper_cmd || d->o->snapshot)
		return 0;
	int r = dm_helper_new(d->helper_cmd, HELPER_TIMEOUT_MS, helper_done, NULL, &d->helper);
	if (r < 0) {
		log_err("hotplug helper '%s': %s", d->helper_cmd,
			r == -EINVAL ? "needs a program given by its absolute path"
				     : strerror(-r));
		return r;
	}
	if (d->monitor)
		dm_monitor_set_helper(d->monitor, d->helper);
	if (d->o->coldplug || d->cfg.coldplug)
		coldplug(d->model, d->helper);
	return 0;
}

/* --handover: the connection and its state to the supervisor's store (the
 * same ones again after a takeover: the store keeps one of each name),
 * for the next daemon. */
static void store_fds(struct daemon *d)
{
	int fds[2];
	if (dm_fs_handover_fds(d->fs, &fds[0], &fds[1]) < 0)
		return;
	int r = sd_pid_notify_with_fds(0, 0, "FDSTORE=1\nFDNAME=fuse", &fds[0], 1);
	if (r > 0)
		r = sd_pid_notify_with_fds(0, 0, "FDSTORE=1\nFDNAME=state", &fds[1], 1);
	if (r > 0)
		dm_fs_handover_stored(d->fs);
	else
		log_warn("--handover: no supervisor keeps the mount's connection (%s): a restart "
			 "will mount anew",
			 r < 0 ? strerror(-r) : "no NOTIFY_SOCKET");
}

/* Everything that serving needs besides the mount: the signal handlers,
 * SIGHUP's reload, the unmount watcher, the notifier, the helper, the
 * monitor, logind; then READY=1, and in the background the waiting
 * parent told. */
/* the watchdog's look at requests that stopped moving, and at a loop
 * that missed the signal that ended it */
static void check_stalled(void *data)
{
	dm_fs_check_stalled(data);
	dm_fs_kick_loop(data);
}

static int start(struct daemon *d)
{
	struct dm_model *m = d->model;
	int r = dm_fs_set_signal_handlers(d->fs);
	if (r < 0)
		return daemon_fail(r);
	/* after libfuse's: SIGHUP reloads rather than unmounts */
	r = d->o->snapshot ? 0 : dm_service_new(m, daemon_reload, d, &d->service);
	if (r < 0)
		return daemon_fail(r);
	/* the memory the loaded tree takes, for the figures in bench/RESULTS.md:
	 * all the heap in use (every arena, mmapped blocks too), the
	 * libraries' included */
	size_t n = dm_model_count_devices(m), heap, heap_free;
	daemon_heap(&heap, &heap_free);
	log_info("serving %zu devices at %s (heap in use %zu KiB, %.2f KiB per device)", n,
		 d->mountpoint, heap / 1024, n ? (double)heap / 1024 / (double)n : 0.0);
	r = dm_unmount_watch_start(d->mountpoint, dm_fs_handover_header(d->fs));
	if (r < 0)
		log_warn("no unmount watcher (%s): a killed daemon's mount is left to "
			 "fusermount3's auto_unmount", strerror(-r));
	else if (r > 0)
		dm_fs_set_unmount_watched(d->fs);
	r = dm_fs_start_notifier(d->fs);
	if (r < 0)
		return daemon_fail(r);
	store_fds(d);
	r = start_helper(d);
	if (r < 0)
		return r;
	daemon_register_metrics(d);
	if (d->monitor && dm_monitor_run(d->monitor) < 0)
		log_warn("no hotplug: cannot start the monitor thread");
	r = d->pm ? dm_logind_start(d->pm, &d->logind) : 0;
	if (r < 0)
		log_info("no system sleep integration (logind: %s)", strerror(-r));
	/* for systemd (Type=notify) and for tests waiting for the mount */
	sd_notifyf(0, "READY=1\nMAINPID=%d\nSTATUS=serving %zu devices", (int)getpid(),
		   dm_model_count_devices(m));
	if (d->service)
		dm_service_set_check(d->service, check_stalled, d->fs);
	if (d->service && dm_service_start(d->service) < 0)
		log_warn("no reload on SIGHUP and no watchdog: cannot start their threads");
	if (d->ready_fd >= 0) {
		/* the command returns only now, with the tree mounted and
		 * served; the daemon's stderr goes, so it logs to syslog (the
		 * journal) */
		dm_log_setup(daemon_log_level(d->o, &d->cfg), 1);
		dm_background_ready(d->ready_fd);
		d->ready_fd = -1;
	}
	return 0;
}

int daemon_serve(struct daemon *d)
{
	int r = start(d);
	if (r < 0)
		return r;
	/* served: the devices exec drivers need are moved now, on the
	 * needs thread, while this one serves (needs.h) */
	r = d->needs ? dm_needs_start(d->needs) : 0;
	if (r < 0)
		log_warn("exec drivers' KernelDriver=: cannot start: %s", strerror(-r));
	/* NfdFile=: the node labels, written now and after each run of
	 * uevents (a live machine's only) */
	r = d->o->snapshot ? 0 : daemon_nfd_start(d->model, d->cfg.nfd_file);
	if (r < 0)
		log_warn("NfdFile=%s: cannot start: %s", d->cfg.nfd_file, strerror(-r));
	r = dm_fs_loop(d->fs);
	sd_notify(0, "STOPPING=1");
	/* SIGTERM for `systemctl restart` with the connection in systemd's
	 * store: handed over as SIGUSR2 would */
	if (r == 0 && !dm_fs_leaving(d->fs) && dm_fs_handover_kept(d->fs) &&
	    daemon_restart_queued())
		dm_fs_set_leaving(d->fs);
	if (r == 0 && dm_fs_leaving(d->fs)) {
		/* the requests in flight were answered; the nodes the kernel
		 * holds are in the mirror the next daemon reads */
		dm_fs_leave(d->fs);
		log_info("left the mount at %s to the next daemon", d->mountpoint);
		d->left = true;
		r = 1;
	}
	dm_service_free(d->service);
	d->service = NULL;
	char stats[1024];
	if (dm_fs_format_stats(d->fs, stats, sizeof(stats)) >= 0)
		log_info("%s; kernel modules looked up %" PRIu64 " times", stats,
			 dm_modules_count_lookups(d->binder ? dm_binder_modules(d->binder) : NULL));
	dm_logind_stop(d->logind);
	if (r < 0)
		log_err("session ended: %s", strerror(-r));
	return r;
}
