/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * runner.h - the one way driverfsd runs a hook program or writes a sysfs
 * file: every call is timed, logged, and bounded by a timeout.
 *
 * Programs run without a shell (argv is split by the caller), with exactly
 * the environment given (no inherited variables), "/" as working directory,
 * stdin from /dev/null, no other inherited descriptors, default signal
 * dispositions and an empty signal mask, their own process group, and
 * stdout+stderr captured up to a
 * bound (the rest is read and dropped, so a chatty hook cannot block or
 * exhaust memory). On timeout the whole process group gets SIGTERM, then
 * SIGKILL after a grace period of 1 s. Each call logs one line (debug on
 * success, warning with the first line of output on failure).
 * Thread-safe; never called with the model lock held.
 */
#ifndef DM_RUNNER_H
#define DM_RUNNER_H

#include <stdbool.h>
#include <stddef.h>

struct dm_run_result {
	int status; /* exit status when exited, else -1 */
	int signo; /* the signal that ended it, else 0 */
	bool timed_out;
	long usec; /* wall time */
	char *output; /* captured stdout+stderr, NUL-terminated (may be NULL) */
	size_t output_len;
	bool output_truncated;
};

#define DM_RUN_OUTPUT_MAX 65536

/*
 * Runs argv[0] (an absolute path) with @argv and @envp (NULL-terminated;
 * NULL is an empty environment), waits at most @timeout_ms (> 0). Returns
 * 0 when the program ran (see ret->status: success is status 0), -errno
 * when it could not be started (-EINVAL for a bad argument, -ENOENT,
 * -EACCES ... from exec); *ret is written only on success, and its output
 * is NULL when nothing was printed. Free it with dm_run_result_done().
 * @label names the call in the log ("suspend 0000:00:02.0 scanner").
 *
 * The run lasts until the program has exited and its output is closed, so
 * a background process that keeps the output open counts against the
 * timeout. When the timeout hit, nothing of the group is left running on
 * return (SIGKILL to the group in any case). A process that even SIGKILL
 * does not end within the grace period (stuck in the kernel) is reaped by
 * a detached thread; the call returns with timed_out set.
 */
int dm_run(const char *label, const char *const *argv, const char *const *envp, int timeout_ms,
	   struct dm_run_result *ret);
void dm_run_result_done(struct dm_run_result *r);

/* 0 when the run succeeded, else the -errno that describes its failure:
 * -ETIMEDOUT, -EINTR (killed by a signal), -EIO (non-zero exit). */
int dm_run_errno(const struct dm_run_result *r);

/*
 * Writes @value (1..4096 bytes, else -EINVAL or -EFBIG) to the sysfs file
 * @path in one write(2) and returns 0 or -errno; a short write is -EIO.
 * Waits at most @timeout_ms (> 0): the open and write run on a detached
 * helper thread, and one that blocks longer (in open or write) is left to
 * finish in the background while -ETIMEDOUT is returned. Logged and timed
 * like dm_run().
 */
int dm_run_write(const char *label, const char *path, const char *value, int timeout_ms);
/* Reads a small sysfs file into @buf (one trailing newline stripped,
 * NUL-terminated); returns the length, -ENOBUFS when the value does not fit
 * in @size - 1 bytes, -EINVAL when @path is not a regular file (so it never
 * blocks on a FIFO or device), or another -errno. Not logged. */
int dm_run_read(const char *path, char *buf, size_t size);
/* The last component of the link @dir/@name's target into @buf ("" when
 * there is no such link, or the name does not fit): a device's driver or
 * IOMMU group as sysfs links them. */
void dm_run_read_link_base(const char *dir, const char *name, char *buf, size_t size);

#endif
