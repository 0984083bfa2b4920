/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* service.c - SIGHUP reloads and watchdog pings, each on its thread. */
#include "service.h"

#include "core/thread.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

struct dm_service {
	struct dm_model *model;
	dm_service_reload_fn reload;
	void *data;
	int pipe[2]; /* SIGHUP writes a byte, the thread reads it */
	uint64_t watchdog_usec; /* 0: no watchdog */
	pthread_t thread, watchdog;
	bool running, watchdog_running;
	pthread_mutex_t lock; /* quit, for the watchdog's wait */
	pthread_cond_t cond;
	bool quit;
	/* dm_service_set_check(): called at each look, pings or not */
	void (*check)(void *);
	void *check_data;
};

/* The signal handler's only way to the service: a handler has no
 * argument, so this one write end is the one global of the daemon. */
static int sighup_fd = -1;

static void on_sighup(int sig)
{
	(void)sig;
	int saved = errno;
	char c = 'H';
	/* a full pipe already holds a reload request: nothing is lost */
	ssize_t unused = write(sighup_fd, &c, 1);
	(void)unused;
	errno = saved;
}

static unsigned long long now_usec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000u + (unsigned long long)ts.tv_nsec / 1000u;
}

static void service_reload(struct dm_service *s)
{
	char status[256] = "";
	sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading",
		   now_usec());
	char line[sizeof(status)];
	s->reload(s->data, status, sizeof(status));
	/* the status may name files and drivers: one field, one line */
	dm_escape(line, sizeof(line), status);
	sd_notifyf(0, "READY=1\nSTATUS=%s", line);
}

/* Pings every half period until told to quit. A thread of its own, so
 * that a long reload (probe hooks) does not stop the pings. */
static void *watchdog_thread(void *data)
{
	struct dm_service *s = data;
	/* every half period, and at least every second for the check */
	uint64_t half = s->watchdog_usec / 2;
	if (s->check && (half == 0 || half > 1000000))
		half = 1000000;
	pthread_mutex_lock(&s->lock);
	while (!s->quit) {
		pthread_mutex_unlock(&s->lock);
		if (s->check)
			s->check(s->check_data);
		if (s->watchdog_usec) {
			dm_model_read_lock(s->model);
			dm_model_unlock(s->model);
			sd_notify(0, "WATCHDOG=1");
		}
		pthread_mutex_lock(&s->lock);

		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		uint64_t ns = (uint64_t)until.tv_nsec + half * 1000u;
		until.tv_sec += (time_t)(ns / 1000000000u);
		until.tv_nsec = (long)(ns % 1000000000u);
		while (!s->quit && pthread_cond_timedwait(&s->cond, &s->lock, &until) != ETIMEDOUT) {
		}
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* Waits for SIGHUP's bytes; ends when the pipe says 'Q'. */
static void *reload_thread(void *data)
{
	struct dm_service *s = data;
	for (;;) {
		struct pollfd p = { .fd = s->pipe[0], .events = POLLIN };
		if (poll(&p, 1, -1) < 0 && errno != EINTR)
			break;
		char buf[64];
		ssize_t got = read(s->pipe[0], buf, sizeof(buf));
		if (got <= 0)
			continue; /* EAGAIN, EINTR */
		/* requests that came together make one reload, which reads
		 * the files as they are now */
		if (memchr(buf, 'H', (size_t)got))
			service_reload(s);
		if (memchr(buf, 'Q', (size_t)got))
			break;
	}
	return NULL;
}

int dm_service_new(struct dm_model *m, dm_service_reload_fn reload, void *data,
		   struct dm_service **ret)
{
	if (sighup_fd >= 0)
		return -EBUSY;
	struct dm_service *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	*s = (struct dm_service){ .model = m, .reload = reload, .data = data };
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (pipe2(s->pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		int r = -errno;
		free(s);
		return r;
	}
	sighup_fd = s->pipe[1];
	struct sigaction sa = { .sa_handler = on_sighup, .sa_flags = SA_RESTART };
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGHUP, &sa, NULL) < 0) {
		int r = -errno;
		dm_service_free(s);
		return r;
	}
	*ret = s;
	return 0;
}

int dm_service_start(struct dm_service *s)
{
	uint64_t usec = 0;
	/* > 0: enabled for this process */
	if (sd_watchdog_enabled(0, &usec) > 0)
		s->watchdog_usec = usec;
	int r = dm_thread_start(&s->thread, 0, reload_thread, s);
	if (r < 0)
		return r;
	s->running = true;
	if (!s->watchdog_usec && !s->check)
		return 0;
	r = dm_thread_start(&s->watchdog, 0, watchdog_thread, s);
	if (r < 0)
		return r;
	s->watchdog_running = true;
	if (s->watchdog_usec)
		log_info("watchdog: pinging every %llu ms",
			 (unsigned long long)(s->watchdog_usec / 2000));
	return 0;
}

void dm_service_set_check(struct dm_service *s, void (*check)(void *), void *data)
{
	s->check = check;
	s->check_data = data;
}

void dm_service_free(struct dm_service *s)
{
	if (!s)
		return;
	/* ignored, not default: a late SIGHUP must not kill a daemon that
	 * is unmounting */
	signal(SIGHUP, SIG_IGN);
	sighup_fd = -1;
	if (s->watchdog_running) {
		pthread_mutex_lock(&s->lock);
		s->quit = true;
		pthread_cond_broadcast(&s->cond);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->watchdog, NULL);
	}
	if (s->running) {
		char c = 'Q';
		/* blocking is fine: the thread empties the pipe */
		int flags = fcntl(s->pipe[1], F_GETFL);
		fcntl(s->pipe[1], F_SETFL, flags & ~O_NONBLOCK);
		if (write(s->pipe[1], &c, 1) == 1)
			pthread_join(s->thread, NULL);
		else
			pthread_detach(s->thread);
	}
	close(s->pipe[0]);
	close(s->pipe[1]);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
