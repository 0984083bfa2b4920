/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nfd.c - the NFD feature file kept current (nfd.h). */
#include "nfd.h"

#include "buses/pci-nfd.h"
#include "core/metrics.h"
#include "core/thread.h"
#include "fleet/nfd-format.h"
#include "util/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* a burst of uevents (a hub's devices, VFs made) is written once */
#define NFD_SETTLE_MS 200

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool running, dirty, quit;
	pthread_t thread;
	struct dm_model *model;
	char *path;
	_Atomic uint64_t writes[3]; /* written, unchanged, failed */
} nfd = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static void write_once(void)
{
	char *text, msg[128] = "";
	size_t len;
	int r = dm_pci_nfd_text(nfd.model, &text, &len);
	if (r == 0) {
		r = dm_nfd_write(nfd.path, text, len, msg, sizeof(msg));
		free(text);
	}
	atomic_fetch_add(&nfd.writes[r > 0 ? 0 : r == 0 ? 1 : 2], 1);
	if (r < 0)
		log_warn("NfdFile=%s: %s", nfd.path, *msg ? msg : strerror(-r));
	else if (r > 0)
		log_debug("NfdFile=%s: node labels written", nfd.path);
}

/* Waits @ms or until told to quit; the lock held. */
static void settle_locked(int ms)
{
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_nsec += (long)ms * 1000000;
	until.tv_sec += until.tv_nsec / 1000000000;
	until.tv_nsec %= 1000000000;
	while (!nfd.quit && pthread_cond_timedwait(&nfd.cond, &nfd.lock, &until) != ETIMEDOUT)
		;
}

static void *writer(void *data)
{
	(void)data;
	pthread_mutex_lock(&nfd.lock);
	for (;;) {
		while (!nfd.dirty && !nfd.quit)
			pthread_cond_wait(&nfd.cond, &nfd.lock);
		if (nfd.quit)
			break;
		settle_locked(NFD_SETTLE_MS);
		if (nfd.quit)
			break;
		nfd.dirty = false;
		pthread_mutex_unlock(&nfd.lock);
		write_once();
		pthread_mutex_lock(&nfd.lock);
	}
	pthread_mutex_unlock(&nfd.lock);
	return NULL;
}

int daemon_nfd_start(struct dm_model *m, const char *path)
{
	if (!path)
		return 0;
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_destroy(&nfd.cond);
	pthread_cond_init(&nfd.cond, &a);
	pthread_condattr_destroy(&a);
	nfd.model = m;
	nfd.path = strdup(path);
	if (!nfd.path)
		return -ENOMEM;
	nfd.dirty = true;
	nfd.quit = false;
	int r = dm_thread_start(&nfd.thread, 0, writer, NULL);
	if (r < 0) {
		free(nfd.path);
		nfd.path = NULL;
		return r;
	}
	nfd.running = true;
	return 0;
}

void daemon_nfd_kick(void)
{
	pthread_mutex_lock(&nfd.lock);
	if (nfd.running && !nfd.dirty) {
		nfd.dirty = true;
		pthread_cond_signal(&nfd.cond);
	}
	pthread_mutex_unlock(&nfd.lock);
}

void daemon_nfd_stop(void)
{
	pthread_mutex_lock(&nfd.lock);
	bool running = nfd.running;
	nfd.quit = true;
	nfd.running = false;
	pthread_cond_broadcast(&nfd.cond);
	pthread_mutex_unlock(&nfd.lock);
	if (!running)
		return;
	pthread_join(nfd.thread, NULL);
	free(nfd.path);
	nfd.path = NULL;
}

void daemon_nfd_metrics(struct dm_metrics *w, void *data)
{
	(void)data;
	static const char *const result[] = { "written", "unchanged", "failed" };
	dm_metrics_family(w, "driverfsd_nfd_writes_total", "counter",
			  "Builds of NfdFile=, by whether the file was written.");
	for (int i = 0; i < 3; i++)
		dm_metrics_sample(w, "driverfsd_nfd_writes_total", (double)atomic_load(&nfd.writes[i]),
				  "result", result[i], NULL);
}
