/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* io.c - the session's I/O under libfuse (see io.h). */
#define FUSE_USE_VERSION 312
#include "io.h"

#include "handover.h"
#include "passthrough.h"
#include "uring.h"

#include <errno.h>
#include <fuse_lowlevel.h>
#include <linux/fuse.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The unique the INIT request given again to a handed-over session
 * carries: its reply is not the kernel's to read (no request of the
 * kernel's is ever numbered so). */
#define REPLAYED_INIT ((uint64_t)-2)

struct session_io {
	int fd;
	struct dm_uring *uring;
	struct fs_passthrough *pt;
	struct fs_handover *ho;
	/* requests to be read first (dm_fs_io_read_first()) */
	ssize_t (*first)(void *data, void *buf, size_t size);
	void *first_data;
	_Atomic bool replaying; /* the replayed INIT's reply is dropped */
};

/* libfuse's custom I/O gets the session's userdata, which is not ours:
 * the sessions served here are found by their /dev/fuse descriptor. */
#define MAX_SESSIONS 8
static struct session_io *_Atomic sessions[MAX_SESSIONS];

static struct session_io *session_of(int fd)
{
	for (int i = 0; i < MAX_SESSIONS; i++) {
		struct session_io *s = atomic_load_explicit(&sessions[i], memory_order_acquire);
		if (s && s->fd == fd)
			return s;
	}
	return NULL;
}

static ssize_t io_read(int fd, void *buf, size_t len, void *userdata)
{
	(void)userdata;
	struct session_io *s = session_of(fd);
	ssize_t n = 0;
	/* what was read before the session served, first (early.h) */
	if (s && s->first)
		while ((n = s->first(s->first_data, buf, len)) < 0)
			;
	if (n <= 0)
		n = read(fd, buf, len);
	const struct fuse_in_header *in = buf;
	if (!s || n < (ssize_t)(sizeof(*in) + sizeof(struct fuse_init_in)) ||
	    in->opcode != FUSE_INIT)
		return n;
	fs_handover_saw_init(s->ho, buf, (size_t)n);
	const struct fuse_init_in *init = (const void *)(in + 1);
	uint64_t flags = init->flags;
	if (flags & FUSE_INIT_EXT)
		flags |= (uint64_t)init->flags2 << 32;
	if (s->pt)
		fs_passthrough_saw_init(s->pt, flags, in->unique);
	if (s->uring)
		dm_uring_saw_init(s->uring, flags, in->unique);
	return n;
}

static ssize_t io_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	(void)userdata;
	struct session_io *s = session_of(fd);
	if (!s)
		return writev(fd, iov, count);
	if (atomic_load(&s->replaying) && count > 0 &&
	    iov[0].iov_len >= sizeof(struct fuse_out_header) &&
	    ((const struct fuse_out_header *)iov[0].iov_base)->unique == REPLAYED_INIT) {
		atomic_store(&s->replaying, false);
		size_t len = 0;
		for (int i = 0; i < count; i++)
			len += iov[i].iov_len;
		return (ssize_t)len;
	}
	if (s->pt)
		fs_passthrough_patch_reply(s->pt, iov, count);
	return s->uring ? dm_uring_writev(s->uring, fd, iov, count) : writev(fd, iov, count);
}

static const struct fuse_custom_io io = {
	.read = io_read,
	.writev = io_writev,
};

int dm_fs_io_attach(struct fuse_session *se, int fd, struct dm_uring *uring,
		    struct fs_passthrough *pt, struct fs_handover *ho)
{
	struct session_io *s = malloc(sizeof(*s));
	if (!s)
		return -ENOMEM;
	*s = (struct session_io){ .fd = fd, .uring = uring, .pt = pt, .ho = ho };
	int r = -EBUSY;
	int slot = -1;
	for (int i = 0; i < MAX_SESSIONS && slot < 0; i++) {
		struct session_io *none = NULL;
		if (atomic_compare_exchange_strong(&sessions[i], &none, s))
			slot = i;
	}
	if (slot < 0)
		goto out_free;
	/* the same descriptor: libfuse keeps it and closes it as before */
	if (fuse_session_custom_io(se, &io, s->fd) != 0) {
		r = -EINVAL;
		atomic_store(&sessions[slot], NULL);
		goto out_free;
	}
	return 0;

out_free:
	free(s);
	return r;
}

void dm_fs_io_detach(struct fuse_session *se)
{
	struct session_io *s = session_of(fuse_session_fd(se));
	if (!s)
		return;
	for (int i = 0; i < MAX_SESSIONS; i++) {
		struct session_io *mine = s;
		atomic_compare_exchange_strong(&sessions[i], &mine, NULL);
	}
	free(s);
}

void dm_fs_io_read_first(struct fuse_session *se,
			 ssize_t (*first)(void *data, void *buf, size_t size), void *data)
{
	struct session_io *s = session_of(fuse_session_fd(se));
	if (s) {
		s->first = first;
		s->first_data = data;
	}
}

int dm_fs_io_replay_init(struct fuse_session *se, struct fs_handover *ho)
{
	struct session_io *s = session_of(fuse_session_fd(se));
	const struct fs_handover_header *h = ho->h;
	if (!s || h->init_len < sizeof(struct fuse_in_header) + 16 ||
	    h->init_len > FS_HANDOVER_INIT_MAX)
		return -EINVAL;
	/* aligned as a read buffer is: libfuse reads the request in place */
	static _Alignas(16) unsigned char req[FS_HANDOVER_INIT_MAX];
	memcpy(req, h->init, h->init_len);
	struct fuse_in_header *in = (void *)req;
	if (in->opcode != FUSE_INIT || in->len != h->init_len)
		return -EINVAL;
	in->unique = REPLAYED_INIT;
	atomic_store(&s->replaying, true);
	struct fuse_buf buf = { .size = h->init_len, .mem = req };
	fuse_session_process_buf(se, &buf);
	/* the reply went (to nobody): the session has had its INIT */
	return atomic_load(&s->replaying) ? -EPROTO : 0;
}

/* linux/fuse.h of Linux 6.9 and later */
#define NOTIFY_RESEND 7

int dm_fs_io_resend(struct fuse_session *se)
{
	struct fuse_out_header out = { .len = sizeof(out), .error = NOTIFY_RESEND, .unique = 0 };
	return write(fuse_session_fd(se), &out, sizeof(out)) == (ssize_t)sizeof(out) ? 0 : -errno;
}
