/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * power.c - driverfsctl suspend and resume: a transition asked of a
 * device's power file (the whole system's at the mount's top), and the
 * journal it left in the power_log beside it.
 */
#include "commands.h"
#include "ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Copies the journal to standard output, or as a JSON array. */
static int print_journal(const char *mnt, bool json)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/power_log", mnt);
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	json_object *doc = json ? json_object_new_array() : NULL;
	char line[PATH_MAX + 128];
	while (fgets(line, sizeof(line), f)) {
		char phase[32], dev[PATH_MAX], result[64];
		unsigned long seq;
		long usec;
		if (!doc) {
			ctl_put_text(line, strlen(line), CTL_TEXT_LINES);
			continue;
		}
		if (sscanf(line, "%lu %31s %4095s %63s %ld", &seq, phase, dev, result, &usec) != 5)
			continue;
		json_object *o = json_object_new_object();
		json_object_object_add(o, "seq", json_object_new_int64((int64_t)seq));
		json_object_object_add(o, "phase", json_object_new_string(phase));
		json_object_object_add(o, "path", json_object_new_string(dev));
		json_object_object_add(o, "result", json_object_new_string(result));
		json_object_object_add(o, "usec", json_object_new_int64(usec));
		json_object_array_add(doc, o);
	}
	fclose(f);
	if (doc) {
		ctl_print_json(doc);
		json_object_put(doc);
	}
	return 0;
}

static int power(const char *mnt, const char *verb, int argc, char **argv)
{
	struct ctl_args a;
	int ret = ctl_parse_args(verb, argc, argv, CTL_OPT_DRY_RUN | CTL_OPT_JSON, 1, false, &a);
	if (ret)
		return ret;
	int rootfd = ctl_open_root(mnt);
	if (rootfd < 0)
		return CTL_FAILED;
	char rel[PATH_MAX], file[PATH_MAX + 256];
	int r = ctl_resolve(mnt, a.arg, rel, sizeof(rel));
	close(rootfd);
	if (r < 0)
		return ctl_fail_device(a.arg, -r);
	ctl_own_file(mnt, rel, "power", file, sizeof(file));
	char word[32];
	snprintf(word, sizeof(word), "%s%s", verb, a.flags & CTL_OPT_DRY_RUN ? "-dry-run" : "");
	int fd = open(file, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return ctl_fail(file, NULL, errno);
	/* one whole value per write, as the file takes it */
	ssize_t n = write(fd, word, strlen(word));
	int err = n < 0 ? errno : 0;
	close(fd);
	print_journal(mnt, a.flags & CTL_OPT_JSON);
	if (err) {
		char what[PATH_MAX + 32];
		snprintf(what, sizeof(what), "%s %s", verb, *rel ? rel : "(system)");
		return ctl_fail(what,
				err == EIO && strcmp(verb, "resume") == 0
					? "a resume hook failed (see the power_error of the device "
					  "that failed); every other device was resumed"
				: err == EIO ? "a hook failed; rolled back (see the power_error of the "
					       "device that failed)"
				: err == EBUSY ? "another transition is running"
					       : NULL,
				err);
	}
	return CTL_OK;
}

int ctl_cmd_suspend(const char *mnt, int argc, char **argv)
{
	return power(mnt, "suspend", argc, argv);
}

int ctl_cmd_resume(const char *mnt, int argc, char **argv)
{
	return power(mnt, "resume", argc, argv);
}
