/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * logind.c - system sleep through logind's delay inhibitor.
 *
 * logind sends PrepareForSleep(true) and then waits, up to its
 * InhibitDelayMaxSec, until every "delay" inhibitor for sleep is closed.
 * Holding one is what gives the tree time to suspend in order before the
 * machine goes down; closing it is our "done". Whatever the suspend's result,
 * the inhibitor is closed: a device that failed to suspend must not keep the
 * machine awake until logind's timeout, let alone forever.
 *
 * The sd_bus connection belongs to dm_logind_start() until the thread is
 * created and to the thread from then on; dm_logind_stop() takes it back
 * only after joining it. No lock is needed since no two threads ever use it
 * (sd-bus objects are not thread-safe).
 */
#include "logind.h"

#include "core/thread.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#define LOGIND_SERVICE "org.freedesktop.login1"
#define LOGIND_PATH "/org/freedesktop/login1"
#define LOGIND_MANAGER "org.freedesktop.login1.Manager"

struct dm_logind {
	struct dm_pm *pm;
	sd_bus *bus;
	/* the unique name that owns org.freedesktop.login1, or NULL: only its
	 * broadcasts are logind's (see on_prepare_for_sleep()) */
	char *owner;
	unsigned long ignored; /* signals not from logind, for the log */
	int inhibit_fd; /* our sleep delay inhibitor; -1 while we hold none */
	int wake_fd; /* eventfd: dm_logind_stop() asks the thread to end */
	pthread_t thread;
};

/* Takes a sleep delay inhibitor. The fd in the reply belongs to the message,
 * so we keep a duplicate: logind drops the inhibitor when its last copy is
 * closed. */
static int logind_inhibit(struct dm_logind *l)
{
	sd_bus_error error = SD_BUS_ERROR_NULL;
	sd_bus_message *reply = NULL;
	int fd, r;

	r = sd_bus_call_method(l->bus, LOGIND_SERVICE, LOGIND_PATH, LOGIND_MANAGER, "Inhibit",
			       &error, &reply, "ssss", "sleep", "driverfsd",
			       "Suspend user-space driven devices in order", "delay");
	if (r < 0) {
		log_debug("logind: Inhibit: %s", error.message ?: strerror(-r));
		goto out_error;
	}
	r = sd_bus_message_read(reply, "h", &fd);
	if (r < 0)
		goto out_reply;
	fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0) {
		r = -errno;
		goto out_reply;
	}
	l->inhibit_fd = fd;
	r = 0;
out_reply:
	sd_bus_message_unref(reply);
out_error:
	sd_bus_error_free(&error);
	return r;
}

/* Lets the system sleep as far as we are concerned. */
static void logind_release(struct dm_logind *l)
{
	if (l->inhibit_fd < 0)
		return;
	close(l->inhibit_fd);
	l->inhibit_fd = -1;
}

static void logind_suspend(struct dm_logind *l)
{
	log_info("system going to sleep: suspending devices");
	int r = dm_pm_suspend(l->pm, NULL, 0);
	if (r < 0)
		log_err("suspend before system sleep failed: %s; the system sleeps anyway",
			strerror(-r));
	logind_release(l);
	sd_notifyf(0, "STATUS=sleep: suspended: %d", r);
}

static void logind_resume(struct dm_logind *l)
{
	log_info("system woke up: resuming devices");
	int r = dm_pm_resume(l->pm, NULL, 0);
	if (r < 0)
		log_err("resume after system sleep: %s", strerror(-r));
	/* a PrepareForSleep(false) we never saw the (true) of finds ours
	 * still held; a second one would never be closed */
	if (l->inhibit_fd < 0) {
		int q = logind_inhibit(l);
		if (q < 0)
			log_warn("logind: no new sleep inhibitor (%s); the next system sleep "
				 "will not wait for devices",
				 strerror(-q));
	}
	sd_notifyf(0, "STATUS=sleep: resumed: %d", r);
}

/* Whether @m is logind's own broadcast. On the system bus any client may
 * send a signal addressed to our connection (a directed signal) with any
 * path, interface and member: the bus delivers it whatever our match
 * rules say, and sd-bus cannot tell a well-known sender name from a unique
 * one, so its match lets it through. logind broadcasts PrepareForSleep:
 * a signal with a destination, or from another connection than the name's
 * owner, is someone else's. */
static bool from_logind(struct dm_logind *l, sd_bus_message *m)
{
	const char *sender = sd_bus_message_get_sender(m);
	if (!sd_bus_message_get_destination(m) && sender && l->owner &&
	    strcmp(sender, l->owner) == 0)
		return true;
	/* the first one says so; more of them would only flood the log */
	if (l->ignored++ == 0)
		log_warn("logind: ignoring PrepareForSleep from %s%s, which is not logind (%s)",
			 sender ?: "an unknown sender",
			 sd_bus_message_get_destination(m) ? " sent to us alone" : "",
			 l->owner ?: "not on the bus");
	else
		log_debug("logind: ignoring PrepareForSleep from %s", sender ?: "?");
	return false;
}

/* Replaces the owner we know; @owner "" or NULL: none. */
static void set_owner(struct dm_logind *l, const char *owner)
{
	char *copy = owner && *owner ? strdup(owner) : NULL;
	free(l->owner);
	l->owner = copy;
}

/* NameOwnerChanged of org.freedesktop.login1, from the bus itself: logind
 * restarted (or left), and its broadcasts now come from another name. */
static int on_owner_changed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
	struct dm_logind *l = userdata;
	const char *name, *old, *new;
	const char *sender = sd_bus_message_get_sender(m);
	/* only the bus driver sends as org.freedesktop.DBus */
	if (!sender || strcmp(sender, "org.freedesktop.DBus") != 0)
		return 0;
	if (sd_bus_message_read(m, "sss", &name, &old, &new) < 0 ||
	    strcmp(name, LOGIND_SERVICE) != 0)
		return 0;
	set_owner(l, new);
	log_debug("logind: %s is now %s", LOGIND_SERVICE, *new ? new : "gone");
	return 0;
}

/* Asks the bus who owns org.freedesktop.login1 now. */
static int logind_get_owner(struct dm_logind *l)
{
	sd_bus_error error = SD_BUS_ERROR_NULL;
	sd_bus_message *reply = NULL;
	const char *owner;
	int r = sd_bus_call_method(l->bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
				   "org.freedesktop.DBus", "GetNameOwner", &error, &reply, "s",
				   LOGIND_SERVICE);
	if (r >= 0)
		r = sd_bus_message_read(reply, "s", &owner);
	if (r >= 0)
		set_owner(l, owner);
	sd_bus_message_unref(reply);
	sd_bus_error_free(&error);
	return r < 0 ? r : 0;
}

static int on_prepare_for_sleep(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
	struct dm_logind *l = userdata;
	int sleeping;
	if (!from_logind(l, m))
		return 0;
	int r = sd_bus_message_read(m, "b", &sleeping);
	if (r < 0) {
		log_warn("logind: unreadable PrepareForSleep: %s", strerror(-r));
		return 0;
	}
	if (sleeping)
		logind_suspend(l);
	else
		logind_resume(l);
	return 0;
}

/* What sd_bus_wait() does, with wake_fd watched too. 1 when asked to stop,
 * 0 when the bus may have work, -errno. */
static int logind_wait(struct dm_logind *l)
{
	struct pollfd p[2] = {
		{ .fd = sd_bus_get_fd(l->bus) },
		{ .fd = l->wake_fd, .events = POLLIN },
	};
	int events = sd_bus_get_events(l->bus);
	uint64_t until;
	int timeout = -1;
	int r;

	if (p[0].fd < 0)
		return p[0].fd;
	if (events < 0)
		return events;
	p[0].events = (short)events;
	r = sd_bus_get_timeout(l->bus, &until);
	if (r < 0)
		return r;
	if (until != UINT64_MAX) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t now = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
		uint64_t ms = until > now ? (until - now + 999) / 1000 : 0;
		timeout = ms > INT_MAX ? INT_MAX : (int)ms;
	}
	if (poll(p, 2, timeout) < 0)
		return errno == EINTR ? 0 : -errno;
	return p[1].revents ? 1 : 0;
}

static void *logind_thread(void *data)
{
	struct dm_logind *l = data;
	int r;

	for (;;) {
		r = sd_bus_process(l->bus, NULL);
		if (r < 0)
			break;
		if (r > 0)
			continue; /* more may be queued */
		r = logind_wait(l);
		if (r != 0)
			break;
	}
	if (r < 0) {
		/* logind may be alive while the bus is not: holding the
		 * inhibitor now would only delay every sleep to its timeout */
		log_warn("logind: %s; system sleep no longer handled", strerror(-r));
		logind_release(l);
	}
	return NULL;
}

int dm_logind_start(struct dm_pm *pm, struct dm_logind **ret)
{
	struct dm_logind *l;
	int r;

	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->pm = pm;
	l->inhibit_fd = -1;

	r = sd_bus_open_system(&l->bus);
	if (r < 0)
		goto out_free;
	/* subscribe first: a sleep starting right after Inhibit() returns
	 * must not go unnoticed while we hold the inhibitor. The match is
	 * floating: it lives as long as the bus. */
	r = sd_bus_match_signal(l->bus, NULL, LOGIND_SERVICE, LOGIND_PATH, LOGIND_MANAGER,
				"PrepareForSleep", on_prepare_for_sleep, l);
	if (r < 0)
		goto out_bus;
	/* who logind is: followed from before it is asked, so that a
	 * restart of logind in between is not missed */
	r = sd_bus_add_match(l->bus, NULL,
			     "type='signal',sender='org.freedesktop.DBus',"
			     "path='/org/freedesktop/DBus',interface='org.freedesktop.DBus',"
			     "member='NameOwnerChanged',arg0='" LOGIND_SERVICE "'",
			     on_owner_changed, l);
	if (r < 0)
		goto out_bus;
	/* no owner yet (logind started on demand by the Inhibit call below):
	 * its NameOwnerChanged names it */
	r = logind_get_owner(l);
	if (r < 0)
		log_debug("logind: %s has no owner yet: %s", LOGIND_SERVICE, strerror(-r));
	r = logind_inhibit(l);
	if (r < 0)
		goto out_bus;
	l->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (l->wake_fd < 0) {
		r = -errno;
		goto out_inhibitor;
	}
	/* libfuse expects SIGTERM & co. on the thread running its loop; one
	 * taken by this thread would leave the daemon serving */
	r = dm_thread_start(&l->thread, 0, logind_thread, l);
	if (r < 0)
		goto out_wake;
	log_debug("logind: holding a sleep delay inhibitor");
	*ret = l;
	return 0;

out_wake:
	close(l->wake_fd);
out_inhibitor:
	logind_release(l);
out_bus:
	sd_bus_flush_close_unref(l->bus);
out_free:
	free(l->owner);
	free(l);
	return r;
}

void dm_logind_stop(struct dm_logind *l)
{
	static const uint64_t one = 1;

	if (!l)
		return;
	/* an eventfd write of 1 cannot fail short of an overflow */
	if (write(l->wake_fd, &one, sizeof(one)) < 0)
		log_warn("logind: cannot wake the thread: %s", strerror(errno));
	pthread_join(l->thread, NULL);
	logind_release(l);
	sd_bus_flush_close_unref(l->bus);
	close(l->wake_fd);
	free(l->owner);
	free(l);
}
