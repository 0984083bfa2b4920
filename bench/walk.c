/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * walk - the load of the filesystem benchmark: walks a tree as `find | xargs
 * cat` would (every directory read, every file opened, read to the end and
 * closed, every link read), on one thread, and prints one line:
 *   <dirs> <files> <links> <bytes> <seconds> <errors> <p50-us> <p99-us>
 * the last two being the latency of reading one file (open, read to the end,
 * close) in microseconds. With --stat it only lstat()s every entry instead of
 * reading it (and the percentiles are those of one lstat). With --files
 * LIST it reads only the files LIST names, one path under DIR per line, in
 * that order (the same files of two trees, side by side).
 *
 *   walk [--stat] DIR
 *   walk --files LIST DIR
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct counts {
	unsigned long dirs, files, links, bytes, errors;
	int stat_only;
	double *lat; /* microseconds per file */
	size_t n_lat, cap_lat;
};

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void record(struct counts *c, double us)
{
	if (c->n_lat == c->cap_lat) {
		size_t cap = c->cap_lat ? c->cap_lat * 2 : 4096;
		double *v = realloc(c->lat, cap * sizeof(*v));
		if (!v)
			return; /* the percentiles then miss some files */
		c->lat = v;
		c->cap_lat = cap;
	}
	c->lat[c->n_lat++] = us;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double percentile(struct counts *c, double p)
{
	if (!c->n_lat)
		return 0;
	size_t i = (size_t)(p * (double)(c->n_lat - 1) + 0.5);
	return c->lat[i];
}

/* Opens, reads to its end and closes the file @name of @dirfd, timed. */
static void read_file(int dirfd, const char *name, struct counts *c)
{
	char buf[65536];
	double t0 = now_us();
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		/* write-only files (sysfs' remove, rescan) are not errors */
		if (errno != EACCES)
			c->errors++;
		return;
	}
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		c->bytes += (unsigned long)n;
	/* sysfs refuses some reads (EIO, ENODEV...): count, go on */
	if (n < 0)
		c->errors++;
	c->files++;
	close(fd);
	record(c, now_us() - t0);
}

/* The files LIST names (one path under @dirfd per line). */
static int read_list(int dirfd, const char *list, struct counts *c)
{
	FILE *f = fopen(list, "r");
	if (!f)
		return -1;
	char line[4096];
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (*line)
			read_file(dirfd, line, c);
	}
	fclose(f);
	return 0;
}

static void walk(int dirfd, struct counts *c)
{
	DIR *d = fdopendir(dirfd);
	if (!d) {
		c->errors++;
		close(dirfd);
		return;
	}
	c->dirs++;
	struct dirent *e;
	char buf[65536];
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2])))
			continue;
		if (c->stat_only && e->d_type != DT_DIR) {
			struct stat st;
			double t0 = now_us();
			int r = fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW);
			record(c, now_us() - t0);
			if (r < 0)
				c->errors++;
			else if (S_ISLNK(st.st_mode))
				c->links++;
			else
				c->files++;
			continue;
		}
		switch (e->d_type) {
		case DT_DIR: {
			int fd = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (fd < 0)
				c->errors++;
			else
				walk(fd, c);
			break;
		}
		case DT_LNK:
			if (readlinkat(dirfd, e->d_name, buf, sizeof(buf)) < 0)
				c->errors++;
			else
				c->links++;
			break;
		case DT_REG:
			read_file(dirfd, e->d_name, c);
			break;
		default:
			c->errors++; /* d_type must always be filled */
		}
	}
	closedir(d);
}

int main(int argc, char **argv)
{
	struct counts c = { 0 };
	const char *list = NULL;
	if (argc == 3 && strcmp(argv[1], "--stat") == 0) {
		c.stat_only = 1;
		argv++;
		argc--;
	} else if (argc == 4 && strcmp(argv[1], "--files") == 0) {
		list = argv[2];
		argv += 2;
		argc -= 2;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: walk [--stat] DIR\n       walk --files LIST DIR\n");
		return 2;
	}
	int fd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (list) {
		if (read_list(fd, list, &c) < 0) {
			perror(list);
			return 1;
		}
		close(fd);
	} else {
		walk(fd, &c);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	qsort(c.lat, c.n_lat, sizeof(*c.lat), cmp_double);
	printf("%lu %lu %lu %lu %.6f %lu %.2f %.2f\n", c.dirs, c.files, c.links, c.bytes,
	       (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9, c.errors,
	       percentile(&c, 0.5), percentile(&c, 0.99));
	free(c.lat);
	return 0;
}
