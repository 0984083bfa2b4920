/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * clock.c - the clock hook calls are timed with.
 *
 * A PM walk times every hook, and on 10^5 quick hooks clock_gettime() is a
 * fifth of the walk. Where the kernel itself keeps time with the TSC (its
 * clocksource is "tsc": invariant and synchronised across CPUs), the TSC is
 * read directly, at less than half the cost, and converted with a factor
 * measured against CLOCK_MONOTONIC once; anywhere else ticks are
 * CLOCK_MONOTONIC nanoseconds.
 */
#include "model.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define HAVE_TSC 1
#endif

#define CLOCKSOURCE "/sys/devices/system/clocksource/clocksource0/current_clocksource"
/* long enough for the factor to be exact to about 10^-4 */
#define CALIBRATE_NSEC 2000000

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool use_tsc;
static unsigned __int128 usec_per_tick; /* 64.64 fixed point */
static unsigned long long ticks_per_msec;

static long mono_nsec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

#ifdef HAVE_TSC
/* One reading of both clocks at the same moment: the TSC read between two
 * CLOCK_MONOTONIC reads, the narrowest of a few tries kept, the monotonic
 * time taken as the middle of its bracket. A thread preempted between two
 * reads would otherwise move the factor by the preemption's length over the
 * calibration's (a tenth of a millisecond is 5% of it). */
static void read_both(long *mono, unsigned long long *tsc)
{
	long best = -1;
	for (int i = 0; i < 8; i++) {
		long a = mono_nsec();
		unsigned long long c = __rdtsc();
		long b = mono_nsec();
		if (best < 0 || b - a < best) {
			best = b - a;
			*mono = a + (b - a) / 2;
			*tsc = c;
		}
	}
}
#endif

static void calibrate(void)
{
#ifdef HAVE_TSC
	char src[32] = "";
	FILE *f = fopen(CLOCKSOURCE, "re");
	if (f) {
		if (!fgets(src, sizeof(src), f))
			src[0] = '\0';
		fclose(f);
	}
	if (strcmp(src, "tsc\n") != 0)
		return;
	long t0, t1;
	unsigned long long c0, c1;
	read_both(&t0, &c0);
	do
		read_both(&t1, &c1);
	while (t1 - t0 < CALIBRATE_NSEC);
	if (c1 <= c0)
		return;
	usec_per_tick = ((unsigned __int128)(t1 - t0) << 64) / ((c1 - c0) * 1000ULL);
	ticks_per_msec = (c1 - c0) * 1000000ULL / (unsigned long long)(t1 - t0);
	use_tsc = usec_per_tick > 0 && ticks_per_msec > 0;
#endif
}

uint64_t dm_clock_now(void)
{
	pthread_once(&once, calibrate);
#ifdef HAVE_TSC
	if (use_tsc)
		return __rdtsc();
#endif
	return (uint64_t)mono_nsec();
}

long dm_clock_usec(uint64_t ticks)
{
	pthread_once(&once, calibrate);
	if (!use_tsc)
		return (long)(ticks / 1000);
	return (long)((ticks * usec_per_tick) >> 64);
}

uint64_t dm_clock_ticks(long usec)
{
	pthread_once(&once, calibrate);
	if (!use_tsc)
		return (uint64_t)usec * 1000;
	return (uint64_t)usec * ticks_per_msec / 1000;
}
