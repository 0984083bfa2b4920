/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs.h - the /devices filesystem: a libfuse3 low-level server of the model.
 *
 * Handlers read the model under its read lock and never hold it while they
 * call attribute show/store. Errors become errno replies here and only here.
 */
#ifndef DM_FS_H
#define DM_FS_H

#include "core/metrics.h"
#include "core/model.h"

#include <stdbool.h>
#include <stddef.h>

struct dm_fs;
struct fuse_args;

/* Creates the FUSE session for @m. @args are FUSE's own options ("-o ..."
 * and "-d"); the mount options driverfs always uses are added. One "-o"
 * option is driverfs's own and taken out: max_open_bytes_per_uid=BYTES,
 * what open files of one user other than root may pin in copies of
 * values (64 MiB by default; see open-value.h). */
int dm_fs_new(struct dm_model *m, struct fuse_args *args, struct dm_fs **ret);
/* Unmounts (if mounted) and frees. */
void dm_fs_free(struct dm_fs *fs);
int dm_fs_mount(struct dm_fs *fs, const char *mountpoint);
/* Before the session starts: an unmount watcher will detach the mount if
 * the daemon dies (unmount-watch.h), so directories need no opendir (which
 * fusermount3's auto_unmount needs to tell a dead mount). */
void dm_fs_set_unmount_watched(struct dm_fs *fs);
/* Before the mount: whether to serve over io_uring where the kernel offers
 * it (uring.h; the default) or only through /dev/fuse. */
void dm_fs_set_io_uring(struct dm_fs *fs, bool on);
/* Before the mount: whether the kernel is to read passed-through sysfs
 * attributes itself where it offers FUSE passthrough (passthrough.h; the
 * default) or every read is to come to the daemon. */
void dm_fs_set_passthrough(struct dm_fs *fs, bool on);
/*
 * Handover (handover.h; docs/design.md §10.1). dm_fs_set_handover(), before
 * the mount: the connection is to outlive this daemon (requests over
 * /dev/fuse unless io_uring is asked for), its state kept in a memfd. dm_fs_adopt(), in
 * place of dm_fs_mount(), as soon as the daemon starts (before its model
 * is filled): take the connection @fuse_fd that the last daemon left with
 * its state @state_fd (both taken, also on failure but -EINVAL/-ESTALE
 * from the state, -ECONNABORTED from a connection aborted meanwhile and
 * -EOPNOTSUPP for one on io_uring this daemon cannot serve, when the
 * caller still holds them: then mount anew), answering what the state
 * alone lets it answer (early.h) while the model is filled.
 * dm_fs_adopt_serve(), once the model is there: the mount at @mountpoint
 * served from it; how many nodes the kernel holds were taken over (each
 * made when first used) in *ret_nodes.
 */
void dm_fs_set_handover(struct dm_fs *fs);
int dm_fs_adopt(struct dm_fs *fs, int fuse_fd, int state_fd);
int dm_fs_adopt_serve(struct dm_fs *fs, const char *mountpoint, size_t *ret_nodes);
/* --handover, a next daemon as it starts: the last daemon's watcher waits
 * for it while it lives; !@coming, when it does not take the connection
 * over after all (handover.h, fs_handover_announce()). */
int dm_fs_handover_announce(int state_fd, bool coming);
/* The two descriptors a supervisor keeps for the next daemon; -ENOENT
 * without a handover. */
int dm_fs_handover_fds(struct dm_fs *fs, int *ret_fuse, int *ret_state);
/* The supervisor took them: a daemon that dies is waited for (its watcher
 * leaves the mount to a successor for a while). */
void dm_fs_handover_stored(struct dm_fs *fs);
/* The shared header (struct fs_handover_header) the unmount watcher maps,
 * or NULL. */
const void *dm_fs_handover_header(struct dm_fs *fs);
/* Whether the loop ended on SIGUSR2 (a planned handover), and then the
 * mount left for the next daemon. */
bool dm_fs_leaving(struct dm_fs *fs);
/* After the loop: leave the mount as SIGUSR2 would (a SIGTERM of a
 * restart); whether a supervisor keeps the descriptors. */
void dm_fs_set_leaving(struct dm_fs *fs);
bool dm_fs_handover_kept(struct dm_fs *fs);
void dm_fs_leave(struct dm_fs *fs);
/* Starts the thread that tells the kernel what model changes made stale
 * (after the mount): from then on the model's listener is the fs's. */
int dm_fs_start_notifier(struct dm_fs *fs);
/* Stops it (dm_fs_free() does too): before a leaving daemon exits without
 * freeing what it holds. */
void dm_fs_stop_notifier(struct dm_fs *fs);
/* Waits until every invalidation queued so far was sent. A FUSE handler may
 * call it only as op_write() does (notify.h, fs_notifier_sync()). */
void dm_fs_sync_invalidations(struct dm_fs *fs);
/* Serves requests on a pool of threads until unmounted or signalled. */
int dm_fs_loop(struct dm_fs *fs);
/* "fuse requests: TOTAL lookup=N getattr=N ...": the requests served so
 * far, per operation (those never asked are left out). Returns the length,
 * or -ENOBUFS when @size is too small. Any thread, any time. */
int dm_fs_format_stats(struct dm_fs *fs, char *buf, size_t size);
/* the metrics file's source (a dm_metrics_fn, @data the fs): the requests
 * served per operation, every operation listed. */
void dm_fs_metrics(struct dm_metrics *w, void *data);
/* The watchdog's look at the reads and writes in flight: each that has
 * run longer than the stall bound (slowread.h) is logged once; returns how
 * many there are now (the metrics' driverfsd_fuse_requests_stalled). Any
 * thread, any time. */
unsigned dm_fs_check_stalled(struct dm_fs *fs);
/* The watchdog, each second: a loop whose session has ended but which
 * still waits (a signal lost between its look and its wait) is sent the
 * signal again. Call only while the loop's handlers are installed. */
void dm_fs_kick_loop(struct dm_fs *fs);
/* Installs SIGTERM/SIGINT/SIGHUP handlers that end the loop. */
int dm_fs_set_signal_handlers(struct dm_fs *fs);

#endif
