/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * trust.c - ownership and mode checks of the files the daemon trusts.
 */
#include "util/trust.h"

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

/* What the kernel reads of a file to find its #! line (BINPRM_BUF_SIZE). */
#define SHEBANG_MAX 256

static bool spacetab(char c)
{
	return c == ' ' || c == '\t';
}

/*
 * The interpreter a #! line names, by fs/binfmt_script.c's rules, from the
 * @n bytes at @buf (SHEBANG_MAX + 1 bytes, zero-filled past @n): 1 with it
 * in @ret, 0 for no #! line, -ENOEXEC where the kernel would not run it (no
 * interpreter, or one cut by the SHEBANG_MAX bytes; @msg says which).
 */
static int shebang(char *buf, size_t n, char *ret, size_t ret_size, char *msg, size_t size)
{
	if (n < 2 || buf[0] != '#' || buf[1] != '!')
		return 0;
	char *end = memchr(buf, '\n', n);
	char *p = buf + 2;
	while (p < buf + SHEBANG_MAX && spacetab(*p))
		p++;
	char *word = p;
	while (p < buf + SHEBANG_MAX && *p && *p != '\n' && !spacetab(*p))
		p++;
	/* a word running into the end of what the kernel reads, with no
	 * newline before it, may be cut: the kernel refuses it */
	if (!end && p == buf + SHEBANG_MAX) {
		snprintf(msg, size, "its #! line is longer than the %d bytes the kernel reads",
			 SHEBANG_MAX);
		return -ENOEXEC;
	}
	if (p == word) {
		snprintf(msg, size, "its #! line names no interpreter");
		return -ENOEXEC;
	}
	size_t len = (size_t)(p - word);
	if (len >= ret_size) {
		snprintf(msg, size, "its #! interpreter is too long");
		return -ENOEXEC;
	}
	memcpy(ret, word, len);
	ret[len] = '\0';
	return 1;
}

int dm_trust_check_program(const char *path, char *msg, size_t size)
{
	/* the file checked, the one whose #! named it, the one it names */
	char cur[SHEBANG_MAX], up[PATH_MAX], next[SHEBANG_MAX], why[PATH_MAX + 128];
	const char *file = path, *parent = NULL;
	for (int depth = 0;; depth++) {
		/* O_NONBLOCK, O_NOCTTY: a program that is a FIFO or a terminal
		 * must not hang or take the daemon's terminal here */
		int fd = dm_trust_open(file, O_RDONLY | O_NOCTTY | O_NONBLOCK, why, sizeof(why));
		if (fd == -EPERM || fd == -ENOENT || fd == -ENOTDIR || fd == -ENOMEM ||
		    fd == -ELOOP) {
			if (parent)
				snprintf(msg, size, "the #! interpreter %s of %s: %s", file, parent,
					 why);
			else
				snprintf(msg, size, "%s", why);
			return fd;
		}
		char buf[SHEBANG_MAX + 1] = { 0 };
		struct stat st;
		ssize_t n = 0;
		int err = fd < 0 ? -fd : 0;
		if (!err && fstat(fd, &st) < 0)
			err = errno;
		/* only a regular file is read: the kernel runs nothing else */
		if (!err && S_ISREG(st.st_mode)) {
			while ((n = pread(fd, buf, SHEBANG_MAX, 0)) < 0 && errno == EINTR)
				;
			if (n < 0)
				err = errno;
		}
		if (fd >= 0)
			close(fd);
		if (err) {
			snprintf(msg, size, "cannot read %s for its #! line: %s", file, strerror(err));
			return -EPERM;
		}
		int r = shebang(buf, (size_t)n, next, sizeof(next), why, sizeof(why));
		if (r <= 0) {
			if (r < 0)
				snprintf(msg, size, "%s: %s", file, why);
			return r;
		}
		if (next[0] != '/') {
			snprintf(msg, size, "the #! interpreter %s of %s is not an absolute path", next,
				 file);
			return -EPERM;
		}
		if (depth == DM_TRUST_INTERPRETER_DEPTH) {
			snprintf(msg, size, "#! interpreters nest deeper than %d, below %s",
				 DM_TRUST_INTERPRETER_DEPTH, path);
			return -EPERM;
		}
		snprintf(up, sizeof(up), "%s", file);
		parent = up;
		memcpy(cur, next, sizeof(cur));
		file = cur;
	}
}
