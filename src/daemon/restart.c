/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * restart.c - whether the service manager is restarting this daemon: a
 * SIGTERM that comes with a restart job queued for its unit (`systemctl
 * restart`) hands the mount over (--handover, docs/design.md §10.1) rather
 * than unmounting it; a stop still unmounts. systemd keeps the stored
 * descriptors while a job is queued. Asked over the system bus, with a
 * short timeout; any failure (no bus, no systemd, a reply of the wrong
 * shape) answers "no": the daemon then unmounts, as it always did.
 */
#include "daemon.h"

#include "util/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#define SYSTEMD "org.freedesktop.systemd1"
#define TIMEOUT_USEC (2 * 1000 * 1000)

/* The type of the job queued for the unit of this process, malloc()ed, or
 * NULL for none or when it cannot be known. */
static char *queued_job_type(sd_bus *bus)
{
	sd_bus_error err = SD_BUS_ERROR_NULL;
	sd_bus_message *reply = NULL;
	char *unit = NULL, *type = NULL;
	const char *path, *job;
	uint32_t id;
	int r = sd_bus_call_method(bus, SYSTEMD, "/org/freedesktop/systemd1",
				   SYSTEMD ".Manager", "GetUnitByPID", &err, &reply, "u",
				   (uint32_t)getpid());
	if (r >= 0)
		r = sd_bus_message_read(reply, "o", &path);
	if (r >= 0)
		unit = strdup(path);
	sd_bus_message_unref(reply);
	reply = NULL;
	if (!unit)
		goto out;
	r = sd_bus_get_property(bus, SYSTEMD, unit, SYSTEMD ".Unit", "Job", &err, &reply, "(uo)");
	if (r >= 0)
		r = sd_bus_message_read(reply, "(uo)", &id, &job);
	if (r >= 0 && id != 0 && sd_bus_get_property_string(bus, SYSTEMD, job, SYSTEMD ".Job",
							      "JobType", &err, &type) < 0)
		type = NULL;
out:
	if (sd_bus_error_is_set(&err))
		log_debug("restart job: %s", err.message ? err.message : err.name);
	sd_bus_error_free(&err);
	sd_bus_message_unref(reply);
	free(unit);
	return type;
}

bool daemon_restart_queued(void)
{
	sd_bus *bus = NULL;
	if (sd_bus_open_system(&bus) < 0)
		return false;
	sd_bus_set_method_call_timeout(bus, TIMEOUT_USEC);
	char *type = queued_job_type(bus);
	sd_bus_flush_close_unref(bus);
	/* restart, try-restart, reload-or-restart: a start follows the stop */
	bool restart = type && strstr(type, "restart") != NULL;
	if (type)
		log_info("the service manager's job for this daemon: %s", type);
	free(type);
	return restart;
}
