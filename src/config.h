/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * config.h - driverfsd.conf, the daemon's main configuration file
 * (docs/design.md §11; documented for users in driverfsd.conf(5)).
 *
 *   [Daemon]   MountPoint=<absolute path>         default /devices
 *              LogLevel=err|warning|notice|info|debug   default info
 *              HotplugHelper=<command line>       default none
 *              Coldplug=<bool>                    default no
 *              TransitionRecord=<absolute path>   default
 *                                   DM_CONFIG_TRANSITION_RECORD
 *   [Sources]  one <bool> key per source, from the registry
 *              (buses/sources.h: PCI= USB= default yes; Udev=yes, no is
 *              an error: it places every device)
 *   [PM]       HookTimeout=<seconds, 1..3600>     default 5: the Timeout=
 *                                                 of drivers.d files
 *                                                 that give none
 *   [Binding]  Protect=<names>                    device names (bus ids)
 *                                                 and kernel driver names
 *                                                 never unbound without
 *                                                 force, space-separated
 *              PersistFile=<absolute path>        default DM_PERSIST_FILE:
 *                                                 persisted bindings
 *              BindingJournal=<absolute path>     default DM_BIND_JOURNAL_FILE:
 *                                                 the transactions under
 *                                                 way, for the next start
 *                                                 to finish or undo
 *   [Fleet]    NfdFile=<absolute path>            default none: Kubernetes
 *                                                 node labels, an NFD
 *                                                 feature file kept current
 *                                                 (fleet/nfd-format.h)
 *
 * Syntax and error reporting: conffile.h's; unknown sections and keys are
 * errors. The command line wins over the file (MOUNTPOINT,
 * --hotplug-helper, --coldplug, --transition-record, --binding-journal, -d). On SIGHUP, LogLevel=, HookTimeout=
 * and Protect= take effect (with drivers.d); the others need a restart.
 */
#ifndef DM_CONFIG_H
#define DM_CONFIG_H

#include "scan/scan.h"

#include <stdbool.h>
#include <stdio.h>

#define DM_CONFIG_TRANSITION_RECORD "/run/driverfsd/transition"

struct dm_config {
	char *path; /* the file these settings come from */
	char *drivers_dir; /* the drivers.d/ beside it */
	bool found; /* false: the file does not exist, all defaults */
	char *mountpoint; /* never NULL */
	int log_level; /* LOG_ERR .. LOG_DEBUG */
	char *hotplug_helper; /* NULL: none */
	bool coldplug;
	char *transition_record; /* never NULL */
	/* [Sources]: each source on or off, indexed as the registry
	 * (dm_sources[]); the one that places devices always on */
	bool sources[DM_SCAN_SOURCES_MAX];
	int hook_timeout_s;
	char *protect; /* [Binding] Protect=, or NULL */
	char *persist_file; /* [Binding] PersistFile=, or NULL: the default */
	char *binding_journal; /* [Binding] BindingJournal=, or NULL: the default */
	char *nfd_file; /* [Fleet] NfdFile=, or NULL: none */
};

/*
 * Reads the configuration at @path into *ret (released with
 * dm_config_done() whatever the result). A missing file is fine (defaults)
 * unless @required. Returns the number of errors, each written to @errors
 * (may be NULL) as "FILE:LINE: message", or -ENOMEM.
 */
int dm_config_load(const char *path, bool required, FILE *errors, struct dm_config *ret);
void dm_config_done(struct dm_config *c);

#endif
