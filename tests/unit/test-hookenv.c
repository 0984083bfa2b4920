/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-hookenv.c - what a device may put in a hook's environment
 * (src/drivers/hookenv.c): the check of its uevent text, the variables it
 * may not set, and the daemon's variables winning over its own. Issue 14:
 * a device string with a newline adds lines to the sysfs uevent text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/hookenv.h"

static const struct {
	const char *text;
	bool clean;
} check_cases[] = {
	{ "", true },
	{ "MAJOR=13\nMINOR=64\nDEVNAME=input/event0\n", true },
	{ "PRODUCT=3/1/1/1\nNAME=\"AT Translated Set 2 keyboard\"\nPROP=0", true },
	{ "NAME=\"\"", true },
	{ "DEVNAME=sda", true },
	{ "EMPTY=", true },
	{ "_X1=a=b", true },
	/* the attack: a device name that closes its quote and adds lines */
	{ "NAME=\"x\"\nDEVNAME=/etc/shadow\"", false },
	{ "NAME=\"x\nLUA_INIT=os.execute('id')\"", false }, /* unclosed quote */
	{ "NAME=\"x", false },
	{ "NAME=\"x\"\nLUA_INIT=1\nPYTHONWARNINGS=all\"", false }, /* a stray closing quote */
	{ "NAME=\"", false },
	{ "DEVNAME=/etc/shadow", false },
	{ "DEVNAME=../etc/shadow", false },
	{ "DEVNAME=input/../../etc/shadow", false },
	{ "DEVNAME=input//event0", false },
	{ "DEVNAME=input/", false },
	{ "DEVNAME=.", false },
	{ "DEVNAME=", false },
	{ "MAJOR=13\nMAJOR=14", false }, /* a duplicate key */
	{ "DEVNAME=sda\nDEVNAME=sdb", false },
	{ "just some text", false },		/* no '=' */
	{ "lower=1", false },			/* not a kernel or udev name */
	{ "1ABC=1", false },
	{ "=value", false },
	{ "A-B=1", false },
	{ "A=1\n\nB=2", false },		/* an empty line */
	{ "A=tab\there", false },		/* a control character */
	{ "A=esc\x1b[0m", false },
	{ "A=del\x7f", false },
};

static void test_check(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(check_cases) / sizeof(check_cases[0]); i++) {
		int r = dm_uevent_check(check_cases[i].text);
		if ((r == 0) != check_cases[i].clean)
			fail_msg("'%s': %d, expected %s", check_cases[i].text, r,
				 check_cases[i].clean ? "clean" : "refused");
	}
}

static void test_check_devname(void **state)
{
	(void)state;
	assert_int_equal(dm_uevent_check_devname("input/event3"), 0);
	assert_int_equal(dm_uevent_check_devname("sda"), 0);
	assert_int_not_equal(dm_uevent_check_devname("/etc/shadow"), 0);
	assert_int_not_equal(dm_uevent_check_devname("../shadow"), 0);
	assert_int_not_equal(dm_uevent_check_devname(""), 0);
}

/* The text against the device number (its sysfs dev attribute): lines a
 * device string adds can pass dm_uevent_check(), not this. */
static const struct {
	const char *text, *dev;
	bool clean;
} devt_cases[] = {
	{ "MAJOR=13\nMINOR=69\nDEVNAME=input/event5\n", "13:69\n", true },
	{ "MAJOR=13\nMINOR=69\nDEVNAME=input/event5", "13:69", true },
	{ "MAJOR=189\nMINOR=0\nDEVNAME=bus/usb/001/001\nDEVTYPE=usb_device", "189:0\n", true },
	{ "PRODUCT=3/1/1/1\nNAME=\"kbd\"\nPROP=0", NULL, true }, /* no number, no node */
	{ "", NULL, true },
	/* an input device (no number) whose name is x"\nDEVNAME=sda\nY=" */
	{ "PRODUCT=3/1/1/1\nNAME=\"x\"\nDEVNAME=sda\nY=\"\"", NULL, false },
	{ "NAME=\"x\"\nMAJOR=8\nMINOR=0\nDEVNAME=sda\nY=\"\"", NULL, false },
	{ "NAME=\"x\"\nMAJOR=8\nY=\"\"", NULL, false },
	{ "NAME=\"x\"\nMINOR=0\nY=\"\"", NULL, false },
	/* a device with a number: the text must say the same one */
	{ "MAJOR=8\nMINOR=0\nDEVNAME=sda", "13:69\n", false },
	{ "MAJOR=13\nMINOR=70\nDEVNAME=input/event6", "13:69\n", false },
	{ "DEVNAME=sda", "8:0\n", false },
	{ "MAJOR=8\nDEVNAME=sda", "8:0\n", false },
	{ "MAJOR=08\nMINOR=0\nDEVNAME=sda", "8:0\n", false }, /* not as the kernel prints */
	{ "MAJOR=+8\nMINOR=0", "8:0", false },
	{ "MAJOR=\nMINOR=0", "8:0", false },
	{ "MAJOR=8\nMINOR=0", "8", false },		/* a dev value that is not one */
	{ "MAJOR=8\nMINOR=0", "8:0:1", false },
	{ "MAJOR=8\nMINOR=0", ":0", false },
	{ "MAJOR=8\nMINOR=0", "", false },
	{ "MAJOR=99999999999\nMINOR=0", "99999999999:0", false }, /* no number so long */
	{ "MAJOR=8\nMINOR=0\nMAJOR=8", "8:0", false },	/* said twice */
	{ "MAJOR=8\nMINOR=0\nDEVNAME=sda\nDEVNAME=sdb", "8:0", false },
	{ "NAME=\"x\"\nMAJOR=\nY=\"\"", NULL, false },
};

static void test_check_devt(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(devt_cases) / sizeof(devt_cases[0]); i++) {
		int r = dm_uevent_check_devt(devt_cases[i].text, devt_cases[i].dev);
		if ((r == 0) != devt_cases[i].clean)
			fail_msg("'%s' with dev '%s': %d, expected %s", devt_cases[i].text,
				 devt_cases[i].dev ? devt_cases[i].dev : "(none)", r,
				 devt_cases[i].clean ? "clean" : "refused");
	}
	/* the shaped injection passes the text's own check: only this sees it */
	assert_int_equal(dm_uevent_check(devt_cases[5].text), 0);
	assert_true(dm_uevent_devt_is("13", "69", "13:69\n"));
	assert_false(dm_uevent_devt_is("13", "69", "13:6"));
	assert_false(dm_uevent_devt_is("13", NULL, "13:69"));
	assert_false(dm_uevent_devt_is("13", "69", NULL));
}

/* A name of each refused entry: a prefix alone and with a suffix, a name
 * as it is. */
static void test_every_refused_entry(void **state)
{
	(void)state;
	size_t n;
	const char *const *prefixes = dm_hook_env_refused_list(true, &n);
	assert_true(n > 0);
	for (size_t i = 0; i < n; i++) {
		char key[64];
		snprintf(key, sizeof(key), "%sX_1", prefixes[i]);
		if (!dm_hook_env_name_is_refused(key, strlen(key)) ||
		    !dm_hook_env_name_is_refused(prefixes[i], strlen(prefixes[i])))
			fail_msg("prefix %s not refused", prefixes[i]);
	}
	const char *const *names = dm_hook_env_refused_list(false, &n);
	assert_true(n > 0);
	for (size_t i = 0; i < n; i++) {
		if (!dm_hook_env_name_is_refused(names[i], strlen(names[i])))
			fail_msg("%s not refused", names[i]);
		/* a name, not a prefix: a longer one is another variable */
		char key[64];
		snprintf(key, sizeof(key), "%sQ", names[i]);
		bool by_prefix = false;
		size_t np;
		const char *const *p = dm_hook_env_refused_list(true, &np);
		for (size_t j = 0; j < np; j++)
			by_prefix |= strncmp(key, p[j], strlen(p[j])) == 0;
		if (!by_prefix && dm_hook_env_name_is_refused(key, strlen(key)))
			fail_msg("%s refused as if %s were a prefix", key, names[i]);
	}
}

/* The variables the issue names, and the ones an attacker reaches for. */
static void test_known_hooks_refused(void **state)
{
	(void)state;
	static const char *const hooks[] = {
		"LD_PRELOAD",	  "LD_LIBRARY_PATH", "LD_AUDIT",     "PYTHONWARNINGS", "PYTHONPATH",
		"PYTHONSTARTUP",  "BROWSER",	     "LUA_INIT",     "LUA_INIT_5_4",   "LUA_PATH",
		"JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "OPENSSL_CONF",
		"OPENSSL_ENGINES", "GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0", "GIT_SSH_COMMAND",
		"PERL5DB",	  "PERL5OPT",	     "PERL5LIB",     "NODE_PATH",      "NODE_OPTIONS",
		"RUBYOPT",	  "RUBYLIB",	     "ENV",	     "BASH_ENV",       "BASH_FUNC_X%%",
		"SHELLOPTS",	  "PS4",	     "IFS",	     "PATH",	       "HOME",
		"TMPDIR",	  "LOCPATH",	     "NLSPATH",	     "MALLOC_CHECK_",  "GLIBC_TUNABLES",
		"HOSTALIASES",	  "RES_OPTIONS",     "TZ",	     "GCONV_PATH",     "LANG",
		"LC_ALL",	  "XDG_CONFIG_HOME", "SSL_CERT_FILE", "LESSOPEN",      "PAGER",
		"EDITOR",	  "SYSTEMD_PAGER",   "KRB5_CONFIG",  "GNUPGHOME",      "TCLLIBPATH",
	};
	for (size_t i = 0; i < sizeof(hooks) / sizeof(hooks[0]); i++) {
		char *env[] = { NULL };
		char **got;
		char text[128];
		/* refused by the list, or (PATH) because the daemon sets it */
		snprintf(text, sizeof(text), "%s=/tmp/evil", hooks[i]);
		assert_int_equal(dm_hook_env_build((const char *const *)env, text, &got), 0);
		if (got[0])
			fail_msg("%s reached the environment", got[0]);
		dm_strv_free(got);
	}
	/* what the kernel and udev do give passes */
	assert_false(dm_hook_env_name_is_refused("ID_MODEL", 8));
	assert_false(dm_hook_env_name_is_refused("PRODUCT", 7));
	assert_false(dm_hook_env_name_is_refused("NAME", 4));
	assert_false(dm_hook_env_name_is_refused("MAJOR", 5));
}

static const char *env_get(char **env, const char *key)
{
	size_t len = strlen(key);
	const char *found = NULL;
	for (char **e = env; *e; e++)
		if (strncmp(*e, key, len) == 0 && (*e)[len] == '=') {
			if (found)
				fail_msg("%s set twice", key);
			found = *e + len + 1;
		}
	return found;
}

static void test_build(void **state)
{
	(void)state;
	const char *vars[] = { "ACTION=add", "DEVPATH=/devices/virtual/input/input9",
			       "DEVNAME=/dev/input/event9", "PATH=/usr/bin", NULL };
	char **env;

	/* a clean text: its properties join, the daemon's win */
	assert_int_equal(dm_hook_env_build(vars, "PRODUCT=3/1/1/1\nNAME=\"kbd\"\nACTION=remove\n"
						 "DEVNAME=sda\nSEQNUM=1\nSUBSYSTEM=x\nDEVPATH=/x",
					   &env),
			 0);
	assert_string_equal(env_get(env, "ACTION"), "add");
	assert_string_equal(env_get(env, "DEVNAME"), "/dev/input/event9");
	assert_string_equal(env_get(env, "DEVPATH"), "/devices/virtual/input/input9");
	assert_string_equal(env_get(env, "PRODUCT"), "3/1/1/1");
	assert_string_equal(env_get(env, "NAME"), "\"kbd\"");
	assert_null(env_get(env, "SEQNUM"));
	assert_null(env_get(env, "SUBSYSTEM"));
	dm_strv_free(env);

	/* the attack: nothing of the text joins */
	assert_int_equal(dm_hook_env_build(vars, "PRODUCT=3/1/1/1\nNAME=\"x\"\n"
						 "DEVNAME=/etc/shadow\nLUA_INIT=os.exit()\"",
					   &env),
			 0);
	assert_string_equal(env_get(env, "DEVNAME"), "/dev/input/event9");
	assert_null(env_get(env, "LUA_INIT"));
	assert_null(env_get(env, "PRODUCT"));
	dm_strv_free(env);

	/* no daemon DEVNAME: none from a failing text either */
	const char *none[] = { "ACTION=add", NULL };
	assert_int_equal(dm_hook_env_build(none, "NAME=\"x\"\nDEVNAME=/etc/shadow\"", &env), 0);
	assert_null(env_get(env, "DEVNAME"));
	dm_strv_free(env);

	/* a lower-case name never joins (http_proxy, a shell function) */
	assert_int_equal(dm_hook_env_build(none, "http_proxy=x\nOK=1", &env), 0);
	assert_false(dm_uevent_check("http_proxy=x\nOK=1") == 0);
	assert_null(env_get(env, "http_proxy"));
	dm_strv_free(env);

	/* an empty environment is valid */
	assert_int_equal(dm_hook_env_build(NULL, NULL, &env), 0);
	assert_null(env[0]);
	dm_strv_free(env);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_check_devname),
		cmocka_unit_test(test_check_devt),
		cmocka_unit_test(test_every_refused_entry),
		cmocka_unit_test(test_known_hooks_refused),
		cmocka_unit_test(test_build),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
