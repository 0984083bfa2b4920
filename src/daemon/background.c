/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * background.c - the fork of background mode, made before the first thread.
 *
 * A fork copies only the calling thread. The daemon starts threads long
 * before it serves (the PM pool when recovery resumes what an earlier run
 * left suspended, the snapshot parser, the monitor), so it forks first and
 * lets the parent wait on a pipe: one byte means "mounted and serving", and
 * end-of-file without it means the child ended, with the status that
 * waitpid() then gives. Until it reports, the child keeps the terminal's
 * standard error, so its errors reach whoever started it.
 */
#include "background.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Copies what is waiting in @fd (non-blocking) to our stderr; false at
 * end of file or on an error. */
static bool relay(int fd)
{
	char buf[4096];
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		if (write(STDERR_FILENO, buf, (size_t)n) < 0)
			break;
	return n < 0 && (errno == EAGAIN || errno == EINTR);
}

static _Noreturn void parent_wait(int status_fd, int err_fd, pid_t child)
{
	struct pollfd p[2] = {
		{ .fd = status_fd, .events = POLLIN },
		{ .fd = err_fd, .events = POLLIN },
	};
	fcntl(err_fd, F_SETFL, O_NONBLOCK);
	for (;;) {
		if (poll(p, p[1].fd < 0 ? 1 : 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents && !relay(err_fd))
			p[1].fd = -1; /* the child's stderr closed: the status tells */
		if (p[0].revents)
			break;
	}
	char c;
	ssize_t n;
	while ((n = read(status_fd, &c, 1)) < 0 && errno == EINTR)
		;
	relay(err_fd); /* what the child said before it reported */
	if (n == 1)
		_exit(EXIT_SUCCESS); /* the child serves; it is no longer ours to wait for */
	int status;
	while (waitpid(child, &status, 0) < 0)
		if (errno != EINTR) {
			fprintf(stderr, "driverfsd: the daemon did not start: %s\n", strerror(errno));
			_exit(EXIT_FAILURE);
		}
	if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
		_exit(WEXITSTATUS(status)); /* it said why on our stderr */
	if (WIFSIGNALED(status))
		fprintf(stderr, "driverfsd: the daemon was killed by signal %d before it served\n",
			WTERMSIG(status));
	else
		fprintf(stderr, "driverfsd: the daemon ended before it served\n");
	_exit(EXIT_FAILURE);
}

/* @fd becomes /dev/null. */
static void to_null(int fd)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0)
		return;
	dup2(null, fd);
	close(null);
}

int dm_background_start(void)
{
	int status[2], err[2];
	if (pipe2(status, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(err, O_CLOEXEC) < 0) {
		int r = -errno;
		close(status[0]);
		close(status[1]);
		return r;
	}
	/* the parent leaves by _exit(): nothing buffered may be written twice */
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		int r = -errno;
		close(status[0]);
		close(status[1]);
		close(err[0]);
		close(err[1]);
		return r;
	}
	if (pid > 0) {
		close(status[1]);
		close(err[1]);
		parent_wait(status[0], err[0], pid);
	}
	close(status[0]);
	close(err[0]);
	/* Until it serves, the child's errors go to the command's stderr
	 * through the parent, which relays them: processes started meanwhile
	 * (fusermount3's auto_unmount, the unmount watcher) inherit the pipe,
	 * not the command's stderr, and so do not keep open what a caller
	 * reading the command's output waits to see closed. */
	dup2(err[1], STDERR_FILENO);
	close(err[1]);
	to_null(STDIN_FILENO);
	to_null(STDOUT_FILENO);
	/* no controlling terminal: a hang-up there must not end the daemon */
	setsid();
	return status[1];
}

void dm_background_ready(int fd)
{
	static const char ok = 0;
	while (write(fd, &ok, 1) < 0 && errno == EINTR)
		;
	close(fd);
	if (chdir("/") < 0) {
		/* "/" is always there */
	}
	to_null(STDERR_FILENO);
}
