/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pool.c - the PM engine's worker threads (see pool.h).
 *
 * Each thread has a futex word of its own: the owner writes the job into
 * an idle thread's slot and wakes that thread only, and only when it has
 * gone to sleep. Idle threads wait on a stack that they push themselves
 * onto and only the owner pops from (so no ABA); finished jobs go onto a
 * list the owner takes whole. A shared mutex and condition variable cost
 * far more here: with hundreds of threads finishing 1-ms hooks together,
 * they queue on the mutex and wake each other for nothing.
 */
#include "pool.h"

#include "core/thread.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CACHE_LINE 64

enum {
	GO_IDLE, /* awake, no job */
	GO_PARKED, /* asleep on its futex word: a job must wake it */
	GO_JOB, /* @job is set */
	GO_QUIT,
};

struct worker {
	_Alignas(CACHE_LINE) _Atomic uint32_t go; /* the futex word */
	int job; /* written by the owner before go = GO_JOB */
	struct worker *next_idle; /* on the idle stack */
	struct dm_pool *pool;
	pthread_t thread;
};

struct dm_pool {
	size_t max, stack_size;
	struct worker *workers; /* max of them, the first n_threads started */
	size_t n_threads;
	/* the batch, set by dm_pool_begin() before any job is handed out */
	dm_pool_fn fn;
	void *ctx;
	int *next_done, *result; /* per job */
	int *pending; /* jobs that found no thread, owner only */
	size_t n_pending, cap;
	_Alignas(CACHE_LINE) _Atomic(struct worker *) idle;
	_Alignas(CACHE_LINE) atomic_int done; /* the finished jobs' list, -1 empty */
	_Atomic uint32_t owner_asleep; /* the owner's futex word */
};

static void futex_wait(_Atomic uint32_t *word, uint32_t val)
{
	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void push_idle(struct dm_pool *p, struct worker *wk)
{
	struct worker *head = atomic_load_explicit(&p->idle, memory_order_relaxed);
	do
		wk->next_idle = head;
	while (!atomic_compare_exchange_weak_explicit(&p->idle, &head, wk, memory_order_release,
						      memory_order_relaxed));
}

/* Owner only: the one popper, so a head seen cannot leave and come back. */
static struct worker *pop_idle(struct dm_pool *p)
{
	struct worker *head = atomic_load_explicit(&p->idle, memory_order_acquire);
	while (head && !atomic_compare_exchange_weak_explicit(&p->idle, &head, head->next_idle,
							      memory_order_acquire,
							      memory_order_acquire))
		;
	return head;
}

static void *worker_main(void *data)
{
	struct worker *wk = data;
	struct dm_pool *p = wk->pool;
	for (;;) {
		uint32_t go = atomic_load_explicit(&wk->go, memory_order_acquire);
		if (go == GO_QUIT)
			break;
		if (go == GO_IDLE) {
			uint32_t idle = GO_IDLE;
			atomic_compare_exchange_strong_explicit(&wk->go, &idle, GO_PARKED,
								memory_order_acquire,
								memory_order_acquire);
			continue;
		}
		if (go == GO_PARKED) {
			futex_wait(&wk->go, GO_PARKED);
			continue;
		}
		int job = wk->job;
		atomic_store_explicit(&wk->go, GO_IDLE, memory_order_relaxed);
		p->result[job] = p->fn(p->ctx, job);
		/* idle first: the owner, woken by the result, finds this
		 * thread to run the next job */
		push_idle(p, wk);
		int head = atomic_load_explicit(&p->done, memory_order_relaxed);
		do
			p->next_done[job] = head;
		while (!atomic_compare_exchange_weak_explicit(&p->done, &head, job,
							      memory_order_seq_cst,
							      memory_order_relaxed));
		/* pairs with dm_pool_take(): it either sees the job or is woken */
		if (atomic_exchange(&p->owner_asleep, 0))
			futex_wake(&p->owner_asleep);
	}
	return NULL;
}

static void hand(struct worker *wk, int job)
{
	wk->job = job;
	if (atomic_exchange_explicit(&wk->go, GO_JOB, memory_order_acq_rel) == GO_PARKED)
		futex_wake(&wk->go);
}

/* Starts a thread with @job as its first; NULL when it cannot. */
static struct worker *start(struct dm_pool *p, int job)
{
	if (p->n_threads == p->max)
		return NULL;
	struct worker *wk = &p->workers[p->n_threads];
	*wk = (struct worker){ .job = job, .pool = p };
	atomic_init(&wk->go, GO_JOB);
	if (dm_thread_start(&wk->thread, p->stack_size, worker_main, wk) < 0)
		return NULL;
	p->n_threads++;
	return wk;
}

int dm_pool_new(size_t max_threads, size_t stack_size, struct dm_pool **ret)
{
	struct dm_pool *p = aligned_alloc(CACHE_LINE, sizeof(*p)); /* its lines apart */
	if (!p)
		return -ENOMEM;
	memset(p, 0, sizeof(*p));
	p->workers = aligned_alloc(CACHE_LINE, max_threads * sizeof(*p->workers));
	if (!p->workers) {
		free(p);
		return -ENOMEM;
	}
	p->max = max_threads;
	p->stack_size = stack_size;
	atomic_init(&p->idle, NULL);
	atomic_init(&p->done, -1);
	atomic_init(&p->owner_asleep, 0);
	*ret = p;
	return 0;
}

void dm_pool_free(struct dm_pool *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n_threads; i++) {
		struct worker *wk = &p->workers[i];
		if (atomic_exchange(&wk->go, GO_QUIT) == GO_PARKED)
			futex_wake(&wk->go);
		pthread_join(wk->thread, NULL);
	}
	free(p->workers);
	free(p->next_done);
	free(p->result);
	free(p->pending);
	free(p);
}

int dm_pool_begin(struct dm_pool *p, dm_pool_fn fn, void *ctx, size_t n)
{
	if (n > p->cap) {
		/* no job runs between batches: the arrays are the owner's */
		int *next = realloc(p->next_done, n * sizeof(*next));
		if (next)
			p->next_done = next;
		int *result = next ? realloc(p->result, n * sizeof(*result)) : NULL;
		if (result)
			p->result = result;
		int *pending = result ? realloc(p->pending, n * sizeof(*pending)) : NULL;
		if (!pending)
			return -ENOMEM;
		p->pending = pending;
		p->cap = n;
	}
	p->fn = fn;
	p->ctx = ctx;
	p->n_pending = 0;
	return 0;
}

void dm_pool_end(struct dm_pool *p)
{
	p->fn = NULL;
	p->ctx = NULL;
}

bool dm_pool_submit(struct dm_pool *p, int job)
{
	struct worker *wk = pop_idle(p);
	if (wk) {
		hand(wk, job);
		return true;
	}
	if (start(p, job))
		return true;
	if (p->n_threads == 0)
		return false;
	p->pending[p->n_pending++] = job; /* until a thread comes back */
	return true;
}

bool dm_pool_has_done(struct dm_pool *p)
{
	return atomic_load_explicit(&p->done, memory_order_relaxed) >= 0;
}

void dm_pool_take(struct dm_pool *p, void (*done)(void *data, int job, int result), void *data)
{
	int head;
	while ((head = atomic_exchange_explicit(&p->done, -1, memory_order_acquire)) < 0) {
		atomic_store(&p->owner_asleep, 1);
		if (atomic_load(&p->done) >= 0) {
			atomic_store(&p->owner_asleep, 0);
			continue;
		}
		futex_wait(&p->owner_asleep, 1);
	}
	/* each finished job left a thread idle */
	struct worker *wk;
	while (p->n_pending > 0 && (wk = pop_idle(p)))
		hand(wk, p->pending[--p->n_pending]);
	for (int job = head; job >= 0; job = p->next_done[job])
		done(data, job, p->result[job]);
}
