/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * metrics.c - driverfsctl metrics: the metrics file at the mount's top (the daemon's
 * counters and the model's gauges in the Prometheus text format 0.0.4)
 * after a driverfsd_up gauge, on standard output or as a file replaced
 * whole (a textfile collector may read it at any moment). When the mount
 * cannot be read, the file says driverfsd_up 0 rather than keeping the
 * last figures, so that a scraper sees the daemon down, not stale.
 */
#include "commands.h"
#include "ctl.h"
#include "util/readall.h"
#include "util/replace.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define METRICS_MAX (64u << 20)

static const char up_family[] =
	"# HELP driverfsd_up Whether driverfsctl metrics could read the mount's metrics file.\n"
	"# TYPE driverfsd_up gauge\n";

/* driverfsd_up @up, then @body: a malloc()ed text. */
static char *compose(int up, const char *body, size_t body_len, size_t *ret_len)
{
	char head[sizeof(up_family) + 32];
	int n = snprintf(head, sizeof(head), "%sdriverfsd_up %d\n", up_family, up);
	char *text = malloc((size_t)n + body_len + 1);
	if (!text)
		return NULL;
	memcpy(text, head, (size_t)n);
	memcpy(text + n, body, body_len);
	text[(size_t)n + body_len] = '\0';
	*ret_len = (size_t)n + body_len;
	return text;
}

static int put(const char *file, const char *text, size_t len, char *msg, size_t size)
{
	*msg = '\0';
	if (!file || strcmp(file, "-") == 0)
		return fwrite(text, 1, len, stdout) == len && fflush(stdout) == 0 ? 0 : -EIO;
	return dm_replace_file(file, text, len, msg, size);
}

int ctl_cmd_metrics(const char *mnt, int argc, char **argv)
{
	struct ctl_args a;
	int ret = ctl_parse_args("metrics", argc, argv, 0, 1, false, &a);
	if (ret)
		return ret;
	char path[PATH_MAX], *body = NULL;
	size_t body_len = 0, len;
	int r, fd = -1;
	if ((size_t)snprintf(path, sizeof(path), "%s/metrics", mnt) >= sizeof(path))
		r = -ENAMETOOLONG;
	else if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		r = -errno;
	else
		r = dm_read_all(fd, 65536, METRICS_MAX, &body, &body_len);
	if (fd >= 0)
		close(fd);
	char *text = compose(r == 0, r == 0 ? body : "", r == 0 ? body_len : 0, &len);
	free(body);
	if (!text)
		return ctl_fail("metrics", NULL, ENOMEM);
	char why[64] = "";
	int w = r == 0 || a.arg ? put(a.arg, text, len, why, sizeof(why)) : 0;
	free(text);
	if (r < 0)
		return ctl_fail(path, r == -ENOENT ? "no such file: not a driverfs mount, or a "
						   "daemon older than this driverfsctl"
						 : NULL,
				-r);
	if (w < 0)
		return ctl_fail(a.arg ? a.arg : "standard output", *why ? why : NULL, -w);
	return CTL_OK;
}
