/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * service.h - the daemon's side of systemd: SIGHUP asks for a reload, and
 * the watchdog is pinged while the model stays usable.
 *
 * libfuse's signal handlers end the session on SIGHUP; dm_service_new()
 * takes SIGHUP over (call it after them) with a handler that only wakes
 * the reload thread through a pipe. That thread runs @reload, between
 * "RELOADING=1" and "READY=1" notifications, one reload at a time, never in
 * a signal handler or a FUSE handler. When systemd set a watchdog
 * (WATCHDOG_USEC, and WATCHDOG_PID naming this process if set), a second
 * thread sends "WATCHDOG=1" every half period, each time after taking and
 * dropping the model's read lock: a model stuck under its write lock stops
 * the pings and systemd restarts the service; a long reload does not.
 */
#ifndef DM_SERVICE_H
#define DM_SERVICE_H

#include "core/model.h"

struct dm_service;

/* Runs the reload; returns a one-line status for systemd ("STATUS=..."). */
typedef void (*dm_service_reload_fn)(void *data, char *status, size_t size);

/* Installs the SIGHUP handler; reloads asked for from now on wait for
 * dm_service_start(). Only one service per process. */
int dm_service_new(struct dm_model *m, dm_service_reload_fn reload, void *data,
		   struct dm_service **ret);
/* Starts the threads (after fork: call it once the daemon is ready). */
int dm_service_start(struct dm_service *s);
/* Before dm_service_start(): @check(@data) runs on the watchdog's thread at
 * each of its looks (at least every second), with or without systemd's
 * watchdog (the requests that stopped moving: dm_fs_check_stalled()). */
void dm_service_set_check(struct dm_service *s, void (*check)(void *), void *data);
/* Stops the threads, ignores SIGHUP from then on, frees. NULL is fine. */
void dm_service_free(struct dm_service *s);

#endif
