/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pm-bench - the PM engine's cost: a tree of N devices (default 100000,
 * fan-out 2-12, depth 3-6 below a few roots), suspended and resumed with
 * every hook on the calling thread (serial) and with the worker pool
 * (parallel), first with no-op hooks, then with 1% of the devices taking
 * 1 ms. Prints times, per-device costs and the ratios the targets name;
 * the critical path is the longest chain of hook time along parent links
 * (also with the time a 1-ms sleep really takes here, measured),
 * and the dispatcher floor the time one thread needs to call the quick
 * hooks (from the no-op run), which no schedule with one dispatcher beats.
 * The slow hooks' sleeps are also timed alone, with no engine: as many
 * threads, released at once, each sleeping 1 ms; the work is the quick
 * hooks' serial time plus the CPU those sleeps took, and no schedule on C
 * cores beats max(critical path with real sleeps, the sleeps alone,
 * work / C), the lower bound printed.
 *
 *   pm-bench [N] [ROUNDS] [noop|slow|links]
 *
 * The third argument runs one half only (for profiling with perf); links
 * runs the no-op walks again with N device links added (random pairs in
 * global-list order, a DAG across subtrees), before and after.
 */
#include "core/model.h"
#include "pm/pm.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double clock_s(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double now(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

/* The CPUs this process may run on. */
static int cores(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) < 0)
		return (int)sysconf(_SC_NPROCESSORS_ONLN);
	return CPU_COUNT(&set);
}

static int noop(struct dm_device *dev, void *data)
{
	(void)dev;
	(void)data;
	return 0;
}

static int slow(struct dm_device *dev, void *data)
{
	(void)dev;
	(void)data;
	usleep(1000);
	return 0;
}

static const struct dm_driver_ops noop_ops = { .suspend = noop, .resume = noop };
static const struct dm_driver_ops slow_ops = { .suspend = slow, .resume = slow };

struct tree {
	struct dm_model *m;
	struct dm_pm *pm;
	size_t n;
	int *parent;
	char *is_slow;
};

static unsigned rnd(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return (*s >> 8) & 0xffffff;
}

static int build(struct tree *t, size_t n, double slow_fraction)
{
	struct dm_bus *bus;
	struct dm_driver *fast_drv, *slow_drv;
	if (dm_model_new(&t->m) < 0 || dm_pm_new(t->m, &t->pm) < 0 ||
	    dm_bus_get(t->m, "bench", NULL, &bus) < 0)
		return -ENOMEM;
	dm_driver_new("noop", DM_DRIVER_USER, 1, &noop_ops, NULL, NULL, &fast_drv);
	dm_driver_new("slow", DM_DRIVER_USER, 2, &slow_ops, NULL, NULL, &slow_drv);
	dm_driver_add_match(slow_drv, "slow", "1");
	dm_driver_register(bus, slow_drv);
	dm_driver_register(bus, fast_drv);

	t->n = n;
	t->parent = malloc(n * sizeof(int));
	t->is_slow = calloc(n, 1);
	struct dm_device **devs = malloc(n * sizeof(*devs));
	unsigned s = 12345;
	/* breadth-first: each device gets 2..12 children until n */
	size_t next = 0;
	for (size_t i = 0; i < n; i++) {
		if (i < 4) {
			t->parent[i] = -1;
		} else {
			t->parent[i] = (int)next;
			if (rnd(&s) % 7 == 0)
				next++; /* mean fan-out about 7 */
		}
		char name[32];
		snprintf(name, sizeof(name), "d%zu", i);
		dm_device_new(t->m, name, &devs[i]);
		dm_device_set_bus(devs[i], bus);
		t->is_slow[i] = (double)(rnd(&s) % 100000) / 100000.0 < slow_fraction;
		if (t->is_slow[i])
			dm_device_set_value(devs[i], "slow", "1");
		if (dm_device_add(devs[i], t->parent[i] < 0 ? NULL : devs[t->parent[i]]) < 0)
			return -EIO;
		if (i >= 4 && next >= i)
			next = i - 1;
	}
	for (size_t i = 0; i < n; i++)
		dm_device_unref(devs[i]);
	free(devs);
	dm_driver_unref(fast_drv);
	dm_driver_unref(slow_drv);
	return 0;
}

struct collect_ctx {
	struct dm_device **v;
	size_t *k;
};

/* The devices in global-list order (breadth-first numbering keeps each
 * parent before its children there too). */
static int collect_dev(struct dm_device *dev, void *data)
{
	struct collect_ctx *c = data;
	if (dev != dm_model_get_root(dm_device_get_model(dev)))
		c->v[(*c->k)++] = dev;
	return 0;
}

static void destroy(struct tree *t)
{
	dm_pm_free(t->pm);
	dm_model_free(t->m);
	free(t->parent);
	free(t->is_slow);
}

/* The longest chain of hook time along parent links, in seconds. */
static double critical_path(const struct tree *t, double slow_s)
{
	double *cp = calloc(t->n, sizeof(double)), best = 0;
	/* parents precede children: walk backwards, push sums up */
	for (size_t i = t->n; i-- > 0;) {
		cp[i] += t->is_slow[i] ? slow_s : 0;
		if (cp[i] > best)
			best = cp[i];
		int p = t->parent[i];
		if (p >= 0 && cp[i] > cp[p])
			cp[p] = cp[i];
	}
	free(cp);
	return best;
}

/* The best wall time of one transition over @rounds suspend+resume
 * pairs, and in *@cpu (if not NULL) the process's CPU time in that pair. */
static double timed_cpu(struct tree *t, unsigned flags, int rounds, double *cpu)
{
	double best = 1e9;
	for (int r = 0; r < rounds; r++) {
		double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID), t0 = now();
		if (dm_pm_suspend(t->pm, NULL, flags) < 0 || dm_pm_resume(t->pm, NULL, flags) < 0) {
			fprintf(stderr, "transition failed\n");
			exit(1);
		}
		double dt = (now() - t0) / 2; /* one transition */
		if (dt < best) {
			best = dt;
			if (cpu)
				*cpu = (clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0) / 2;
		}
	}
	return best;
}

static double timed(struct tree *t, unsigned flags, int rounds)
{
	return timed_cpu(t, flags, rounds, NULL);
}

/* The machine's own cost of @k 1-ms sleeps at once, each on a thread
 * started beforehand and released together: the best wall time of
 * @rounds, and in *@cpu the CPU time of that round. */
struct sleeps {
	pthread_barrier_t start;
	atomic_size_t left; /* sleeping this round */
	sem_t end; /* posted by the last to wake */
	int rounds;
};

static void *sleeper(void *data)
{
	struct sleeps *s = data;
	for (int r = 0; r < s->rounds; r++) {
		pthread_barrier_wait(&s->start);
		slow(NULL, NULL);
		if (atomic_fetch_sub(&s->left, 1) == 1)
			sem_post(&s->end);
	}
	return NULL;
}

static double sleeps_alone(size_t k, int rounds, double *cpu)
{
	struct sleeps s = { .rounds = rounds };
	pthread_t *th = calloc(k, sizeof(*th));
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	pthread_barrier_init(&s.start, NULL, (unsigned)k + 1);
	sem_init(&s.end, 0, 0);
	for (size_t i = 0; i < k; i++)
		if (pthread_create(&th[i], &attr, sleeper, &s) != 0) {
			fprintf(stderr, "pthread_create failed\n");
			exit(1);
		}
	double best = 1e9;
	*cpu = 0;
	for (int r = 0; r < rounds; r++) {
		atomic_store(&s.left, k);
		double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID), t0 = now();
		pthread_barrier_wait(&s.start);
		while (sem_wait(&s.end) < 0)
			;
		double dt = now() - t0;
		if (dt < best) {
			best = dt;
			*cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
		}
	}
	for (size_t i = 0; i < k; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&s.start);
	sem_destroy(&s.end);
	pthread_attr_destroy(&attr);
	free(th);
	return best;
}

/* What slow() really takes here, on average (timer slack and latency). */
static double slow_hook_time(void)
{
	double t0 = now();
	for (int i = 0; i < 20; i++)
		slow(NULL, NULL);
	return (now() - t0) / 20;
}

/* The best serial and parallel times of one transition over @rounds,
 * after a warm-up (the engine learns the hooks are quick), interleaved so
 * that a noisy moment hits both alike. */
static void best_pair(struct tree *t, int rounds, double *serial, double *parallel)
{
	timed(t, 0, 1);
	*serial = *parallel = 1e9;
	for (int r = 0; r < rounds; r++) {
		double s = timed(t, DM_PM_SERIAL, 1), p = timed(t, 0, 1);
		*serial = s < *serial ? s : *serial;
		*parallel = p < *parallel ? p : *parallel;
	}
}

/* Returns the serial time of one transition. */
static double run_noop(size_t n, int rounds)
{
	struct tree t;
	if (build(&t, n, 0) < 0)
		exit(1);
	double serial, parallel;
	best_pair(&t, rounds, &serial, &parallel);
	printf("no-op hooks, %zu devices (best of %d, one transition):\n", n, rounds);
	printf("  serial    %8.2f ms  %6.0f ns/device\n", serial * 1e3, serial / n * 1e9);
	printf("  parallel  %8.2f ms  %6.0f ns/device\n", parallel * 1e3, parallel / n * 1e9);
	printf("  parallel/serial = %.2f   (target <= 1.10; serial target <= 100 ns/device)\n",
	       parallel / serial);
	destroy(&t);
	return serial;
}

/* @noop_serial: run_noop()'s serial time on a tree of the same shape, or 0. */
static void run_slow(size_t n, int rounds, double noop_serial)
{
	struct tree t;
	if (build(&t, n, 0.01) < 0)
		exit(1);
	size_t slow_n = 0;
	for (size_t i = 0; i < n; i++)
		slow_n += t.is_slow[i];
	timed(&t, 0, 1);
	double cp = critical_path(&t, 1e-3), cp_real = critical_path(&t, slow_hook_time());
	int slow_rounds = rounds > 2 ? 2 : rounds;
	double used, sleep_cpu;
	double serial = timed(&t, DM_PM_SERIAL, 1);
	double parallel = timed_cpu(&t, 0, slow_rounds, &used);
	double sleeps = sleeps_alone(slow_n, rounds, &sleep_cpu);
	printf("1%% slow hooks (%zu devices of %zu take 1 ms):\n", slow_n, n);
	printf("  serial        %8.2f ms\n", serial * 1e3);
	printf("  parallel      %8.2f ms (CPU %.2f ms)\n", parallel * 1e3, used * 1e3);
	printf("  critical path %8.2f ms (hook time only; %.2f ms with the sleeps' real length)\n",
	       cp * 1e3, cp_real * 1e3);
	printf("  parallel/critical path = %.2f (target <= 1.25)\n", parallel / cp);
	printf("  serial/parallel = %.1f (target >= 5)\n", serial / parallel);
	printf("  sleeps alone  %8.2f ms (CPU %.2f ms): %zu threads sleeping 1 ms at once, no engine\n",
	       sleeps * 1e3, sleep_cpu * 1e3, slow_n);
	if (noop_serial > 0) {
		/* one dispatcher calls every quick hook: no schedule with one
		 * dispatcher beats that; no schedule at all beats the work
		 * spread over every core */
		double floor = noop_serial * (double)(n - slow_n) / (double)n;
		double fbound = floor > cp ? floor : cp;
		int c = cores();
		double work = floor + sleep_cpu, bound = work / c;
		bound = bound > cp_real ? bound : cp_real;
		bound = bound > sleeps ? bound : sleeps;
		printf("  dispatcher floor %5.2f ms (the quick hooks' serial time)\n", floor * 1e3);
		printf("  parallel/max(critical path, floor) = %.2f\n", parallel / fbound);
		printf("  lower bound   %8.2f ms = max(critical path, sleeps alone, work %.2f ms / %d cores)\n",
		       bound * 1e3, work * 1e3, c);
		printf("  parallel/lower bound = %.2f\n", parallel / bound);
	}
	destroy(&t);
}

/* @n device links on a tree of @n devices, no-op hooks: what the links
 * cost the walks. Each link goes from a device to one of higher index (the
 * tree is numbered breadth first, so never to an ancestor): a DAG whose
 * edges cross subtrees, as fw_devlink's do. */
static void run_links(size_t n, int rounds)
{
	struct tree t;
	if (build(&t, n, 0) < 0)
		exit(1);
	double serial0, parallel0;
	best_pair(&t, rounds, &serial0, &parallel0);
	struct dm_device **devs = malloc(n * sizeof(*devs));
	size_t k = 0;
	dm_model_read_lock(t.m);
	struct collect_ctx c = { devs, &k };
	dm_model_for_each_device_locked(t.m, collect_dev, &c);
	dm_model_unlock(t.m);
	unsigned s = 777;
	size_t made = 0, refused = 0;
	double t0 = now();
	while (made < n && k > 1) {
		size_t a = rnd(&s) % k, b = rnd(&s) % k;
		if (a == b)
			continue;
		if (a > b) {
			size_t x = a;
			a = b;
			b = x;
		}
		int r = dm_link_add(devs[a], devs[b], 0, NULL);
		made += r == 0;
		refused += r == -ELOOP;
	}
	double build_s = now() - t0;
	free(devs);
	double serial, parallel;
	best_pair(&t, rounds, &serial, &parallel);
	printf("device links: %zu devices, %zu links (made in %.0f ms, %zu refused as cycles), "
	       "no-op hooks (best of %d, one transition):\n", n, made, build_s * 1e3, refused, rounds);
	printf("  without links: serial %8.2f ms  %6.0f ns/device   parallel %8.2f ms\n",
	       serial0 * 1e3, serial0 / n * 1e9, parallel0 * 1e3);
	printf("  with links:    serial %8.2f ms  %6.0f ns/device   parallel %8.2f ms  %6.0f ns/device\n",
	       serial * 1e3, serial / n * 1e9, parallel * 1e3, parallel / n * 1e9);
	printf("  parallel/serial = %.2f   (target <= 1.10; serial target <= 100 ns/device)\n",
	       parallel / serial);
	destroy(&t);
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
	int rounds = argc > 2 ? atoi(argv[2]) : 5;
	const char *only = argc > 3 ? argv[3] : "";

	if (strcmp(only, "links") == 0) {
		run_links(n, rounds);
		return 0;
	}
	double noop_serial = 0;
	if (strcmp(only, "slow") != 0)
		noop_serial = run_noop(n, rounds);
	if (strcmp(only, "noop") != 0)
		run_slow(n, rounds, noop_serial);
	return 0;
}
