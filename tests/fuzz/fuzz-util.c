/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "fuzz-util.h"

#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char scratch[PATH_MAX];

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static void scratch_remove(void)
{
	nftw(scratch, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

const char *fuzz_dir(void)
{
	if (scratch[0])
		return scratch;
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(scratch, sizeof(scratch), "%s/driverfs-fuzz-XXXXXX", base);
	if (!mkdtemp(scratch)) {
		perror("mkdtemp");
		abort();
	}
	atexit(scratch_remove);
	return scratch;
}

void fuzz_write(const char *dir, const char *name, const void *data, size_t size)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size) || close(fd) < 0) {
		perror(path);
		abort();
	}
}

char *fuzz_read(const char *path, size_t *ret_len)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t cap = 0, len = 0, n;
	if (!f) {
		perror(path);
		abort();
	}
	do {
		if (len + 4096 + 1 > cap) {
			cap = (len + 4096 + 1) * 2;
			buf = realloc(buf, cap);
			if (!buf)
				abort();
		}
		n = fread(buf + len, 1, 4096, f);
		len += n;
	} while (n > 0);
	fclose(f);
	buf[len] = '\0';
	*ret_len = len;
	return buf;
}
