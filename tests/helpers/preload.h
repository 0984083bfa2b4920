/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * preload.h - what the test helpers preloaded into the daemon
 * (failwrite.c, kbind.c) share: sysfs ignores O_TRUNC, which would empty a
 * testbed's plain file before a write the helper plays; each defines its
 * open(2) with PRELOAD_OPEN_KEEPING_CONTENT(keep), keep(path) telling which
 * files lose O_TRUNC.
 */
#ifndef DM_TEST_PRELOAD_H
#define DM_TEST_PRELOAD_H

#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <sys/types.h>

#define PRELOAD_OPEN_KEEPING_CONTENT(keep)                                                 \
	int open(const char *path, int flags, ...)                                         \
	{                                                                                  \
		static int (*real_open)(const char *, int, ...);                           \
		if (!real_open)                                                            \
			real_open = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open"); \
		mode_t mode = 0;                                                           \
		if (flags & (O_CREAT | O_TMPFILE)) {                                       \
			va_list ap;                                                        \
			va_start(ap, flags);                                               \
			mode = (mode_t)va_arg(ap, int);                                    \
			va_end(ap);                                                        \
		}                                                                          \
		if ((flags & O_TRUNC) && keep(path))                                       \
			flags &= ~O_TRUNC;                                                 \
		return real_open(path, flags, mode);                                       \
	}

#endif
