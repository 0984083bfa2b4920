/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* thread.c - starting threads with every signal blocked. */
#include "thread.h"

#include <errno.h>
#include <signal.h>

int dm_thread_start(pthread_t *ret, size_t stack_size, void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	pthread_t t;
	sigset_t all, old;
	int r = pthread_attr_init(&attr);
	if (r)
		return -r;
	if (!ret)
		r = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (!r && stack_size)
		r = pthread_attr_setstacksize(&attr, stack_size);
	if (!r) {
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		r = pthread_create(&t, &attr, fn, arg);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	pthread_attr_destroy(&attr);
	if (r)
		return -r;
	if (ret)
		*ret = t;
	return 0;
}

void dm_thread_stop_worker(pthread_mutex_t *lock, pthread_cond_t *wake, bool *stopping,
			   bool *started, pthread_t thread)
{
	pthread_mutex_lock(lock);
	*stopping = true;
	pthread_cond_signal(wake);
	bool joined = *started;
	pthread_mutex_unlock(lock);
	if (joined)
		pthread_join(thread, NULL);
	pthread_mutex_lock(lock);
	*started = false;
}
