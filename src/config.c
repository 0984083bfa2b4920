/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* config.c - driverfsd.conf: the keys, their values and defaults. */
#include "config.h"

#include "buses/sources.h"
#include "drivers/exec.h"
#include "util/conffile.h"

#include <errno.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>

static const char *const log_levels[] = {
	[LOG_ERR] = "err", [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
	[LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};

/* What parsing needs besides the settings: each key's line, so that a
 * second one is reported ([Sources]' keys: by the registry's index). */
struct config_parse {
	struct dm_config *c;
	unsigned lines[16];
	unsigned source_lines[DM_SCAN_SOURCES_MAX];
};

/* One key: where it is and how its value is read into struct dm_config. */
enum key_type { KEY_PATH, KEY_LOG_LEVEL, KEY_COMMAND, KEY_BOOL, KEY_TIMEOUT, KEY_YES, KEY_NAMES };

struct config_key {
	const char *section;
	const char *name;
	enum key_type type;
	size_t offset;
};

#define KEY(sec, name, type, field) { sec, name, type, offsetof(struct dm_config, field) }
static const struct config_key keys[] = {
	KEY("Daemon", "MountPoint", KEY_PATH, mountpoint),
	KEY("Daemon", "LogLevel", KEY_LOG_LEVEL, log_level),
	KEY("Daemon", "HotplugHelper", KEY_COMMAND, hotplug_helper),
	KEY("Daemon", "Coldplug", KEY_BOOL, coldplug),
	KEY("Daemon", "TransitionRecord", KEY_PATH, transition_record),
	KEY("PM", "HookTimeout", KEY_TIMEOUT, hook_timeout_s),
	KEY("Binding", "Protect", KEY_NAMES, protect),
	KEY("Binding", "PersistFile", KEY_PATH, persist_file),
	KEY("Binding", "BindingJournal", KEY_PATH, binding_journal),
	KEY("Fleet", "NfdFile", KEY_PATH, nfd_file),
};
#undef KEY

static void set_value(struct dm_conffile *cf, const struct config_key *k, const char *value,
		      void *field)
{
	char msg[512];
	int r;

	switch (k->type) {
	case KEY_PATH:
		if (value[0] != '/')
			dm_conffile_error(cf, "bad %s '%s' (an absolute path)", k->name, value);
		else
			dm_conffile_set_string(cf, field, value);
		return;
	case KEY_LOG_LEVEL:
		for (size_t i = 0; i < sizeof(log_levels) / sizeof(log_levels[0]); i++) {
			if (log_levels[i] && strcasecmp(value, log_levels[i]) == 0) {
				*(int *)field = (int)i;
				return;
			}
		}
		dm_conffile_error(cf, "bad %s '%s' (err, warning, notice, info or debug)",
				  k->name, value);
		return;
	case KEY_COMMAND:
		r = dm_exec_check_command(value, msg, sizeof(msg));
		if (r < 0)
			dm_conffile_fail(cf, r);
		else if (r > 0)
			dm_conffile_error(cf, "%s=: %s", k->name, msg);
		else
			dm_conffile_set_string(cf, field, value);
		return;
	case KEY_BOOL:
		if (!dm_conf_parse_bool(value, field))
			dm_conffile_error(cf, "bad %s '%s' (yes or no)", k->name, value);
		return;
	case KEY_YES:
		/* the pci and usb sources complete the records udev's makes:
		 * without it the tree would be empty */
		if (!dm_conf_parse_bool(value, field))
			dm_conffile_error(cf, "bad %s '%s' (yes or no)", k->name, value);
		else if (!*(bool *)field)
			dm_conffile_error(cf, "%s=%s is not possible: the udev source places "
					  "every device, the others complete its records", k->name,
					  value);
		return;
	case KEY_NAMES:
		/* device names (bus ids) and driver names, separated by spaces */
		for (const char *p = value; *p; p += strspn(p, " ")) {
			size_t len = strcspn(p, " ");
			if (len && !dm_name_is_plain(p, len)) {
				dm_conffile_error(cf, "bad %s '%s' (device and driver names, "
						      "separated by spaces)",
						  k->name, value);
				return;
			}
			p += len;
		}
		dm_conffile_set_string(cf, field, value);
		return;
	case KEY_TIMEOUT:
		if (!dm_conf_parse_int(value, 1, DM_EXEC_TIMEOUT_MAX_S, field))
			dm_conffile_error(cf, "bad %s '%s' (seconds, from 1 to %d)", k->name, value,
					  DM_EXEC_TIMEOUT_MAX_S);
		return;
	}
}

/* A key of [Sources]: the registry's (src/buses/sources.c), one per
 * source; the one that places devices cannot be turned off. */
static void source_key(struct dm_conffile *cf, struct config_parse *p, const char *key,
		       const char *value)
{
	int i = dm_source_find_key(key);
	if (i < 0) {
		dm_conffile_error(cf, "unknown key %s in [Sources]", key);
		return;
	}
	if (dm_conffile_duplicate(cf, key, p->source_lines[i]))
		return;
	p->source_lines[i] = dm_conffile_line(cf);
	const struct config_key k = { "Sources", dm_sources[i].key,
				      dm_sources[i].role == DM_SOURCE_PLACES ? KEY_YES : KEY_BOOL,
				      0 };
	set_value(cf, &k, value, &p->c->sources[i]);
}

static void config_key(struct dm_conffile *cf, const char *section, const char *key,
		       const char *value, void *data)
{
	struct config_parse *p = data;
	if (strcmp(section, "Sources") == 0) {
		source_key(cf, p, key, value);
		return;
	}
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const struct config_key *k = &keys[i];
		if (strcmp(k->section, section) != 0 || strcmp(k->name, key) != 0)
			continue;
		if (dm_conffile_duplicate(cf, key, p->lines[i]))
			return;
		p->lines[i] = dm_conffile_line(cf);
		set_value(cf, k, value, (char *)p->c + k->offset);
		return;
	}
	dm_conffile_error(cf, "unknown key %s in [%s]", key, section);
}

static const char *const sections[] = { "Daemon", "Sources", "PM", "Binding", "Fleet", NULL };

static const struct dm_conffile_ops config_ops = {
	.sections = sections,
	.key = config_key,
};

void dm_config_done(struct dm_config *c)
{
	free(c->path);
	free(c->drivers_dir);
	free(c->mountpoint);
	free(c->hotplug_helper);
	free(c->transition_record);
	free(c->protect);
	free(c->persist_file);
	free(c->binding_journal);
	free(c->nfd_file);
	*c = (struct dm_config){ 0 };
}

static int config_init(struct dm_config *c, const char *path)
{
	_Static_assert(sizeof(keys) / sizeof(keys[0]) <=
			       sizeof(((struct config_parse *)0)->lines) /
				       sizeof(((struct config_parse *)0)->lines[0]),
		       "a line number for each key");
	*c = (struct dm_config){
		.log_level = LOG_INFO,
		.hook_timeout_s = DM_EXEC_DEFAULT_TIMEOUT_S,
	};
	for (size_t i = 0; i < dm_n_sources; i++)
		c->sources[i] = dm_sources[i].on;
	char *copy = strdup(path);
	c->path = strdup(path);
	c->mountpoint = strdup("/devices");
	c->transition_record = strdup(DM_CONFIG_TRANSITION_RECORD);
	if (copy && asprintf(&c->drivers_dir, "%s/drivers.d", dirname(copy)) < 0)
		c->drivers_dir = NULL;
	free(copy);
	return c->path && c->mountpoint && c->transition_record && c->drivers_dir ? 0 : -ENOMEM;
}

int dm_config_load(const char *path, bool required, FILE *errors, struct dm_config *ret)
{
	int r = config_init(ret, path);
	if (r < 0)
		return r;
	struct config_parse p = { .c = ret };
	r = dm_conffile_parse(path, &config_ops, &p, errors, NULL);
	ret->found = r != -ENOENT;
	if (r == -ENOENT && required) {
		dm_conf_error(errors, path, 0, "cannot open: %s", strerror(ENOENT));
		return 1;
	}
	return r == -ENOENT ? 0 : r;
}
