/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pm.h - the PM engine: ordered suspend and resume over the global list.
 *
 * Suspend walks a subtree backwards over the global list (children before
 * parents); a failing suspend() stops the walk and resumes, in forward
 * order, every device this transition suspended. Resume first resumes the
 * device's suspended ancestors, top-down, then its subtree forwards; resume
 * errors are recorded and the walk goes on. Device links (core/link.c)
 * order the walk too: a consumer suspends before its supplier and resumes
 * after it (links that only serve sync_state() order nothing). A subtree
 * linked to devices outside it is walked only when they are out of the
 * way: on suspend every consumer outside suspended already, on resume
 * every supplier outside on; otherwise each one in the way is journaled
 * ("consumer" or "supplier", EBUSY) and the transition refused, -EBUSY.
 * One transition runs at a time (-EBUSY otherwise). Every hook call is
 * journaled (the power_log).
 *
 * Hooks run without the model lock, on referenced devices.
 */
#ifndef DM_PM_H
#define DM_PM_H

#include "core/metrics.h"
#include "core/model.h"

#include <stdbool.h>
#include <stddef.h>

struct dm_pm;

enum dm_pm_flags {
	DM_PM_DRY_RUN = 1u << 0, /* record the order, call no hook */
	DM_PM_SERIAL = 1u << 1, /* every hook on the calling thread (benchmarks) */
};

/* Creates the engine and installs it as @m's power handler. */
int dm_pm_new(struct dm_model *m, struct dm_pm **ret);
void dm_pm_free(struct dm_pm *pm);

/* @fn(@data) runs at the start of every transition, before its order is
 * taken (the daemon reads the device links' status there: it changes
 * without an event). Call before any transition. */
void dm_pm_set_prepare(struct dm_pm *pm, void (*fn)(void *data), void *data);

/* Keeps the transition record (record.h) at @path (NULL: none, the
 * default): which devices suspend hooks ran for and that were not resumed
 * since. Call before any transition. -errno when @path's directory cannot
 * be made. */
int dm_pm_set_record(struct dm_pm *pm, const char *path);
/* At start, before any transition: when the record's file exists (an
 * earlier run was killed, or stopped with devices suspended), resumes,
 * parents first, every device it lists that the model holds (their
 * resume hooks find what their drivers kept there with
 * dm_device_get_kept_pm_state()), then removes it. @note (may be NULL) is told each listed devpath and whether it is
 * present. Returns how many devices it marked and resumed (one whose resume
 * failed stays listed, with its power_error, for the next start), or
 * -errno, with what in @why (@size bytes; may be NULL): a record anyone but
 * root could have written is -EPERM, and nothing is resumed
 * (dm_pm_record_load()). */
int dm_pm_recover(struct dm_pm *pm, void (*note)(const char *devpath, bool present, void *data),
		  void *data, char *why, size_t size);

/* @dev NULL: the whole system (root). 0, -EIO after a rollback, -EBUSY
 * (another transition, or a link outside the subtree in the way). */
int dm_pm_suspend(struct dm_pm *pm, struct dm_device *dev, unsigned flags);
/* 0, or -EIO when some resume() failed (the walk still completed). */
int dm_pm_resume(struct dm_pm *pm, struct dm_device *dev, unsigned flags);

/* The journal of the last transition, one line per hook call:
 * "<seq> <phase> <path-under-root> <ok|ERRNO> <microseconds>\n", in a
 * malloc()ed buffer of any size. */
int dm_pm_show_log(struct dm_pm *pm, char **ret, size_t *ret_len);

/* the metrics file's source (a dm_metrics_fn, @data the engine): transitions
 * by request (suspend, resume and their dry runs) and result (ok,
 * hook_failed, busy, error), and a histogram of their durations. */
void dm_pm_metrics(struct dm_metrics *w, void *data);

#endif
