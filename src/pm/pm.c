/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pm.c - ordered suspend/resume over the global list, on a worker pool.
 *
 * A transition takes the PM order of the subtree (dm_model_take_pm_order():
 * pre-order, with parent indices and bound drivers, under one read lock)
 * and walks it as a dependency graph: on suspend a device is ready once all its children are
 * done, on resume once its parent is. The dispatcher pops ready devices
 * last-in first-out, which walks the list backwards on suspend and forwards
 * on resume, so with every hook inline the order is exactly the serial one.
 * Hooks known to be quick (devices without the hook, drivers whose hooks
 * took under POOL_USEC so far) run inline on the dispatcher, which takes no
 * lock of the engine's for them; the others go to the pool, so independent
 * subtrees overlap. A failing suspend stops dispatching, waits for what is
 * in flight, and resumes, in forward order, every device this transition
 * suspended.
 *
 * The journal is appended to without a lock: every entry a transition can
 * write is reserved before its walk, and the order's references keep
 * the devices it names alive until the next transition clears it.
 */
#include "pm.h"

#include "pm/pool.h"
#include "pm/record.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Hooks that took longer than this on average go to the pool. */
#define POOL_USEC 50
/* Hooks mostly wait (for a program, a sysfs write, a device), so the pool
 * grows past the CPU count: a thread is added whenever a job finds none
 * idle, up to this many; past it jobs wait for a thread. More threads do
 * not make 10^3 1-ms hooks faster on 2 cores: their sleeps' own CPU cost
 * bounds the walk (bench/RESULTS.md). */
#define POOL_MAX 256
/* Hooks run in these threads, programs are started from them: small stacks
 * keep a large pool cheap. */
#define POOL_STACK (256 * 1024)
/* How many devices ahead a walk fetches into the cache. */
#define PREFETCH 8
/* The most ancestors a resume wakes before its walk. */
#define MAX_DEPTH 256

/* A journal entry is written by whoever ran the hook into a slot reserved
 * beforehand; @gen is stored last and marks it complete for the journal
 * of that generation (clearing the journal is a new generation). */
struct pm_entry {
	atomic_uint gen;
	int result;
	const char *phase;
	struct dm_device *dev; /* kept by the transition's order or chain */
	long usec;
};

/* The dependency graph over a PM order; item i is the order's node i. */
struct pm_item {
	int first_child, next_sibling;
	int pending; /* suspend: children not done yet */
	bool done; /* this transition suspended it */
};

/* One walk in progress. The graph (items, ready, remaining, in_flight) is
 * the dispatcher's alone; the pool runs jobs (item indices) and hands
 * results back (pool.h). */
struct walk {
	struct dm_pm *pm;
	const struct dm_pm_order_node *nodes;
	struct pm_item *items;
	size_t n;
	bool suspend;
	int which; /* DM_CALL_* */
	unsigned flags;
	int *ready; /* a stack of item indices */
	size_t n_ready;
	/* with links: the ready items at or past the sweep's @cursor, a bit
	 * each; @n_stack of them on the stack (push_ready()) */
	uint64_t *bits;
	int cursor;
	size_t n_stack;
	/* device links between the order's devices (none: the tree alone),
	 * as adjacency lists: the suppliers of each consumer, the consumers
	 * of each supplier (CSR: item i's are idx[off[i]] .. idx[off[i+1]]) */
	size_t n_edges;
	const int *sup_off, *sup_idx, *con_off, *con_idx;
	size_t in_flight; /* on the pool */
	size_t remaining; /* not completed yet */
	int error; /* the first suspend failure */
	/* runs_inline()'s answer for the last driver it was asked about */
	const struct dm_driver *last_driver;
	bool last_known, last_inline;
	uint64_t slow_ticks; /* POOL_USEC */
};

/* What the metrics file counts transitions by: the request, as the power file
 * takes it, and how it ended. */
enum { PM_REQUESTS = 4, PM_RESULTS = 4 };
static const char *const pm_request_names[PM_REQUESTS] = {
	"suspend", "resume", "suspend-dry-run", "resume-dry-run",
};
enum pm_result { PM_OK, PM_HOOK_FAILED, PM_BUSY, PM_ERROR };
static const char *const pm_result_names[PM_RESULTS] = {
	[PM_OK] = "ok", [PM_HOOK_FAILED] = "hook_failed", [PM_BUSY] = "busy", [PM_ERROR] = "error",
};

struct dm_pm {
	struct dm_model *model;
	struct dm_pm_record *record; /* NULL: none; set before any transition */
	pthread_mutex_t transition; /* held for a whole transition */

	pthread_mutex_t lock; /* the journal's storage */
	/* the journal of the last transition: its storage changes only while
	 * no hook runs; entries are added without the lock */
	struct pm_entry *log;
	size_t cap_log;
	atomic_size_t n_log;
	unsigned gen;
	/* moves with every entry and clearing: the model keeps one copy of
	 * the journal's text per version (dm_pm_handler.log_version) */
	_Atomic uint64_t log_version;
	/* the devices the journal names, kept until it is cleared: the last
	 * walk's order and the ancestors a resume woke */
	struct dm_pm_order order;
	struct dm_device *chain[MAX_DEPTH];
	size_t n_chain;
	/* the walk's buffers, kept for the next one (a fresh 10^5-device
	 * walk spends more on page faults than on hooks) */
	struct pm_item *items;
	int *ready;
	size_t cap_walk;
	/* the adjacency lists of the last walk with links */
	int *adj;
	size_t cap_adj;
	/* what adj holds: a whole-tree order's lists of this generation of
	 * the model's edges (0: none kept) and size */
	uint64_t adj_gen;
	size_t adj_n;
	uint64_t *bits;
	size_t cap_bits;
	struct dm_pool *pool;
	void (*prepare)(void *data); /* dm_pm_set_prepare() */
	void *prepare_data;
	/* the metrics file (dm_pm_metrics()): transitions by request and result,
	 * the durations of those that ran */
	atomic_uint_fast64_t transitions[PM_REQUESTS][PM_RESULTS];
	struct dm_histogram durations[PM_REQUESTS];
};

/* ---- the journal ---- */

static void log_clear_locked(struct dm_pm *pm)
{
	atomic_store(&pm->n_log, 0);
	pm->gen = pm->gen + 1 ? pm->gen + 1 : 1; /* 0 marks a slot never written */
	atomic_fetch_add_explicit(&pm->log_version, 1, memory_order_release);
	dm_pm_order_release(&pm->order);
	for (size_t i = 0; i < pm->n_chain; i++)
		dm_device_unref(pm->chain[i]);
	pm->n_chain = 0;
}

/* Makes room for @more entries; no hook may be running. */
static int log_reserve_locked(struct dm_pm *pm, size_t more)
{
	size_t need = atomic_load(&pm->n_log) + more;
	if (need <= pm->cap_log)
		return 0;
	struct pm_entry *l = realloc(pm->log, need * sizeof(*l));
	if (!l)
		return -ENOMEM;
	memset(l + pm->cap_log, 0, (need - pm->cap_log) * sizeof(*l));
	pm->log = l;
	pm->cap_log = need;
	return 0;
}

static void log_add(struct dm_pm *pm, const char *phase, struct dm_device *dev, int result,
		    long usec)
{
	size_t k = atomic_fetch_add_explicit(&pm->n_log, 1, memory_order_relaxed);
	if (k >= pm->cap_log)
		return; /* not reserved: cannot happen, and the journal is a record only */
	struct pm_entry *e = &pm->log[k];
	e->phase = phase;
	e->dev = dev;
	e->result = result;
	e->usec = usec;
	atomic_store_explicit(&e->gen, pm->gen, memory_order_release);
	atomic_fetch_add_explicit(&pm->log_version, 1, memory_order_release);
}

int dm_pm_show_log(struct dm_pm *pm, char **ret, size_t *ret_len)
{
	char path[4096];
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return -ENOMEM;
	pthread_mutex_lock(&pm->lock);
	size_t n = atomic_load_explicit(&pm->n_log, memory_order_acquire);
	for (size_t i = 0; i < n && i < pm->cap_log; i++) {
		struct pm_entry *e = &pm->log[i];
		if (atomic_load_explicit(&e->gen, memory_order_acquire) != pm->gen)
			break; /* a hook still running: the journal so far */
		dm_model_read_lock(pm->model);
		int k = dm_device_path_locked(e->dev, path, sizeof(path));
		dm_model_unlock(pm->model);
		if (k < 0)
			snprintf(path, sizeof(path), "%s", dm_device_get_name(e->dev));
		const char *res = e->result == 0 ? "ok" : strerrorname_np(-e->result);
		fprintf(f, "%zu %s %s %s %ld\n", i + 1, e->phase, k == 0 ? "." : path,
			res ? res : "EIO", e->usec);
	}
	pthread_mutex_unlock(&pm->lock);
	if (fclose(f) != 0) {
		free(buf);
		return -ENOMEM;
	}
	*ret = buf;
	*ret_len = len;
	return 0;
}

/* ---- hooks ---- */

static void set_error(struct dm_device *dev, const char *phase, int r)
{
	char msg[256];
	const char *name = strerrorname_np(-r);
	snprintf(msg, sizeof(msg), "%s %s %s", phase, name ? name : "EIO", strerror(-r));
	dm_device_set_power_error(dev, msg);
}

/* Journals a hook call and applies its result to the device. */
static int record(struct dm_pm *pm, struct dm_device *dev, bool suspend, unsigned flags, int r,
		  long usec)
{
	const char *phase = suspend ? "suspend" : "resume";
	log_add(pm, phase, dev, r, usec);
	if (flags & DM_PM_DRY_RUN)
		return 0;
	if (r < 0)
		set_error(dev, phase, r);
	else if (suspend)
		dm_device_set_power_error(dev, NULL);
	/* A device whose resume failed counts as on: nothing would ever resume
	 * it otherwise, and the failure stays in power_error. */
	if (r == 0 || !suspend)
		dm_device_set_power(dev, suspend ? DM_POWER_SUSPENDED : DM_POWER_ON);
	return r;
}

/* The transition record around a hook call: a device is listed before
 * its suspend hook runs, when @drv (the driver bound to it in the walk's
 * order) has one and the device has a devpath to be found by at the
 * next start; it is taken off once resumed. */
static int record_suspending(struct dm_pm *pm, struct dm_device *dev, const struct dm_driver *drv)
{
	const char *devpath = dm_device_get_devpath(dev);
	if (!devpath || dm_driver_pm_cost(drv, DM_CALL_SUSPEND) < 0)
		return 0;
	return dm_pm_record_suspending(pm->record, devpath);
}

static void record_resumed(struct dm_pm *pm, struct dm_device *dev)
{
	const char *devpath = dm_device_get_devpath(dev);
	if (devpath)
		dm_pm_record_resumed(pm->record, devpath);
}

/* Calls one device's hook (without pm->lock: a hook may read the mount,
 * power_log included) and records it. @drv is the driver bound to @dev in
 * the walk's order (suspend only; NULL on resume). @clock holds the
 * time the call starts (consecutive inline calls read the clock once each)
 * and gets the time it ended. */
static int run_hook(struct dm_pm *pm, struct dm_device *dev, const struct dm_driver *drv,
		    bool suspend, unsigned flags, uint64_t *clock)
{
	uint64_t t0 = *clock;
	bool recorded = pm->record && !(flags & DM_PM_DRY_RUN);
	int r = recorded && suspend ? record_suspending(pm, dev, drv) : 0;
	if (r == 0 && !(flags & DM_PM_DRY_RUN))
		r = dm_device_call_driver(dev, suspend ? DM_CALL_SUSPEND : DM_CALL_RESUME, clock);
	if (recorded && !suspend)
		record_resumed(pm, dev);
	return record(pm, dev, suspend, flags, r, dm_clock_usec(*clock - t0));
}

static int run_hook_now(struct dm_pm *pm, struct dm_device *dev, const struct dm_driver *drv,
			bool suspend, unsigned flags)
{
	uint64_t clock = dm_clock_now();
	return run_hook(pm, dev, drv, suspend, flags, &clock);
}

/* ---- the walk ---- */

/* A min-heap of item indices (the rollback's order with links). */
static void heap_push(int *h, size_t *n, int v)
{
	size_t i = (*n)++;
	while (i > 0 && h[(i - 1) / 2] > v) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = v;
}

static int heap_pop(int *h, size_t *n)
{
	int top = h[0], last = h[--*n];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= *n)
			break;
		if (c + 1 < *n && h[c + 1] < h[c])
			c++;
		if (h[c] >= last)
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n)
		h[i] = last;
	return top;
}

/* The ready set. Without links a stack: last in, first out walks the
 * list backwards on suspend and forwards on resume, exactly the serial
 * order. With links a sweep along the list (down on suspend, up on resume)
 * over a bitmap of the ready items: a supplier readied by its last consumer
 * waits for the sweep to reach its place instead of being taken at once,
 * so the walk still goes along the list and the devices it reaches next can
 * be fetched ahead; an item readied behind the sweep (a link against the
 * list's order) goes on the stack, taken first. @n_ready counts both. */
static inline void push_ready(struct walk *w, int i)
{
	w->n_ready++;
	if (!w->n_edges || (w->suspend ? i > w->cursor : i < w->cursor)) {
		w->ready[w->n_stack++] = i;
		return;
	}
	w->bits[(size_t)i / 64] |= 1ull << ((size_t)i % 64);
}

/* The next ready item of the sweep: the next set bit from the cursor on,
 * in the sweep's direction (walks with links only). */
static int pop_sweep(struct walk *w)
{
	size_t k = (size_t)w->cursor / 64;
	unsigned b = (unsigned)((size_t)w->cursor % 64);
	uint64_t word = w->suspend ? w->bits[k] & (b == 63 ? ~0ull : (2ull << b) - 1)
				   : w->bits[k] & (~0ull << b);
	while (!word)
		word = w->bits[w->suspend ? --k : ++k];
	int i = (int)(k * 64 + (w->suspend ? 63 - (unsigned)__builtin_clzll(word)
					   : (unsigned)__builtin_ctzll(word)));
	w->bits[k] &= ~(1ull << ((unsigned)i % 64));
	w->cursor = i;
	return i;
}

static inline int pop_ready(struct walk *w)
{
	w->n_ready--;
	return w->n_stack ? w->ready[--w->n_stack] : pop_sweep(w);
}

/* Marks item @i finished with result @r and readies what now can run. */
static void complete(struct walk *w, int i, int r)
{
	struct pm_item *it = &w->items[i];
	w->remaining--;
	if (w->suspend) {
		if (r < 0) {
			if (!w->error)
				w->error = r;
			return;
		}
		it->done = true;
		int p = w->nodes[i].parent;
		if (p >= 0 && --w->items[p].pending == 0)
			push_ready(w, p);
		/* its suppliers wait for their consumers */
		for (int k = w->n_edges ? w->sup_off[i] : 0; w->n_edges && k < w->sup_off[i + 1]; k++)
			if (--w->items[w->sup_idx[k]].pending == 0)
				push_ready(w, w->sup_idx[k]);
	} else {
		/* a resume that failed is reported (-EIO) and the walk goes on:
		 * its children are resumed all the same */
		if (r < 0 && !w->error)
			w->error = r;
		/* the children lists run backwards, so they pop in list order;
		 * with links, a child waits for its suppliers too */
		for (int c = it->first_child; c >= 0; c = w->items[c].next_sibling)
			if (!w->n_edges || --w->items[c].pending == 0)
				push_ready(w, c);
		for (int k = w->n_edges ? w->con_off[i] : 0; w->n_edges && k < w->con_off[i + 1]; k++)
			if (--w->items[w->con_idx[k]].pending == 0)
				push_ready(w, w->con_idx[k]);
	}
}

static bool item_skip(const struct walk *w, int i)
{
	/* nothing to do: already in the target state, removed meanwhile, or
	 * a device link's own device (a link is not suspended) */
	return dm_device_pm_skips(w->nodes[i].dev, w->suspend ? DM_POWER_SUSPENDED : DM_POWER_ON);
}

/* Whether item @i's hook is quick enough to run on the dispatcher, from
 * its driver's running estimate. The answer for the last driver asked is
 * kept until one of its hooks run inline proves slow (@slow_ticks). */
static bool runs_inline(struct walk *w, int i)
{
	if (w->flags & (DM_PM_DRY_RUN | DM_PM_SERIAL))
		return true;
	const struct dm_driver *drv = w->nodes[i].driver;
	if (drv != w->last_driver || !w->last_known) {
		w->last_driver = drv;
		w->last_known = true;
		w->last_inline = dm_driver_pm_cost(drv, w->which) < POOL_USEC;
	}
	return w->last_inline;
}

static int pool_job(void *data, int i)
{
	struct walk *w = data;
	return run_hook_now(w->pm, w->nodes[i].dev, w->nodes[i].driver, w->suspend, w->flags);
}

static void pool_done(void *data, int i, int r)
{
	struct walk *w = data;
	w->in_flight--;
	complete(w, i, r);
}

/* Waits until the pool has finished something, and takes it in. */
static void take_done(struct walk *w)
{
	dm_pool_take(w->pm->pool, pool_done, w);
	w->last_known = false; /* the estimates moved */
}

/* Runs the walk to its end (or, on suspend, to its first failure and the
 * drain of what was in flight). */
static void dispatch(struct walk *w)
{
	uint64_t clock = dm_clock_now();
	while (w->remaining > 0 && !(w->suspend && w->error)) {
		if (w->n_ready == 0 || dm_pool_has_done(w->pm->pool)) {
			if (w->in_flight == 0)
				break; /* cannot happen: the graph is a forest */
			take_done(w);
			clock = dm_clock_now();
			continue;
		}
		int i = pop_ready(w);
		/* the device the walk reaches soon: the walk follows the list
		 * (backwards on suspend), the first line of a device is all a
		 * quick hook touches, and fetching it is most of its cost */
		size_t ahead = w->suspend ? (size_t)i - PREFETCH : (size_t)i + PREFETCH;
		if (ahead < w->n)
			__builtin_prefetch(w->nodes[ahead].dev, 1);
		if (item_skip(w, i)) {
			complete(w, i, 0);
			w->items[i].done = false; /* not this transition's to undo */
			continue;
		}
		if (!runs_inline(w, i) && dm_pool_submit(w->pm->pool, i)) {
			w->in_flight++;
			continue;
		}
		uint64_t t0 = clock;
		complete(w, i,
			 run_hook(w->pm, w->nodes[i].dev, w->nodes[i].driver, w->suspend, w->flags,
				  &clock));
		if (clock - t0 >= w->slow_ticks)
			w->last_known = false; /* ask its estimate again */
	}
	while (w->in_flight > 0)
		take_done(w);
}

/* The walk's adjacency lists in @adj, as walk_links() lays them out. */
static void walk_adjacency(struct walk *w, const int *adj)
{
	size_t n = w->n;
	w->sup_off = adj;
	w->con_off = adj + n + 1;
	w->sup_idx = adj + 2 * (n + 1);
	w->con_idx = w->sup_idx + w->n_edges;
}

/* The adjacency lists of @edges over @n items into @adj (room for
 * 2 * (n + 1) + 2 * n_edges ints): suppliers by consumer, consumers by
 * supplier. */
static void walk_links(struct walk *w, const struct dm_pm_edge *edges, int *adj)
{
	size_t n = w->n, e = w->n_edges;
	int *sup_off = adj, *con_off = adj + n + 1, *sup_idx = adj + 2 * (n + 1),
	    *con_idx = sup_idx + e;
	memset(adj, 0, 2 * (n + 1) * sizeof(*adj));
	for (size_t k = 0; k < e; k++) {
		sup_off[edges[k].consumer + 1]++;
		con_off[edges[k].supplier + 1]++;
	}
	for (size_t i = 0; i < n; i++) {
		sup_off[i + 1] += sup_off[i];
		con_off[i + 1] += con_off[i];
	}
	/* off[i] is list i's start: filled in order, each off[i] moves to
	 * its end, which is list i + 1's start; shifted back up after */
	for (size_t k = 0; k < e; k++) {
		sup_idx[sup_off[edges[k].consumer]++] = edges[k].supplier;
		con_idx[con_off[edges[k].supplier]++] = edges[k].consumer;
	}
	for (size_t i = n; i > 0; i--) {
		sup_off[i] = sup_off[i - 1];
		con_off[i] = con_off[i - 1];
	}
	sup_off[0] = con_off[0] = 0;
	walk_adjacency(w, adj);
}

static void walk_graph(struct walk *w)
{
	/* children lists, last child first */
	for (size_t i = 0; i < w->n; i++)
		w->items[i] = (struct pm_item){ .first_child = -1, .next_sibling = -1 };
	for (size_t i = 0; i < w->n; i++) {
		int p = w->nodes[i].parent;
		if (p < 0)
			continue;
		w->items[i].next_sibling = w->items[p].first_child;
		w->items[p].first_child = (int)i;
		if (w->suspend)
			w->items[p].pending++;
		else if (w->n_edges)
			w->items[i].pending++; /* its parent */
	}
	/* links: on suspend a supplier waits for each consumer, on resume a
	 * consumer for each supplier */
	for (size_t i = 0; w->n_edges && i < w->n; i++)
		w->items[i].pending += w->suspend ? w->con_off[i + 1] - w->con_off[i]
						  : w->sup_off[i + 1] - w->sup_off[i];
	if (!w->suspend && w->n_edges) {
		for (size_t i = w->n; i-- > 0;)
			if (w->items[i].pending == 0)
				push_ready(w, (int)i);
		return;
	}
	if (w->suspend) {
		/* the leaves, those bound for the pool on top: their hooks
		 * then overlap the dispatcher's walk over the quick ones */
		size_t pooled = 0;
		for (size_t i = 0; i < w->n; i++) {
			if (w->items[i].pending != 0)
				continue;
			if (runs_inline(w, (int)i))
				push_ready(w, (int)i);
			else
				pooled++;
		}
		for (size_t i = 0; pooled > 0 && i < w->n; i++)
			if (w->items[i].pending == 0 && !runs_inline(w, (int)i)) {
				push_ready(w, (int)i);
				pooled--;
			}
	} else {
		for (size_t i = w->n; i-- > 0;)
			if (w->nodes[i].parent < 0)
				push_ready(w, (int)i);
	}
}

/* Makes the walk buffers hold @n items. */
static int walk_buffers(struct dm_pm *pm, size_t n)
{
	if (n <= pm->cap_walk)
		return 0;
	struct pm_item *items = realloc(pm->items, n * sizeof(*items));
	if (items)
		pm->items = items;
	int *ready = items ? realloc(pm->ready, n * sizeof(*ready)) : NULL;
	if (!ready)
		return -ENOMEM;
	pm->ready = ready;
	pm->cap_walk = n;
	return 0;
}

/* After a failed suspend: resumes exactly what the walk suspended, parents
 * before children and suppliers before consumers: the list order when
 * there are no links, else the first such order by list position (each
 * item waits for its parent and suppliers among those suspended). */
static void roll_back(struct walk *w)
{
	size_t n = w->n;
	if (!w->n_edges) {
		for (size_t i = 0; i < n; i++)
			if (w->items[i].done)
				run_hook_now(w->pm, w->nodes[i].dev, NULL, false, w->flags);
		return;
	}
	/* pending: the done parent and done suppliers not resumed yet; the
	 * ready stack's buffer serves as the heap */
	for (size_t i = 0; i < n; i++) {
		if (!w->items[i].done)
			continue;
		int p = w->nodes[i].parent, pending = p >= 0 && w->items[p].done;
		for (int k = w->sup_off[i]; k < w->sup_off[i + 1]; k++)
			pending += w->items[w->sup_idx[k]].done;
		w->items[i].pending = pending;
	}
	int *heap = w->ready;
	size_t n_heap = 0;
	for (size_t i = 0; i < n; i++)
		if (w->items[i].done && w->items[i].pending == 0)
			heap_push(heap, &n_heap, (int)i);
	while (n_heap > 0) {
		int i = heap_pop(heap, &n_heap);
		run_hook_now(w->pm, w->nodes[i].dev, NULL, false, w->flags);
		for (int c = w->items[i].first_child; c >= 0; c = w->items[c].next_sibling)
			if (w->items[c].done && --w->items[c].pending == 0)
				heap_push(heap, &n_heap, c);
		for (int k = w->con_off[i]; k < w->con_off[i + 1]; k++) {
			int c = w->con_idx[k];
			if (w->items[c].done && --w->items[c].pending == 0)
				heap_push(heap, &n_heap, c);
		}
	}
}

/* A subtree's walk with devices outside it linked to its own: on suspend
 * every consumer outside must be suspended already, on resume every
 * supplier outside on. Each one in the way is journalled ("consumer" or
 * "supplier", EBUSY) and the walk refused: -EBUSY. */
static int outside_check(struct dm_pm *pm, bool suspend)
{
	int r = 0;
	for (size_t k = 0; k < pm->order.n_outside; k++) {
		const struct dm_pm_outside *o = &pm->order.outside[k];
		if (o->is_consumer != suspend || dm_device_is_dead(o->dev))
			continue;
		enum dm_power_state st = dm_device_get_power(o->dev);
		if (suspend ? st == DM_POWER_SUSPENDED : st == DM_POWER_ON)
			continue;
		log_add(pm, suspend ? "consumer" : "supplier", o->dev, -EBUSY, 0);
		r = -EBUSY;
	}
	return r;
}

static int walk_run(struct dm_pm *pm, struct dm_device *top, bool suspend, unsigned flags)
{
	/* the journal of this transition names the order's devices: it
	 * stays taken until the journal is cleared */
	int r = dm_model_take_pm_order(pm->model, top, &pm->order);
	if (r < 0)
		return r;
	size_t n = pm->order.n;
	pthread_mutex_lock(&pm->lock);
	/* the walk, a suspend's rollback, and the links in the way */
	r = log_reserve_locked(pm, 2 * n + pm->order.n_outside);
	pthread_mutex_unlock(&pm->lock);
	if (r == 0 && pm->order.n_outside && outside_check(pm, suspend) < 0)
		return -EBUSY;
	struct walk w = { .pm = pm, .nodes = pm->order.nodes, .n = n, .suspend = suspend,
			  .which = suspend ? DM_CALL_SUSPEND : DM_CALL_RESUME, .flags = flags,
			  .remaining = n, .items = pm->items, .ready = pm->ready,
			  .slow_ticks = dm_clock_ticks(POOL_USEC) };
	if (r < 0 || walk_buffers(pm, n) < 0 || dm_pool_begin(pm->pool, pool_job, &w, n) < 0)
		return -ENOMEM;
	w.items = pm->items;
	w.ready = pm->ready;
	w.n_edges = pm->order.n_edges;
	if (w.n_edges) {
		size_t need = 2 * (n + 1) + 2 * w.n_edges;
		if (need > pm->cap_adj) {
			int *adj = realloc(pm->adj, need * sizeof(*adj));
			if (!adj) {
				dm_pool_end(pm->pool);
				return -ENOMEM;
			}
			pm->adj = adj;
			pm->cap_adj = need;
			pm->adj_gen = 0;
		}
		/* the whole tree's lists, unchanged since the last walk: kept */
		if (pm->order.edges_gen && pm->order.edges_gen == pm->adj_gen && pm->adj_n == n) {
			walk_adjacency(&w, pm->adj);
		} else {
			walk_links(&w, pm->order.edges, pm->adj);
			pm->adj_gen = pm->order.edges_gen;
			pm->adj_n = n;
		}
		size_t words = n / 64 + 1;
		if (words > pm->cap_bits) {
			uint64_t *bits = realloc(pm->bits, words * sizeof(*bits));
			if (!bits) {
				dm_pool_end(pm->pool);
				return -ENOMEM;
			}
			pm->bits = bits;
			pm->cap_bits = words;
		}
		memset(pm->bits, 0, words * sizeof(*pm->bits));
		w.bits = pm->bits;
		w.cursor = suspend ? (int)n - 1 : 0;
	}
	walk_graph(&w);
	dispatch(&w);
	dm_pool_end(pm->pool);

	if (!suspend || w.error == 0)
		return w.error ? -EIO : 0;
	roll_back(&w);
	return -EIO;
}

static int resume_ancestors(struct dm_pm *pm, struct dm_device *top, unsigned flags)
{
	struct dm_device *chain[MAX_DEPTH];
	size_t depth = 0;
	int ret = 0;
	dm_model_read_lock(pm->model);
	for (struct dm_device *p = dm_device_get_parent_locked(top); p && depth < MAX_DEPTH;
	     p = dm_device_get_parent_locked(p))
		chain[depth++] = dm_device_ref(p);
	dm_model_unlock(pm->model);
	/* the journal may name them: it holds the references */
	pthread_mutex_lock(&pm->lock);
	memcpy(pm->chain, chain, depth * sizeof(*chain));
	pm->n_chain = depth;
	pthread_mutex_unlock(&pm->lock);
	while (depth-- > 0)
		if (dm_device_get_power(chain[depth]) == DM_POWER_SUSPENDED &&
		    !dm_device_is_dead(chain[depth]) &&
		    run_hook_now(pm, chain[depth], NULL, false, flags) < 0)
			ret = -EIO;
	return ret;
}

static int run_transition(struct dm_pm *pm, struct dm_device *dev, unsigned flags, bool suspend)
{
	pthread_mutex_lock(&pm->lock);
	log_clear_locked(pm);
	int r = log_reserve_locked(pm, MAX_DEPTH);
	pthread_mutex_unlock(&pm->lock);
	struct dm_device *top = dev ? dev : dm_model_get_root(pm->model);
	if (pm->prepare)
		pm->prepare(pm->prepare_data);
	if (r == 0 && !suspend)
		r = resume_ancestors(pm, top, flags);
	int r2 = r == -ENOMEM ? r : walk_run(pm, top, suspend, flags);
	/* what the walk left suspended, on disk before the machine sleeps */
	if (suspend && pm->record && !(flags & DM_PM_DRY_RUN) && r2 >= 0) {
		int r3 = dm_pm_record_sync(pm->record);
		if (r3 < 0)
			r2 = r3;
	}
	return r2 < 0 ? r2 : r;
}

/* One transition at a time, counted and timed for the metrics file. */
static int transition(struct dm_pm *pm, struct dm_device *dev, unsigned flags, bool suspend)
{
	size_t req = (suspend ? 0 : 1) + (flags & DM_PM_DRY_RUN ? 2 : 0);
	if (pthread_mutex_trylock(&pm->transition) != 0) {
		atomic_fetch_add_explicit(&pm->transitions[req][PM_BUSY], 1, memory_order_relaxed);
		return -EBUSY;
	}
	uint64_t start = dm_clock_now();
	int r = run_transition(pm, dev, flags, suspend);
	pthread_mutex_unlock(&pm->transition);
	long usec = dm_clock_usec(dm_clock_now() - start);
	dm_histogram_observe(&pm->durations[req], usec > 0 ? (uint64_t)usec : 0);
	enum pm_result res = r == 0 ? PM_OK : r == -EIO ? PM_HOOK_FAILED : PM_ERROR;
	atomic_fetch_add_explicit(&pm->transitions[req][res], 1, memory_order_relaxed);
	return r;
}

void dm_pm_metrics(struct dm_metrics *w, void *data)
{
	struct dm_pm *pm = data;
	dm_metrics_family(w, "driverfsd_pm_transitions_total", "counter",
			  "PM transitions by request and result (hook_failed: a suspend hook "
			  "failed and the transition was rolled back, or a resume hook failed; "
			  "busy: another transition ran).");
	for (size_t i = 0; i < PM_REQUESTS; i++)
		for (size_t j = 0; j < PM_RESULTS; j++)
			dm_metrics_sample(w, "driverfsd_pm_transitions_total",
					  (double)atomic_load_explicit(&pm->transitions[i][j],
								       memory_order_relaxed),
					  "request", pm_request_names[i], "result", pm_result_names[j],
					  NULL);
	dm_metrics_family(w, "driverfsd_pm_transition_duration_seconds", "histogram",
			  "How long the PM transitions that ran took, by request.");
	for (size_t i = 0; i < PM_REQUESTS; i++)
		dm_metrics_histogram(w, "driverfsd_pm_transition_duration_seconds",
				     &pm->durations[i], "request", pm_request_names[i], NULL);
}

int dm_pm_suspend(struct dm_pm *pm, struct dm_device *dev, unsigned flags)
{
	return transition(pm, dev, flags, true);
}

int dm_pm_resume(struct dm_pm *pm, struct dm_device *dev, unsigned flags)
{
	return transition(pm, dev, flags, false);
}

void dm_pm_set_prepare(struct dm_pm *pm, void (*fn)(void *data), void *data)
{
	pm->prepare = fn;
	pm->prepare_data = data;
}

int dm_pm_set_record(struct dm_pm *pm, const char *path)
{
	struct dm_pm_record *rec = NULL;
	int r = path ? dm_pm_record_new(path, &rec) : 0;
	if (r < 0)
		return r;
	dm_pm_record_free(pm->record);
	pm->record = rec;
	return 0;
}

int dm_pm_recover(struct dm_pm *pm, void (*note)(const char *devpath, bool present, void *data),
		  void *data, char *why, size_t size)
{
	char **list;
	size_t n, marked = 0;
	if (!pm->record)
		return 0;
	int r = dm_pm_record_load(pm->record, &list, &n, why, size);
	if (r < 0)
		return r == -ENOENT ? 0 : r;
	/* marked suspended, they are what a whole-tree resume wakes, parents
	 * first; every other device is on and skipped */
	for (size_t i = 0; i < n; i++) {
		struct dm_device *dev = dm_model_find_devpath(pm->model, list[i]);
		if (note)
			note(list[i], dev != NULL, data);
		if (dev) {
			dm_device_set_power(dev, DM_POWER_SUSPENDED);
			dm_device_set_power_error(dev, NULL); /* what the resume says */
			marked++;
			dm_device_unref(dev);
		}
	}
	r = marked ? dm_pm_resume(pm, NULL, 0) : 0;
	/* what could not be resumed stays listed, each with its power_error:
	 * a later start tries again */
	if (r == -EIO)
		r = 0;
	size_t failed = 0;
	for (size_t i = 0; i < n; i++) {
		struct dm_device *dev = dm_model_find_devpath(pm->model, list[i]);
		char err[16];
		if (dev && dm_device_get_power_error(dev, err, sizeof(err)) >= 0 &&
		    strncmp(err, "resume ", 7) == 0)
			list[failed++] = list[i];
		else
			free(list[i]);
		dm_device_unref(dev);
	}
	dm_pm_record_clear_except(pm->record, (const char *const *)list, failed);
	for (size_t i = 0; i < failed; i++)
		free(list[i]);
	free(list);
	if (r < 0 && why)
		snprintf(why, size, "%s", strerror(-r));
	return r < 0 ? r : (int)marked;
}

static int pm_request(struct dm_device *dev, enum dm_pm_request req, void *data)
{
	struct dm_pm *pm = data;
	switch (req) {
	case DM_PM_SUSPEND:
		return dm_pm_suspend(pm, dev, 0);
	case DM_PM_RESUME:
		return dm_pm_resume(pm, dev, 0);
	case DM_PM_SUSPEND_DRY_RUN:
		return dm_pm_suspend(pm, dev, DM_PM_DRY_RUN);
	case DM_PM_RESUME_DRY_RUN:
		return dm_pm_resume(pm, dev, DM_PM_DRY_RUN);
	}
	return -EINVAL;
}

static int pm_show_log(char **ret, size_t *ret_len, void *data)
{
	return dm_pm_show_log(data, ret, ret_len);
}

static uint64_t pm_log_version(void *data)
{
	struct dm_pm *pm = data;
	return atomic_load_explicit(&pm->log_version, memory_order_acquire);
}

/* A driver's state for a device, kept in the transition record under its
 * devpath: without either, nothing outlives the daemon. */
static int pm_keep_state(struct dm_device *dev, const char *state, void *data)
{
	struct dm_pm *pm = data;
	const char *devpath = dm_device_get_devpath(dev);
	if (!pm->record || !devpath)
		return 0;
	return dm_pm_record_keep_state(pm->record, devpath, state);
}

static int pm_kept_state(struct dm_device *dev, char *buf, size_t size, void *data)
{
	struct dm_pm *pm = data;
	const char *devpath = dm_device_get_devpath(dev);
	if (!pm->record || !devpath)
		return -ENOENT;
	return dm_pm_record_kept_state(pm->record, devpath, buf, size);
}

static const struct dm_pm_handler pm_handler = {
	.request = pm_request,
	.show_log = pm_show_log,
	.log_version = pm_log_version,
	.keep_state = pm_keep_state,
	.kept_state = pm_kept_state,
};

int dm_pm_new(struct dm_model *m, struct dm_pm **ret)
{
	struct dm_pm *pm = calloc(1, sizeof(*pm));
	if (!pm)
		return -ENOMEM;
	pm->model = m;
	if (dm_pool_new(POOL_MAX, POOL_STACK, &pm->pool) < 0) {
		free(pm);
		return -ENOMEM;
	}
	dm_clock_now(); /* calibrates it now rather than in the first hook's time */
	pthread_mutex_init(&pm->transition, NULL);
	pthread_mutex_init(&pm->lock, NULL);
	dm_model_set_pm_handler(m, &pm_handler, pm);
	*ret = pm;
	return 0;
}

void dm_pm_free(struct dm_pm *pm)
{
	if (!pm)
		return;
	dm_model_set_pm_handler(pm->model, NULL, NULL);
	dm_pm_record_free(pm->record);
	dm_pool_free(pm->pool);
	pthread_mutex_lock(&pm->lock);
	log_clear_locked(pm);
	pthread_mutex_unlock(&pm->lock);
	dm_pm_order_done(&pm->order);
	free(pm->log);
	free(pm->items);
	free(pm->ready);
	free(pm->adj);
	free(pm->bits);
	pthread_mutex_destroy(&pm->transition);
	pthread_mutex_destroy(&pm->lock);
	free(pm);
}
