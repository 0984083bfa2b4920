/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pool.h - the PM engine's worker threads.
 *
 * One owner thread (the walk's dispatcher) hands jobs, numbered 0..n-1,
 * to threads that each run one job at a time, and takes their results
 * back. Jobs are handed to one idle thread each and woken by that
 * thread's own futex, results come back on a lock-free list, and the
 * owner is woken only when it waits for them: a job costs one wake-up
 * and no lock. A thread is started when a job finds none idle, up to the
 * pool's maximum; past it, jobs wait in the pool for a thread.
 */
#ifndef DM_POOL_H
#define DM_POOL_H

#include <stdbool.h>
#include <stddef.h>

struct dm_pool;

/* Runs job @job of a batch; returns its result. Called on a pool thread. */
typedef int (*dm_pool_fn)(void *ctx, int job);

int dm_pool_new(size_t max_threads, size_t stack_size, struct dm_pool **ret);
/* Stops and joins the threads; no batch may be in progress. */
void dm_pool_free(struct dm_pool *p);

/* Starts a batch of up to @n jobs run by @fn(@ctx, job); -ENOMEM. */
int dm_pool_begin(struct dm_pool *p, dm_pool_fn fn, void *ctx, size_t n);
/* Ends it; every submitted job must have been taken back. */
void dm_pool_end(struct dm_pool *p);

/* Hands @job to a thread, or keeps it until one is idle; false when the
 * pool has no thread and none could be started (run it yourself). */
bool dm_pool_submit(struct dm_pool *p, int job);
/* Whether results are waiting to be taken: a look, without waiting. */
bool dm_pool_has_done(struct dm_pool *p);
/* Waits until at least one submitted job has finished, then calls @done
 * for each finished one. Owner only. */
void dm_pool_take(struct dm_pool *p, void (*done)(void *data, int job, int result), void *data);

#endif
