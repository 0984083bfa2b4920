/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* early.c - a connection handed over, answered before the model (see
 * early.h). */
#include "early.h"

#include "core/thread.h"
#include "inode.h"
#include "passthrough.h"
#include "util/log.h"
#include "util/readall.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fuse.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* What libfuse reads a request into: its largest WRITE and a header
 * (FUSE_MAX_MAX_PAGES pages and FUSE_BUFFER_HEADER_SIZE in fuse_i.h); the
 * kernel fails a request that a read's buffer cannot hold. */
#define EARLY_BUF (256 * 4096 + 0x1000)
/* Past this much kept, nothing more is read until the session serves. */
#define EARLY_KEPT_MAX ((size_t)64 << 20)

struct kept {
	struct kept *next;
	size_t len;
	_Alignas(16) unsigned char buf[];
};

struct fs_early {
	int fd, stop; /* the connection; an eventfd that ends the thread */
	const struct fs_mirror *mirror;
	struct fs_passthrough *pt;
	struct timespec start; /* the last daemon's time base: its files' times */
	bool (*unhandled)(uint32_t opcode);
	pthread_t thread;
	bool running;
	pthread_mutex_t lock; /* the kept requests */
	struct kept *head, **tail;
	size_t kept_bytes;
	atomic_bool drained; /* nothing kept is left: fs_early_pop() returns at once */
	_Atomic uint64_t answered, kept;
};

static int open_source(void *data)
{
	return dm_open_value_file(data);
}

static int reply(int fd, uint64_t unique, const void *body, size_t size)
{
	struct fuse_out_header out = { .len = (uint32_t)(sizeof(out) + size), .unique = unique };
	struct iovec iov[2] = { { &out, sizeof(out) }, { (void *)body, size } };
	ssize_t n = writev(fd, iov, 2);
	return n == (ssize_t)out.len ? 0 : n < 0 ? -errno : -EIO;
}

/* Where the node @ino's value comes from, when the mirror says and its
 * device is the same one: its sysfs directory's inode is the mirrored
 * identity (a device unplugged and another plugged at its path meanwhile
 * is not: its requests wait for the model, which answers ESTALE).
 * FS_SOURCE_SYSFS with the file in @path, FS_SOURCE_KEPT, or 0; its
 * permission bits into *ret_mode. */
static int source_of(struct fs_early *e, uint64_t ino, char path[PATH_MAX], unsigned *ret_mode)
{
	size_t dir_len;
	uint64_t ident;
	int how = fs_mirror_source(e->mirror, ino, path, PATH_MAX, &dir_len, &ident, ret_mode);
	if (how <= 0)
		return 0;
	struct stat st;
	char keep = path[dir_len];
	path[dir_len] = '\0';
	bool same = stat(path, &st) == 0 && S_ISDIR(st.st_mode) && (uint64_t)st.st_ino == ident;
	path[dir_len] = keep;
	return same ? how : 0;
}

/* An OPEN, read only, of such a file: what fs_op_open() gives it, a
 * backing and no copy for a sysfs file, the pages the kernel keeps for a
 * value kept (the last daemon's, dropped with its other caches once the
 * model is there: §10.1). False: kept for the session. */
static bool answer_open(struct fs_early *e, const struct fuse_in_header *in, size_t len)
{
	if (len < sizeof(*in) + sizeof(struct fuse_open_in))
		return false;
	const struct fuse_open_in *arg = (const void *)(in + 1);
	if ((arg->flags & O_ACCMODE) != O_RDONLY || (arg->flags & O_TRUNC))
		return false;
	char path[PATH_MAX];
	unsigned mode;
	int32_t id = -1;
	int how = source_of(e, in->nodeid, path, &mode);
	if (!how ||
	    (how == FS_SOURCE_SYSFS && fs_passthrough_get(e->pt, in->nodeid, open_source, path, &id) < 0))
		return false;
	struct fuse_open_out out = { .fh = 0, .open_flags = FOPEN_KEEP_CACHE };
	if (id >= 0) {
		out = (struct fuse_open_out){ .fh = FS_FH_BACKED };
		fs_passthrough_mark_open(&out, id);
	}
	int r = reply(e->fd, in->unique, &out, sizeof(out));
	if (r < 0 && id >= 0)
		fs_passthrough_put(e->pt, in->nodeid);
	/* -ENOENT: the opener was interrupted, nothing left to answer */
	return r == 0 || r == -ENOENT;
}

/* Attributes as fs_view_stat() gives them, for a moment only (the
 * model's answer follows): @size, the last daemon's time base @mtime_ns
 * later for the mtime (and ctime). */
static bool reply_attr(struct fs_early *e, const struct fuse_in_header *in, uint32_t mode,
		       uint32_t nlink, uint64_t size, uint32_t mtime_ns)
{
	struct fuse_attr_out out = { .attr_valid = 1 };
	struct fuse_attr *a = &out.attr;
	a->ino = in->nodeid;
	a->mode = mode;
	a->nlink = nlink;
	a->size = size;
	a->blksize = 4096;
	a->atime = (uint64_t)e->start.tv_sec;
	a->atimensec = (uint32_t)e->start.tv_nsec;
	uint64_t ns = (uint64_t)e->start.tv_nsec + mtime_ns;
	a->mtime = a->ctime = (uint64_t)e->start.tv_sec + ns / 1000000000u;
	a->mtimensec = a->ctimensec = (uint32_t)(ns % 1000000000u);
	int r = reply(e->fd, in->unique, &out, sizeof(out));
	return r == 0 || r == -ENOENT;
}

/*
 * A GETATTR of such a file (a read drops the atime the kernel keeps, so
 * each stat after one asks). A live sysfs value: what fs_view_stat()
 * gives one of a device with no change yet. A value kept: exactly what
 * the last daemon told the kernel last (fs_mirror_told()), since a size
 * or mtime of another drops the pages it keeps (and its read would wait
 * for the model); not answered when the mirror does not say.
 */
static bool answer_getattr(struct fs_early *e, const struct fuse_in_header *in)
{
	char path[PATH_MAX];
	unsigned mode;
	struct stat st;
	uint64_t size;
	uint32_t mtime_ns;
	switch (source_of(e, in->nodeid, path, &mode)) {
	case FS_SOURCE_SYSFS:
		if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
			return false;
		return reply_attr(e, in, S_IFREG | mode, 1, 4096, 0);
	case FS_SOURCE_KEPT:
		if (fs_mirror_told(e->mirror, in->nodeid, &size, &mtime_ns) < 0)
			return false;
		return reply_attr(e, in, S_IFREG | mode, 1, size, mtime_ns);
	default:
		return false;
	}
}

/* A GETATTR of a directory (a path's walk checks each one's mode: the
 * kernel asks once it dropped what it had): what fs_view_stat() gives
 * every directory, while its device (if it has one) is the same one. */
static bool answer_dir_getattr(struct fs_early *e, const struct fuse_in_header *in)
{
	char path[PATH_MAX];
	size_t len;
	uint64_t ident;
	struct stat st;
	if (fs_mirror_dir(e->mirror, in->nodeid, path, sizeof(path), &len, &ident) < 0 ||
	    (ident && (stat(path, &st) < 0 || !S_ISDIR(st.st_mode) || (uint64_t)st.st_ino != ident)))
		return false;
	return reply_attr(e, in, S_IFDIR | 0755, 2, 4096, 0);
}

/* Whether the request @in (@len bytes, whole) was answered here. */
static bool answer(struct fs_early *e, const struct fuse_in_header *in, size_t len)
{
	switch (in->opcode) {
	case FUSE_OPEN:
		return answer_open(e, in, len);
	case FUSE_GETATTR:
		return answer_getattr(e, in) || answer_dir_getattr(e, in);
	default:
		if (!e->unhandled(in->opcode))
			return false;
		struct fuse_out_header out = { .len = sizeof(out), .error = -ENOSYS,
					       .unique = in->unique };
		return write(e->fd, &out, sizeof(out)) == sizeof(out) || errno == ENOENT;
	}
}

static void keep(struct fs_early *e, const void *buf, size_t len)
{
	struct kept *k = malloc(sizeof(*k) + len);
	if (!k) {
		/* the kernel keeps it as read and never answered: asked to
		 * send it again when the session serves (dm_fs_io_resend()
		 * would repeat every kept one too), it is answered EIO here */
		const struct fuse_in_header *in = buf;
		struct fuse_out_header out = { .len = sizeof(out), .error = -EIO,
					       .unique = in->unique };
		if (in->opcode != FUSE_FORGET && in->opcode != FUSE_BATCH_FORGET)
			(void)!write(e->fd, &out, sizeof(out));
		return;
	}
	k->next = NULL;
	k->len = len;
	memcpy(k->buf, buf, len);
	pthread_mutex_lock(&e->lock);
	*e->tail = k;
	e->tail = &k->next;
	e->kept_bytes += len;
	atomic_store(&e->drained, false);
	pthread_mutex_unlock(&e->lock);
	atomic_fetch_add(&e->kept, 1);
}

static void *early_main(void *data)
{
	struct fs_early *e = data;
	unsigned char *buf = aligned_alloc(16, EARLY_BUF);
	bool reading = buf != NULL;
	for (;;) {
		struct pollfd p[2] = { { .fd = e->stop, .events = POLLIN },
				       { .fd = e->fd, .events = POLLIN } };
		if (poll(p, reading ? 2 : 1, -1) < 0 && errno != EINTR)
			break;
		if (p[0].revents)
			break;
		if (!reading || !(p[1].revents & (POLLIN | POLLERR | POLLHUP)))
			continue;
		ssize_t n = read(e->fd, buf, EARLY_BUF);
		if (n < 0) {
			/* ENOENT: a request interrupted as it was read */
			if (errno != EINTR && errno != EAGAIN && errno != ENOENT) {
				/* ENODEV: the connection ended; the session sees it */
				log_debug("handover: reading ahead of the model stops: %s",
					  strerror(errno));
				reading = false;
			}
			continue;
		}
		const struct fuse_in_header *in = (const void *)buf;
		if ((size_t)n >= sizeof(*in) && in->len == (uint32_t)n && answer(e, in, (size_t)n)) {
			atomic_fetch_add(&e->answered, 1);
			continue;
		}
		keep(e, buf, (size_t)n);
		pthread_mutex_lock(&e->lock);
		reading = e->kept_bytes < EARLY_KEPT_MAX;
		pthread_mutex_unlock(&e->lock);
	}
	free(buf);
	return NULL;
}

int fs_early_start(int fd, const struct fs_mirror *m, struct fs_passthrough *pt,
		   const struct timespec *start, bool (*unhandled)(uint32_t opcode),
		   struct fs_early **ret)
{
	struct fs_early *e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	*e = (struct fs_early){
		.fd = fd, .mirror = m, .pt = pt, .start = *start, .unhandled = unhandled
	};
	e->tail = &e->head;
	atomic_init(&e->drained, true);
	pthread_mutex_init(&e->lock, NULL);
	e->stop = eventfd(0, EFD_CLOEXEC);
	int r = e->stop < 0 ? -errno : dm_thread_start(&e->thread, 0, early_main, e);
	if (r < 0) {
		fs_early_free(e);
		return r;
	}
	e->running = true;
	*ret = e;
	return 0;
}

void fs_early_stop(struct fs_early *e, uint64_t *ret_answered, uint64_t *ret_kept)
{
	if (e->running) {
		uint64_t one = 1;
		(void)!write(e->stop, &one, sizeof(one));
		pthread_join(e->thread, NULL);
		e->running = false;
	}
	*ret_answered = atomic_load(&e->answered);
	*ret_kept = atomic_load(&e->kept);
}

ssize_t fs_early_pop(void *data, void *buf, size_t size)
{
	struct fs_early *e = data;
	if (atomic_load_explicit(&e->drained, memory_order_acquire))
		return 0;
	pthread_mutex_lock(&e->lock);
	struct kept *k = e->head;
	if (k) {
		e->head = k->next;
		if (!e->head)
			e->tail = &e->head;
		e->kept_bytes -= k->len;
	}
	if (!e->head)
		atomic_store_explicit(&e->drained, true, memory_order_release);
	pthread_mutex_unlock(&e->lock);
	if (!k)
		return 0;
	ssize_t n = (ssize_t)k->len;
	if (k->len > size) {
		const struct fuse_in_header *in = (const void *)k->buf;
		struct fuse_out_header out = { .len = sizeof(out), .error = -EIO,
					       .unique = in->unique };
		(void)!write(e->fd, &out, sizeof(out));
		n = -EMSGSIZE;
	} else {
		memcpy(buf, k->buf, k->len);
	}
	free(k);
	return n;
}

void fs_early_free(struct fs_early *e)
{
	if (!e)
		return;
	uint64_t a, k;
	fs_early_stop(e, &a, &k);
	for (struct kept *p = e->head, *next; p; p = next) {
		next = p->next;
		free(p);
	}
	if (e->stop >= 0)
		close(e->stop);
	pthread_mutex_destroy(&e->lock);
	free(e);
}
