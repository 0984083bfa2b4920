/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bind.c - driverfsctl bind and unbind: a request written to a device's
 * binding file, which the daemon runs as a transaction (docs/design.md
 * §7.5), and the report it left there.
 */
#include "commands.h"
#include "ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* What a report says of a request that failed. The write's errno alone
 * cannot tell: a step's errno is the kernel's (a probe's own EINVAL), the
 * same number as the daemon's for a driver the bus does not have. */
enum outcome {
	OUTCOME_OTHER,
	OUTCOME_NO_DRIVER, /* refused: the bus has no driver of that name */
	OUTCOME_STEP_FAILED, /* a step failed (the kernel's errno), rolled back */
};

/* Copies the report in the device's binding file @path to standard output,
 * escaped (its lines quote process names and mount points); what it says
 * of the request. */
static enum outcome print_status(const char *path)
{
	static char buf[65536];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return OUTCOME_OTHER;
	size_t len = 0;
	ssize_t n;
	while (len < sizeof(buf) - 1 && (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len] = '\0';
	ctl_put_text(buf, len, CTL_TEXT_LINES);
	fflush(stdout);
	/* the report's own lines (binding.c), each at a line's start */
	return strstr(buf, "\nfailed: ")		     ? OUTCOME_STEP_FAILED
	       : strstr(buf, "\nrefused: the bus has no driver ") ? OUTCOME_NO_DRIVER
								  : OUTCOME_OTHER;
}

/* @verb's arguments: DEV, DRIVER (bind only, unless --default), --force,
 * --dry-run, --persist, --group (bind). */
static int bind_cmd(const char *mnt, const char *verb, int argc, char **argv)
{
	bool force = false, dry_run = false, to_default = false, persist = false, group = false;
	const char *dev = NULL, *driver = NULL;
	bool bind = strcmp(verb, "bind") == 0;
	for (int i = 0; i < argc; i++) {
		const char *s = argv[i];
		if (strcmp(s, "--force") == 0)
			force = true;
		else if (strcmp(s, "--dry-run") == 0)
			dry_run = true;
		else if (strcmp(s, "--persist") == 0)
			persist = true;
		else if (bind && strcmp(s, "--group") == 0)
			group = true;
		else if (bind && strcmp(s, "--default") == 0)
			to_default = true;
		else if (s[0] == '-' && s[1] != '\0')
			return ctl_usage_error(verb, "unknown option", s);
		else if (!dev)
			dev = s;
		else if (bind && !driver)
			driver = s;
		else
			return ctl_usage_error(verb, "unexpected argument", s);
	}
	if (!dev)
		return ctl_usage_error(verb, "needs a DEV", NULL);
	if (bind && !to_default && !driver)
		return ctl_usage_error(verb, "needs a DRIVER (or --default)", NULL);
	if (bind && to_default && driver)
		return ctl_usage_error(verb, "takes a DRIVER or --default, not both:", driver);
	if (driver && (strchr(driver, ' ') || strchr(driver, '/') || strchr(driver, '\n') ||
		       strcmp(driver, ".") == 0 || strcmp(driver, "..") == 0))
		return ctl_usage_error(verb, "not a driver name:", driver);

	char rel[PATH_MAX], file[PATH_MAX + 256], req[512];
	int r = ctl_resolve(mnt, dev, rel, sizeof(rel));
	if (r < 0)
		return ctl_fail_device(dev, -r);
	ctl_own_file(mnt, rel, "binding", file, sizeof(file));
	snprintf(req, sizeof(req), "%s%s%s%s%s", !bind ? "none" : to_default ? "default" : driver,
		 force ? " force" : "", dry_run ? " dry-run" : "", persist ? " persist" : "",
		 group ? " group" : "");
	int fd = open(file, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return ctl_fail(file, errno == ENOENT ? "not a device of a bus with drivers" : NULL,
				errno);
	/* one whole request per write, as the file takes it */
	ssize_t n = write(fd, req, strlen(req));
	int err = n < 0 ? errno : 0;
	close(fd);
	/* every request this command writes is one: its report says what
	 * became of it, whatever the errno */
	enum outcome out = print_status(file);
	if (err) {
		char what[PATH_MAX + 600];
		snprintf(what, sizeof(what), "%s %s", verb, dev);
		return ctl_fail(what,
				out == OUTCOME_STEP_FAILED
					? "a step failed with the kernel's error, and what was done "
					  "was undone (see above)"
				: err == EBUSY ? "refused: the device is in use (see above; --force "
					       "proceeds)"
				: err == EINPROGRESS ? "pending, or another request for the device "
						       "runs (see above)"
				: out == OUTCOME_NO_DRIVER
					? "no kernel driver of that name on its bus (is its module loaded?)"
					: NULL,
				err);
	}
	return CTL_OK;
}

/* driverfsctl bindings: the bindings file at the mount's top, the
 * persisted bindings and whether each is in force. */
int ctl_cmd_bindings(const char *mnt, int argc, char **argv)
{
	if (argc > 0)
		return ctl_usage_error("bindings", "unexpected argument", argv[0]);
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/bindings", mnt);
	FILE *f = fopen(path, "re");
	if (!f)
		return ctl_fail(path, errno == ENOENT ? "not a live mount" : NULL, errno);
	char line[512];
	while (fgets(line, sizeof(line), f))
		ctl_put_text(line, strlen(line), CTL_TEXT_LINES);
	fclose(f);
	return CTL_OK;
}

int ctl_cmd_bind(const char *mnt, int argc, char **argv)
{
	return bind_cmd(mnt, "bind", argc, argv);
}

int ctl_cmd_unbind(const char *mnt, int argc, char **argv)
{
	return bind_cmd(mnt, "unbind", argc, argv);
}
