/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* io.c - the session's I/O under libfuse (see io.h). */
#define FUSE_USE_VERSION 312
#include "io.h"

#include "passthrough.h"
#include "uring.h"

#include <errno.h>
#include <fuse_lowlevel.h>
#include <linux/fuse.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

struct session_io {
	int fd;
	struct dm_uring *uring;
	struct fs_passthrough *pt;
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
	ssize_t n = read(fd, buf, len);
	struct session_io *s = session_of(fd);
	const struct fuse_in_header *in = buf;
	if (!s || n < (ssize_t)(sizeof(*in) + sizeof(struct fuse_init_in)) ||
	    in->opcode != FUSE_INIT)
		return n;
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
	if (s->pt)
		fs_passthrough_patch_reply(s->pt, iov, count);
	return s->uring ? dm_uring_writev(s->uring, fd, iov, count) : writev(fd, iov, count);
}

static const struct fuse_custom_io io = {
	.read = io_read,
	.writev = io_writev,
};

int dm_fs_io_attach(struct fuse_session *se, struct dm_uring *uring, struct fs_passthrough *pt)
{
	struct session_io *s = malloc(sizeof(*s));
	if (!s)
		return -ENOMEM;
	*s = (struct session_io){ .fd = fuse_session_fd(se), .uring = uring, .pt = pt };
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
