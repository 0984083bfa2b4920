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

struct dm_uring;
struct fs_passthrough;
struct fuse_session;

/* Installs the I/O on @se, after fuse_session_mount(), before the session
 * loop; @uring and @pt may be NULL. Until dm_fs_io_detach(). */
int dm_fs_io_attach(struct fuse_session *se, struct dm_uring *uring, struct fs_passthrough *pt);
/* After the session loop and the notifier have ended. */
void dm_fs_io_detach(struct fuse_session *se);

#endif
