/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs.c - the FUSE session: the low-level operations table, the requests
 * counted per operation, and the session's lifecycle (new, mount, loop,
 * free). The handlers (fs-nodes.c, fs-files.c) turn requests into calls on
 * the node table (inode.c), the view of the model (view.c), kept listings
 * (listing.c) and open copies (open-value.c), and errors into errno
 * replies, here and only here; what the kernel cached is invalidated by
 * the notifier (notify.c).
 */
#include "fs-private.h"

#include "early.h"
#include "handover.h"
#include "io.h"
#include "uring.h"
#include "util/log.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/fuse.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

static const char *const fs_op_names[FS_OP_N] = {
	[FS_OP_INIT] = "init",
	[FS_OP_LOOKUP] = "lookup",
	[FS_OP_FORGET] = "forget",
	[FS_OP_FORGET_MULTI] = "forget_multi",
	[FS_OP_GETATTR] = "getattr",
	[FS_OP_SETATTR] = "setattr",
	[FS_OP_READLINK] = "readlink",
	[FS_OP_OPENDIR] = "opendir",
	[FS_OP_READDIR] = "readdir",
	[FS_OP_READDIRPLUS] = "readdirplus",
	[FS_OP_RELEASEDIR] = "releasedir",
	[FS_OP_OPEN] = "open",
	[FS_OP_RELEASE] = "release",
	[FS_OP_READ] = "read",
	[FS_OP_WRITE] = "write",
	[FS_OP_STATFS] = "statfs",
	[FS_OP_MKNOD] = "mknod",
	[FS_OP_CREATE] = "create",
	[FS_OP_MKDIR] = "mkdir",
	[FS_OP_UNLINK] = "unlink",
	[FS_OP_SYMLINK] = "symlink",
	[FS_OP_RENAME] = "rename",
	[FS_OP_LINK] = "link",
};


int dm_fs_format_stats(struct dm_fs *fs, char *buf, size_t size)
{
	uint64_t total = 0, n[FS_OP_N];
	for (int i = 0; i < FS_OP_N; i++) {
		n[i] = atomic_load_explicit(&fs->requests[i], memory_order_relaxed);
		total += n[i];
	}
	int len = snprintf(buf, size, "fuse requests: %" PRIu64, total);
	for (int i = 0; i < FS_OP_N && len >= 0 && (size_t)len < size; i++)
		if (n[i])
			len += snprintf(buf + len, size - (size_t)len, " %s=%" PRIu64,
					fs_op_names[i], n[i]);
	if (fs->uring && len >= 0 && (size_t)len < size)
		len += snprintf(buf + len, size - (size_t)len,
				"; over io_uring: %" PRIu64 " (ring threads rescued: %" PRIu64 ")",
				dm_uring_served(fs->uring), dm_uring_rescued(fs->uring));
	if (fs_passthrough_on(&fs->passthrough) && len >= 0 && (size_t)len < size)
		len += snprintf(buf + len, size - (size_t)len, "; opened for passthrough: %" PRIu64,
				fs_passthrough_opens(&fs->passthrough));
	if (len >= 0 && (size_t)len < size)
		len += snprintf(buf + len, size - (size_t)len, "; power_log built %" PRIu64 " times",
				dm_model_count_log_builds(fs->model));
	if (len >= 0 && (size_t)len < size)
		len += snprintf(buf + len, size - (size_t)len, ", metrics %" PRIu64 " times",
				dm_model_count_metrics_builds(fs->model));
	if (len >= 0 && (size_t)len < size)
		len += snprintf(buf + len, size - (size_t)len,
				", class/*/drivers/ %" PRIu64 " times",
				dm_model_count_class_driver_builds(fs->model));
	uint64_t given, invalidated;
	fs_notifier_negative_counts(&fs->notifier, &given, &invalidated);
	if (len >= 0 && (size_t)len < size)
		len += snprintf(buf + len, size - (size_t)len,
				"; negative entries given %" PRIu64 ", invalidated %" PRIu64, given,
				invalidated);
	return len < 0 || (size_t)len >= size ? -ENOBUFS : len;
}

void dm_fs_metrics(struct dm_metrics *w, void *data)
{
	struct dm_fs *fs = data;
	dm_metrics_family(w, "driverfsd_fuse_requests_total", "counter",
			  "FUSE requests served, by operation.");
	for (int i = 0; i < FS_OP_N; i++)
		dm_metrics_sample(w, "driverfsd_fuse_requests_total",
				  (double)atomic_load_explicit(&fs->requests[i], memory_order_relaxed),
				  "operation", fs_op_names[i], NULL);
	/* memory over days: the nodes the kernel holds are most of the
	 * daemon's heap beside the model, and follow its caches, not time */
	dm_metrics_family(w, "driverfsd_fuse_nodes", "gauge",
			  "Inodes the kernel holds a lookup of (the daemon's node table).");
	dm_metrics_sample(w, "driverfsd_fuse_nodes", (double)fs_table_count(fs->table), NULL);
	dm_metrics_family(w, "driverfsd_fuse_nodes_pending", "gauge",
			  "Inodes taken over from the last daemon (--handover) and not "
			  "made yet: each is made when first used, or freed when forgotten.");
	dm_metrics_sample(w, "driverfsd_fuse_nodes_pending", (double)fs_table_pending(fs->table),
			  NULL);
	pthread_mutex_lock(&fs->inflight.lock);
	unsigned stalled = fs->inflight.stalled_now;
	uint64_t stalled_total = fs->inflight.stalled_total;
	pthread_mutex_unlock(&fs->inflight.lock);
	dm_metrics_family(w, "driverfsd_fuse_requests_stalled", "gauge",
			  "Reads and writes in flight longer than the stall bound at the "
			  "watchdog's last look.");
	dm_metrics_sample(w, "driverfsd_fuse_requests_stalled", (double)stalled, NULL);
	dm_metrics_family(w, "driverfsd_fuse_requests_stalled_total", "counter",
			  "Reads and writes found in flight longer than the stall bound.");
	dm_metrics_sample(w, "driverfsd_fuse_requests_stalled_total", (double)stalled_total,
			  NULL);
	dm_metrics_family(w, "driverfsd_fuse_sysfs_reads_total", "counter",
			  "sysfs reads of users other than root kept to their share: waiting "
			  "in the pool (/dev/fuse), refused with EAGAIN (io_uring).");
	dm_metrics_sample(w, "driverfsd_fuse_sysfs_reads_total",
			  (double)atomic_load_explicit(&fs->slow.queued_total,
						       memory_order_relaxed),
			  "result", "queued", NULL);
	dm_metrics_sample(w, "driverfsd_fuse_sysfs_reads_total",
			  (double)atomic_load_explicit(&fs->slow.refused_total,
						       memory_order_relaxed),
			  "result", "refused", NULL);
}

/* One request that stopped moving, told once. */
static void report_stalled(void *data, const struct fs_inflight_slot *sl)
{
	struct dm_fs *fs = data;
	struct fs_ref n;
	char where[PATH_MAX] = "?";
	if (fs_table_get(fs->table, sl->ino, &n) == 0) {
		const char *dev = n.t.dev ? dm_device_get_devpath(n.t.dev) : NULL;
		snprintf(where, sizeof(where), "%s%s%s%s%s", dev ? dev : "", dev ? "/" : "",
			 n.group, n.group[0] ? "/" : "", n.name);
		fs_ref_release(&n);
	}
	log_warn("a %s request of uid %u on %s (inode %" PRIu64 ") has run %" PRIu64
		 " s, and goes on",
		 fs_op_names[sl->op], (unsigned)sl->uid, where, sl->ino,
		 (fs_now_ns() - sl->start_ns) / 1000000000u);
}

unsigned dm_fs_check_stalled(struct dm_fs *fs)
{
	return fs_inflight_check(&fs->inflight, (uint64_t)FS_STALL_SEC * 1000000000u,
				 report_stalled, fs);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	req_fs(req, FS_OP_STATFS);
	(void)ino;
	struct statvfs sv = { .f_bsize = 4096, .f_frsize = 4096, .f_namemax = 255 };
	fuse_reply_statfs(req, &sv);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct dm_fs *fs = userdata;
	atomic_fetch_add_explicit(&fs->requests[FS_OP_INIT], 1, memory_order_relaxed);
	/* docs/design.md §6.6: listings with attributes, and page caches
	 * that follow a moving mtime. Not the open/release round trips saved
	 * by answering open ENOSYS (FUSE_CAP_NO_OPEN_SUPPORT): see fs_op_open. */
	/* FUSE_CAP_NO_OPENDIR_SUPPORT saves two requests per directory, but
	 * fusermount3's auto_unmount tells a dead mount by open(mountpoint)
	 * failing with ENOTCONN, and without opendir that open succeeds on a
	 * dead connection: only when the daemon's own unmount watcher
	 * (unmount-watch.h) will detach a dead mount. */
	if (fs->unmount_watched && (conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT)) {
		conn->want |= FUSE_CAP_NO_OPENDIR_SUPPORT;
		fs->no_opendir = true;
	}
	if (conn->capable & FUSE_CAP_READDIRPLUS) {
		conn->want |= FUSE_CAP_READDIRPLUS;
		conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
	}
	if (conn->capable & FUSE_CAP_AUTO_INVAL_DATA)
		conn->want |= FUSE_CAP_AUTO_INVAL_DATA;
	/* link targets change only with the model, which invalidates them */
	if (conn->capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
}

/* The tree is the model's: nothing is created, removed or renamed through
 * the filesystem. The errors are the ones sysfs gives. */
static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	req_fs(req, FS_OP_MKNOD);
	fuse_reply_err(req, EACCES);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	req_fs(req, FS_OP_CREATE);
	fuse_reply_err(req, EACCES);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	req_fs(req, FS_OP_MKDIR);
	fuse_reply_err(req, EPERM);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	req_fs(req, FS_OP_UNLINK);
	fuse_reply_err(req, EPERM);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	req_fs(req, FS_OP_SYMLINK);
	fuse_reply_err(req, EPERM);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	req_fs(req, FS_OP_RENAME);
	fuse_reply_err(req, EPERM);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	req_fs(req, FS_OP_LINK);
	fuse_reply_err(req, EPERM);
}

static const struct fuse_lowlevel_ops fs_ops = {
	.init = op_init,
	.readdirplus = fs_op_readdirplus,
	.mknod = op_mknod,
	.create = op_create,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_unlink,
	.symlink = op_symlink,
	.rename = op_rename,
	.link = op_link,
	.lookup = fs_op_lookup,
	.forget = fs_op_forget,
	.forget_multi = fs_op_forget_multi,
	.getattr = fs_op_getattr,
	.setattr = fs_op_setattr,
	.readlink = fs_op_readlink,
	.opendir = fs_op_opendir,
	.readdir = fs_op_readdir,
	.releasedir = fs_op_releasedir,
	.open = fs_op_open,
	.release = fs_op_release,
	.read = fs_op_read,
	.write = fs_op_write,
	.statfs = op_statfs,
};

/* Whether the request @opcode is one fs_ops leaves to libfuse, which
 * answers it ENOSYS (the kernel then stops sending most of them): so
 * answered before the model too (early.h). Read from fs_ops itself. */
static bool op_unhandled(uint32_t opcode)
{
	switch (opcode) {
	case FUSE_IOCTL: /* isatty() of every stdio open */
		return !fs_ops.ioctl;
	case FUSE_POLL:
		return !fs_ops.poll;
	case FUSE_FLUSH:
		return !fs_ops.flush;
	case FUSE_GETXATTR:
		return !fs_ops.getxattr;
	case FUSE_LISTXATTR:
		return !fs_ops.listxattr;
	case FUSE_ACCESS:
		return !fs_ops.access;
	default:
		return false;
	}
}

int dm_fs_new(struct dm_model *m, struct fuse_args *args, struct dm_fs **ret)
{
	struct dm_fs *fs = calloc(1, sizeof(*fs));
	if (!fs)
		return -ENOMEM;
	fs->model = m;
	clock_gettime(CLOCK_REALTIME, &fs->start);
	fs_listings_init(&fs->listings);
	fs_opens_init(&fs->opens);
	fs_slow_init(&fs->slow, fs_serve_slow, fs);
	fs_inflight_init(&fs->inflight);
	fs_passthrough_init(&fs->passthrough, true);
	/* ours, taken out of what FUSE is given (open-value.h) */
	static const struct fuse_opt opts[] = {
		{ "max_open_bytes_per_uid=%zu", offsetof(struct dm_fs, opens.uid_budget), 0 },
		FUSE_OPT_END,
	};
	int r = fuse_opt_parse(args, fs, opts, NULL) == 0 ? 0 : -EINVAL;
	if (r < 0)
		goto out_free;
	r = fs_table_new(&fs->table);
	if (r < 0)
		goto out_free;
	fs_notifier_init(&fs->notifier, m, fs->table);
	/* Every user reads, as with sysfs; the kernel checks modes, so only
	 * root may write. allow_other is root's to give (an unprivileged
	 * mount would need user_allow_other in /etc/fuse.conf). */
	/* auto_unmount: a helper (fusermount3) unmounts when the daemon dies,
	 * even by SIGKILL, so no dead mount is left behind. */
	/* first, so that the command line's (fsname= from mount(8)'s
	 * source) come after them and win; the subtype is the program's
	 * name, as the fstab type fuse.driverfsd and /proc/mounts have it */
	if (fuse_opt_insert_arg(args, 1, "-o") < 0 ||
	    fuse_opt_insert_arg(args, 2, geteuid() == 0
					     ? "default_permissions,allow_other,auto_unmount,"
					       "fsname=driverfs,subtype=driverfsd"
					     : "default_permissions,auto_unmount,fsname=driverfs,"
					       "subtype=driverfsd") < 0) {
		r = -ENOMEM;
		goto out_table;
	}
	fs->se = fuse_session_new(args, &fs_ops, sizeof(fs_ops), fs);
	if (!fs->se) {
		r = -EINVAL;
		goto out_table;
	}
	*ret = fs;
	return 0;

out_table:
	fs_notifier_done(&fs->notifier);
	fs_table_free(fs->table);
out_free:
	fs_passthrough_done(&fs->passthrough);
	fs_slow_done(&fs->slow);
	pthread_mutex_destroy(&fs->inflight.lock);
	fs_opens_done(&fs->opens);
	fs_listings_done(&fs->listings);
	free(fs);
	return r;
}

int dm_fs_mount(struct dm_fs *fs, const char *mountpoint)
{
	if (fs->handover_wanted && fs_handover_new(&fs->start, &fs->handover) < 0)
		return -ENOMEM;
	if (fs->handover) {
		struct fs_mirror mirror;
		fs_handover_mirror(fs->handover, &mirror);
		fs_table_set_mirror(fs->table, &mirror);
		fs_opens_set_epoch(&fs->opens, atomic_load(&fs->handover->h->epoch));
		struct fs_backing_mirror backings;
		fs_handover_backings(fs->handover, &backings);
		fs_passthrough_set_mirror(&fs->passthrough, &backings);
	}
	if (fuse_session_mount(fs->se, mountpoint) != 0)
		return -EIO;
	fs->mounted = true;
	fs_passthrough_set_fd(&fs->passthrough, fuse_session_fd(fs->se));
	/* else (no possible CPUs to read) the session reads /dev/fuse alone */
	if (!fs->no_io_uring && dm_uring_new(fs->se, DM_URING_THREADS_PER_CPU, &fs->uring) < 0)
		fs->uring = NULL;
	unsigned queues, per_cpu;
	dm_uring_shape(fs->uring, &queues, &per_cpu);
	if (fs->uring && fs_slow_set_rings(&fs->slow, queues, per_cpu) < 0) {
		dm_uring_free(fs->uring);
		fs->uring = NULL;
	}
	/* without it, libfuse's own I/O: neither io_uring nor passthrough
	 * (nor a handover, which needs the INIT request kept) */
	if (dm_fs_io_attach(fs->se, fuse_session_fd(fs->se), fs->uring, &fs->passthrough,
			    fs->handover) < 0) {
		dm_uring_free(fs->uring);
		fs->uring = NULL;
		fs_handover_free(fs->handover);
		fs->handover = NULL;
	}
	/* the next daemon's ring entries, if the kernel takes ours */
	if (fs->handover && fs->uring)
		dm_uring_publish(fs->uring, &fs->handover->h->uring_payload);
	return 0;
}

void dm_fs_set_handover(struct dm_fs *fs)
{
	fs->handover_wanted = true;
	/* io_uring, if the daemon asks for it, goes on with the next daemon
	 * (handover.h) */
}

int dm_fs_handover_announce(int state_fd, bool coming)
{
	return fs_handover_announce(state_fd, coming);
}

int dm_fs_adopt(struct dm_fs *fs, int fuse_fd, int state_fd)
{
	/* a connection aborted (by the last daemon's watcher, after waiting
	 * for a successor in vain) answers nothing again */
	struct pollfd pfd = { .fd = fuse_fd, .events = POLLIN };
	if (poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLERR | POLLHUP | POLLNVAL)))
		return -ECONNABORTED;
	struct fs_handover *ho;
	int r = fs_handover_adopt(state_fd, &ho);
	if (r < 0)
		return r;
	/* Served over io_uring: the kernel sends this connection nothing
	 * else, so it is served over io_uring here too, or not taken over
	 * (its descriptors not yet taken: -EOPNOTSUPP, as for a state that
	 * cannot be) */
	size_t payload = (size_t)atomic_load(&ho->h->uring_payload);
	if (payload) {
		r = fs->no_io_uring ? -EOPNOTSUPP
				    : dm_uring_new(fs->se, DM_URING_THREADS_PER_CPU, &fs->uring);
		if (r == 0 && (r = dm_uring_prepare(fs->uring)) < 0) {
			dm_uring_free(fs->uring);
			fs->uring = NULL;
		}
		if (r < 0) {
			log_warn("handover: the connection is served over io_uring, which this "
				 "daemon cannot do (%s)",
				 r == -EOPNOTSUPP && fs->no_io_uring ? "--no-io-uring" : strerror(-r));
			ho->fd = -1; /* the caller's still */
			fs_handover_free(ho);
			return -EOPNOTSUPP;
		}
		fs->uring_adopted = payload;
	}
	r = dm_fs_io_attach(fs->se, fuse_fd, fs->uring, &fs->passthrough, ho);
	if (r < 0) {
		dm_uring_free(fs->uring);
		fs->uring = NULL;
		fs->uring_adopted = 0;
		fs_handover_free(ho);
		return r;
	}
	/* from here the session holds fuse_fd (fuse_session_destroy() closes it) */
	fs->handover = ho;
	fs->handover_wanted = true;
	/* the backings the files opened before read through, and whether
	 * the connection passes through at all, as the INIT reply said */
	fs_passthrough_set_fd(&fs->passthrough, fuse_fd);
	struct fs_backing_mirror backings;
	fs_handover_backings(ho, &backings);
	r = fs->adopted_backings = fs_passthrough_adopt(&fs->passthrough, &backings);
	if (r < 0)
		return r;
	/* Before the model: the opens the mirror answers are answered, the
	 * rest kept for the session (early.h). Over /dev/fuse, with an INIT
	 * to give the session first (without one, the kernel has it queued,
	 * and the session must read it before anything). */
	fs_handover_mirror(ho, &fs->early_mirror);
	struct timespec told_at;
	fs_handover_files_time(ho, &told_at);
	if (!fs->uring && ho->h->init_len &&
	    (r = fs_early_start(fuse_fd, &fs->early_mirror, &fs->passthrough, &told_at,
				 op_unhandled, &fs->early)) < 0)
		log_warn("handover: nothing is answered before the model (%s)", strerror(-r));
	if (fs->early) {
		dm_fs_io_read_first(fs->se, fs_early_pop, fs->early);
		log_info("handover: answering from the state until the model is there");
	}
	/* a request the last daemon read as it was leaving, and never
	 * answered, comes again rather than waiting for ever */
	int e = dm_fs_io_resend(fs->se);
	if (e < 0)
		log_warn("handover: the kernel sends no request again (%s)", strerror(-e));
	return 0;
}

int dm_fs_adopt_serve(struct dm_fs *fs, const char *mountpoint, size_t *ret_nodes)
{
	struct fs_handover *ho = fs->handover;
	uint64_t answered = 0, kept = 0;
	fs->adopted_point = strdup(mountpoint);
	if (!fs->adopted_point)
		return -ENOMEM;
	struct fs_mirror mirror;
	fs_handover_mirror(ho, &mirror);
	fs_table_set_mirror(fs->table, &mirror);
	struct fs_stale *stale = NULL;
	/* a pass over every node (0.4 s at 10^6), which reads the mirror as
	 * the early thread does and writes none of it: that thread answers
	 * meanwhile, and stops only once the session can serve */
	int r = fs_handover_restore(ho, fs->table, fs->model, &stale, ret_nodes);
	if (fs->early)
		fs_early_stop(fs->early, &answered, &kept);
	/* what the kernel cached of them came from the last daemon: dropped
	 * once the notifier runs, while this one already serves (a node no
	 * longer there answers -ESTALE, on which the VFS looks its path up
	 * again and finds it gone) */
	if (r == 0)
		fs_notifier_queue_stale(&fs->notifier, stale, *ret_nodes);
	/* no INIT kept: the last daemon never read it, the kernel still has
	 * it queued for this one */
	if (r == 0 && ho->h->init_len)
		r = dm_fs_io_replay_init(fs->se, ho);
	if (r == 0) {
		fs_handover_serve(ho, &fs->start);
		fs_opens_set_epoch(&fs->opens, atomic_load(&ho->h->epoch));
		log_info("handover: the last daemon %s; passthrough %s, %d backing files of open "
			 "files taken over; before the model, %" PRIu64 " requests answered from the "
			 "state and %" PRIu64 " kept for it",
			 ho->was_left ? "left on purpose" : "died serving the mount",
			 fs_passthrough_on(&fs->passthrough) ? "on"
			 : atomic_load(&ho->h->passthrough) ? "not wanted"
							     : "not negotiated",
			 fs->adopted_backings, answered, kept);
	}
	/* the descriptors are taken by now: not an error of the state's */
	return r == -EINVAL || r == -ESTALE ? -EPROTO : r;
}

int dm_fs_handover_fds(struct dm_fs *fs, int *ret_fuse, int *ret_state)
{
	if (!fs->handover)
		return -ENOENT;
	*ret_fuse = fuse_session_fd(fs->se);
	*ret_state = fs->handover->fd;
	return 0;
}

void dm_fs_handover_stored(struct dm_fs *fs)
{
	if (fs->handover)
		atomic_store(&fs->handover->h->stored, 1);
}

const void *dm_fs_handover_header(struct dm_fs *fs)
{
	return fs->handover ? fs->handover->h : NULL;
}

/* SIGUSR2: leave the connection to the next daemon (handover.h). The
 * session of the process, for the handler. */
static struct dm_fs *volatile leaving_fs;
/* The thread running the session loop, once it runs, and libfuse's own
 * handler of the signals that end it. */
static pthread_t loop_thread;
/* read by signal handlers and the watchdog: lock-free, so safe in both;
 * loop_thread is written before it is set */
static atomic_int loop_running;
static struct sigaction fuse_exit_action;
static bool exit_wrapped;

/*
 * fuse_session_exit() only marks the session: the loop's thread notices
 * when its wait is interrupted, a worker when its read of /dev/fuse is.
 * Under umockdev a SIGUSR2 was left unnoticed, the daemon waiting for a
 * request that never came (5 planned exits in 30, tests/mount's
 * supervisor, every worker in its read and the loop's thread in its
 * wait): the signal is passed on to the loop's thread (none in 40).
 */
static void wake_loop(int sig)
{
	if (atomic_load_explicit(&loop_running, memory_order_acquire) &&
	    !pthread_equal(pthread_self(), loop_thread))
		pthread_kill(loop_thread, sig);
}

static void on_sigusr2(int sig)
{
	struct dm_fs *fs = leaving_fs;
	if (!fs)
		return;
	atomic_store(&fs->leaving, true);
	fuse_session_exit(fs->se);
	wake_loop(sig);
}

static void on_exit_signal(int sig)
{
	if (fuse_exit_action.sa_handler != SIG_DFL && fuse_exit_action.sa_handler != SIG_IGN)
		fuse_exit_action.sa_handler(sig);
	wake_loop(sig);
}

/*
 * And still: libfuse's loop (3.14) looks at the session, then waits on a
 * semaphore only its workers post; a signal handled on the loop's thread
 * between the two is lost, and the loop waits for a request that may
 * never come (found by reading libfuse while a daemon that did not end on
 * SIGTERM was looked into; that one was blocked in sd_notify on a test's
 * full socket instead). The watchdog kicks it each second until it ends:
 * the signal that ended the session again, whose handlers only end it
 * again.
 */
void dm_fs_kick_loop(struct dm_fs *fs)
{
	if (atomic_load_explicit(&loop_running, memory_order_acquire) &&
	    fuse_session_exited(fs->se))
		pthread_kill(loop_thread, atomic_load(&fs->leaving) ? SIGUSR2 : SIGTERM);
}

bool dm_fs_leaving(struct dm_fs *fs)
{
	return atomic_load(&fs->leaving);
}

void dm_fs_set_leaving(struct dm_fs *fs)
{
	if (fs->handover)
		atomic_store(&fs->leaving, true);
}

bool dm_fs_handover_kept(struct dm_fs *fs)
{
	return fs->handover && atomic_load(&fs->handover->h->stored);
}

void dm_fs_leave(struct dm_fs *fs)
{
	fs_handover_leave(fs->handover);
	/* the backings too: open files still read through them, and the
	 * next daemon shares them with new opens of their inodes */
	fs_passthrough_leave(&fs->passthrough);
	/* the mount stays for the next daemon */
	fs->mounted = false;
	free(fs->adopted_point);
	fs->adopted_point = NULL;
}

void dm_fs_set_io_uring(struct dm_fs *fs, bool on)
{
	fs->no_io_uring = !on;
}

void dm_fs_set_passthrough(struct dm_fs *fs, bool on)
{
	fs->passthrough.wanted = on;
}

void dm_fs_set_unmount_watched(struct dm_fs *fs)
{
	fs->unmount_watched = true;
}

int dm_fs_start_notifier(struct dm_fs *fs)
{
	return fs_notifier_start(&fs->notifier, fs->se);
}

void dm_fs_stop_notifier(struct dm_fs *fs)
{
	fs_notifier_stop(&fs->notifier);
}

void dm_fs_sync_invalidations(struct dm_fs *fs)
{
	fs_notifier_sync(&fs->notifier);
}

int dm_fs_set_signal_handlers(struct dm_fs *fs)
{
	if (fuse_set_signal_handlers(fs->se) != 0)
		return -EIO;
	/* libfuse's, which ends the session, then on to the loop's thread */
	struct sigaction exit_action = { .sa_handler = on_exit_signal };
	sigemptyset(&exit_action.sa_mask);
	if (sigaction(SIGTERM, NULL, &fuse_exit_action) < 0 ||
	    fuse_exit_action.sa_handler == SIG_DFL || fuse_exit_action.sa_handler == SIG_IGN ||
	    (fuse_exit_action.sa_flags & SA_SIGINFO) || sigaction(SIGTERM, &exit_action, NULL) < 0 ||
	    sigaction(SIGINT, &exit_action, NULL) < 0)
		return -EIO;
	exit_wrapped = true;
	if (fs->handover) {
		leaving_fs = fs;
		struct sigaction sa = { .sa_handler = on_sigusr2 };
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGUSR2, &sa, NULL) < 0)
			return -errno;
	}
	return 0;
}

int dm_fs_loop(struct dm_fs *fs)
{
	struct fuse_loop_config *cfg = fuse_loop_cfg_create();
	if (!cfg)
		return -ENOMEM;
	fuse_loop_cfg_set_clone_fd(cfg, 0);
	fuse_loop_cfg_set_max_threads(cfg, 16);
	fuse_loop_cfg_set_idle_threads(cfg, 16);
	if (fs->uring_adopted) {
		dm_uring_publish(fs->uring, &fs->handover->h->uring_payload);
		int e = dm_uring_go(fs->uring, fs->uring_adopted, fs->adopted_point);
		if (e < 0) {
			log_err("handover: the kernel refuses this daemon's io_uring entries (%s): "
				"nothing can serve the connection",
				strerror(-e));
			fuse_loop_cfg_destroy(cfg);
			dm_uring_stop(fs->uring);
			return e;
		}
	}
	/* The loop's thread takes the signals that end the loop (wake_loop()):
	 * never blocked here, whatever mask it was left with. umockdev's
	 * preload (tests, benches) keeps the mask it restores after each call
	 * it wraps in one global, so a thread could come out of a sysfs open
	 * with another thread's, every signal blocked (the main thread's read
	 * of the DMI name beside a next daemon's early thread: SIGUSR2 never
	 * taken, the daemon never left). */
	sigset_t ends;
	sigemptyset(&ends);
	sigaddset(&ends, SIGTERM);
	sigaddset(&ends, SIGINT);
	sigaddset(&ends, SIGHUP);
	sigaddset(&ends, SIGUSR2);
	pthread_sigmask(SIG_UNBLOCK, &ends, NULL);
	loop_thread = pthread_self();
	atomic_store_explicit(&loop_running, 1, memory_order_release);
	int r = fuse_session_loop_mt(fs->se, cfg);
	atomic_store_explicit(&loop_running, 0, memory_order_release);
	fuse_loop_cfg_destroy(cfg);
	/* the rings' threads call into the session and the tables */
	dm_uring_stop(fs->uring);
	/* and so do the reads the pool serves */
	fs_slow_stop(&fs->slow);
	return r < 0 ? r : 0;
}

void dm_fs_free(struct dm_fs *fs)
{
	if (!fs)
		return;
	fs_notifier_stop(&fs->notifier);
	/* before the session's I/O, which reads what it kept */
	fs_early_free(fs->early);
	/* after the notifier, whose invalidations go through its writev */
	dm_fs_io_detach(fs->se);
	dm_uring_free(fs->uring);
	fs_passthrough_done(&fs->passthrough);
	fs_notifier_done(&fs->notifier);
	fs_listings_done(&fs->listings);
	fs_slow_done(&fs->slow);
	pthread_mutex_destroy(&fs->inflight.lock);
	fs_opens_done(&fs->opens);
	/* libfuse's handlers back, for it to remove */
	if (exit_wrapped) {
		sigaction(SIGTERM, &fuse_exit_action, NULL);
		sigaction(SIGINT, &fuse_exit_action, NULL);
		exit_wrapped = false;
	}
	fuse_remove_signal_handlers(fs->se);
	/* the mirror keeps the nodes as they are, for a successor */
	fs_table_set_mirror(fs->table, NULL);
	if (fs->handover)
		signal(SIGUSR2, SIG_IGN);
	leaving_fs = NULL;
	if (fs->mounted)
		fuse_session_unmount(fs->se);
	/* a mount taken over: libfuse does not know it, unmounted as
	 * fusermount3 -u does it for root */
	if (fs->adopted_point && umount2(fs->adopted_point, MNT_DETACH) < 0)
		log_warn("unmounting %s: %s", fs->adopted_point, strerror(errno));
	fuse_session_destroy(fs->se);
	fs_handover_free(fs->handover);
	free(fs->adopted_point);
	fs_table_free(fs->table);
	free(fs);
}


