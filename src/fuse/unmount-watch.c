/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The unmount watcher: a child that outlives the daemon by a moment and
 * detaches the daemon's mount if the daemon died without unmounting it.
 *
 * fusermount3's auto_unmount does the same, but it decides whether the
 * mount is dead by opening the mount point and looking for ENOTCONN. When
 * the daemon is killed the kernel closes its descriptors in order, the
 * socket to fusermount3 before the /dev/fuse descriptor received through
 * it; a fusermount3 scheduled in between sends OPENDIR to a connection
 * that is still alive, gets ECONNABORTED when the connection is aborted a
 * moment later, and leaves the dead mount in place (seen under load).
 * The watcher never touches the mount's files: it tells its mount by the
 * mount ID and device number in /proc/self/mountinfo, noted right after
 * mounting, and unmounts it with MNT_DETACH only if it is still there and
 * still the topmost mount on its mount point, through a descriptor of
 * that mount (not its path: see watch()).
 *
 * The watcher is forked from a process that may have threads, so it uses
 * only async-signal-safe calls: read(2) on a pipe whose write end only the
 * daemon holds (EOF = the daemon is gone), open/read of mountinfo into a
 * fixed buffer, umount2(2), mount(2) and a write(2) to the fuse control
 * file system (a handed-over connection nobody took), and _exit(2).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/thread.h"
#include "handover.h"
#include "unmount-watch.h"
#include "util/log.h"

/* How long a mount left to a successor waits for one (handover.h) */
#define HANDOVER_WAIT_MS 30000
/* ... and while a next daemon that announced itself lives: 10 minutes */
#define HANDOVER_COMING_MAX_MS 600000

/* one mount as mountinfo(5) describes it: what the watcher compares */
struct mount_line {
	unsigned long id, parent;
	char devno[32];	    /* "major:minor" */
	char point[PATH_MAX]; /* unescaped */
	bool ours;	    /* file system type fuse.driverfsd */
};

/* Copies the mountinfo field at @s (ending at a space or @end) into @out
 * with its octal escapes (\040 for a space...) undone, or skips it when
 * @out is NULL; returns the end of the field, or NULL when it does not fit. */
static const char *field(const char *s, const char *end, char *out, size_t size)
{
	size_t n = 0;
	while (s < end && *s != ' ') {
		char c = *s++;
		if (c == '\\' && end - s >= 3 && s[0] >= '0' && s[0] <= '3' && s[1] >= '0' &&
		    s[1] <= '7' && s[2] >= '0' && s[2] <= '7') {
			c = (char)((s[0] - '0') << 6 | (s[1] - '0') << 3 | (s[2] - '0'));
			s += 3;
		}
		if (!out)
			continue;
		if (n + 1 >= size)
			return NULL;
		out[n++] = c;
	}
	if (out)
		out[n] = '\0';
	return s;
}

static const char *number(const char *s, const char *end, unsigned long *v)
{
	if (s >= end || *s < '0' || *s > '9')
		return NULL;
	*v = 0;
	while (s < end && *s >= '0' && *s <= '9')
		*v = *v * 10 + (unsigned long)(*s++ - '0');
	return s;
}

/* Parses one line "ID PARENT MAJ:MIN ROOT POINT OPTS [OPTIONAL...] - TYPE ...". */
static bool parse_line(const char *s, const char *end, struct mount_line *l)
{
	if (!(s = number(s, end, &l->id)) || s >= end || *s++ != ' ')
		return false;
	if (!(s = number(s, end, &l->parent)) || s >= end || *s++ != ' ')
		return false;
	if (!(s = field(s, end, l->devno, sizeof(l->devno))) || s >= end || *s++ != ' ')
		return false;
	if (!(s = field(s, end, NULL, 0)) || s >= end || *s++ != ' ') /* root */
		return false;
	if (!(s = field(s, end, l->point, sizeof(l->point))))
		return false;
	/* the type follows the " - " separator */
	l->ours = false;
	for (; s + 3 <= end; s++) {
		if (s[0] == ' ' && s[1] == '-' && s[2] == ' ') {
			static const char type[] = "fuse.driverfsd ";
			s += 3;
			l->ours = (size_t)(end - s) >= sizeof(type) - 1 &&
				  memcmp(s, type, sizeof(type) - 1) == 0;
			break;
		}
	}
	return true;
}

/* Calls @fn for every mount in /proc/self/mountinfo, with a fixed buffer
 * (no malloc: this also runs in the forked watcher). A line longer than
 * the buffer is skipped. Returns -errno when mountinfo cannot be read. */
static int each_mount(void (*fn)(const struct mount_line *l, void *data), void *data)
{
	static char buf[65536];
	static struct mount_line l;
	int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t have = 0;
	bool skipping = false;
	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int r = -errno;
			close(fd);
			return r;
		}
		have += (size_t)n;
		char *start = buf, *nl;
		while ((nl = memchr(start, '\n', have - (size_t)(start - buf)))) {
			if (!skipping && parse_line(start, nl, &l))
				fn(&l, data);
			skipping = false;
			start = nl + 1;
		}
		have -= (size_t)(start - buf);
		memmove(buf, start, have);
		if (n == 0)
			break;
		if (have == sizeof(buf)) { /* a line that does not fit */
			have = 0;
			skipping = true;
		}
	}
	close(fd);
	return 0;
}

/* what the watcher looks for, and what it finds */
struct search {
	const char *point;
	unsigned long id;	/* 0: take the topmost driverfs mount on point */
	unsigned long found_id; /* when id is 0 */
	char devno[32];
	bool found;
	bool covered; /* another mount sits on top of it */
};

static void find_ours(const struct mount_line *l, void *data)
{
	struct search *s = data;
	if (strcmp(l->point, s->point) != 0)
		return;
	if (s->id == 0) {
		/* mounts on one point are listed bottom to top: the last one
		 * of ours listed is the one just mounted */
		if (l->ours) {
			s->found = true;
			s->covered = false;
			memcpy(s->devno, l->devno, sizeof(s->devno));
			s->found_id = l->id;
		}
		return;
	}
	if (l->id == s->id && l->ours && strcmp(l->devno, s->devno) == 0)
		s->found = true;
	else if (l->parent == s->id)
		s->covered = true;
}

static void say(const char *a, const char *b, const char *c)
{
	/* write(2) only: stdio is not async-signal-safe */
	const char *parts[] = { "driverfsd: unmount watcher: ", a, b, c, "\n" };
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		if (write(STDERR_FILENO, parts[i], strlen(parts[i])) < 0)
			return;
}

/* @v in decimal at @out (room for 21 bytes), without stdio. */
static void utoa(unsigned long v, char *out)
{
	char tmp[21];
	size_t n = 0;
	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	while (n)
		*out++ = tmp[--n];
	*out = '\0';
}

/* The ID of the mount @fd is on ("mnt_id:" of its fdinfo), or 0. */
static unsigned long fd_mount_id(int fd)
{
	char path[64] = "/proc/self/fdinfo/", buf[1024];
	utoa((unsigned long)fd, path + strlen(path));
	int info = open(path, O_RDONLY | O_CLOEXEC);
	if (info < 0)
		return 0;
	ssize_t n = read(info, buf, sizeof(buf) - 1);
	close(info);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	const char *p = strstr(buf, "mnt_id:");
	if (!p)
		return 0;
	p += strlen("mnt_id:");
	while (*p == ' ' || *p == '\t')
		p++;
	unsigned long id = 0;
	return number(p, buf + n, &id) ? id : 0;
}

struct control;
static bool control_gone(const struct control *c);

/* After the daemon's end: whether a successor took the connection over, or
 * does within HANDOVER_WAIT_MS (HANDOVER_COMING_MAX_MS while a next daemon
 * that announced itself lives), the daemon having given it to a supervisor
 * (it left on purpose, or was killed: the nodes are mirrored either way).
 * The header is the memfd's, shared with every daemon of the connection;
 * @epoch the one the daemon served; @c its control files, to stop waiting
 * once it is gone (its mount released meanwhile: nothing left to wait
 * for, and its number may come to name another connection). */
enum succession { NOT_KEPT, TAKEN_OVER, NONE_CAME };
static enum succession taken_over(const struct fs_handover_header *h, uint64_t epoch,
				  const struct control *c)
{
	if (!h)
		return NOT_KEPT;
	for (int waited = 0;; waited += 50) {
		if (atomic_load(&h->epoch) != epoch)
			return TAKEN_OVER; /* a successor serves */
		if (!atomic_load(&h->stored) || control_gone(c))
			return NOT_KEPT;
		/* a next daemon that started and still enumerates (a large
		 * machine under a slow sysfs) is waited for while it lives */
		pid_t coming = atomic_load(&h->coming);
		bool alive = coming > 0 && (kill(coming, 0) == 0 || errno == EPERM);
		if (waited >= (alive ? HANDOVER_COMING_MAX_MS : HANDOVER_WAIT_MS))
			return NONE_CAME;
		struct timespec ts = { 0, 50 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
}

/* The fuse control files of the watched connection (fusectl, mounted
 * first if it is not), opened while the connection serves: they name that
 * connection and no later one of the same number (a file of a connection
 * that ended reads ENOTCONN), and do not keep it alive. @devno: "0:MINOR",
 * the minor naming the connection. */
struct control {
	int waiting; /* read: whether the connection still exists */
	int abort; /* written: ends it */
};

static int open_control(const char *devno, const char *file, int flags)
{
	/* /proc/self/root: the same files, by a path that sysfs emulations
	 * preloaded into the daemon (umockdev's, the tests') leave alone */
	static const char dir[] = "/proc/self/root/sys/fs/fuse/connections/";
	const char *minor = strchr(devno, ':');
	if (!minor || !minor[1])
		return -1;
	minor++;
	char path[128];
	size_t n = strlen(dir), m = strlen(minor), f = strlen(file);
	if (n + m + 1 + f + 1 > sizeof(path))
		return -1;
	memcpy(path, dir, n);
	memcpy(path + n, minor, m);
	path[n + m] = '/';
	memcpy(path + n + m + 1, file, f + 1);
	return open(path, flags | O_CLOEXEC);
}

static struct control control_open(const char *devno)
{
	struct control c = { open_control(devno, "waiting", O_RDONLY), -1 };
	if (c.waiting < 0 && errno == ENOENT &&
	    mount("fusectl", "/sys/fs/fuse/connections", "fusectl", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  NULL) == 0)
		c.waiting = open_control(devno, "waiting", O_RDONLY);
	if (c.waiting >= 0)
		c.abort = open_control(devno, "abort", O_WRONLY);
	return c;
}

/* Whether the watched connection is gone (its mount released): then
 * whatever has its number now is someone else's. */
static bool control_gone(const struct control *c)
{
	char buf[32];
	return c->waiting >= 0 && pread(c->waiting, buf, sizeof(buf), 0) < 0 && errno == ENOTCONN;
}

/* A connection a supervisor keeps lives on with nobody to answer it: its
 * readers would wait for ever, detached or not. Aborted, each of them gets
 * ECONNABORTED, and every later request ENOTCONN. */
static void abort_connection(const char *point, const struct control *c)
{
	if (c->abort < 0 || write(c->abort, "1", 1) != 1)
		say(point, ": no daemon took the mount over and its connection stays: ",
		    strerrordesc_np(c->abort < 0 ? ENOENT : errno));
	else
		say(point, ": no daemon took the mount over in time; its connection is aborted", "");
}

static _Noreturn void watch(int fd, struct search *s, const struct fs_handover_header *h,
			    uint64_t epoch)
{
	static const int quiet[] = { SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGQUIT };
	struct sigaction ign = { .sa_handler = SIG_IGN };
	for (size_t i = 0; i < sizeof(quiet) / sizeof(quiet[0]); i++)
		sigaction(quiet[i], &ign, NULL); /* it must outlive the daemon */
	prctl(PR_SET_NAME, "driverfsd-watch", 0, 0, 0);
	if (chdir("/") < 0) {
		/* "/" is always there; nothing of ours keeps a directory busy */
	}
	/* nothing of the daemon's may stay open here: not its /dev/fuse
	 * descriptor (the connection would outlive it), nor fusermount3's
	 * socket; stderr stays for the one line this says */
	if (fd != 3) {
		if (dup2(fd, 3) < 0)
			_exit(1);
		fd = 3;
	}
	close_range(4, ~0U, 0);
	close(STDIN_FILENO);
	/* a connection handed over may outlive the daemon: its control files,
	 * to end it should nobody take it over */
	struct control ctl = h ? control_open(s->devno) : (struct control){ -1, -1 };
	char c;
	ssize_t n;
	while ((n = read(fd, &c, 1)) != 0)
		if (n < 0 && errno != EINTR)
			break;
	enum succession w = taken_over(h, epoch, &ctl);
	if (w == TAKEN_OVER || control_gone(&ctl))
		_exit(0);
	if (w == NONE_CAME)
		abort_connection(s->point, &ctl);
	/* Pin the topmost mount on the mount point first, then check that it
	 * is ours, and unmount through the descriptor: a new daemon may detach
	 * ours and mount at the same place between the check and the unmount,
	 * and an unmount by path would then take its mount. The descriptor
	 * names one mount, whatever comes on top of it later; a mount already
	 * detached gives EINVAL. Opening a mount's root with O_PATH sends
	 * the file system no request. */
	int root = open(s->point, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (root < 0 || fd_mount_id(root) != s->id)
		_exit(0); /* unmounted, as it should be, or covered (below) */
	s->found = s->covered = false;
	if (each_mount(find_ours, s) < 0 || !s->found)
		_exit(0);
	if (s->covered) {
		say(s->point, ": left mounted, another mount covers it", "");
		_exit(1);
	}
	char via[64] = "/proc/self/fd/";
	utoa((unsigned long)root, via + strlen(via));
	/* no UMOUNT_NOFOLLOW: the magic link is what names our mount */
	if (umount2(via, MNT_DETACH) < 0 && errno != EINVAL) {
		say(s->point, ": the daemon died and its mount stays: ", strerrordesc_np(errno));
		_exit(1);
	}
	say(s->point, ": the daemon died; its mount is detached", "");
	_exit(0);
}

static void *reaper(void *data)
{
	pid_t pid = (pid_t)(intptr_t)data;
	/* this pid alone: the hook runner waits for its own children */
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	log_warn("the unmount watcher %d ended while the daemon serves: a killed daemon's "
		 "mount is left to fusermount3's auto_unmount", (int)pid);
	return NULL;
}

/* The watcher outlives the daemon when all goes well; should it end first
 * (killed), it must not stay a zombie: a detached thread waits for it. */
static void reap_later(pid_t pid)
{
	if (dm_thread_start(NULL, 64 * 1024, reaper, (void *)(intptr_t)pid) < 0)
		log_warn("unmount watcher %d: no thread to reap it should it end early",
			 (int)pid);
}

int dm_unmount_watch_start(const char *mountpoint, const void *handover)
{
	const struct fs_handover_header *h = handover;
	uint64_t epoch = h ? atomic_load(&h->epoch) : 0;
	static char point[PATH_MAX];
	static struct search s;
	if (geteuid() != 0)
		return 0; /* only root may unmount; fusermount3 alone then */
	if (!realpath(mountpoint, point))
		return -errno;
	s = (struct search){ .point = point };
	int r = each_mount(find_ours, &s);
	if (r < 0)
		return r;
	if (!s.found)
		return -ENOENT;
	s.id = s.found_id;
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		r = -errno;
		close(fds[0]);
		close(fds[1]);
		return r;
	}
	if (pid == 0) {
		close(fds[1]);
		watch(fds[0], &s, h, epoch);
	}
	close(fds[0]);
	reap_later(pid);
	/* fds[1] stays open, unwritten, until this process ends */
	log_debug("unmount watcher %d for mount %lu (%s) at %s", (int)pid, s.id, s.devno,
		  point);
	return 1;
}
