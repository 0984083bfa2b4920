/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* command.c - what every driverfsctl command shares: its arguments and its --json output. */
#include "ctl.h"

#include "snapshot/format.h"

#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

int ctl_parse_args(const char *cmd, int argc, char **argv, unsigned allowed, int max_args,
		   bool need_arg, struct ctl_args *a)
{
	static const struct {
		const char *name;
		unsigned flag;
	} flags[] = { { "--json", CTL_OPT_JSON },
		      { "--dry-run", CTL_OPT_DRY_RUN },
		      { "--pm-order", CTL_OPT_PM_ORDER },
		      { "--sanitize", CTL_OPT_SANITIZE } };
	*a = (struct ctl_args){ 0 };
	for (int i = 0; i < argc; i++) {
		const char *s = argv[i];
		bool known = false;
		for (size_t k = 0; k < sizeof(flags) / sizeof(flags[0]); k++)
			if (strcmp(s, flags[k].name) == 0 && (allowed & flags[k].flag)) {
				a->flags |= flags[k].flag;
				known = true;
			}
		if (known)
			continue;
		const char **value = strcmp(s, "--bus") == 0 || strncmp(s, "--bus=", 6) == 0 ? &a->bus
				     : strcmp(s, "--class") == 0 || strncmp(s, "--class=", 8) == 0
					     ? &a->cls
					     : NULL;
		if ((allowed & CTL_OPT_OUTPUT) && (strcmp(s, "-o") == 0 || strncmp(s, "-o", 2) == 0 ||
						   strncmp(s, "--output=", 9) == 0 ||
						   strcmp(s, "--output") == 0)) {
			const char *v = strncmp(s, "--output", 8) == 0 ? strchr(s, '=')
				      : s[2] ? s + 1 : NULL;
			if (v)
				v++;
			else if (i + 1 < argc)
				v = argv[++i];
			else
				return ctl_usage_error(cmd, "option needs a value:", s);
			if (!*v || strchr(v, '/') || strstr(v, ",,") || *v == ',' ||
			    v[strlen(v) - 1] == ',')
				return ctl_usage_error(cmd, "-o takes NAME[,NAME...]:", v);
			a->output = v;
			a->flags |= CTL_OPT_OUTPUT;
			continue;
		}
		if (value && (allowed & CTL_OPT_FILTER)) {
			const char *eq = strchr(s, '=');
			if (!eq && i + 1 >= argc)
				return ctl_usage_error(cmd, "option needs a value:", s);
			*value = eq ? eq + 1 : argv[++i];
			if (!**value)
				return ctl_usage_error(cmd, "empty value for", s);
			a->flags |= CTL_OPT_FILTER;
			continue;
		}
		if (s[0] == '-' && s[1] != '\0')
			return ctl_usage_error(cmd, "unknown option", s);
		if (a->arg || max_args == 0)
			return ctl_usage_error(cmd, "unexpected argument", s);
		a->arg = s;
	}
	if (need_arg && !a->arg)
		return ctl_usage_error(cmd, "needs a DEV", NULL);
	return CTL_OK;
}

void ctl_print_json(json_object *doc)
{
	printf("%s\n", dm_snapshot_to_string(doc));
}

void ctl_put_text(const char *s, size_t len, unsigned flags)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '\n' && (flags & CTL_TEXT_LINES))
			putchar('\n');
		else if (c == '\n')
			fputs("\\n", stdout);
		else if (c == '\t')
			fputs("\\t", stdout);
		else if (c == '\\' || (c == '"' && (flags & CTL_TEXT_QUOTED)))
			printf("\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			printf("\\x%02x", c);
		else
			putchar(c);
	}
}

void ctl_put(const char *s)
{
	ctl_put_text(s, strlen(s), 0);
}
