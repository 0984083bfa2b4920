/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * minfs - the floor of the filesystem benchmark: a minimal libfuse3
 * low-level server that copies a directory tree (files, directories,
 * symlinks) into memory at start and serves it read-only with the best
 * caching FUSE offers: no open/release round trips, readdirplus, listings
 * and pages kept by the kernel, symlinks cached, hour-long timeouts. What
 * driverfsd costs above it is driverfsd's own; what minfs costs above a
 * tmpfs is FUSE's.
 *
 *   minfs [-f] [--opendir] [--open] [--no-io-uring] SRC MOUNTPOINT
 *
 * --opendir answers opendir (with cache_readdir and keep_cache) instead of
 * letting the kernel skip it (FUSE_CAP_NO_OPENDIR_SUPPORT): two requests per
 * directory listed, warm or cold.
 *
 * --open answers open and release, with no work, and reads with direct_io,
 * as driverfsd serves a value it reads live (a sysfs attribute passed
 * through): the floor of such a file, an open, a read and a release round
 * trip each.
 *
 * Requests come over io_uring where the kernel offers it, as driverfsd's do
 * (src/fuse/uring.h); --no-io-uring takes them all through /dev/fuse.
 *
 * Without -f it returns once mounted, serving in the background. At exit it
 * prints the requests it served, in driverfsd's format. Built with the
 * project, never installed.
 */
#define FUSE_USE_VERSION 312
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include "fuse/io.h"
#include "fuse/uring.h"
#include <inttypes.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TIMEOUT 3600.0

struct node {
	char *name;
	char *data; /* a file's contents or a link's target */
	size_t size;
	mode_t mode;
	uint32_t parent;
	uint32_t first, n; /* a directory's children: nodes[first .. first+n) */
};

struct minfs {
	struct node *nodes; /* index = inode number; 0 unused, 1 the root */
	uint32_t n_nodes, cap;
	uint32_t *hash; /* (parent, name) -> inode; 0 empty */
	uint32_t hash_mask;
	bool opendir;
	bool open; /* --open */
	atomic_uint_fast64_t requests;
};

static uint64_t name_hash(uint32_t parent, const char *name)
{
	uint64_t h = 1469598103934665603ULL ^ parent;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 1099511628211ULL;
	return h;
}

static int node_append(struct minfs *m, const char *name, uint32_t parent)
{
	if (m->n_nodes == m->cap) {
		uint32_t cap = m->cap ? m->cap * 2 : 1024;
		struct node *v = realloc(m->nodes, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		m->nodes = v;
		m->cap = cap;
	}
	char *copy = strdup(name);
	if (!copy)
		return -ENOMEM;
	m->nodes[m->n_nodes++] = (struct node){ .name = copy, .parent = parent };
	return 0;
}

static int read_file(int dirfd, const char *name, struct node *n, off_t size)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n->data = malloc((size_t)size + 1);
	ssize_t len = n->data ? read(fd, n->data, (size_t)size + 1) : -1;
	close(fd);
	if (len < 0)
		return n->data ? -errno : -ENOMEM;
	n->size = (size_t)len;
	return 0;
}

/* Makes *@paths (a directory's source path per node) as long as the nodes. */
static int paths_fit(const struct minfs *m, char ***paths, size_t *cap)
{
	if (m->n_nodes <= *cap)
		return 0;
	char **p = realloc(*paths, m->cap * sizeof(*p));
	if (!p)
		return -ENOMEM;
	*paths = p;
	*cap = m->cap;
	return 0;
}

/* Breadth first, so that each directory's children are contiguous. */
static int load(struct minfs *m, const char *src)
{
	char **paths = NULL;
	int r = node_append(m, "", 0); /* 0: unused */
	if (r == 0)
		r = node_append(m, "", 0); /* 1: the root */
	if (r < 0)
		return r;
	m->nodes[1].mode = S_IFDIR | 0755;
	size_t cap_paths = 0;
	for (uint32_t i = 1; i < m->n_nodes; i++) {
		if (paths_fit(m, &paths, &cap_paths) < 0)
			return -ENOMEM;
		if (i == 1)
			paths[1] = strdup(src);
		struct node *n = &m->nodes[i];
		if (!S_ISDIR(n->mode))
			continue;
		DIR *d = opendir(paths[i]);
		if (!d)
			return -errno;
		n->first = m->n_nodes;
		struct dirent *e;
		while ((e = readdir(d))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			r = node_append(m, e->d_name, i);
			if (r < 0)
				return r;
			struct node *c = &m->nodes[m->n_nodes - 1];
			struct stat st;
			if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
				return -errno;
			c->mode = st.st_mode;
			if (S_ISREG(st.st_mode)) {
				r = read_file(dirfd(d), e->d_name, c, st.st_size);
			} else if (S_ISLNK(st.st_mode)) {
				char target[PATH_MAX];
				ssize_t len = readlinkat(dirfd(d), e->d_name, target, sizeof(target) - 1);
				target[len < 0 ? 0 : len] = '\0';
				c->data = strdup(target);
				c->size = strlen(target);
			}
			if (r < 0)
				return r;
			if (paths_fit(m, &paths, &cap_paths) < 0)
				return -ENOMEM;
			paths[m->n_nodes - 1] = NULL;
			if (S_ISDIR(c->mode) &&
			    asprintf(&paths[m->n_nodes - 1], "%s/%s", paths[i], e->d_name) < 0)
				return -ENOMEM;
		}
		closedir(d);
		m->nodes[i].n = m->n_nodes - m->nodes[i].first;
		free(paths[i]);
	}
	free(paths);

	uint32_t size = 1;
	while (size < m->n_nodes * 2)
		size <<= 1;
	m->hash = calloc(size, sizeof(*m->hash));
	if (!m->hash)
		return -ENOMEM;
	m->hash_mask = size - 1;
	for (uint32_t i = 2; i < m->n_nodes; i++) {
		uint64_t h = name_hash(m->nodes[i].parent, m->nodes[i].name) & m->hash_mask;
		while (m->hash[h])
			h = (h + 1) & m->hash_mask;
		m->hash[h] = i;
	}
	return 0;
}

static struct minfs *req_minfs(fuse_req_t req)
{
	struct minfs *m = fuse_req_userdata(req);
	atomic_fetch_add_explicit(&m->requests, 1, memory_order_relaxed);
	return m;
}

static void node_stat(const struct minfs *m, fuse_ino_t ino, struct stat *st)
{
	const struct node *n = &m->nodes[ino];
	*st = (struct stat){ .st_ino = ino, .st_mode = n->mode, .st_size = (off_t)n->size,
			     .st_nlink = S_ISDIR(n->mode) ? 2 : 1, .st_blksize = 4096 };
}

static bool valid(const struct minfs *m, fuse_ino_t ino)
{
	return ino >= 1 && ino < m->n_nodes;
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct minfs *m = userdata;
	atomic_fetch_add_explicit(&m->requests, 1, memory_order_relaxed);
	conn->want |= conn->capable & ((m->open ? 0 : FUSE_CAP_NO_OPEN_SUPPORT) |
				       FUSE_CAP_CACHE_SYMLINKS | FUSE_CAP_READDIRPLUS);
	conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
	if (!m->opendir)
		conn->want |= conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct minfs *m = req_minfs(req);
	uint64_t h = name_hash((uint32_t)parent, name) & m->hash_mask;
	for (uint32_t i; (i = m->hash[h]); h = (h + 1) & m->hash_mask) {
		if (m->nodes[i].parent == parent && strcmp(m->nodes[i].name, name) == 0) {
			struct fuse_entry_param e = { .ino = i, .generation = 1,
						      .entry_timeout = TIMEOUT,
						      .attr_timeout = TIMEOUT };
			node_stat(m, i, &e.attr);
			fuse_reply_entry(req, &e);
			return;
		}
	}
	fuse_reply_err(req, ENOENT);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	req_minfs(req);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	req_minfs(req);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct minfs *m = req_minfs(req);
	struct stat st;
	if (!valid(m, ino)) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	node_stat(m, ino, &st);
	fuse_reply_attr(req, &st, TIMEOUT);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct minfs *m = req_minfs(req);
	if (!valid(m, ino) || !S_ISLNK(m->nodes[ino].mode))
		fuse_reply_err(req, EINVAL);
	else
		fuse_reply_readlink(req, m->nodes[ino].data);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct minfs *m = req_minfs(req);
	if (!m->opendir) {
		/* once: the kernel then lists with cached listings by itself */
		fuse_reply_err(req, ENOSYS);
		return;
	}
	fi->cache_readdir = 1;
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

/* readdir and readdirplus: offsets 0 ".", 1 "..", 2 + i the i-th child. */
static void list(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus)
{
	struct minfs *m = req_minfs(req);
	if (!valid(m, ino) || !S_ISDIR(m->nodes[ino].mode)) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	const struct node *d = &m->nodes[ino];
	char *buf = malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	size_t len = 0;
	for (off_t i = off; i < (off_t)d->n + 2; i++) {
		struct fuse_entry_param e = { .generation = 1, .entry_timeout = TIMEOUT,
					      .attr_timeout = TIMEOUT };
		const char *name = i == 0 ? "." : "..";
		if (i < 2) {
			e.attr.st_ino = ino;
			e.attr.st_mode = S_IFDIR;
		} else {
			e.ino = d->first + (fuse_ino_t)(i - 2);
			name = m->nodes[e.ino].name;
			node_stat(m, e.ino, &e.attr);
		}
		size_t need = plus ? fuse_add_direntry_plus(req, buf + len, size - len, name, &e, i + 1)
				   : fuse_add_direntry(req, buf + len, size - len, name, &e.attr, i + 1);
		if (need > size - len)
			break;
		len += need;
	}
	fuse_reply_buf(req, buf, len);
	free(buf);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	list(req, ino, size, off, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	list(req, ino, size, off, true);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct minfs *m = req_minfs(req);
	if (!m->open) {
		fuse_reply_err(req, ENOSYS); /* once: the kernel opens files by itself */
		return;
	}
	fi->direct_io = 1; /* every read comes here, as a live value's does */
	fuse_reply_open(req, fi);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	req_minfs(req);
	fuse_reply_err(req, 0);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct minfs *m = req_minfs(req);
	if (!valid(m, ino) || !S_ISREG(m->nodes[ino].mode)) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	const struct node *n = &m->nodes[ino];
	if ((size_t)off >= n->size)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_buf(req, n->data + off, n->size - (size_t)off < size ? n->size - (size_t)off : size);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	req_minfs(req);
	struct statvfs sv = { .f_bsize = 4096, .f_frsize = 4096, .f_namemax = 255 };
	fuse_reply_statfs(req, &sv);
}

static const struct fuse_lowlevel_ops minfs_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.readlink = op_readlink,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.open = op_open,
	.release = op_release,
	.read = op_read,
	.statfs = op_statfs,
};

int main(int argc, char **argv)
{
	struct minfs m = { 0 };
	bool foreground = false, no_io_uring = false;
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-f"))
			foreground = true;
		else if (!strcmp(argv[i], "--opendir"))
			m.opendir = true;
		else if (!strcmp(argv[i], "--open"))
			m.open = true;
		else if (!strcmp(argv[i], "--no-io-uring"))
			no_io_uring = true;
		else
			break;
	}
	if (argc - i != 2) {
		fprintf(stderr, "usage: minfs [-f] [--opendir] [--open] [--no-io-uring] SRC MOUNTPOINT\n");
		return 2;
	}
	int r = load(&m, argv[i]);
	if (r < 0) {
		fprintf(stderr, "minfs: %s: %s\n", argv[i], strerror(-r));
		return 1;
	}
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	if (fuse_opt_add_arg(&args, argv[0]) < 0 || fuse_opt_add_arg(&args, "-o") < 0 ||
	    fuse_opt_add_arg(&args, geteuid() == 0
					    ? "ro,default_permissions,allow_other,fsname=minfs"
					    : "ro,default_permissions,fsname=minfs") < 0)
		return 1;
	struct fuse_session *se = fuse_session_new(&args, &minfs_ops, sizeof(minfs_ops), &m);
	if (!se || fuse_session_mount(se, argv[i + 1]) != 0) {
		fprintf(stderr, "minfs: cannot mount at %s\n", argv[i + 1]);
		return 1;
	}
	/* the same transport as driverfsd's: io_uring where the kernel offers it */
	struct dm_uring *uring = NULL;
	if (!no_io_uring && dm_uring_new(se, DM_URING_THREADS_PER_CPU, &uring) < 0)
		uring = NULL;
	if (uring && dm_fs_io_attach(se, fuse_session_fd(se), uring, NULL, NULL) < 0) {
		dm_uring_free(uring);
		uring = NULL;
	}
	if (fuse_set_signal_handlers(se) != 0 || fuse_daemonize(foreground) != 0)
		return 1;
	/* the same loop as driverfsd's */
	struct fuse_loop_config *cfg = fuse_loop_cfg_create();
	if (!cfg)
		return 1;
	fuse_loop_cfg_set_clone_fd(cfg, 0);
	fuse_loop_cfg_set_max_threads(cfg, 16);
	fuse_loop_cfg_set_idle_threads(cfg, 16);
	r = fuse_session_loop_mt(se, cfg);
	fuse_loop_cfg_destroy(cfg);
	dm_fs_io_detach(se);
	dm_uring_free(uring);
	fprintf(stderr, "fuse requests: %" PRIu64 "\n",
		(uint64_t)atomic_load_explicit(&m.requests, memory_order_relaxed));
	fuse_remove_signal_handlers(se);
	fuse_session_unmount(se);
	fuse_session_destroy(se);
	fuse_opt_free_args(&args);
	return r < 0 ? 1 : 0;
}
