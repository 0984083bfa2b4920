/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * io.h - the session's I/O under libfuse: what libfuse 3.14 cannot ask the
 * kernel for itself. Installed as libfuse's custom I/O
 * (fuse_session_custom_io()) on the session's own /dev/fuse descriptor,
 * it shows every request read to FUSE over io_uring (uring.h) and to
 * passthrough (passthrough.h), and lets each change the replies that
 * concern it (the INIT reply asks for both where the kernel offers them;
 * an open reply names its backing file) before they go out, over a ring
 * entry or to /dev/fuse. Private to src/fuse.
 */
#ifndef DM_FS_IO_H
#define DM_FS_IO_H

#include <stddef.h>
#include <sys/types.h>

struct dm_uring;
struct fs_handover;
struct fs_passthrough;
struct fuse_session;

/* Installs the I/O on @se, on its /dev/fuse descriptor @fd (the one
 * fuse_session_mount() opened, or one handed over), before the session
 * loop; @uring, @pt and @ho may be NULL. The INIT request read is kept in
 * @ho. Until dm_fs_io_detach(). */
int dm_fs_io_attach(struct fuse_session *se, int fd, struct dm_uring *uring,
		    struct fs_passthrough *pt, struct fs_handover *ho);
/* A handed-over session: @ho's INIT request given to @se as if the kernel
 * had sent it (the kernel sends it once per connection, and libfuse
 * answers nothing before one); its reply is dropped. Before the loop. 0,
 * -EINVAL (no INIT kept), -EPROTO (libfuse did not answer it). */
int dm_fs_io_replay_init(struct fuse_session *se, struct fs_handover *ho);
/* A handed-over session: the requests read before it served (early.h)
 * are read first, as if the kernel sent them then: @first copies the next
 * into @buf and gives its length, 0 when none is left, or a negative
 * errno for one dropped. Before the loop; @data outlives the I/O. */
void dm_fs_io_read_first(struct fuse_session *se,
			 ssize_t (*first)(void *data, void *buf, size_t size), void *data);
/* Asks the kernel to send again every request it sent and has no answer
 * for (FUSE_NOTIFY_RESEND, Linux 6.9): those a last daemon read and never
 * answered. 0, or -EINVAL where the kernel does not know it. */
int dm_fs_io_resend(struct fuse_session *se);
/* After the session loop and the notifier have ended. */
void dm_fs_io_detach(struct fuse_session *se);

#endif
