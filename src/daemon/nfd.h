/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nfd.h - driverfsd.conf's [Fleet] NfdFile=: the Kubernetes node labels of
 * Node Feature Discovery's feature file (fleet/nfd-format.h) kept current
 * by the daemon (docs/design.md §6.11). It is written once serving begins,
 * and again after each run of uevents the daemon applies (a binding moved,
 * VFs made or removed, a device came or went), 200 ms after the first of a
 * burst, on a thread of its own; only when its text changed.
 */
#ifndef DM_DAEMON_NFD_H
#define DM_DAEMON_NFD_H

struct dm_metrics;
struct dm_model;

/* Starts the writer of @path (NULL: none, nothing started) over @m, and
 * asks for a first write. 0 or -errno. */
int daemon_nfd_start(struct dm_model *m, const char *path);
/* Something changed: the file is built again (and written if its text
 * differs). Any thread; nothing when no writer runs. */
void daemon_nfd_kick(void);
/* Stops the writer (joined; a write under way finishes first). */
void daemon_nfd_stop(void);
/* driverfsd_nfd_writes_total{result="written|unchanged|failed"}: a metrics
 * source (dm_model_add_metrics()); nothing when no writer runs. */
void daemon_nfd_metrics(struct dm_metrics *w, void *data);

#endif
