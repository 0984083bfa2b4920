/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * uring.c - FUSE over io_uring under libfuse 3.14 (see uring.h).
 *
 * The wire format (Linux's Documentation/filesystems/fuse-io-uring.rst and
 * include/uapi/linux/fuse.h, protocol 7.42): a ring entry is a header
 * buffer and a payload buffer, registered with an IORING_OP_URING_CMD on
 * the /dev/fuse file (128-byte SQEs). When the entry's command completes,
 * the header holds the request's fuse_in_header and its first argument
 * (the operation's own header, if it has one) and the payload the rest;
 * the reply goes back the same way (fuse_out_header in the header buffer,
 * the reply's body in the payload) with a COMMIT_AND_FETCH command, which
 * also waits for the next request.
 */
#define FUSE_USE_VERSION 312
#include "uring.h"

#include "core/thread.h"
#include "util/log.h"

#include <errno.h>
#include <fuse_lowlevel.h>
#include <linux/fuse.h>
#include <liburing.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- the io_uring part of the FUSE protocol (7.42), not in older
 * <linux/fuse.h> ---- */

#define URING_INIT_FLAG (1ULL << 41) /* FUSE_OVER_IO_URING */
#define URING_IN_OUT_SIZE 128
#define URING_OP_IN_SIZE 128

enum uring_cmd {
	URING_CMD_REGISTER = 1,
	URING_CMD_COMMIT_AND_FETCH = 2,
};

struct uring_ent_in_out {
	uint64_t flags;
	uint64_t commit_id; /* the request's unique, given back in the commit */
	uint32_t payload_sz; /* bytes used in the payload buffer */
	uint32_t padding;
	uint64_t reserved;
};

struct uring_req_header {
	char in_out[URING_IN_OUT_SIZE]; /* fuse_in_header, then fuse_out_header */
	char op_in[URING_OP_IN_SIZE]; /* the operation's first argument */
	struct uring_ent_in_out ent;
};

/* in the SQE's command area */
struct uring_cmd_req {
	uint64_t flags;
	uint64_t commit_id;
	uint16_t qid;
	uint8_t padding[6];
};

_Static_assert(sizeof(struct uring_req_header) == 288, "fuse_uring_req_header's size");
_Static_assert(sizeof(struct uring_cmd_req) == 24, "fuse_uring_cmd_req's size");
_Static_assert(sizeof(struct fuse_in_header) == 40, "fuse_in_header's size");

/* the kernel's smallest payload buffer (FUSE_MIN_READ_BUFFER) */
#define MIN_PAYLOAD 8192

enum { TAG_ENTRY = 1, TAG_WAKE = 2 };

struct ring_thread {
	struct dm_uring *u;
	unsigned qid; /* the CPU whose requests this thread serves */
	pthread_t thread;
	int wake_fd; /* an eventfd: dm_uring_stop() */
	struct io_uring ring;
	bool ring_ready;
	struct iovec iov[2]; /* header, payload: read by the kernel at REGISTER */
	struct uring_req_header *hdr;
	char *payload;
	char *req; /* the request made contiguous for fuse_session_process_buf() */
	uint64_t unique; /* of the request being served */
	bool replied;
	bool served; /* any request: the REGISTER was taken */

	/* seen by the rescuer (rescue()) */
	atomic_int tid; /* 0 until the thread runs */
	atomic_uint_fast64_t wakes; /* completions taken: its progress */
	atomic_bool raised; /* made normal by the rescuer: idle again after */
	uint64_t seen_wakes; /* the rescuer's own: wakes at its last look */
	bool seen_stuck; /* runnable without progress at its last look */
};

enum start_state { START_NONE, START_SETUP, START_GO, START_ABORT };

struct dm_uring {
	struct fuse_session *se;
	int fd;
	unsigned per_cpu;
	unsigned n_cpus;
	size_t n_threads;
	struct ring_thread *threads;

	/* INIT: seen by the custom read, answered in the custom writev */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	enum start_state start;
	size_t n_setup; /* threads done setting up their ring */
	bool setup_failed;
	int setup_err;
	/* the REGISTERs: taken, refused (the first refusal's errno) */
	size_t n_registered, n_refused;
	int refused_err;
	_Atomic uint64_t *publish; /* dm_uring_publish() */
	bool init_pending;
	uint64_t init_unique;
	size_t payload_size;
	bool idle_class; /* ring threads wait as SCHED_IDLE (set_idle()) */
	cpu_set_t cpus; /* the CPUs the daemon may use, for stores */

	/* with idle_class: a normal thread that raises starved ring threads */
	pthread_t rescuer;
	bool rescuer_started;
	/* kick(): joined before the ring threads stop */
	pthread_t *kicks;
	size_t n_kicks;
	int rescuer_fd; /* an eventfd: dm_uring_stop() */
	atomic_uint_fast64_t rescued;

	atomic_uint_fast64_t served;
};

/* the ring entry whose request this thread is serving, if any */
static __thread struct ring_thread *current_entry;

/* How many queues the kernel has: one per possible CPU ("0-3,5" in sysfs).
 * Read with raw system calls, past any preloaded library that redirects
 * /sys (umockdev, in the tests): a queue missed would stall every request,
 * since the kernel holds them all until each queue has an entry. */
static int possible_cpus(unsigned *ret)
{
	char buf[256];
	int fd = (int)syscall(SYS_openat, AT_FDCWD, "/sys/devices/system/cpu/possible",
			      O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = syscall(SYS_read, fd, buf, sizeof(buf) - 1);
	syscall(SYS_close, fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	unsigned count = 0;
	for (char *p = buf;;) {
		char *end;
		unsigned long first = strtoul(p, &end, 10), last = first;
		if (end == p)
			return -EINVAL;
		if (*end == '-')
			last = strtoul(end + 1, &end, 10);
		if (last < first || last - first >= 65536)
			return -EINVAL;
		count += (unsigned)(last - first + 1);
		if (*end != ',')
			break;
		p = end + 1;
	}
	*ret = count;
	return 0;
}

static bool may_leave_idle(void);

int dm_uring_new(struct fuse_session *se, unsigned per_cpu, struct dm_uring **ret)
{
	struct dm_uring *u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->se = se;
	u->fd = fuse_session_fd(se);
	u->per_cpu = per_cpu ? per_cpu : 1;
	int r = possible_cpus(&u->n_cpus);
	if (r < 0) {
		free(u);
		return r;
	}
	u->idle_class = may_leave_idle();
	if (sched_getaffinity(0, sizeof(u->cpus), &u->cpus) < 0) {
		CPU_ZERO(&u->cpus);
		for (unsigned i = 0; i < u->n_cpus && i < CPU_SETSIZE; i++)
			CPU_SET(i, &u->cpus);
	}
	u->rescuer_fd = -1;
	pthread_mutex_init(&u->lock, NULL);
	pthread_cond_init(&u->cond, NULL);
	*ret = u;
	return 0;
}

/* ---- ring threads ---- */

static void pin_to_cpu(unsigned cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	/* an offline CPU: its queue is served from anywhere */
	(void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static int ring_setup(struct ring_thread *t)
{
	struct io_uring_params p = {
		.flags = IORING_SETUP_SQE128 | IORING_SETUP_SINGLE_ISSUER |
			 IORING_SETUP_DEFER_TASKRUN,
	};
	int r = io_uring_queue_init_params(4, &t->ring, &p);
	if (r == -EINVAL) {
		/* before Linux 6.1: no deferred task work */
		memset(&p, 0, sizeof(p));
		p.flags = IORING_SETUP_SQE128;
		r = io_uring_queue_init_params(4, &t->ring, &p);
	}
	if (r < 0)
		return r;
	t->ring_ready = true;
	t->wake_fd = eventfd(0, EFD_CLOEXEC);
	return t->wake_fd < 0 ? -errno : 0;
}

static struct io_uring_sqe *cmd_sqe(struct ring_thread *t, enum uring_cmd op, uint64_t commit_id)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&t->ring);
	if (!sqe)
		return NULL;
	memset(sqe, 0, 2 * sizeof(*sqe)); /* a 128-byte SQE */
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = t->u->fd;
	sqe->cmd_op = op;
	sqe->user_data = TAG_ENTRY;
	struct uring_cmd_req *c = (struct uring_cmd_req *)sqe->cmd;
	c->commit_id = commit_id;
	c->qid = (uint16_t)t->qid;
	return sqe;
}

static size_t req_size(size_t payload_size)
{
	return sizeof(struct fuse_in_header) + URING_OP_IN_SIZE + payload_size;
}

static char *buf_map(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void buf_unmap(char *p, size_t size)
{
	if (p)
		munmap(p, size);
}

/* Queues a REGISTER of @t's entry (again). */
static void entry_register(struct ring_thread *t, bool ok)
{
	struct io_uring_sqe *sqe = cmd_sqe(t, URING_CMD_REGISTER, 0);
	sqe->addr = (uintptr_t)t->iov;
	/* The kernel holds every request until each CPU's queue has an entry;
	 * a REGISTER it refuses (no buffers) turns io_uring off instead. */
	sqe->len = ok ? 2 : 0;
}

/* Maps @t's buffers and queues the REGISTER of its entry (submitted by
 * ring_loop(), which retries what cannot be yet) and the wake-up poll. */
static void ring_register(struct ring_thread *t)
{
	size_t size = t->u->payload_size;
	/* Mapped, not allocated: the pages of these buffers of up to a
	 * megabyte are only backed once touched, and most requests and
	 * replies take a few hundred bytes. Zeroed, so that what the kernel
	 * writes there does not read as undefined to valgrind. */
	t->hdr = calloc(1, sizeof(*t->hdr));
	t->payload = buf_map(size);
	t->req = buf_map(req_size(size));
	bool ok = t->hdr && t->payload && t->req;
	if (ok) {
		t->iov[0] = (struct iovec){ .iov_base = t->hdr, .iov_len = sizeof(*t->hdr) };
		t->iov[1] = (struct iovec){ .iov_base = t->payload, .iov_len = size };
	}

	struct io_uring_sqe *sqe = io_uring_get_sqe(&t->ring);
	io_uring_prep_poll_add(sqe, t->wake_fd, POLLIN);
	sqe->user_data = TAG_WAKE;
	entry_register(t, ok);
}

/* The reply to the request in @t's entry, from the custom writev. */
static ssize_t entry_reply(struct ring_thread *t, const struct iovec *iov, int count)
{
	size_t len = 0;
	for (int i = 1; i < count; i++) {
		if (iov[i].iov_len > t->u->payload_size - len) {
			errno = EINVAL;
			return -1;
		}
		memcpy(t->payload + len, iov[i].iov_base, iov[i].iov_len);
		len += iov[i].iov_len;
	}
	memcpy(t->hdr->in_out, iov[0].iov_base, sizeof(struct fuse_out_header));
	t->hdr->ent.payload_sz = (uint32_t)len;
	t->replied = true;
	return (ssize_t)(sizeof(struct fuse_out_header) + len);
}

static void entry_reply_error(struct ring_thread *t, int err)
{
	struct fuse_out_header out = {
		.len = sizeof(out), .error = -err, .unique = t->unique,
	};
	struct iovec iov = { .iov_base = &out, .iov_len = sizeof(out) };
	entry_reply(t, &iov, 1);
}

/* The ring threads wait as SCHED_IDLE. The scheduler wakes a task on an
 * idle CPU rather than on a busy one, and counts a CPU that runs only
 * SCHED_IDLE tasks as idle: so the asker of a request is woken back on
 * this CPU, where its next request is served, rather than on another
 * (with normal ring threads the walker hops between CPUs at every reply,
 * each hop an IPI and, on a virtual machine, a VM exit: bench/RESULTS.md
 * has the walks). The requests served here take little CPU. But a
 * SCHED_IDLE task weighs 3 against a normal one's 1024: under any user's
 * busy loops it may wait seconds for the CPU, woken or halfway through a
 * request with the model's lock held, and hotplug and the watchdog would
 * wait behind it. The rescuer (rescue()) makes such a thread normal until
 * its request is served. A store is served as a normal thread: it may
 * suspend a subtree, run hooks and start threads, which inherit the
 * class. */
static void set_idle(bool idle)
{
	struct sched_param sp = { 0 };
	pthread_setschedparam(pthread_self(), idle ? SCHED_IDLE : SCHED_OTHER, &sp);
}

/* Whether a SCHED_IDLE thread of this process may become normal again: the
 * kernel takes SCHED_IDLE for nice 20, so it needs an RLIMIT_NICE that
 * allows nice 0 or CAP_SYS_NICE (root has it, but not under a capability
 * bounding set without it). If not, the ring threads stay normal. */
static bool may_leave_idle(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NICE, &rl) == 0 && rl.rlim_cur >= 20)
		return true;
	FILE *f = fopen("/proc/self/status", "re");
	if (!f)
		return false;
	char line[256];
	unsigned long long caps = 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &caps) == 1)
			break;
	fclose(f);
	return caps & (1ULL << 23); /* CAP_SYS_NICE */
}

/* A store may suspend a subtree: run hooks, and start the PM pool's
 * threads, which inherit the scheduling class and the CPU affinity of the
 * thread that starts them. It runs as a normal thread, on any CPU the
 * daemon may use; then the thread goes back to its CPU and class. */
static void serve_as_store(struct ring_thread *t, bool start)
{
	if (t->u->idle_class && start)
		set_idle(false);
	if (start)
		(void)pthread_setaffinity_np(pthread_self(), sizeof(t->u->cpus), &t->u->cpus);
	else
		pin_to_cpu(t->qid);
	if (t->u->idle_class && !start)
		set_idle(true);
}

/* Serves the request in @t's entry and queues its commit. */
static void entry_serve(struct ring_thread *t)
{
	const struct fuse_in_header *in = (const void *)t->hdr->in_out;
	uint32_t psize = t->hdr->ent.payload_sz;
	uint64_t commit_id = t->hdr->ent.commit_id;
	t->unique = in->unique;
	t->replied = false;
	/* the operation's header is what the length leaves beside the payload */
	size_t hsize = in->len - sizeof(*in) - psize;
	if (in->len < sizeof(*in) + psize || hsize > URING_OP_IN_SIZE ||
	    psize > t->u->payload_size) {
		entry_reply_error(t, EIO);
	} else {
		memcpy(t->req, in, sizeof(*in));
		memcpy(t->req + sizeof(*in), t->hdr->op_in, hsize);
		memcpy(t->req + sizeof(*in) + hsize, t->payload, psize);
		struct fuse_buf buf = { .mem = t->req, .size = in->len };
		bool store = in->opcode == FUSE_WRITE || in->opcode == FUSE_SETATTR;
		current_entry = t;
		if (store)
			serve_as_store(t, true);
		fuse_session_process_buf(t->u->se, &buf);
		if (store)
			serve_as_store(t, false);
		current_entry = NULL;
		atomic_fetch_add_explicit(&t->u->served, 1, memory_order_relaxed);
		atomic_fetch_add(&t->wakes, 1);
		t->served = true;
		/* made normal by the rescuer while starved: waits idle again */
		if (atomic_exchange(&t->raised, false))
			set_idle(true);
		/* every request that comes over the ring has a reply */
		if (!t->replied)
			entry_reply_error(t, ENOSYS);
	}
	cmd_sqe(t, URING_CMD_COMMIT_AND_FETCH, commit_id);
}

static void ring_loop(struct ring_thread *t)
{
	unsigned refused = 0; /* commits refused in a row */
	for (;;) {
		int r = io_uring_submit_and_wait(&t->ring, 1);
		atomic_fetch_add(&t->wakes, 1);
		if (r == -EAGAIN || r == -EBUSY || r == -ENOMEM) {
			/* short of memory or of completion slots: the commit
			 * still has to reach the kernel */
			usleep(1000);
			continue;
		}
		if (r < 0 && r != -EINTR) {
			log_warn("FUSE over io_uring: %s", strerror(-r));
			return;
		}
		struct io_uring_cqe *cqe;
		unsigned head, seen = 0;
		bool serve = false, quit = false, again = false;
		io_uring_for_each_cqe(&t->ring, head, cqe)
		{
			seen++;
			if (cqe->user_data == TAG_WAKE) {
				quit = true;
			} else if (cqe->res == -ENOTCONN || cqe->res == -ECANCELED) {
				quit = true; /* the connection ended */
			} else if (cqe->res < 0 && !t->served) {
				/* a refused REGISTER leaves the kernel on /dev/fuse */
				log_warn("FUSE over io_uring refused (%s): requests go "
					 "through /dev/fuse",
					 strerror(-cqe->res));
				quit = true;
			} else if (cqe->res < 0) {
				/* A commit refused leaves the entry out of the
				 * queue: registered again, lest a CPU lose all
				 * its entries (and the kernel hold its requests) */
				log_warn("FUSE over io_uring: a reply was refused (%s)%s",
					 strerror(-cqe->res),
					 refused < 3 ? "; the entry is registered again"
						     : "; this thread ends");
				if (refused++ < 3)
					again = true;
				else
					quit = true;
			} else {
				serve = true;
				refused = 0;
			}
		}
		io_uring_cq_advance(&t->ring, seen);
		if (serve)
			entry_serve(t);
		else if (again && !quit)
			entry_register(t, true);
		if (quit) {
			/* a reply made before the stop still goes out */
			io_uring_submit(&t->ring);
			return;
		}
	}
}

/* Waits for the INIT reply; true when the rings are to be registered. */
static bool wait_for_init(struct dm_uring *u)
{
	pthread_mutex_lock(&u->lock);
	while (u->start == START_SETUP)
		pthread_cond_wait(&u->cond, &u->lock);
	bool go = u->start == START_GO;
	pthread_mutex_unlock(&u->lock);
	return go;
}

/* The REGISTER submitted: the kernel answers it at once when it refuses it
 * (a completion with the error), and says nothing when it took it (the
 * completion comes with the entry's first request). The last thread whose
 * entry is taken publishes the payload size (dm_uring_publish()). */
static void registered(struct ring_thread *t)
{
	struct dm_uring *u = t->u;
	int err = 0;
	int r = io_uring_submit(&t->ring);
	struct io_uring_cqe *cqe;
	if (r < 0)
		err = r;
	else if (io_uring_peek_cqe(&t->ring, &cqe) == 0 && cqe->user_data == TAG_ENTRY &&
		 cqe->res < 0)
		err = cqe->res; /* left for ring_loop(), which says it */
	pthread_mutex_lock(&u->lock);
	if (err < 0) {
		if (!u->n_refused++)
			u->refused_err = err;
	} else if (++u->n_registered == u->n_threads && u->publish) {
		atomic_store(u->publish, (uint64_t)u->payload_size);
	}
	pthread_cond_broadcast(&u->cond);
	pthread_mutex_unlock(&u->lock);
}

static void *ring_main(void *arg)
{
	struct ring_thread *t = arg;
	struct dm_uring *u = t->u;
	char name[16];
	snprintf(name, sizeof(name), "fuse-ring-%u", t->qid);
	pthread_setname_np(pthread_self(), name);
	pin_to_cpu(t->qid);
	atomic_store(&t->tid, (int)syscall(SYS_gettid));

	int r = ring_setup(t);
	/* in its waiting class before INIT is answered: the kernel serves
	 * requests once each CPU has one entry, while this thread may not yet
	 * have come back from wait_for_init() */
	if (r == 0 && u->idle_class)
		set_idle(true);
	pthread_mutex_lock(&u->lock);
	u->n_setup++;
	if (r < 0 && !u->setup_failed) {
		u->setup_failed = true;
		u->setup_err = r;
		log_info("no FUSE over io_uring (%s): requests go through /dev/fuse",
			 strerror(-r));
	}
	pthread_cond_broadcast(&u->cond);
	pthread_mutex_unlock(&u->lock);

	if (r == 0 && wait_for_init(u)) {
		ring_register(t);
		registered(t);
		/* Its ring is left open when it ends: the thread's exit
		 * cancels its entry in the kernel, as the ring's submitter
		 * (io_uring_cancel_generic()), and runs the work of a request
		 * given to the entry since its last commit, which ends that
		 * request with ECANCELED (Linux 6.18). A ring closed by the
		 * thread instead is torn down by a kernel worker, which leaves
		 * such a request in the entry for ever: its asker unkillable,
		 * the connection never freed, even by an abort (design.md
		 * §10.1). */
		ring_loop(t);
	}
	return NULL;
}

static void set_start(struct dm_uring *u, enum start_state s)
{
	pthread_mutex_lock(&u->lock);
	u->start = s;
	pthread_cond_broadcast(&u->cond);
	pthread_mutex_unlock(&u->lock);
}

/* At the kernel's INIT, if it offers io_uring: one thread per entry, each
 * with a ring of its own (a single issuer). True when all are set up. */
static bool start_threads(struct dm_uring *u)
{
	size_t n = (size_t)u->n_cpus * u->per_cpu;
	u->threads = calloc(n, sizeof(*u->threads));
	if (!u->threads)
		return false;
	set_start(u, START_SETUP);
	for (size_t i = 0; i < n; i++) {
		struct ring_thread *t = &u->threads[i];
		t->u = u;
		t->qid = (unsigned)(i % u->n_cpus);
		t->wake_fd = -1;
		if (dm_thread_start(&t->thread, 0, ring_main, t) < 0)
			break;
		u->n_threads++;
	}
	pthread_mutex_lock(&u->lock);
	while (u->n_setup < u->n_threads)
		pthread_cond_wait(&u->cond, &u->lock);
	bool ok = u->n_threads == n && !u->setup_failed;
	pthread_mutex_unlock(&u->lock);
	return ok;
}


/* ---- the rescuer ---- */

/* How often the rescuer looks: a ring thread starved of the CPU is made
 * normal after two looks, 50 to 100 ms. */
#define RESCUE_PERIOD_MS 50

/* Whether thread @tid of this process is runnable (or running). */
static bool thread_runnable(int tid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* "tid (comm) S ...": the name may hold anything, the state follows
	 * its last ')' */
	const char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'R';
}

/* One look at each ring thread: one that was runnable at the last look and
 * still is, with no progress between (no completion taken, no request
 * served), is starved of the CPU; it is served as a normal thread until it
 * ends its request (entry_serve() puts it back). A thread that is running
 * a long request on an idle machine may be made normal too: it loses
 * nothing but, for that request, its place. */
static void rescue(struct dm_uring *u)
{
	for (size_t i = 0; i < u->n_threads; i++) {
		struct ring_thread *t = &u->threads[i];
		int tid = atomic_load(&t->tid);
		if (tid == 0)
			continue;
		uint64_t wakes = atomic_load(&t->wakes);
		bool stuck = wakes == t->seen_wakes && thread_runnable(tid);
		if (stuck && t->seen_stuck && !atomic_load(&t->raised)) {
			struct sched_param sp = { 0 };
			/* raised, then told: entry_serve() may see the flag
			 * late, never before the class changed */
			if (pthread_setschedparam(t->thread, SCHED_OTHER, &sp) == 0) {
				atomic_store(&t->raised, true);
				atomic_fetch_add_explicit(&u->rescued, 1, memory_order_relaxed);
			}
			stuck = false;
		}
		t->seen_wakes = wakes;
		t->seen_stuck = stuck;
	}
}

static void *rescuer_main(void *arg)
{
	struct dm_uring *u = arg;
	pthread_setname_np(pthread_self(), "fuse-rescuer");
	struct pollfd pfd = { .fd = u->rescuer_fd, .events = POLLIN };
	for (;;) {
		int r = poll(&pfd, 1, RESCUE_PERIOD_MS);
		if (r > 0 || (r < 0 && errno != EINTR))
			return NULL;
		if (r == 0)
			rescue(u);
	}
}

/* Starts the rescuer once the ring threads are all started (it reads
 * u->n_threads without a lock): only where they wait as SCHED_IDLE. */
static void rescuer_start(struct dm_uring *u)
{
	if (!u->idle_class)
		return;
	u->rescuer_fd = eventfd(0, EFD_CLOEXEC);
	if (u->rescuer_fd < 0) {
		log_warn("no rescuer for starved FUSE ring threads: %s", strerror(errno));
		return;
	}
	int r = dm_thread_start(&u->rescuer, 0, rescuer_main, u);
	if (r < 0) {
		log_warn("no rescuer for starved FUSE ring threads: %s", strerror(-r));
		close(u->rescuer_fd);
		u->rescuer_fd = -1;
		return;
	}
	u->rescuer_started = true;
}

static void rescuer_stop(struct dm_uring *u)
{
	if (!u->rescuer_started)
		return;
	if (eventfd_write(u->rescuer_fd, 1) < 0)
		log_warn("cannot stop the FUSE rescuer: %s", strerror(errno));
	pthread_join(u->rescuer, NULL);
	close(u->rescuer_fd);
	u->rescuer_fd = -1;
	u->rescuer_started = false;
}

/* ---- the session's I/O (io.c) ---- */

void dm_uring_saw_init(struct dm_uring *u, uint64_t flags, uint64_t unique)
{
	/* libfuse's loop cancels its threads when it ends, and reads with
	 * cancellation on: not while this one holds the lock or waits */
	int cancel;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	if (!(flags & URING_INIT_FLAG))
		log_info("the kernel offers no FUSE over io_uring (Linux 6.14 or later with "
			 "fuse.enable_uring=Y): requests go through /dev/fuse");
	bool ok = (flags & URING_INIT_FLAG) && start_threads(u);
	if (ok)
		rescuer_start(u);
	pthread_mutex_lock(&u->lock);
	u->init_pending = ok;
	u->init_unique = unique;
	pthread_mutex_unlock(&u->lock);
	if (!ok && u->n_threads)
		set_start(u, START_ABORT);
	pthread_setcancelstate(cancel, NULL);
}

/* The INIT reply asks for io_uring; the rings' payload buffers must hold
 * the largest request and reply the kernel will send (its max_payload_sz). */
static bool init_reply_ask(struct dm_uring *u, struct iovec *iov, int count)
{
	const struct fuse_out_header *out = iov[0].iov_base;
	if (count < 2 || out->error != 0 ||
	    iov[1].iov_len < offsetof(struct fuse_init_out, flags2) + sizeof(uint32_t))
		return false;
	struct fuse_init_out *init = iov[1].iov_base;
	init->flags |= FUSE_INIT_EXT;
	init->flags2 |= (uint32_t)(URING_INIT_FLAG >> 32);
	size_t pages = (init->flags & FUSE_MAX_PAGES) && init->max_pages ? init->max_pages : 32;
	size_t size = init->max_write > MIN_PAYLOAD ? init->max_write : MIN_PAYLOAD;
	long page = sysconf(_SC_PAGESIZE);
	if (page > 0 && pages * (size_t)page > size)
		size = pages * (size_t)page;
	u->payload_size = size;
	return true;
}

ssize_t dm_uring_writev(struct dm_uring *u, int fd, struct iovec *iov, int count)
{
	const struct fuse_out_header *out = iov[0].iov_base;
	struct ring_thread *t = current_entry;
	if (t && out->unique == t->unique && !t->replied)
		return entry_reply(t, iov, count);

	pthread_mutex_lock(&u->lock);
	bool init = u->init_pending && out->unique == u->init_unique;
	if (init)
		u->init_pending = false;
	pthread_mutex_unlock(&u->lock);
	if (!init)
		return writev(fd, iov, count);

	bool ask = init_reply_ask(u, iov, count);
	ssize_t n = writev(fd, iov, count);
	int saved = errno;
	/* the kernel has taken the reply (and is initialized) when writev
	 * returns: now the entries can be registered */
	if (ask && n >= 0)
		log_info("serving FUSE requests over io_uring: %u CPUs, %u threads each",
			 u->n_cpus, u->per_cpu);
	set_start(u, ask && n >= 0 ? START_GO : START_ABORT);
	errno = saved;
	return n;
}

void dm_uring_shape(const struct dm_uring *u, unsigned *ret_queues, unsigned *ret_per_cpu)
{
	*ret_queues = u ? u->n_cpus : 0;
	*ret_per_cpu = u ? u->per_cpu : 0;
}

int dm_uring_current_queue(void)
{
	return current_entry ? (int)current_entry->qid : -1;
}

void dm_uring_publish(struct dm_uring *u, _Atomic uint64_t *payload_size)
{
	pthread_mutex_lock(&u->lock);
	u->publish = payload_size;
	pthread_mutex_unlock(&u->lock);
}

int dm_uring_prepare(struct dm_uring *u)
{
	if (start_threads(u))
		return 0;
	set_start(u, START_ABORT);
	return u->setup_err < 0 ? u->setup_err : -EAGAIN;
}

struct kick {
	unsigned cpu;
	char *path;
};

static void *kick_main(void *arg)
{
	struct kick *k = arg;
	pthread_setname_np(pthread_self(), "fuse-kick");
	pin_to_cpu(k->cpu);
	struct statfs sf;
	if (statfs(k->path, &sf) < 0)
		log_debug("waking the FUSE queue of CPU %u: %s", k->cpu, strerror(errno));
	free(k->path);
	free(k);
	return NULL;
}

/* A request made on each CPU, by a thread pinned there: the entry the
 * kernel hands it to fetches the requests queued on that CPU before it
 * was registered (the kernel's fuse_uring_do_register() only makes the
 * entry available; its commits fetch what is queued). Joined by
 * dm_uring_stop() while the ring threads still serve: one left waiting
 * would keep the process from ending. */
static void kick(struct dm_uring *u, const char *path)
{
	u->kicks = calloc(u->n_cpus, sizeof(*u->kicks));
	for (unsigned cpu = 0; u->kicks && cpu < u->n_cpus; cpu++) {
		struct kick *k = malloc(sizeof(*k));
		char *p = strdup(path);
		pthread_t th;
		if (k && p)
			*k = (struct kick){ .cpu = cpu, .path = p };
		if (!k || !p || dm_thread_start(&th, 0, kick_main, k) < 0) {
			log_warn("cannot wake the FUSE queue of CPU %u: requests queued there "
				 "wait for the next one made there", cpu);
			free(k);
			free(p);
			continue;
		}
		u->kicks[u->n_kicks++] = th;
	}
}

int dm_uring_go(struct dm_uring *u, size_t payload_size, const char *path)
{
	u->fd = fuse_session_fd(u->se); /* given to the session after dm_uring_new() */
	u->payload_size = payload_size;
	set_start(u, START_GO);
	rescuer_start(u);
	pthread_mutex_lock(&u->lock);
	while (u->n_registered + u->n_refused < u->n_threads)
		pthread_cond_wait(&u->cond, &u->lock);
	int r = u->n_refused ? u->refused_err : 0;
	pthread_mutex_unlock(&u->lock);
	if (r < 0)
		return r;
	log_info("serving FUSE requests over io_uring on the connection taken over: %u CPUs, "
		 "%u threads each", u->n_cpus, u->per_cpu);
	kick(u, path);
	return 0;
}

uint64_t dm_uring_served(const struct dm_uring *u)
{
	return u ? atomic_load_explicit(&u->served, memory_order_relaxed) : 0;
}

uint64_t dm_uring_rescued(const struct dm_uring *u)
{
	return u ? atomic_load_explicit(&u->rescued, memory_order_relaxed) : 0;
}

void dm_uring_stop(struct dm_uring *u)
{
	if (!u)
		return;
	set_start(u, START_ABORT); /* threads still waiting for INIT's reply */
	for (size_t i = 0; i < u->n_kicks; i++)
		pthread_join(u->kicks[i], NULL);
	u->n_kicks = 0;
	rescuer_stop(u);
	for (size_t i = 0; i < u->n_threads; i++) {
		struct ring_thread *t = &u->threads[i];
		/* Normal first: until the thread has ended, the kernel may give
		 * its entry a request it will never serve (ring_main()); as
		 * SCHED_IDLE under load it could wait long for the CPU */
		struct sched_param sp = { 0 };
		if (u->idle_class)
			(void)pthread_setschedparam(t->thread, SCHED_OTHER, &sp);
		if (t->wake_fd >= 0 && eventfd_write(t->wake_fd, 1) < 0)
			log_warn("cannot stop a FUSE ring thread: %s", strerror(errno));
	}
	for (size_t i = 0; i < u->n_threads; i++) {
		struct ring_thread *t = &u->threads[i];
		pthread_join(t->thread, NULL);
		if (t->ring_ready)
			io_uring_queue_exit(&t->ring);
		if (t->wake_fd >= 0)
			close(t->wake_fd);
		free(t->hdr);
		buf_unmap(t->payload, u->payload_size);
		buf_unmap(t->req, req_size(u->payload_size));
	}
	u->n_threads = 0;
}

void dm_uring_free(struct dm_uring *u)
{
	if (!u)
		return;
	dm_uring_stop(u);
	free(u->kicks);
	free(u->threads);
	pthread_cond_destroy(&u->cond);
	pthread_mutex_destroy(&u->lock);
	free(u);
}
