/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "helper.h"

#include "core/thread.h"
#include "drivers/hookenv.h"
#include "drivers/runner.h"
#include "util/log.h"
#include "util/trust.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HELPER_THREADS 4

struct job {
	char *action;
	char *devpath;
	char **env;
	bool running;
	struct job *next;
};

struct dm_helper {
	char **argv;
	int timeout_ms;
	dm_helper_done_fn done;
	void *data;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct job *head, **tail; /* in queue order */
	size_t n_jobs;		  /* queued and running */
	size_t max_jobs;
	struct dm_helper_stats stats;
	bool quit;
	pthread_t threads[HELPER_THREADS];
	size_t n_threads;
};

static void job_free(struct job *j)
{
	free(j->action);
	free(j->devpath);
	dm_strv_free(j->env);
	free(j);
}

/* The first queued job no earlier job of the same device holds back (a job
 * runs only after every earlier one for its device has finished). */
static struct job *next_runnable_locked(struct dm_helper *h)
{
	for (struct job *j = h->head; j; j = j->next) {
		if (j->running)
			continue;
		bool blocked = false;
		for (struct job *e = h->head; e != j; e = e->next)
			if (strcmp(e->devpath, j->devpath) == 0) {
				blocked = true;
				break;
			}
		if (!blocked)
			return j;
	}
	return NULL;
}

static void unlink_locked(struct dm_helper *h, struct job *j)
{
	struct job **p = &h->head;
	while (*p != j)
		p = &(*p)->next;
	*p = j->next;
	if (h->tail == &j->next)
		h->tail = p;
}

static void *helper_thread(void *data)
{
	struct dm_helper *h = data;
	pthread_mutex_lock(&h->lock);
	for (;;) {
		struct job *j;
		while (!h->quit && !(j = next_runnable_locked(h)))
			pthread_cond_wait(&h->cond, &h->lock);
		if (h->quit)
			break;
		j->running = true;
		pthread_mutex_unlock(&h->lock);

		char label[4200];
		struct dm_run_result res;
		snprintf(label, sizeof(label), "hotplug helper %s %s", j->action, j->devpath);
		int r = dm_run(label, (const char *const *)h->argv, (const char *const *)j->env,
			       h->timeout_ms, &res);
		if (r == 0) {
			r = dm_run_errno(&res);
			dm_run_result_done(&res);
		}
		if (h->done)
			h->done(j->action, j->devpath, r, h->data);

		pthread_mutex_lock(&h->lock);
		if (r == 0)
			h->stats.succeeded++;
		else
			h->stats.failed++;
		unlink_locked(h, j);
		h->n_jobs--;
		job_free(j);
		pthread_cond_broadcast(&h->cond); /* the device's next job may run */
	}
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

int dm_helper_new(const char *cmdline, int timeout_ms, dm_helper_done_fn done, void *data,
		  struct dm_helper **ret)
{
	char **argv;
	size_t n;
	int r = dm_split_command(cmdline, &argv, &n);
	if (r < 0)
		return r;
	if (n == 0 || argv[0][0] != '/') {
		dm_strv_free(argv);
		return -EINVAL;
	}
	/* the program and its #! interpreter, as the runner checks them */
	char why[PATH_MAX + 128];
	if (dm_trust_check_program(argv[0], why, sizeof(why)) == -EPERM) {
		log_err("hotplug helper %s refused, anyone but root could change it: %s", argv[0],
			why);
		dm_strv_free(argv);
		return -EPERM;
	}
	struct dm_helper *h = calloc(1, sizeof(*h));
	if (!h) {
		dm_strv_free(argv);
		return -ENOMEM;
	}
	*h = (struct dm_helper){ .argv = argv, .timeout_ms = timeout_ms, .done = done,
				 .data = data, .max_jobs = DM_HELPER_MAX_JOBS };
	h->tail = &h->head;
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->cond, NULL);
	for (size_t i = 0; i < HELPER_THREADS; i++)
		if (dm_thread_start(&h->threads[i], 0, helper_thread, h) == 0)
			h->n_threads++;
	if (!h->n_threads) {
		dm_helper_free(h);
		return -EAGAIN;
	}
	*ret = h;
	return 0;
}

/* The device's job that has not started yet, if any (there is at most one:
 * dm_helper_queue() merges into it). */
static struct job *queued_for_locked(struct dm_helper *h, const char *devpath)
{
	for (struct job *j = h->head; j; j = j->next)
		if (!j->running && strcmp(j->devpath, devpath) == 0)
			return j;
	return NULL;
}

void dm_helper_queue(struct dm_helper *h, const char *action, const char *devpath, char **env)
{
	pthread_mutex_lock(&h->lock);
	struct job *q = queued_for_locked(h, devpath);
	if (q) {
		/* the helper has not seen the queued event: the newer one
		 * replaces it, with its environment; a change of a device
		 * whose add has not run is still its add */
		char *act = strcmp(action, "change") == 0 && strcmp(q->action, "add") == 0
				    ? q->action
				    : strdup(action);
		if (act) {
			if (act != q->action)
				free(q->action);
			q->action = act;
			dm_strv_free(q->env);
			q->env = env;
			h->stats.merged++;
			pthread_mutex_unlock(&h->lock);
			return;
		}
		/* out of memory: the queued one stays, this one is dropped */
	} else if (h->n_jobs < h->max_jobs) {
		struct job *j = calloc(1, sizeof(*j));
		if (j) {
			j->action = strdup(action);
			j->devpath = strdup(devpath);
			j->env = env;
		}
		if (j && j->action && j->devpath) {
			*h->tail = j;
			h->tail = &j->next;
			h->n_jobs++;
			pthread_cond_signal(&h->cond);
			pthread_mutex_unlock(&h->lock);
			return;
		}
		if (j) {
			j->env = NULL; /* freed below */
			job_free(j);
		}
	}
	uint64_t dropped = ++h->stats.dropped;
	pthread_mutex_unlock(&h->lock);
	dm_strv_free(env);
	/* the first drop, then every 1024th: a flood does not flood the log */
	if (dropped == 1 || dropped % 1024 == 0)
		log_warn("hotplug helper %s %s: not run, the queue is full or out of memory "
			 "(%" PRIu64 " dropped so far)",
			 action, devpath, dropped);
}

void dm_helper_get_stats(struct dm_helper *h, struct dm_helper_stats *ret)
{
	pthread_mutex_lock(&h->lock);
	*ret = h->stats;
	ret->jobs = h->n_jobs;
	ret->running = 0;
	for (struct job *j = h->head; j; j = j->next)
		ret->running += j->running;
	pthread_mutex_unlock(&h->lock);
}

void dm_helper_metrics(struct dm_metrics *w, void *data)
{
	struct dm_helper_stats st;
	dm_helper_get_stats(data, &st);
	dm_metrics_family(w, "driverfsd_hotplug_helper_runs_total", "counter",
			  "Runs of the hotplug helper, by result (failed: a non-zero exit, a "
			  "signal or a timeout).");
	dm_metrics_sample(w, "driverfsd_hotplug_helper_runs_total", (double)st.succeeded,
			  "result", "ok", NULL);
	dm_metrics_sample(w, "driverfsd_hotplug_helper_runs_total", (double)st.failed, "result",
			  "failed", NULL);
	dm_metrics_family(w, "driverfsd_hotplug_helper_events_merged_total", "counter",
			  "Events that replaced a device's call still waiting in the helper's queue.");
	dm_metrics_sample(w, "driverfsd_hotplug_helper_events_merged_total", (double)st.merged,
			  NULL);
	dm_metrics_family(w, "driverfsd_hotplug_helper_events_dropped_total", "counter",
			  "Events the helper did not run: its queue was full, or memory ran out.");
	dm_metrics_sample(w, "driverfsd_hotplug_helper_events_dropped_total", (double)st.dropped,
			  NULL);
	dm_metrics_family(w, "driverfsd_hotplug_helper_queued", "gauge",
			  "Helper calls waiting or running now.");
	dm_metrics_sample(w, "driverfsd_hotplug_helper_queued", (double)st.jobs, NULL);
}

void dm_helper_free(struct dm_helper *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->lock);
	h->quit = true;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
	for (size_t i = 0; i < h->n_threads; i++)
		pthread_join(h->threads[i], NULL);
	while (h->head) {
		struct job *j = h->head;
		h->head = j->next;
		job_free(j);
	}
	pthread_cond_destroy(&h->cond);
	pthread_mutex_destroy(&h->lock);
	dm_strv_free(h->argv);
	free(h);
}
