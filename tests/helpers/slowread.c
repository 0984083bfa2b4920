/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * slowread.c - a preload library that plays a slow device behind a sysfs
 * attribute, for the tests: an EEPROM over SMBus, a battery over ACPI, a
 * USB device answering late. Once the file DRIVERFS_SLOW_GO exists, a
 * read(2) or pread(2) of a file whose path (as /proc/self/fd names it)
 * ends in DRIVERFS_SLOW_READS sleeps until the file DRIVERFS_SLOW_STOP
 * exists (120 s at most), then reads as usual; each such read appends a
 * line to DRIVERFS_SLOW_LOG as it starts sleeping, so that a test knows
 * how many are held. With DRIVERFS_SLOW_SIZES set, every read of such a
 * file (held or not) appends the count it asks for to that file, so that
 * a test sees how much of the device each read costs. Every other read
 * goes on as usual. Loaded before
 * umockdev's preload library (LD_PRELOAD order).
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static bool exists(const char *env)
{
	const char *p = getenv(env);
	return p && *p && access(p, F_OK) == 0;
}

static bool matches(int fd)
{
	const char *suffix = getenv("DRIVERFS_SLOW_READS");
	if (!suffix || !*suffix)
		return false;
	char link[64], path[PATH_MAX];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0)
		return false;
	path[n] = '\0';
	size_t slen = strlen(suffix);
	return (size_t)n >= slen && strcmp(path + n - slen, suffix) == 0;
}

static void append(const char *env, const char *text)
{
	const char *log = getenv(env);
	if (log && *log) {
		int l = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
		if (l >= 0) {
			(void)!write(l, text, strlen(text));
			close(l);
		}
	}
}

static void hold(int fd, size_t len)
{
	if (!matches(fd))
		return;
	char line[32];
	snprintf(line, sizeof(line), "%zu\n", len);
	append("DRIVERFS_SLOW_SIZES", line);
	if (!exists("DRIVERFS_SLOW_GO") || exists("DRIVERFS_SLOW_STOP"))
		return;
	append("DRIVERFS_SLOW_LOG", "held\n");
	struct timespec slice = { .tv_nsec = 20 * 1000 * 1000 };
	for (int i = 0; i < 120 * 50 && !exists("DRIVERFS_SLOW_STOP"); i++)
		nanosleep(&slice, NULL);
}

ssize_t read(int fd, void *buf, size_t len)
{
	static ssize_t (*real_read)(int, void *, size_t);
	if (!real_read)
		real_read = (ssize_t (*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
	hold(fd, len);
	return real_read(fd, buf, len);
}

/* pread(2) too, which is pread64 with 64-bit offsets (as built here) */
ssize_t pread64(int fd, void *buf, size_t len, off_t off)
{
	static ssize_t (*real_pread)(int, void *, size_t, off_t);
	if (!real_pread)
		real_pread = (ssize_t (*)(int, void *, size_t, off_t))dlsym(RTLD_NEXT, "pread64");
	hold(fd, len);
	return real_pread(fd, buf, len, off);
}
