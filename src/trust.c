/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * trust.c - ownership and mode checks of the files the daemon trusts.
 */
#include "trust.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Whether @st (of @what) is safe; on -EPERM, says why in @msg. */
static int trust_stat(const struct stat *st, const char *what, bool is_dir, char *msg,
		      size_t size)
{
	unsigned mode = (unsigned)st->st_mode & 07777;
	if (st->st_uid != 0) {
		snprintf(msg, size, "%s%s is owned by uid %u, not root (mode %04o)",
			 is_dir ? "directory " : "", what,
			 (unsigned)st->st_uid, mode);
		return -EPERM;
	}
	/* A root-owned sticky directory (/tmp): others may add entries but
	 * not rename or remove root's. */
	if (is_dir && (st->st_mode & S_ISVTX))
		return 0;
	if (st->st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(msg, size, "%s%s is writable by %s (owner uid %u, mode %04o)",
			 is_dir ? "directory " : "", what,
			 (st->st_mode & S_IWOTH) ? "other" : "group", (unsigned)st->st_uid, mode);
		return -EPERM;
	}
	return 0;
}

static int trust_fail(int err, const char *what, char *msg, size_t size)
{
	snprintf(msg, size, "%s: %s", what, strerror(err));
	return -err;
}

int dm_trust_open(const char *path, int flags, char *msg, size_t size)
{
	char *real = realpath(path, NULL);
	if (!real)
		return trust_fail(errno, "cannot resolve", msg, size);
	struct stat st;
	char *name = real + 1;
	int fd, r;
	/* Walk down from / with each directory's descriptor, so a rename
	 * above cannot swap what was checked for what is opened. */
	int dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0) {
		r = trust_fail(errno, "/", msg, size);
		goto free_real;
	}
	for (;;) {
		if (fstat(dir, &st) < 0) {
			r = trust_fail(errno, "cannot stat a directory", msg, size);
			goto close_dir;
		}
		/* the directory just opened is the path up to @name */
		char saved = name[-1];
		name[-1] = '\0';
		r = trust_stat(&st, real[0] ? real : "/", true, msg, size);
		name[-1] = saved;
		if (r < 0)
			goto close_dir;
		char *slash = strchr(name, '/');
		if (!slash)
			break;
		*slash = '\0';
		int next = openat(dir, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		*slash = '/';
		if (next < 0) {
			r = trust_fail(errno, "cannot open a directory", msg, size);
			goto close_dir;
		}
		close(dir);
		dir = next;
		name = slash + 1;
	}
	fd = openat(dir, name, flags | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		r = trust_fail(errno, "cannot open", msg, size);
		goto close_dir;
	}
	if (fstat(fd, &st) < 0) {
		r = trust_fail(errno, "cannot stat", msg, size);
		close(fd);
		goto close_dir;
	}
	r = trust_stat(&st, "the file", false, msg, size);
	if (r < 0)
		close(fd);
	else
		r = fd;
close_dir:
	close(dir);
free_real:
	free(real);
	return r;
}

int dm_trust_check(const char *path, char *msg, size_t size)
{
	int fd = dm_trust_open(path, O_PATH, msg, size);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}
