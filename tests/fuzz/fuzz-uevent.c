/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz-uevent.c - what a device reports, on its way to the model and to
 * hook environments: udev properties ("KEY=VALUE" lines, the input) joined
 * into the uevent value and trimmed as the udev source does
 * (src/buses/uevent.c), the whole input as a USB device string, the
 * interface named from DEVTYPE/DEVNAME, the values set on a device, and the
 * environment of a hook for it (src/drivers/hookenv.c). Checked: values fit
 * a file; a device string is one line, a prefix of the input; an interface
 * name is one directory name; the environment is KEY=VALUE strings with
 * valid names, no newline or other control character, each name once, no
 * refused name (an interpreter's or the loader's), DEVNAME below /dev, and
 * the runner's own variables (ACTION, DRIVER, PATH, ...) are never the
 * device's; a uevent text that passes the check is KEY=VALUE lines, and one
 * that passes the device number check has MAJOR and DEVNAME only as that
 * number allows.
 */
#include "fuzz-util.h"

#include "buses/uevent.h"
#include "drivers/hookenv.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <string.h>

#define MAX_PROPS 128

static const char *prop(char *const *keys, char *const *values, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(keys[i], key) == 0)
			return values[i];
	return NULL;
}

static void check_env(char **env, const char *devname_value)
{
	static const char *const own[] = { "ACTION=suspend", "DRIVER=fuzz-driver",
					   "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
					   "DRIVERFS_PATH=fuzz0", "BUS=fuzz" };
	size_t n = 0;
	for (char **e = env; *e; e++, n++) {
		const char *eq = strchr(*e, '=');
		FUZZ_CHECK(eq && eq != *e, "'%s' is not KEY=VALUE", *e);
		FUZZ_CHECK(!strchr(*e, '\n'), "a newline in '%s'", *e);
		for (const char *c = *e; c < eq; c++)
			FUZZ_CHECK(isalnum((unsigned char)*c) || *c == '_', "bad name in '%s'", *e);
		FUZZ_CHECK(!isdigit((unsigned char)**e), "bad name in '%s'", *e);
		for (const char *c = eq + 1; *c; c++)
			FUZZ_CHECK((unsigned char)*c >= 0x20 && *c != 0x7f,
				   "a control character in '%s'", *e);
		FUZZ_CHECK(strncmp(*e, "PATH=", 5) == 0 ||
				   !dm_hook_env_name_is_refused(*e, (size_t)(eq - *e)),
			   "refused variable '%s'", *e);
		for (char **o = env; o < e; o++)
			FUZZ_CHECK(strncmp(*o, *e, (size_t)(eq - *e) + 1) != 0,
				   "'%.*s' set twice", (int)(eq - *e), *e);
	}
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
		bool found = false;
		for (char **e = env; *e; e++)
			found |= strcmp(*e, own[i]) == 0;
		FUZZ_CHECK(found, "%s is not in the environment", own[i]);
	}
	if (devname_value) {
		for (char **e = env; *e; e++)
			if (strncmp(*e, "DEVNAME=", 8) == 0)
				FUZZ_CHECK(strncmp(*e + 8, "/dev/", 5) == 0 &&
						   dm_uevent_check_devname(*e + 13) == 0,
					   "DEVNAME not below /dev: '%s'", *e);
	}
}

/* The whole input as a string a USB device reports (sysfs or libusb):
 * one line, a prefix of it, that fits. */
static void check_device_string(const char *text)
{
	char buf[DM_ATTR_MAX];
	dm_uevent_device_string(buf, sizeof(buf), text);
	size_t len = strlen(buf);
	FUZZ_CHECK(len < sizeof(buf), "device string of %zu bytes", len);
	FUZZ_CHECK(!strchr(buf, '\n'), "a newline in device string '%s'", buf);
	FUZZ_CHECK(strncmp(buf, text, len) == 0, "device string '%s' is not the input's", buf);
	FUZZ_CHECK(text[len] == '\0' || text[len] == '\n' || len == sizeof(buf) - 1,
		   "device string cut short at %zu", len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = strndup((const char *)data, size); /* a NUL ends udev's strings */
	char *keys[MAX_PROPS], *values[MAX_PROPS];
	size_t n = 0;
	if (!text)
		abort();
	check_device_string(text);
	/* the check of sysfs uevent text: a clean text has no line that is
	 * not KEY=VALUE with an upper-case name */
	if (dm_uevent_check(text) == 0)
		for (const char *l = text; *l;) {
			size_t llen = strcspn(l, "\n");
			if (llen == 0 && l[1] == '\0')
				break; /* the text's one final newline */
			const char *eq = memchr(l, '=', llen);
			FUZZ_CHECK(eq && dm_uevent_key_is_valid(l, (size_t)(eq - l)),
				   "a clean text with the line '%.*s'", (int)llen, l);
			l += llen + (l[llen] == '\n');
		}
	/* the text against a device number: one that has none has no node,
	 * and a text that passes for "8:0" says MAJOR=8 and MINOR=0 */
	if (dm_uevent_check_devt(text, NULL) == 0)
		for (const char *l = text; *l; l += strcspn(l, "\n"), l += *l == '\n')
			FUZZ_CHECK(strncmp(l, "DEVNAME=", 8) != 0 && strncmp(l, "MAJOR=", 6) != 0,
				   "a DEVNAME or MAJOR passes for a device without a number");
	if (dm_uevent_check_devt(text, "8:0\n") == 0)
		for (const char *l = text; *l; l += strcspn(l, "\n"), l += *l == '\n')
			FUZZ_CHECK(strncmp(l, "MAJOR=", 6) != 0 || strncmp(l, "MAJOR=8\n", 8) == 0 ||
					   strcmp(l, "MAJOR=8") == 0,
				   "a MAJOR other than 8 passes for 8:0");

	/* libudev's properties: one per line, the name up to the first '=' */
	for (char *line = text, *next; line && n < MAX_PROPS; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		char *eq = strchr(line, '=');
		if (!eq || eq == line)
			continue;
		*eq = '\0';
		keys[n] = line;
		values[n++] = eq + 1;
	}

	char uevent[DM_ATTR_MAX], trimmed[DM_ATTR_MAX];
	size_t len = 0;
	uevent[0] = '\0';
	for (size_t i = 0; i < n; i++)
		if (!dm_uevent_append(uevent, sizeof(uevent), &len, keys[i], values[i]))
			break;
	FUZZ_CHECK(len == strlen(uevent) && len < sizeof(uevent), "uevent length %zu", len);
	dm_uevent_trim(trimmed, sizeof(trimmed), uevent);
	FUZZ_CHECK(strlen(trimmed) <= len, "trimming grew the value");

	struct dm_model *m;
	struct dm_device *dev;
	struct dm_class *cls;
	struct dm_interface *iface = NULL;
	struct dm_bus *bus;
	if (dm_model_new(&m) < 0 || dm_device_new(m, "fuzz0", &dev) < 0 ||
	    dm_class_get(m, "fuzzclass", &cls) < 0 || dm_bus_get(m, "fuzz", NULL, &bus) < 0)
		abort();

	const char *devname = prop(keys, values, n, "DEVNAME");
	if (devname && *devname) {
		char name[256], devnode[PATH_MAX];
		int r = dm_uevent_interface(prop(keys, values, n, "DEVTYPE"), devname, name,
					    sizeof(name));
		FUZZ_CHECK(r == 0 || r == 1, "dm_uevent_interface: %d", r);
		FUZZ_CHECK(r == 0 || !name[0], "numbers only, yet a name '%s'", name);
		FUZZ_CHECK(r == 1 || name[0], "an empty interface name");
		/* the class's name stands in for a node named by numbers */
		r = dm_class_get_interface(cls, r ? "fuzzclass" : name, &iface);
		FUZZ_CHECK(r == 0 || r == -EINVAL, "dm_class_get_interface: %d", r);
		snprintf(devnode, sizeof(devnode), "/dev/%s", devname);
		dm_device_set_value(dev, "devnode", devnode);
	}
	const char *model_name = prop(keys, values, n, "ID_MODEL");
	if (model_name) {
		char name[DM_ATTR_MAX];
		dm_uevent_trim(name, sizeof(name), model_name);
		FUZZ_CHECK(dm_device_set_value(dev, "name", name) == 0, "name not set");
	}
	FUZZ_CHECK(dm_device_set_value(dev, "uevent", trimmed) == 0, "uevent not set");
	dm_device_set_bus(dev, bus);
	dm_device_set_class(dev, cls, iface);
	if (dm_device_add(dev, NULL) < 0)
		abort();

	char show[DM_ATTR_MAX];
	int r = dm_device_show(dev, NULL, "uevent", show, sizeof(show));
	FUZZ_CHECK(r > 0 && (size_t)r <= sizeof(show), "uevent reads %d", r);

	char **env;
	r = dm_hook_env(dev, "suspend", "fuzz-driver", NULL, &env);
	FUZZ_CHECK(r == 0 || r == -ENOMEM, "dm_hook_env: %d", r);
	if (r == 0) {
		check_env(env, devname);
		dm_strv_free(env);
	}
	dm_device_unref(dev);
	dm_model_free(m);
	free(text);
	return 0;
}
