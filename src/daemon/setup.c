/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * setup.c - driverfsd's steps before serving: the fork of background mode,
 * the model (a snapshot's, or this machine's enumerated with the drivers
 * registered and the monitor listening), --save, the mount; and the
 * teardown after.
 */
#include "daemon.h"
#include "nfd.h"

#include "background.h"
#include "buses/deferred.h"
#include "buses/sources.h"
#include "core/model.h"
#include "drivers/binding.h"
#include "drivers/exec.h"
#include "drivers/journal.h"
#include "drivers/needs.h"
#include "drivers/pci-pm.h"
#include "drivers/persist.h"
#include "drivers/sriov.h"
#include "drivers/vfio-pci.h"
#include "fuse/fs.h"
#include "hotplug/helper.h"
#include "hotplug/monitor.h"
#include "pm/pm.h"
#include "scan/scan.h"
#include "service.h"
#include "snapshot/snapshot.h"
#include "util/log.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

/* Makes @path a usable mount point: created when missing, and a dead FUSE
 * mount left by a killed daemon (ENOTCONN) detached first. */
static int prepare_mountpoint(const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0 && errno == ENOTCONN) {
		log_warn("%s: a dead mount is left there; detaching it", path);
		/* EINVAL: detached meanwhile (fusermount3's auto_unmount, the
		 * last daemon's watcher) */
		if (umount2(path, MNT_DETACH) < 0 && errno != EINVAL)
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
	char why[PATH_MAX + 128];
	r = dm_pm_recover(pm, note_recorded, NULL, why, sizeof(why));
	if (r > 0)
		log_info("%s: resumed %d device%s an earlier run left suspended", path, r,
			 r == 1 ? "" : "s");
	else if (r == -EPERM)
		log_err("%s: refused, anyone but root could change it: %s; nothing in it is "
			"resumed", path, why);
	else if (r < 0)
		log_err("%s: resuming what an earlier run left suspended: %s", path, why);
}

/* The binding journal (docs/design.md §7.5), and the transactions a killed
 * daemon left in it: each completed or rolled back before the tree is
 * served, before the persisted bindings are applied. */
static void recover_binding(struct dm_binder *b, struct dm_model *m)
{
	char why[PATH_MAX + 128];
	int r = dm_binding_recover(b, m, why, sizeof(why));
	const char *path = dm_journal_path(dm_binder_journal(b));
	if (r > 0)
		log_info("%s: acted on %d binding transaction%s an earlier run left unfinished",
			 path, r, r == 1 ? "" : "s");
	else if (r == -EPERM)
		log_err("%s: refused, anyone but root could change it: %s; nothing in it is "
			"rolled back or completed", path, why);
	else if (r < 0)
		log_err("%s: %s; nothing in it is rolled back or completed", path, why);
	if (r < 0)
		return;
	/* the SR-IOV transactions it holds (none once refused) */
	r = dm_sriov_recover(b, m);
	if (r > 0)
		log_info("%s: acted on %d SR-IOV transaction%s an earlier run left unfinished",
			 path, r, r == 1 ? "" : "s");
}

int daemon_fail(int r)
{
	log_err("%s", strerror(-r));
	return r;
}

/* Background mode forks here, before the first thread: a thread started
 * earlier (the PM pool's, by recovery) would not be in the child, and the
 * first transition would wait for it for ever. */
int daemon_go_background(struct daemon *d)
{
	if (d->o->foreground || d->o->save)
		return 0;
	d->ready_fd = dm_background_start();
	if (d->ready_fd < 0) {
		int r = d->ready_fd;
		log_err("cannot go to the background: %s", strerror(-r));
		return r;
	}
	return 0;
}

/* A saved model, served as it was: nothing to enumerate, no hooks to run,
 * nothing to write. */
static int load_snapshot(struct daemon *d)
{
	char err[512];
	int r = dm_snapshot_load(d->model, d->o->snapshot, err, sizeof(err));
	if (r < 0) {
		log_err("%s", r == -EINVAL ? err : strerror(-r));
		return r;
	}
	if (fuse_opt_add_arg(&d->o->fuse_args, "-o") < 0 ||
	    fuse_opt_add_arg(&d->o->fuse_args, "ro") < 0)
		return daemon_fail(-ENOMEM);
	return 0;
}

/* This machine's model: the PM engine, root's name, the user drivers, the
 * monitor, the enumeration, and the resume of what an earlier run left
 * suspended. */
/* Binding requests (docs/design.md §7.5): their checks, kernel drivers'
 * bind and unbind files, and the bindings persisted, applied now. */
static int set_up_binding(struct daemon *d)
{
	if (d->o->proc_root && dm_binder_set_proc_root(d->binder, d->o->proc_root) < 0)
		return daemon_fail(-ENOMEM);
	if (d->o->modules_dir && dm_binder_set_modules_dir(d->binder, d->o->modules_dir) < 0)
		return daemon_fail(-ENOMEM);
	int r;
	if (dm_binder_set_protected(d->binder, d->cfg.protect) < 0)
		return daemon_fail(-ENOMEM);
	dm_model_set_bind_request(d->model, dm_binding_request, d->binder);
	recover_binding(d->binder, d->model);
	r = dm_model_add_root_group(d->model, &dm_persist_root_group);
	if (r < 0)
		return daemon_fail(r);
	/* persistence on top of binding: it applies its records through the
	 * binder, which tells it of each request's "persist" */
	r = dm_persist_new(d->binder, d->cfg.persist_file, &d->persist);
	if (r < 0)
		return daemon_fail(r);
	/* a state file anyone but root could change is not applied */
	if (dm_persist_load(d->persist) == 0)
		dm_persist_apply_all(d->persist, d->model);
	return 0;
}

/* Before each transition: the device links' status (dormant or not) as
 * sysfs has it now, which changes without an event. */
static void sync_links(void *data)
{
	if (dm_scan_sync_links(data) < 0)
		log_warn("device links: out of memory; the walk takes them as last seen");
}

static int enumerate(struct daemon *d)
{
	const struct options *o = d->o;
	struct dm_model *m = d->model;
	dm_sources_pick(d->cfg.sources, &d->sources);
	int r = dm_pm_new(m, &d->pm);
	if (r < 0)
		return daemon_fail(r);
	name_root(m);
	/* User drivers are registered before enumeration so that they are
	 * offered every device first, as docs/design.md §5.1 says. */
	r = dm_pci_pm_register(m, &d->pci_pm);
	if (r < 0)
		log_warn("pci-pm driver not available: %s", strerror(-r));
	r = dm_vfio_pci_register(m, &dm_vfio_kernel_ops, NULL, &d->vfio);
	if (r < 0)
		log_warn("vfio-pci driver not available: %s", strerror(-r));
	/* binding's state, and what moves devices for the exec drivers on
	 * it: made before those are registered (set_up_binding() does the
	 * rest once the tree is there) */
	r = dm_binder_new("/sys", o->journal ? o->journal : d->cfg.binding_journal, &d->binder);
	if (r == 0)
		r = dm_needs_new(d->binder, &d->needs);
	if (r < 0)
		return daemon_fail(r);
	r = daemon_load_drivers(d);
	if (r != 0)
		return r > 0 ? -EINVAL : r;
	/* listening starts before the enumeration, so that no event falls
	 * between the two */
	r = dm_monitor_new(m, &d->sources, &o->uevents, daemon_hotplug_done, &d->fs, &d->monitor);
	if (r < 0)
		log_warn("no hotplug (udev monitor: %s); the tree stays as enumerated",
			 strerror(-r));
	r = dm_scan_model(m, &d->sources);
	if (r < 0)
		return daemon_fail(r);
	if (o->save)
		return 0;
	/* the kernel's deferred probes, a live machine's */
	r = dm_model_add_root_group(m, &dm_deferred_root_group);
	if (r < 0)
		return daemon_fail(r);
	dm_pm_set_prepare(d->pm, sync_links, m);
	recover_transition(d->pm, o->record ? o->record : d->cfg.transition_record);
	return set_up_binding(d);
}

/* The connection and state the last daemon left (LISTEN_FDS, named "fuse"
 * and "state"), into *fuse_fd, *state_fd; -1 each when none. Any other
 * descriptor passed is closed. */
static void handed_fds(int *fuse_fd, int *state_fd)
{
	char **names = NULL;
	int n = sd_listen_fds_with_names(1, &names);
	*fuse_fd = *state_fd = -1;
	for (int i = 0; i < n; i++) {
		int fd = SD_LISTEN_FDS_START + i;
		const char *name = names && names[i] ? names[i] : "";
		if (strcmp(name, "fuse") == 0 && *fuse_fd < 0)
			*fuse_fd = fd;
		else if (strcmp(name, "state") == 0 && *state_fd < 0)
			*state_fd = fd;
		else
			close(fd);
	}
	for (int i = 0; names && names[i]; i++)
		free(names[i]);
	free(names);
	if ((*fuse_fd < 0) != (*state_fd < 0)) {
		/* one without the other is no handover */
		if (*fuse_fd >= 0)
			close(*fuse_fd);
		if (*state_fd >= 0)
			close(*state_fd);
		*fuse_fd = *state_fd = -1;
	}
}

/* A connection that cannot be taken over: nobody serves it, its mount is
 * or will be detached by its watcher (no longer waiting for this daemon);
 * the supervisor's copies go too, so that it ends (its readers get
 * ENOTCONN rather than waiting). */
static void drop_stale(int fuse_fd, int state_fd)
{
	dm_fs_handover_announce(state_fd, false);
	sd_notify(0, "FDSTOREREMOVE=1\nFDNAME=fuse");
	sd_notify(0, "FDSTOREREMOVE=1\nFDNAME=state");
	close(fuse_fd);
	close(state_fd);
}

/* The filesystem, its options set; io_uring as for a mount of its own. */
static int new_fs(struct daemon *d)
{
	int r = dm_fs_new(d->model, &d->o->fuse_args, &d->fs);
	if (r < 0) {
		log_err("cannot set up the filesystem (bad -o option?)");
		return r;
	}
	dm_fs_set_passthrough(d->fs, !d->o->no_passthrough);
	dm_fs_set_io_uring(d->fs, !d->o->no_io_uring);
	if (d->o->handover)
		dm_fs_set_handover(d->fs);
	return 0;
}

/* --handover with a connection handed over: taken, before the model is
 * filled, and answered from the state meanwhile (docs/design.md §10.1).
 * 0 also when there was nothing to take (mount anew), or -errno. */
static int take_over(struct daemon *d)
{
	int fuse_fd = d->handed_fuse, state_fd = d->handed_state;
	d->handed_fuse = d->handed_state = -1; /* taken from here on */
	if (fuse_fd < 0)
		return 0;
	int r = new_fs(d);
	if (r == 0)
		r = dm_fs_adopt(d->fs, fuse_fd, state_fd);
	if (r == -EINVAL || r == -ESTALE || r == -ECONNABORTED || r == -EOPNOTSUPP) {
		log_warn("the mount's last daemon left nothing to take over (%s): mounting anew",
			 r == -ESTALE		? "its state is incomplete"
			 : r == -ECONNABORTED ? "its connection was aborted"
			 : r == -EOPNOTSUPP   ? "its connection is on io_uring"
					      : "its state is not one");
		drop_stale(fuse_fd, state_fd);
		return 0;
	}
	if (r < 0) {
		log_err("cannot take over the mount at %s: %s", d->mountpoint, strerror(-r));
		return r;
	}
	d->taken_over = true;
	return 0;
}

int daemon_set_up_model(struct daemon *d)
{
	/* a connection handed over: its last daemon's watcher waits for
	 * this one while it enumerates, however long that takes */
	if (d->o->handover && !d->o->snapshot) {
		handed_fds(&d->handed_fuse, &d->handed_state);
		if (d->handed_state >= 0 && dm_fs_handover_announce(d->handed_state, true) < 0)
			log_debug("the state handed over is not one this daemon takes over");
	}
	int r = dm_model_new(&d->model);
	if (r < 0)
		return daemon_fail(r);
	if (d->o->snapshot)
		return load_snapshot(d);
	/* its readers answered while the machine is enumerated */
	if (!d->o->save && (r = take_over(d)) < 0)
		return r;
	return enumerate(d);
}

int daemon_save(struct daemon *d)
{
	char why[64];
	int r = dm_snapshot_save(d->model, d->o->save, d->o->sanitize, why, sizeof(why));
	if (r < 0)
		log_err("%s: %s", d->o->save, *why ? why : strerror(-r));
	return r;
}

int daemon_mount(struct daemon *d)
{
	int r;
	if (d->taken_over) {
		size_t nodes = 0;
		r = dm_fs_adopt_serve(d->fs, d->mountpoint, &nodes);
		if (r < 0) {
			log_err("cannot take over the mount at %s: %s", d->mountpoint,
				strerror(-r));
			return r;
		}
		log_info("took over the mount at %s from the last daemon: %zu nodes the kernel "
			 "holds, taken over on demand",
			 d->mountpoint, nodes);
		return 0;
	}
	if (!d->fs && (r = new_fs(d)) < 0)
		return r;
	/* A new connection over /dev/fuse under --handover unless asked, since
	 * a request the kernel gives a leaving daemon's ring entry as it ends
	 * fails with ECANCELED (docs/design.md §10.1); one taken over is
	 * served as its last daemon served it (over io_uring unless
	 * --no-io-uring: then it is not taken over) */
	if (d->o->handover)
		dm_fs_set_io_uring(d->fs, d->o->handover_io_uring && !d->o->no_io_uring);
	r = prepare_mountpoint(d->mountpoint);
	if (r < 0) {
		log_err("mount point %s: %s", d->mountpoint, strerror(-r));
		return r;
	}
	r = dm_fs_mount(d->fs, d->mountpoint);
	if (r < 0) {
		log_err("cannot mount at %s", d->mountpoint);
		return r;
	}
	return 0;
}

void daemon_tear_down(struct daemon *d)
{
	if (d->model)
		dm_model_clear_metrics(d->model);
	dm_service_free(d->service);
	dm_monitor_free(d->monitor);
	dm_helper_free(d->helper);
	/* persisted bindings the monitor queued: an apply under way ends
	 * first, the rest are dropped (the next start applies them) */
	if (d->persist)
		dm_persist_stop(d->persist);
	if (d->left) {
		/* The next daemon starts once this one has exited, and the
		 * readers wait until it answers: what the kernel, the next
		 * daemon and the drivers need is done (the state "left", the
		 * backings kept, the invalidations stopped, no move under way,
		 * exec drivers' remove()); the memory of the model and of the
		 * nodes the kernel holds, 0.4 s to free at 10^5 devices, goes
		 * with the process. (Without the notifier stopped first, a
		 * next daemon's test saw a device removed meanwhile still
		 * there, 2 runs in 5: test_handover's what_changed.) */
		dm_fs_stop_notifier(d->fs);
		if (d->needs)
			dm_needs_stop(d->needs);
		daemon_nfd_stop();
		dm_exec_unload(d->exec);
		fflush(NULL);
		_exit(DAEMON_EXIT_HANDOVER);
	}
	dm_fs_free(d->fs);
	/* the kernel drivers exec drivers needed stay bound (needs.h) */
	if (d->needs)
		dm_needs_stop(d->needs);
	daemon_nfd_stop();
	dm_exec_unload(d->exec);
	driver_drop(d->pci_pm);
	driver_drop(d->vfio);
	dm_pm_free(d->pm);
	dm_model_free(d->model);
	/* after every user of them: the workers stopped, the model gone */
	dm_persist_free(d->persist);
	dm_needs_free(d->needs);
	dm_binder_free(d->binder);
}
