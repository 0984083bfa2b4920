/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz-config.c - driverfsd.conf (src/config.c on src/conffile.c, its
 * [Sources] keys from src/buses/sources.c): any bytes give a count of
 * errors, each reported as "FILE:LINE: message" or "FILE: message", and a
 * valid file gives valid settings.
 */
#include "fuzz-util.h"

#include "buses/sources.h"
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <syslog.h>

/* Every line of @errors names the file, and there are @n of them. */
static void check_errors(const char *text, size_t len, const char *path, int n)
{
	size_t plen = strlen(path);
	int lines = 0;
	for (const char *l = text; l < text + len; lines++) {
		const char *nl = memchr(l, '\n', (size_t)(text + len - l));
		FUZZ_CHECK(nl, "an error message without its newline: '%s'", l);
		FUZZ_CHECK(strncmp(l, path, plen) == 0 && l[plen] == ':',
			   "an error that does not name the file: '%.*s'", (int)(nl - l), l);
		l = nl + 1;
	}
	/* a message holds the file's own text, which has no newline in it
	 * (lines are split on it) */
	FUZZ_CHECK(lines == n, "%d errors counted, %d reported", n, lines);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[PATH_MAX];
	char *errors = NULL;
	size_t errors_len = 0;
	struct dm_config c;

	fuzz_write(fuzz_dir(), "driverfsd.conf", data, size);
	snprintf(path, sizeof(path), "%s/driverfsd.conf", fuzz_dir());
	FILE *err = open_memstream(&errors, &errors_len);
	if (!err)
		abort();
	int r = dm_config_load(path, true, err, &c);
	fclose(err);
	FUZZ_CHECK(r >= 0 || r == -ENOMEM, "dm_config_load: %d", r);
	if (r >= 0)
		check_errors(errors, errors_len, path, r);
	if (r == 0) {
		FUZZ_CHECK(c.found, "a file that was read is not found");
		FUZZ_CHECK(c.mountpoint && c.mountpoint[0] == '/', "mount point '%s'",
			   c.mountpoint ? c.mountpoint : "(null)");
		FUZZ_CHECK(c.log_level >= LOG_ERR && c.log_level <= LOG_DEBUG, "log level %d",
			   c.log_level);
		FUZZ_CHECK(c.hook_timeout_s >= 1 && c.hook_timeout_s <= 3600, "timeout %d",
			   c.hook_timeout_s);
		for (size_t i = 0; i < dm_n_sources; i++)
			FUZZ_CHECK(c.sources[i] || dm_sources[i].role != DM_SOURCE_PLACES,
				   "%s=no accepted", dm_sources[i].key);
		FUZZ_CHECK(!c.hotplug_helper || c.hotplug_helper[0] != '\0', "empty helper");
	}
	dm_config_done(&c);
	free(errors);
	return 0;
}
