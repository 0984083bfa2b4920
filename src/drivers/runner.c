/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * runner.c - hook programs and sysfs writes, each timed, logged and bounded.
 *
 * A program is started with posix_spawn() (vfork-like, so cheap even from a
 * large daemon) into its own process group, with a clean environment, stdin
 * from /dev/null, stdout+stderr on one pipe, no other descriptor of ours and
 * "/" as its working directory. The caller then polls the
 * pipe and a pidfd of the child: no signal handler, no SIGCHLD, no sleeping.
 * On timeout the group gets SIGTERM and, after a grace period, SIGKILL.
 */
#include "drivers/runner.h"

#include "core/thread.h"
#include "util/log.h"
#include "util/trust.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef __NR_pidfd_open
#define __NR_pidfd_open 434 /* the same on every architecture since Linux 5.3 */
#endif

/* From SIGTERM to SIGKILL, and from SIGKILL to giving up on the child. */
#define RUN_GRACE_USEC (1000 * 1000)
/* Without a pidfd, how often the child is checked for an exit. */
#define RUN_FALLBACK_TICK_MS 10
/* The largest value dm_run_write() writes: a sysfs store sees one page. */
#define RUN_WRITE_MAX 4096
/* The helper thread of dm_run_write() only opens and writes. */
#define RUN_WRITE_STACK (256 * 1024)

static int64_t now_usec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ---- output capture ---- */

struct capture {
	char *buf; /* NUL-terminated once anything was kept */
	size_t len, cap;
	bool truncated;
};

/* Keeps what fits under DM_RUN_OUTPUT_MAX; the rest (or what memory does
 * not allow) is dropped and marks the capture truncated. */
static void capture_add(struct capture *c, const char *data, size_t n)
{
	size_t room = DM_RUN_OUTPUT_MAX - c->len;
	if (n > room) {
		c->truncated = true;
		n = room;
	}
	if (n == 0)
		return;
	if (c->len + n + 1 > c->cap) {
		size_t cap = c->cap ? c->cap : 4096;
		while (cap < c->len + n + 1)
			cap *= 2;
		if (cap > DM_RUN_OUTPUT_MAX + 1)
			cap = DM_RUN_OUTPUT_MAX + 1;
		char *p = realloc(c->buf, cap);
		if (!p) {
			c->truncated = true;
			return;
		}
		c->buf = p;
		c->cap = cap;
	}
	memcpy(c->buf + c->len, data, n);
	c->len += n;
	c->buf[c->len] = '\0';
}

/* Reads what the (non-blocking) pipe holds. Returns true at EOF, or on an
 * error, after which nothing more can be read either. */
static bool capture_drain(struct capture *c, int fd)
{
	char chunk[8192];
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n > 0) {
			capture_add(c, chunk, (size_t)n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return false;
		return true;
	}
}

/* ---- process ---- */

static int spawn_child(const char *const *argv, const char *const *envp, int out_fd,
		       pid_t *ret_pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, all;
	pid_t pid;
	int r;

	r = posix_spawn_file_actions_init(&fa);
	if (r)
		return -r;
	r = posix_spawnattr_init(&attr);
	if (r) {
		posix_spawn_file_actions_destroy(&fa);
		return -r;
	}
	sigemptyset(&none);
	sigfillset(&all);

	/* stdout and stderr first: should the pipe be fd 0 (a daemon started
	 * with stdin closed), opening /dev/null must come after its dup2s. */
	r = posix_spawn_file_actions_adddup2(&fa, out_fd, STDOUT_FILENO);
	if (!r)
		r = posix_spawn_file_actions_adddup2(&fa, out_fd, STDERR_FILENO);
	if (!r)
		r = posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
	/* Descriptors someone opened without O_CLOEXEC (a library, the FUSE
	 * channel) must not reach a hook. */
	if (!r)
		r = posix_spawn_file_actions_addclosefrom_np(&fa, STDERR_FILENO + 1);
#endif
	/* The daemon's working directory is no business of a hook's (and
	 * would keep a filesystem busy while the hook runs). */
	if (!r)
		r = posix_spawn_file_actions_addchdir_np(&fa, "/");
	/* Own process group, so a timeout can kill everything the hook
	 * started; no blocked or ignored signals inherited from the daemon. */
	if (!r)
		r = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
							    POSIX_SPAWN_SETSIGDEF);
	if (!r)
		r = posix_spawnattr_setpgroup(&attr, 0);
	if (!r)
		r = posix_spawnattr_setsigmask(&attr, &none);
	if (!r)
		r = posix_spawnattr_setsigdefault(&attr, &all);
	if (!r)
		r = posix_spawn(&pid, argv[0], &fa, &attr, (char *const *)argv, (char *const *)envp);

	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	if (r)
		return -r;
	*ret_pid = pid;
	return 0;
}

/* Without a pidfd: whether @pid has exited, leaving it a zombie (WNOWAIT)
 * so that its pid, and with it the process group id, stays ours. */
static bool child_exited_nowait(pid_t pid)
{
	siginfo_t si = { 0 };
	if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
		return errno == ECHILD; /* reaped by someone else: gone anyway */
	return si.si_pid == pid;
}

static void *reaper_thread(void *arg)
{
	pid_t pid = (pid_t)(intptr_t)arg;
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	return NULL;
}

/* A child that outlived SIGKILL (stuck in the kernel, e.g. on a hung
 * device) is reaped by a detached thread, so the caller is not held up and
 * no zombie is left behind. */
static void reap_later(pid_t pid)
{
	int r = dm_thread_start(NULL, RUN_WRITE_STACK, reaper_thread, (void *)(intptr_t)pid);
	if (r < 0)
		log_warn("cannot start a thread to reap process %d: %s; it stays a zombie", (int)pid,
			 strerror(-r));
}

enum kill_stage {
	STAGE_RUNNING,
	STAGE_TERM_SENT,
	STAGE_KILL_SENT,
};

/*
 * Reads the output until EOF and waits for the child's exit, both bounded
 * by @timeout_ms; escalates to SIGTERM and SIGKILL on the group. Fills
 * res->status/signo/timed_out.
 */
static void wait_child(pid_t pid, int out_fd, int timeout_ms, struct capture *cap,
		       struct dm_run_result *res)
{
	int pidfd = (int)syscall(__NR_pidfd_open, pid, 0);
	enum kill_stage stage = STAGE_RUNNING;
	int64_t deadline = now_usec() + (int64_t)timeout_ms * 1000;
	bool eof = false, exited = false;

	if (pidfd < 0)
		log_debug("no pidfd for process %d (%s): checking its exit every %d ms", (int)pid,
			  strerror(errno), RUN_FALLBACK_TICK_MS);

	while (!eof || !exited) {
		int64_t left = deadline - now_usec();
		if (left <= 0) {
			if (stage == STAGE_RUNNING) {
				res->timed_out = true;
				kill(-pid, SIGTERM);
				stage = STAGE_TERM_SENT;
			} else if (stage == STAGE_TERM_SENT) {
				kill(-pid, SIGKILL);
				stage = STAGE_KILL_SENT;
			} else {
				break; /* not even SIGKILL ended it */
			}
			deadline = now_usec() + RUN_GRACE_USEC;
			continue;
		}

		struct pollfd pfd[2];
		nfds_t n = 0;
		int out_i = -1, pid_i = -1;
		if (!eof) {
			pfd[n] = (struct pollfd){ .fd = out_fd, .events = POLLIN };
			out_i = (int)n++;
		}
		if (!exited && pidfd >= 0) {
			pfd[n] = (struct pollfd){ .fd = pidfd, .events = POLLIN };
			pid_i = (int)n++;
		}
		int wait_ms = (int)((left + 999) / 1000);
		if (!exited && pidfd < 0 && wait_ms > RUN_FALLBACK_TICK_MS)
			wait_ms = RUN_FALLBACK_TICK_MS;

		if (poll(pfd, n, wait_ms) < 0) {
			if (errno == EINTR)
				continue;
			/* cannot watch it any more: end it, let a thread reap it */
			log_warn("poll on process %d: %s; killing it", (int)pid, strerror(errno));
			kill(-pid, SIGKILL);
			stage = STAGE_KILL_SENT;
			break;
		}
		if (out_i >= 0 && pfd[out_i].revents)
			eof = capture_drain(cap, out_fd);
		if (pid_i >= 0 && pfd[pid_i].revents)
			exited = true;
		if (pidfd < 0 && !exited)
			exited = child_exited_nowait(pid);
	}

	/* Nothing of a timed-out hook may survive it; sent while the child is
	 * still unreaped, so the group id cannot have been reused. */
	if (res->timed_out && stage != STAGE_KILL_SENT)
		kill(-pid, SIGKILL);

	if (exited) {
		int st;
		pid_t w;
		while ((w = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
			;
		if (w == pid && WIFEXITED(st)) {
			res->status = WEXITSTATUS(st);
		} else if (w == pid && WIFSIGNALED(st)) {
			res->signo = WTERMSIG(st);
		} else if (w < 0) {
			/* SIGCHLD ignored by the daemon: reaped by the kernel */
			log_warn("process %d: exit status lost: %s", (int)pid, strerror(errno));
		}
	} else {
		reap_later(pid);
	}
	if (pidfd >= 0)
		close(pidfd);
}

/* The first line of @out, at most 200 bytes of it, for the log. */
static int first_line_len(const char *out)
{
	size_t n = out ? strcspn(out, "\r\n") : 0;
	return (int)(n > 200 ? 200 : n);
}

static void run_log(const char *label, const struct dm_run_result *res, int timeout_ms)
{
	if (dm_run_errno(res) == 0) {
		log_debug("%s: exit status 0, %ld us", label, res->usec);
		return;
	}
	char what[64];
	if (res->timed_out)
		snprintf(what, sizeof(what), "timed out after %d ms", timeout_ms);
	else if (res->signo)
		snprintf(what, sizeof(what), "killed by signal %d", res->signo);
	else
		snprintf(what, sizeof(what), "exit status %d", res->status);
	int n = first_line_len(res->output);
	log_warn("%s: %s, %ld us%s%.*s", label, what, res->usec, n ? ": " : "", n,
		 n ? res->output : "");
}

int dm_run(const char *label, const char *const *argv, const char *const *envp, int timeout_ms,
	   struct dm_run_result *ret)
{
	static const char *const no_env[] = { NULL };
	struct dm_run_result res = { .status = -1 };
	struct capture cap = { 0 };
	int64_t start = now_usec();
	int pipefd[2];
	pid_t pid = 0;
	int r;

	if (!argv || !argv[0] || argv[0][0] != '/' || timeout_ms <= 0 || !ret)
		return -EINVAL;
	if (!label)
		label = argv[0];
	if (!envp)
		envp = no_env;
	/* It runs as root: anyone but root who could change it, or the
	 * interpreter its #! line names, could run anything. Once the files
	 * and their directories are root's, only root can swap them between
	 * this check and the spawn. Other errors (no such file) are left to
	 * posix_spawn() to report as before. */
	char why[PATH_MAX + 128];
	if (dm_trust_check_program(argv[0], why, sizeof(why)) == -EPERM) {
		log_err("%s: refused to run %s, anyone but root could change it: %s", label,
			argv[0], why);
		return -EPERM;
	}

	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		r = -errno;
		log_warn("%s: cannot create a pipe: %s", label, strerror(-r));
		return r;
	}
	/* only our end: the child's stdout stays blocking */
	if (fcntl(pipefd[0], F_SETFL, O_NONBLOCK) < 0) {
		r = -errno;
		goto out_close_pipe;
	}
	r = spawn_child(argv, envp, pipefd[1], &pid);
	if (r < 0)
		goto out_close_pipe;
	/* ours closed, the pipe reaches EOF when the child's side is closed */
	close(pipefd[1]);
	pipefd[1] = -1;

	wait_child(pid, pipefd[0], timeout_ms, &cap, &res);
	close(pipefd[0]);

	res.usec = (long)(now_usec() - start);
	res.output = cap.buf;
	res.output_len = cap.len;
	res.output_truncated = cap.truncated;
	run_log(label, &res, timeout_ms);
	*ret = res;
	return 0;

out_close_pipe:
	close(pipefd[0]);
	if (pipefd[1] >= 0)
		close(pipefd[1]);
	log_warn("%s: cannot run %s: %s, %ld us", label, argv[0], strerror(-r),
		 (long)(now_usec() - start));
	return r;
}

void dm_run_result_done(struct dm_run_result *r)
{
	if (!r)
		return;
	free(r->output);
	*r = (struct dm_run_result){ .status = -1 };
}

int dm_run_errno(const struct dm_run_result *r)
{
	if (!r)
		return -EINVAL;
	if (r->timed_out)
		return -ETIMEDOUT;
	if (r->signo)
		return -EINTR;
	if (r->status != 0)
		return -EIO;
	return 0;
}

/* ---- sysfs writes ---- */

/*
 * Shared by the caller and the helper thread; whichever lets go last frees
 * it, so a write that outlives its timeout still has its path and value.
 */
struct write_job {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned refs; /* under lock */
	bool done; /* under lock */
	int result; /* under lock, valid once done */
	char *path;
	char *value;
	size_t len;
};

static void write_job_free(struct write_job *j)
{
	pthread_cond_destroy(&j->cond);
	pthread_mutex_destroy(&j->lock);
	free(j->path);
	free(j->value);
	free(j);
}

static void write_job_unref(struct write_job *j)
{
	pthread_mutex_lock(&j->lock);
	bool last = --j->refs == 0;
	pthread_mutex_unlock(&j->lock);
	if (last)
		write_job_free(j);
}

static int write_once(const char *path, const char *value, size_t len)
{
	/* O_TRUNC: sysfs ignores it, and a regular file standing in for one
	 * (a testbed, a config) must hold the new value alone */
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, value, len);
	int r = n < 0 ? -errno : (size_t)n != len ? -EIO : 0;
	if (close(fd) < 0 && r == 0 && errno != EINTR)
		r = -errno;
	return r;
}

static void *write_job_run(void *arg)
{
	struct write_job *j = arg;
	int r = write_once(j->path, j->value, j->len);

	pthread_mutex_lock(&j->lock);
	j->result = r;
	j->done = true;
	pthread_cond_signal(&j->cond);
	pthread_mutex_unlock(&j->lock);
	write_job_unref(j);
	return NULL;
}

static int write_job_new(const char *path, const char *value, size_t len, struct write_job **ret)
{
	pthread_condattr_t ca;
	struct write_job *j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->path = strdup(path);
	j->value = malloc(len + 1);
	if (!j->path || !j->value) {
		free(j->path);
		free(j->value);
		free(j);
		return -ENOMEM;
	}
	memcpy(j->value, value, len + 1);
	j->len = len;
	j->refs = 2; /* the caller's and the thread's */
	pthread_mutex_init(&j->lock, NULL);
	/* a deadline on the monotonic clock: a clock step must not stretch it */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&j->cond, &ca);
	pthread_condattr_destroy(&ca);
	*ret = j;
	return 0;
}

static int write_job_start(struct write_job *j)
{
	/* every signal blocked (core/thread.h): the helper takes none of
	 * the daemon's, and a write to a FIFO whose reader went away then
	 * fails with EPIPE instead of raising SIGPIPE in the daemon */
	return dm_thread_start(NULL, RUN_WRITE_STACK, write_job_run, j);
}

int dm_run_write(const char *label, const char *path, const char *value, int timeout_ms)
{
	struct write_job *j;
	struct timespec deadline;
	int64_t start = now_usec();
	size_t len;
	int r;

	if (!path || !value || timeout_ms <= 0)
		return -EINVAL;
	if (!label)
		label = path;
	len = strlen(value);
	if (len == 0)
		return -EINVAL;
	if (len > RUN_WRITE_MAX)
		return -EFBIG;

	r = write_job_new(path, value, len, &j);
	if (r < 0)
		return r;
	r = write_job_start(j);
	if (r < 0) {
		write_job_free(j); /* the thread never saw it */
		log_warn("%s: cannot start the writer thread: %s", label, strerror(-r));
		return r;
	}

	int64_t end = start + (int64_t)timeout_ms * 1000;
	deadline.tv_sec = (time_t)(end / 1000000);
	deadline.tv_nsec = (long)(end % 1000000) * 1000;
	pthread_mutex_lock(&j->lock);
	while (!j->done)
		if (pthread_cond_timedwait(&j->cond, &j->lock, &deadline) == ETIMEDOUT)
			break;
	r = j->done ? j->result : -ETIMEDOUT;
	pthread_mutex_unlock(&j->lock);
	write_job_unref(j); /* on timeout the thread frees it when the write returns */

	long usec = (long)(now_usec() - start);
	int vlen = (int)strcspn(value, "\n");
	if (vlen > 64)
		vlen = 64;
	if (r == 0)
		log_debug("%s: wrote '%.*s' to %s, %ld us", label, vlen, value, path, usec);
	else
		log_warn("%s: writing '%.*s' to %s: %s, %ld us", label, vlen, value, path,
			 strerror(-r), usec);
	return r;
}

/* read(2) that retries on EINTR */
static ssize_t read_retry(int fd, void *buf, size_t size)
{
	ssize_t n;
	while ((n = read(fd, buf, size)) < 0 && errno == EINTR)
		;
	return n;
}

int dm_run_read(const char *path, char *buf, size_t size)
{
	struct stat st;
	size_t len = 0;
	bool newline_dropped = false;
	int r = 0;

	if (!path || !buf || size == 0 || size > INT_MAX)
		return -EINVAL;
	/* O_NONBLOCK: a FIFO or device put where a sysfs file was expected
	 * must not hang the caller (there is no timeout here) */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		r = -EINVAL;
		goto out_close;
	}
	while (len < size - 1) {
		ssize_t n = read_retry(fd, buf + len, size - 1 - len);
		if (n < 0) {
			r = -errno;
			goto out_close;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len == size - 1) {
		/* full: that is fine only when the file ends here, or after
		 * the newline that is stripped anyway */
		char extra;
		ssize_t n = read_retry(fd, &extra, 1);
		if (n == 1 && extra == '\n') {
			newline_dropped = true;
			n = read_retry(fd, &extra, 1);
		}
		if (n < 0)
			r = -errno;
		else if (n > 0)
			r = -ENOBUFS;
	}
out_close:
	close(fd);
	if (r < 0)
		return r;
	if (!newline_dropped && len > 0 && buf[len - 1] == '\n')
		len--;
	buf[len] = '\0';
	return (int)len;
}

void dm_run_read_link_base(const char *dir, const char *name, char *buf, size_t size)
{
	char link[PATH_MAX + 64], target[PATH_MAX];
	snprintf(link, sizeof(link), "%s/%s", dir, name);
	ssize_t n = readlink(link, target, sizeof(target) - 1);
	buf[0] = '\0';
	if (n <= 0)
		return;
	target[n] = '\0';
	const char *slash = strrchr(target, '/');
	const char *base = slash ? slash + 1 : target;
	if (strlen(base) < size)
		memcpy(buf, base, strlen(base) + 1);
}
