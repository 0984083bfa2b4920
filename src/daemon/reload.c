/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * reload.c - driverfsd's configuration and drivers.d/: read at start,
 * checked by --check-config, and read again on SIGHUP, when either both are
 * valid and taken or nothing changes.
 */
#include "daemon.h"

#include "config.h"
#include "drivers/binding.h"
#include "drivers/exec.h"
#include "fuse/fs.h"
#include "util/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Logs each line of @text (a FILE:LINE: message list; may be NULL) at
 * @level. */
static void log_lines(int level, char *text)
{
	char *save = NULL;
	for (char *line = text ? strtok_r(text, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save))
		dm_log(level, "%s", line);
}

/* Reads the configuration (--config FILE, which must exist, else the
 * default one, which may be missing) into @cfg; the errors go to @errors.
 * Returns the number of errors or -errno. */
static int config_read(const struct options *o, FILE *errors, struct dm_config *cfg)
{
	return dm_config_load(o->config ? o->config : DEFAULT_CONFIG, o->config != NULL, errors,
			      cfg);
}

/* --check-config: the configuration, then every drivers.d/ *.conf. */
int daemon_check_config(const struct options *o)
{
	struct dm_config cfg;
	int r = config_read(o, stderr, &cfg);
	if (r < 0) {
		fprintf(stderr, "driverfsd: %s\n", strerror(-r));
	} else if (cfg.found || !o->config) {
		/* (a --config FILE that is missing has no drivers.d/ to speak of) */
		int n = dm_exec_check_dir(cfg.drivers_dir, cfg.hook_timeout_s, stderr);
		if (n < 0)
			fprintf(stderr, "%s: %s\n", cfg.drivers_dir, strerror(-n));
		r += n < 0 ? 1 : n;
	}
	dm_config_done(&cfg);
	return r == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

int daemon_log_level(const struct options *o, const struct dm_config *cfg)
{
	return o->debug ? LOG_DEBUG : cfg->log_level;
}

/* At start: the configuration, its errors logged; the command line wins
 * over the file. */
int daemon_load_config(struct daemon *d)
{
	const struct options *o = d->o;
	char *text = NULL;
	size_t size;
	FILE *errors = open_memstream(&text, &size);
	int r = errors ? config_read(o, errors, &d->cfg) : -ENOMEM;
	if (errors)
		fclose(errors);
	log_lines(LOG_ERR, text);
	free(text);
	if (r != 0) {
		if (r > 0)
			log_err("%s: %d error%s", d->cfg.path, r, r == 1 ? "" : "s");
		return r > 0 ? -EINVAL : r;
	}
	dm_log_set_level(daemon_log_level(o, &d->cfg));
	d->mountpoint = o->mountpoint ? o->mountpoint : d->cfg.mountpoint;
	d->helper_cmd = o->helper ? o->helper : d->cfg.hotplug_helper;
	return 0;
}

/* Registers the exec drivers of cfg's drivers.d/. A file with errors
 * stops the daemon: they are logged with file and line. */
int daemon_load_drivers(struct daemon *d)
{
	char *text = NULL;
	size_t size;
	FILE *errors = open_memstream(&text, &size);
	if (!errors)
		return -ENOMEM;
	int r = dm_exec_load_dir(d->model, d->needs, d->cfg.drivers_dir, d->cfg.hook_timeout_s,
				 errors, &d->exec);
	fclose(errors);
	log_lines(LOG_ERR, text);
	free(text);
	if (r > 0)
		log_err("%s: %d error%s; no driver loaded", d->cfg.drivers_dir, r,
			r == 1 ? "" : "s");
	else if (r < 0)
		log_err("%s: %s", d->cfg.drivers_dir, strerror(-r));
	return r;
}

/* The settings a reload cannot change: said, not silently ignored. */
static void warn_unreloadable(const struct dm_config *old, const struct dm_config *new)
{
	const char *changed = NULL;
	if (strcmp(old->mountpoint, new->mountpoint) != 0)
		changed = "MountPoint=";
	else if ((old->hotplug_helper == NULL) != (new->hotplug_helper == NULL) ||
		 (old->hotplug_helper && strcmp(old->hotplug_helper, new->hotplug_helper) != 0))
		changed = "HotplugHelper=";
	else if (old->coldplug != new->coldplug)
		changed = "Coldplug=";
	else if (strcmp(old->transition_record, new->transition_record) != 0)
		changed = "TransitionRecord=";
	else if ((old->binding_journal == NULL) != (new->binding_journal == NULL) ||
		 (old->binding_journal && strcmp(old->binding_journal, new->binding_journal) != 0))
		changed = "BindingJournal=";
	else if ((old->nfd_file == NULL) != (new->nfd_file == NULL) ||
		 (old->nfd_file && strcmp(old->nfd_file, new->nfd_file) != 0))
		changed = "NfdFile=";
	else if (memcmp(old->sources, new->sources, sizeof(old->sources)) != 0)
		changed = "[Sources]";
	if (changed)
		log_warn("%s: %s changed; it takes effect at the next start", new->path, changed);
}

/* SIGHUP, on the service's thread: the configuration and drivers.d/ are
 * read again; either both are valid and taken, or nothing changes. */
void daemon_reload(void *data, char *status, size_t size)
{
	struct daemon *d = data;
	struct dm_config cfg = { 0 };
	char *text = NULL;
	size_t len;
	int r = -ENOMEM;
	FILE *errors = open_memstream(&text, &len);
	if (errors) {
		r = config_read(d->o, errors, &cfg);
		if (r == 0)
			r = dm_exec_reload(d->model, &d->exec, cfg.drivers_dir, cfg.hook_timeout_s,
					   errors);
		fclose(errors);
		log_lines(LOG_ERR, text);
		free(text);
	}
	if (r != 0) {
		if (r > 0)
			snprintf(status, size, "reload failed: %d error%s", r, r == 1 ? "" : "s");
		else
			snprintf(status, size, "reload failed: %s", strerror(-r));
		log_err("%s; the drivers and settings in effect stay", status);
		atomic_fetch_add_explicit(&d->reloads[1], 1, memory_order_relaxed);
		dm_config_done(&cfg);
		return;
	}
	warn_unreloadable(&d->cfg, &cfg);
	dm_log_set_level(daemon_log_level(d->o, &cfg));
	if (d->binder && dm_binder_set_protected(d->binder, cfg.protect) < 0)
		log_err("reload: out of memory for Protect=; the list in effect stays");
	dm_config_done(&d->cfg);
	d->cfg = cfg;
	log_info("reloaded %s and %s", d->cfg.path, d->cfg.drivers_dir);
	snprintf(status, size, "reloaded");
	atomic_fetch_add_explicit(&d->reloads[0], 1, memory_order_relaxed);
	/* READY=1 follows: by then the mount shows the new bindings */
	if (d->fs)
		dm_fs_sync_invalidations(d->fs);
}
