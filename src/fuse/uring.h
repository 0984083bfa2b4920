/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * uring.h - FUSE over io_uring: each request served on the CPU that asked.
 *
 * Over /dev/fuse a request wakes a daemon thread wherever it last ran and
 * the reply wakes the asker back; on a virtual machine each wake-up across
 * CPUs is an IPI and a VM exit, most of what a warm open costs. Over
 * io_uring (Linux >= 6.14, module parameter fuse.enable_uring=Y) the kernel
 * queues each request on its asker's CPU, served here by threads pinned to
 * that CPU: the asker sleeps, the server runs on the same CPU, no IPI.
 *
 * libfuse 3.14 knows nothing of it. This module sits under libfuse's
 * custom I/O (io.h), which shows it every request read from /dev/fuse and
 * hands it every reply: it sees the kernel's INIT request,
 * asks for io_uring in the INIT reply when the kernel offers it and every
 * ring could be set up, registers one ring entry per thread, and hands
 * each request to fuse_session_process_buf(), catching the handler's reply
 * in its writev. FORGETs, INTERRUPTs and notifications still travel over
 * /dev/fuse, served by libfuse's own loop as before; so is everything when
 * the kernel does not offer io_uring.
 */
#ifndef DM_FUSE_URING_H
#define DM_FUSE_URING_H

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

struct dm_uring;
struct fuse_session;

/* Threads per CPU: each holds one ring entry, so a handler that waits (a
 * store that suspends a subtree) leaves the others to serve that CPU. */
#define DM_URING_THREADS_PER_CPU 4

#ifdef DM_HAVE_IO_URING

/* Serves @se's requests over io_uring when the kernel offers it, with
 * @per_cpu threads (each holding one ring entry) per possible CPU, once
 * given to the session's I/O (dm_fs_io_attach()). Call after
 * fuse_session_mount(), before the session loop. */
int dm_uring_new(struct fuse_session *se, unsigned per_cpu, struct dm_uring **ret);
/* From the session's I/O: the kernel's INIT (its flags, flags2 above bit
 * 31), which starts the ring threads, and a reply to go out (over a ring
 * entry, or written to @fd). */
void dm_uring_saw_init(struct dm_uring *u, uint64_t flags, uint64_t unique);
ssize_t dm_uring_writev(struct dm_uring *u, int fd, struct iovec *iov, int count);
/* Where the payload size of the ring entries is stored once they are
 * registered (0 stays there while requests go through /dev/fuse): what a
 * successor's entries need on the same connection (handover.h). */
void dm_uring_publish(struct dm_uring *u, _Atomic uint64_t *payload_size);
/* A connection taken over whose last daemon served it over io_uring: the
 * kernel sends it nothing else (handover.h). Before serving, the rings set
 * up (-errno when one cannot be); then, serving, one entry per thread
 * registered with payloads of @payload_size (what the connection's INIT
 * made the kernel require), waiting for the kernel's answer to each (0, or
 * the first refusal's -errno), and each CPU's queue woken by a request
 * made there about @path (the mount point), since the kernel hands an
 * entry registered no request queued before it. */
int dm_uring_prepare(struct dm_uring *u);
int dm_uring_go(struct dm_uring *u, size_t payload_size, const char *path);
/* Requests served over io_uring so far. Any thread, any time. */
uint64_t dm_uring_served(const struct dm_uring *u);
/* Ring threads the rescuer made normal when starved of the CPU. */
uint64_t dm_uring_rescued(const struct dm_uring *u);
/* The ring's queues (one per possible CPU) and the entries of each. */
void dm_uring_shape(const struct dm_uring *u, unsigned *ret_queues, unsigned *ret_per_cpu);
/* The queue whose request the calling thread serves, or -1 when it serves
 * none over io_uring (a /dev/fuse worker, any other thread). */
int dm_uring_current_queue(void);
/* Ends the ring threads (waiting for the requests they serve) once the
 * session loop has ended; the session must not be destroyed before. */
void dm_uring_stop(struct dm_uring *u);
void dm_uring_free(struct dm_uring *u);

#else /* built with -Dio_uring=disabled: every request through /dev/fuse */

static inline int dm_uring_new(struct fuse_session *se, unsigned per_cpu,
			       struct dm_uring **ret)
{
	(void)se;
	(void)per_cpu;
	*ret = NULL;
	return -EOPNOTSUPP;
}

static inline void dm_uring_publish(struct dm_uring *u, _Atomic uint64_t *payload_size)
{
	(void)u;
	(void)payload_size;
}

static inline int dm_uring_prepare(struct dm_uring *u)
{
	(void)u;
	return -EOPNOTSUPP;
}

static inline int dm_uring_go(struct dm_uring *u, size_t payload_size, const char *path)
{
	(void)u;
	(void)payload_size;
	(void)path;
	return -EOPNOTSUPP;
}

static inline void dm_uring_saw_init(struct dm_uring *u, uint64_t flags, uint64_t unique)
{
	(void)u;
	(void)flags;
	(void)unique;
}

static inline ssize_t dm_uring_writev(struct dm_uring *u, int fd, struct iovec *iov, int count)
{
	(void)u;
	return writev(fd, iov, count);
}

static inline uint64_t dm_uring_served(const struct dm_uring *u)
{
	(void)u;
	return 0;
}

static inline void dm_uring_shape(const struct dm_uring *u, unsigned *ret_queues,
				  unsigned *ret_per_cpu)
{
	(void)u;
	*ret_queues = 0;
	*ret_per_cpu = 0;
}

static inline int dm_uring_current_queue(void)
{
	return -1;
}

static inline uint64_t dm_uring_rescued(const struct dm_uring *u)
{
	(void)u;
	return 0;
}

static inline void dm_uring_stop(struct dm_uring *u)
{
	(void)u;
}

static inline void dm_uring_free(struct dm_uring *u)
{
	(void)u;
}

#endif

#endif
