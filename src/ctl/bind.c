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
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The device's binding file @path, the why and the report of its last
 * request, into @buf (NUL-terminated); its length, or -errno. */
static ssize_t read_status(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t len = 0;
	ssize_t n = 0;
	while (len < size - 1 && (n = read(fd, buf + len, size - 1 - len)) > 0)
		len += (size_t)n;
	int err = n < 0 ? errno : 0;
	close(fd);
	buf[len] = '\0';
	return err ? -err : (ssize_t)len;
}

/* The number of the report in a binding file's text @s ("last request
 * (#N):"), 0 for none. */
static unsigned long report_number(const char *s)
{
	static const char head[] = "\nlast request (#";
	const char *p = strstr(s, head);
	return p ? strtoul(p + sizeof(head) - 1, NULL, 10) : 0;
}

/* The request @req written to the request file @file in one write, and
 * the file read after it into @after (its length in *ret_len, -errno when
 * unread): the write's errno (0 done), or -errno when @file cannot be
 * opened. *ret_ran: the request left a report of its own. The write's
 * errno alone cannot say what became of the request: a step's is the
 * kernel's (a probe refuses with EINVAL), the same number as the daemon's
 * for a driver the bus does not have, which changes nothing, the report
 * included. A report of its own, its number moved on, says it ran. */
static int send_request(const char *file, const char *req, char *after, size_t size,
			ssize_t *ret_len, bool *ret_ran)
{
	static char before[65536];
	int fd = open(file, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	unsigned long seq = read_status(file, before, sizeof(before)) >= 0 ? report_number(before)
									  : 0;
	/* one whole request per write, as the file takes it */
	ssize_t n = write(fd, req, strlen(req));
	int err = n < 0 ? errno : 0;
	close(fd);
	*ret_len = read_status(file, after, size);
	*ret_ran = *ret_len >= 0 && report_number(after) != seq;
	return err;
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
	static char after[65536];
	ssize_t len;
	bool ran;
	int err = send_request(file, req, after, sizeof(after), &len, &ran);
	if (err < 0)
		return ctl_fail(file, -err == ENOENT ? "not a device of a bus with drivers" : NULL,
				-err);
	if (ran || err != EINVAL) {
		ctl_put_text(after, len > 0 ? (size_t)len : 0, CTL_TEXT_LINES);
		fflush(stdout);
	}
	if (err) {
		char what[PATH_MAX + 600];
		snprintf(what, sizeof(what), "%s %s", verb, dev);
		/* a dry run's plan names every reason the request would be
		 * refused (above); the errno is the real request's, the first */
		const char *dry = !ran || !dry_run ? NULL
				  : err == EINVAL && driver
					  ? "no kernel driver of that name on its bus (is its module "
					    "loaded?); the plan above names every reason the request "
					    "would be refused"
				  : err == EBUSY ? "refused: the device is in use (see above; --force "
						   "proceeds)"
						 : "the plan above names every reason the request "
						   "would be refused";
		return ctl_fail(what,
				dry ? dry
				: ran && strstr(after, "\nfailed: ")
					? "a step failed with the kernel's error, and what was done "
					  "was undone (see above)"
				: err == EBUSY ? "refused: the device is in use (see above; --force "
					       "proceeds)"
				: err == EINPROGRESS ? "pending, or another request for the device "
						       "runs (see above)"
				: ran ? "refused (see above)"
				: err == EINVAL && driver
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

/* driverfsctl sriov DEV N [--driver DRIVER] [--force] [--dry-run]
 * [--persist|--forget]: a request written to the PF's sriov file, which the daemon
 * runs as one transaction (docs/design.md §7.5, SR-IOV), and its report. */
int ctl_cmd_sriov(const char *mnt, int argc, char **argv)
{
	bool force = false, dry_run = false, persist = false, forget = false;
	const char *dev = NULL, *count = NULL, *driver = NULL;
	for (int i = 0; i < argc; i++) {
		const char *s = argv[i];
		if (strcmp(s, "--force") == 0)
			force = true;
		else if (strcmp(s, "--dry-run") == 0)
			dry_run = true;
		else if (strcmp(s, "--persist") == 0)
			persist = true;
		else if (strcmp(s, "--forget") == 0)
			forget = true;
		else if (strcmp(s, "--driver") == 0 && i + 1 < argc && !driver)
			driver = argv[++i];
		else if (strncmp(s, "--driver=", 9) == 0 && !driver)
			driver = s + 9;
		else if (s[0] == '-' && s[1] != '\0')
			return ctl_usage_error("sriov", "unknown option", s);
		else if (!dev)
			dev = s;
		else if (!count)
			count = s;
		else
			return ctl_usage_error("sriov", "unexpected argument", s);
	}
	if (!dev || !count)
		return ctl_usage_error("sriov", "needs a DEV and a VF count N", NULL);
	if (persist && forget)
		return ctl_usage_error("sriov", "takes --persist or --forget, not both", NULL);
	if (!count[0] || strspn(count, "0123456789") != strlen(count) || strlen(count) > 5)
		return ctl_usage_error("sriov", "not a VF count:", count);
	if (driver && (!driver[0] || strchr(driver, ' ') || strchr(driver, '/') ||
		       strchr(driver, '\n') || strcmp(driver, ".") == 0 || strcmp(driver, "..") == 0 ||
		       strcmp(driver, "force") == 0 || strcmp(driver, "dry-run") == 0 ||
		       strcmp(driver, "persist") == 0 || strcmp(driver, "forget") == 0))
		return ctl_usage_error("sriov", "not a driver name:", driver);

	char rel[PATH_MAX], file[PATH_MAX + 256], req[512];
	int r = ctl_resolve(mnt, dev, rel, sizeof(rel));
	if (r < 0)
		return ctl_fail_device(dev, -r);
	ctl_own_file(mnt, rel, "sriov", file, sizeof(file));
	snprintf(req, sizeof(req), "%s%s%s%s%s%s%s", count, driver ? " " : "", driver ? driver : "",
		 force ? " force" : "", dry_run ? " dry-run" : "", persist ? " persist" : "",
		 forget ? " forget" : "");
	static char after[65536];
	ssize_t len;
	bool ran;
	int err = send_request(file, req, after, sizeof(after), &len, &ran);
	if (err < 0)
		return ctl_fail(file, -err == ENOENT ? "not an SR-IOV physical function" : NULL, -err);
	if (ran || !err) {
		ctl_put_text(after, len > 0 ? (size_t)len : 0, CTL_TEXT_LINES);
		fflush(stdout);
	}
	if (err) {
		char what[PATH_MAX + 600];
		snprintf(what, sizeof(what), "sriov %s %s", dev, count);
		return ctl_fail(what,
				!ran && err == EINVAL && driver
					? "no kernel driver of that name on the PCI bus (is its module "
					  "loaded?)"
				: !ran && err == ERANGE ? "more VFs than the PF has (its sriov_totalvfs)"
				: !ran && err == EOPNOTSUPP ? "not an SR-IOV physical function"
				: ran && strstr(after, "\nfailed: ")
					? "a step failed with the kernel's error; the PF's count and "
					  "every VF were put back (see above)"
				: err == EBUSY ? "refused: a VF is in use (see above; --force proceeds)"
				: err == EINPROGRESS ? "pending, or another request for the PF runs "
						       "(see above)"
				: ran ? "refused (see above)"
				      : NULL,
				err);
	}
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
