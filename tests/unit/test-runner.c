/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-runner.c - the hook runner: exit status and output, the exact
 * environment, no shell, timeouts that kill the whole process group,
 * bounded output, signals, and sysfs-style writes and reads.
 *
 * Hook programs are shell scripts written into a private temporary
 * directory. Nothing here sleeps to wait for an event; the timeout tests
 * run hooks that sleep, which the runner must cut short.
 */
#include "tree-util.h"
#include "drivers/runner.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef __NR_pidfd_open
#define __NR_pidfd_open 434
#endif

/* PATH for scripts that call tools; the runner itself adds nothing. */
static const char *const tool_env[] = { "PATH=/usr/bin:/bin", NULL };

struct fixture {
	char dir[64];
};

static int fixture_setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	strcpy(f->dir, "/tmp/test-runner-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	*state = f;
	return 0;
}

static int fixture_teardown(void **state)
{
	struct fixture *f = *state;
	test_rm_rf(f->dir);
	free(f);
	return 0;
}

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Writes an executable #!/bin/sh script @name with @body into the fixture
 * directory; its path goes to @path. */
static void write_script(const struct fixture *f, const char *name, const char *body, char *path,
			 size_t size)
{
	snprintf(path, size, "%s/%s", f->dir, name);
	FILE *s = fopen(path, "w");
	assert_non_null(s);
	fprintf(s, "#!/bin/sh\n%s", body);
	assert_int_equal(fclose(s), 0);
	assert_int_equal(chmod(path, 0755), 0);
}

static void write_file(const char *path, const char *content)
{
	FILE *s = fopen(path, "w");
	assert_non_null(s);
	fputs(content, s);
	assert_int_equal(fclose(s), 0);
}

/* Reads a small file written by a hook, such as a pid file. */
static long read_number(const char *path)
{
	FILE *s = fopen(path, "r");
	long v = -1;
	if (!s)
		fail_msg("expected the hook to have written %s", path);
	if (fscanf(s, "%ld", &v) != 1)
		fail_msg("expected a number in %s", path);
	fclose(s);
	return v;
}

/* Waits (bounded, on a pidfd, no sleeping) for @pid to be gone, and reaps
 * it when it became our child (we are the tests' subreaper). */
static void assert_process_ends(pid_t pid)
{
	int fd = (int)syscall(__NR_pidfd_open, pid, 0);
	if (fd < 0) {
		assert_int_equal(errno, ESRCH); /* already gone and reaped */
		return;
	}
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int n = poll(&p, 1, 5000);
	close(fd);
	if (n != 1) {
		kill(pid, SIGKILL);
		fail_msg("expected process %d, started by the hook, to be killed with it", (int)pid);
	}
	waitpid(pid, NULL, WNOHANG);
}

/* Waits for every process of the group @pgid to end (each bounded), then
 * checks the group is gone. */
static void assert_group_ends(pid_t pgid)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	assert_non_null(d);
	while ((e = readdir(d))) {
		char path[300], buf[512];
		pid_t pid = (pid_t)atoi(e->d_name);
		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		FILE *s = fopen(path, "r");
		if (!s)
			continue; /* ended meanwhile */
		size_t n = fread(buf, 1, sizeof(buf) - 1, s);
		fclose(s);
		buf[n] = '\0';
		char *close = strrchr(buf, ')'), state;
		int ppid, pgrp;
		if (close && sscanf(close + 1, " %c %d %d", &state, &ppid, &pgrp) == 3 &&
		    pgrp == pgid)
			assert_process_ends(pid);
	}
	closedir(d);
	assert_int_equal(kill(-pgid, 0), -1);
	assert_int_equal(errno, ESRCH);
}

static void run_ok(const char *const *argv, const char *const *envp, int timeout_ms,
		   struct dm_run_result *res)
{
	int r = dm_run("test", argv, envp, timeout_ms, res);
	if (r < 0)
		fail_msg("expected %s to start, got %s", argv[0], strerror(-r));
}

/* ---- exit status and output ---- */

static void test_exit_status_and_output(void **state)
{
	struct fixture *f = *state;
	char hook[256];
	struct dm_run_result res;

	write_script(f, "status", "echo to-stdout\necho to-stderr >&2\nexit 3\n", hook,
		     sizeof(hook));
	run_ok((const char *const[]){ hook, NULL }, NULL, 5000, &res);
	assert_int_equal(res.status, 3);
	assert_int_equal(res.signo, 0);
	assert_false(res.timed_out);
	assert_false(res.output_truncated);
	/* one pipe for both, in the order they were written */
	assert_non_null(res.output);
	assert_string_equal(res.output, "to-stdout\nto-stderr\n");
	assert_int_equal(res.output_len, strlen("to-stdout\nto-stderr\n"));
	assert_true(res.usec > 0);
	assert_int_equal(dm_run_errno(&res), -EIO);
	dm_run_result_done(&res);
	assert_null(res.output);

	write_script(f, "ok", "exit 0\n", hook, sizeof(hook));
	run_ok((const char *const[]){ hook, NULL }, NULL, 5000, &res);
	assert_int_equal(res.status, 0);
	assert_int_equal(res.output_len, 0);
	assert_int_equal(dm_run_errno(&res), 0);
	dm_run_result_done(&res);
}

static void test_arguments_without_shell(void **state)
{
	struct fixture *f = *state;
	char marker[256], cmd[300];
	struct dm_run_result res;

	/* if a shell saw these, the first would create the marker file and
	 * the others would be expanded */
	snprintf(marker, sizeof(marker), "%s/injected", f->dir);
	snprintf(cmd, sizeof(cmd), "a; touch %s", marker);
	const char *const argv[] = { "/usr/bin/printf", "[%s]\\n", cmd, "$HOME", "$(id)", "`id`",
				     "two words", "", NULL };
	run_ok(argv, NULL, 5000, &res);
	char expected[512];
	snprintf(expected, sizeof(expected), "[%s]\n[$HOME]\n[$(id)]\n[`id`]\n[two words]\n[]\n",
		 cmd);
	assert_int_equal(res.status, 0);
	assert_string_equal(res.output, expected);
	assert_int_equal(access(marker, F_OK), -1);
	dm_run_result_done(&res);
}

/* ---- environment and inherited state ---- */

static void test_environment_is_exactly_the_given_one(void **state)
{
	(void)state;
	struct dm_run_result res;

	/* present in our environment, must not reach the program */
	setenv("DRIVERFS_TEST_SECRET", "leaked", 1);
	const char *const envp[] = { "ACTION=suspend", "DEVPATH=/devices/x", "WITH_SPACE=a b",
				     NULL };
	run_ok((const char *const[]){ "/usr/bin/env", NULL }, envp, 5000, &res);
	assert_int_equal(res.status, 0);
	assert_string_equal(res.output, "ACTION=suspend\nDEVPATH=/devices/x\nWITH_SPACE=a b\n");
	dm_run_result_done(&res);

	/* NULL: an empty environment, not ours */
	run_ok((const char *const[]){ "/usr/bin/env", NULL }, NULL, 5000, &res);
	assert_int_equal(res.status, 0);
	assert_int_equal(res.output_len, 0);
	dm_run_result_done(&res);
	unsetenv("DRIVERFS_TEST_SECRET");
}

static void test_script_environment(void **state)
{
	struct fixture *f = *state;
	char hook[256];
	struct dm_run_result res;

	setenv("DRIVERFS_TEST_SECRET", "leaked", 1);
	write_script(f, "env", "exec /usr/bin/env\n", hook, sizeof(hook));
	run_ok((const char *const[]){ hook, NULL }, (const char *const[]){ "ACTION=probe", NULL },
	       5000, &res);
	assert_int_equal(res.status, 0);
	/* the shell adds PWD itself; nothing else but what we gave */
	char *line, *save = NULL;
	int n = 0;
	for (line = strtok_r(res.output, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "PWD=", 4) == 0)
			continue;
		if (strcmp(line, "ACTION=probe") != 0)
			fail_msg("expected only ACTION=probe in the hook's environment, found %s",
				 line);
		n++;
	}
	assert_int_equal(n, 1);
	dm_run_result_done(&res);
	unsetenv("DRIVERFS_TEST_SECRET");
}

static void test_stdin_fds_and_group(void **state)
{
	struct fixture *f = *state;
	char hook[256];
	struct dm_run_result res;

	/* a descriptor of ours without O_CLOEXEC, as a careless library
	 * would leave one */
	int fd = open("/dev/null", O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(dup2(fd, 7), 7);
	close(fd);

	/* our stdin a pipe nobody writes to: inherited, the hook's cat
	 * would wait for it until the timeout */
	int in[2], saved_stdin = dup(STDIN_FILENO);
	assert_int_equal(pipe(in), 0);
	assert_int_equal(dup2(in[0], STDIN_FILENO), STDIN_FILENO);
	close(in[0]);

	write_script(f, "inherit",
		     "readlink /proc/$$/fd/0\n"
		     "if [ -e /proc/$$/fd/7 ]; then echo fd7-leaked; else echo fd7-closed; fi\n"
		     "set -- $(cut -d' ' -f1,5 /proc/$$/stat)\n"
		     "if [ \"$1\" = \"$2\" ]; then echo own-group; else echo shared-group; fi\n"
		     "cat\n", /* returns at once only when stdin is /dev/null */
		     hook, sizeof(hook));
	run_ok((const char *const[]){ hook, NULL }, tool_env, 5000, &res);
	close(7);
	dup2(saved_stdin, STDIN_FILENO);
	close(saved_stdin);
	close(in[1]);
	assert_int_equal(res.status, 0);
	assert_false(res.timed_out);
	assert_string_equal(res.output, "/dev/null\nfd7-closed\nown-group\n");
	dm_run_result_done(&res);
}

static void test_working_directory_is_root(void **state)
{
	struct fixture *f = *state;
	char hook[256], cwd[4096];
	struct dm_run_result res;

	/* ours is somewhere a hook has no business in */
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(f->dir), 0);
	write_script(f, "cwd", "pwd\nreadlink /proc/$$/cwd\n", hook, sizeof(hook));
	run_ok((const char *const[]){ hook, NULL }, tool_env, 5000, &res);
	assert_int_equal(chdir(cwd), 0);
	assert_int_equal(res.status, 0);
	if (strcmp(res.output, "/\n/\n") != 0)
		fail_msg("expected the hook to run in /, it ran in:\n%s", res.output);
	dm_run_result_done(&res);
}

static void test_signal_dispositions_reset(void **state)
{
	struct fixture *f = *state;
	char hook[256];
	struct dm_run_result res;
	sigset_t block, old;

	/* ignored here: the hook must get the default action */
	struct sigaction ign = { .sa_handler = SIG_IGN }, prev;
	sigaction(SIGTERM, &ign, &prev);
	write_script(f, "term-self", "kill -TERM $$\necho survived-term\n", hook, sizeof(hook));
	run_ok((const char *const[]){ hook, NULL }, NULL, 5000, &res);
	sigaction(SIGTERM, &prev, NULL);
	assert_int_equal(res.signo, SIGTERM);
	assert_int_equal(res.status, -1);
	assert_int_equal(res.output_len, 0);
	dm_run_result_done(&res);

	/* blocked here: the hook must not inherit the mask */
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	write_script(f, "usr1-self", "kill -USR1 $$\necho survived-usr1\n", hook, sizeof(hook));
	run_ok((const char *const[]){ hook, NULL }, NULL, 5000, &res);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	assert_int_equal(res.signo, SIGUSR1);
	assert_int_equal(res.output_len, 0);
	dm_run_result_done(&res);
}

/* ---- failures ---- */

static void test_cannot_start(void **state)
{
	struct fixture *f = *state;
	struct dm_run_result res = { .status = 12345 };
	char path[256];

	assert_int_equal(dm_run("t", (const char *const[]){ "sh", NULL }, NULL, 1000, &res),
			 -EINVAL);
	assert_int_equal(dm_run("t", (const char *const[]){ NULL }, NULL, 1000, &res), -EINVAL);
	assert_int_equal(dm_run("t", (const char *const[]){ "/bin/true", NULL }, NULL, 0, &res),
			 -EINVAL);
	assert_int_equal(dm_run("t", (const char *const[]){ "/nonexistent/hook", NULL }, NULL,
				1000, &res),
			 -ENOENT);
	snprintf(path, sizeof(path), "%s/not-executable", f->dir);
	write_file(path, "#!/bin/sh\nexit 0\n");
	assert_int_equal(dm_run("t", (const char *const[]){ path, NULL }, NULL, 1000, &res),
			 -EACCES);
	/* ret_ parameters are untouched on failure */
	assert_int_equal(res.status, 12345);
}

static void test_crash_reports_signal(void **state)
{
	struct fixture *f = *state;
	char hook[256];
	struct dm_run_result res;
	struct rlimit no_core = { 0, 0 }, old;

	getrlimit(RLIMIT_CORE, &old);
	setrlimit(RLIMIT_CORE, &no_core); /* inherited: no core file */
	write_script(f, "crash", "echo before-crash\nkill -SEGV $$\necho after-crash\n", hook,
		     sizeof(hook));
	run_ok((const char *const[]){ hook, NULL }, NULL, 5000, &res);
	setrlimit(RLIMIT_CORE, &old);
	assert_int_equal(res.signo, SIGSEGV);
	assert_int_equal(res.status, -1);
	assert_false(res.timed_out);
	assert_string_equal(res.output, "before-crash\n");
	assert_int_equal(dm_run_errno(&res), -EINTR);
	dm_run_result_done(&res);
}

/* ---- timeouts ---- */

/* A hook that sleeps 60 s with two grandchildren: one holding the output
 * pipe, one that ignores SIGTERM and closed its output. SIGTERM ends the
 * hook and the first (so the output reaches EOF at once), the runner's
 * final SIGKILL to the group the second. */
static void test_timeout_kills_group(void **state)
{
	struct fixture *f = *state;
	char hook[256], body[1024], pidfile[256], grandfile[256], deafile[256];
	struct dm_run_result res;

	snprintf(pidfile, sizeof(pidfile), "%s/hook.pid", f->dir);
	snprintf(grandfile, sizeof(grandfile), "%s/grandchild.pid", f->dir);
	snprintf(deafile, sizeof(deafile), "%s/deaf-grandchild.pid", f->dir);
	snprintf(body, sizeof(body),
		 "echo $$ > %s\n"
		 "sleep 60 &\n"
		 "echo $! > %s\n"
		 "(trap '' TERM; exec sleep 60) >/dev/null 2>&1 &\n"
		 "echo $! > %s\n"
		 "echo started\n"
		 "sleep 60\n"
		 "echo not-reached\n",
		 pidfile, grandfile, deafile);
	write_script(f, "sleeper", body, hook, sizeof(hook));

	long start = now_ms();
	run_ok((const char *const[]){ hook, NULL }, tool_env, 300, &res);
	long elapsed = now_ms() - start;

	if (elapsed >= 5000)
		fail_msg("expected the 300 ms timeout to end the hook in well under 10 s, took %ld ms",
			 elapsed);
	assert_true(elapsed >= 300);
	assert_true(res.timed_out);
	assert_int_equal(res.signo, SIGTERM);
	assert_int_equal(dm_run_errno(&res), -ETIMEDOUT);
	assert_string_equal(res.output, "started\n");
	dm_run_result_done(&res);

	pid_t hook_pid = (pid_t)read_number(pidfile);
	assert_process_ends((pid_t)read_number(grandfile));
	assert_process_ends((pid_t)read_number(deafile));
	/* and nothing is left in the hook's process group */
	assert_group_ends(hook_pid);
}

/* The whole group ignores SIGTERM and a grandchild keeps the output pipe
 * open: SIGKILL after the grace period still ends everything. */
static void test_timeout_escalates_to_sigkill(void **state)
{
	struct fixture *f = *state;
	char hook[256], body[1024], pidfile[256], grandfile[256];
	struct dm_run_result res;

	snprintf(pidfile, sizeof(pidfile), "%s/stubborn.pid", f->dir);
	snprintf(grandfile, sizeof(grandfile), "%s/stubborn-grandchild.pid", f->dir);
	snprintf(body, sizeof(body),
		 "trap '' TERM\n"
		 "echo $$ > %s\n"
		 "sleep 60 &\n"
		 "echo $! > %s\n"
		 "sleep 60\n",
		 pidfile, grandfile);
	write_script(f, "stubborn", body, hook, sizeof(hook));

	long start = now_ms();
	run_ok((const char *const[]){ hook, NULL }, tool_env, 200, &res);
	long elapsed = now_ms() - start;

	if (elapsed >= 5000)
		fail_msg("expected SIGKILL about 1 s after the timeout, took %ld ms", elapsed);
	/* the grace period was given before SIGKILL */
	assert_true(elapsed >= 1000);
	assert_true(res.timed_out);
	assert_int_equal(res.signo, SIGKILL);
	dm_run_result_done(&res);

	pid_t hook_pid = (pid_t)read_number(pidfile);
	assert_process_ends((pid_t)read_number(grandfile));
	assert_group_ends(hook_pid);
}

/* ---- output bound ---- */

static void test_output_is_bounded(void **state)
{
	struct fixture *f = *state;
	char hook[256];
	struct dm_run_result res;

	/* 8 MiB through the pipe: without draining, the hook would block on
	 * a full pipe and time out */
	write_script(f, "chatty", "head -c 8388608 /dev/zero | tr '\\0' x\necho done >&2\n", hook,
		     sizeof(hook));
	long start = now_ms();
	run_ok((const char *const[]){ hook, NULL }, tool_env, 30000, &res);
	long elapsed = now_ms() - start;
	assert_false(res.timed_out);
	assert_int_equal(res.status, 0);
	assert_true(res.output_truncated);
	assert_int_equal(res.output_len, DM_RUN_OUTPUT_MAX);
	assert_int_equal(strlen(res.output), DM_RUN_OUTPUT_MAX);
	assert_int_equal(strspn(res.output, "x"), DM_RUN_OUTPUT_MAX);
	if (elapsed > 20000)
		fail_msg("expected megabytes of output to be drained quickly, took %ld ms", elapsed);
	dm_run_result_done(&res);

	/* exactly the bound is not truncated */
	char body[128];
	snprintf(body, sizeof(body), "head -c %d /dev/zero | tr '\\0' y\n", DM_RUN_OUTPUT_MAX);
	write_script(f, "exact", body, hook, sizeof(hook));
	run_ok((const char *const[]){ hook, NULL }, tool_env, 30000, &res);
	assert_false(res.output_truncated);
	assert_int_equal(res.output_len, DM_RUN_OUTPUT_MAX);
	dm_run_result_done(&res);
}

static void test_run_errno(void **state)
{
	(void)state;
	struct dm_run_result r = { .status = 0 };
	assert_int_equal(dm_run_errno(&r), 0);
	r = (struct dm_run_result){ .status = 1 };
	assert_int_equal(dm_run_errno(&r), -EIO);
	r = (struct dm_run_result){ .status = -1, .signo = SIGKILL };
	assert_int_equal(dm_run_errno(&r), -EINTR);
	/* a timeout wins over the signal that ended it */
	r = (struct dm_run_result){ .status = -1, .signo = SIGTERM, .timed_out = true };
	assert_int_equal(dm_run_errno(&r), -ETIMEDOUT);
	assert_int_equal(dm_run_errno(NULL), -EINVAL);
	dm_run_result_done(NULL);
}

/* ---- writes and reads ---- */

static void test_write_and_read_files(void **state)
{
	struct fixture *f = *state;
	char path[256], buf[64];

	snprintf(path, sizeof(path), "%s/control", f->dir);
	write_file(path, "on\n");
	assert_int_equal(dm_run_read(path, buf, sizeof(buf)), 2);
	assert_string_equal(buf, "on");

	/* the value as given, in one write, replacing the content */
	assert_int_equal(dm_run_write("suspend test", path, "auto", 1000), 0);
	assert_int_equal(dm_run_read(path, buf, sizeof(buf)), 4);
	assert_string_equal(buf, "auto");

	/* only one newline is stripped */
	write_file(path, "two\n\n");
	assert_int_equal(dm_run_read(path, buf, sizeof(buf)), 4);
	assert_string_equal(buf, "two\n");

	/* the buffer bound: a value that does not fit is refused, one that
	 * fits without its newline is not */
	write_file(path, "1234567\n");
	assert_int_equal(dm_run_read(path, buf, 8), 7);
	assert_string_equal(buf, "1234567");
	write_file(path, "12345678\n");
	assert_int_equal(dm_run_read(path, buf, 8), -ENOBUFS);

	snprintf(path, sizeof(path), "%s/missing/control", f->dir);
	assert_int_equal(dm_run_read(path, buf, sizeof(buf)), -ENOENT);
	assert_int_equal(dm_run_write(NULL, path, "on", 1000), -ENOENT);
	assert_int_equal(dm_run_write(NULL, f->dir, "on", 1000), -EISDIR);
	assert_int_equal(dm_run_write(NULL, f->dir, "", 1000), -EINVAL);
}

static void test_write_to_blocked_fifo_times_out(void **state)
{
	struct fixture *f = *state;
	char path[256], buf[16];

	snprintf(path, sizeof(path), "%s/fifo", f->dir);
	assert_int_equal(mkfifo(path, 0600), 0);

	/* no reader: open(O_WRONLY) blocks in the helper thread */
	long start = now_ms();
	assert_int_equal(dm_run_write("blocked", path, "suspend", 200), -ETIMEDOUT);
	long elapsed = now_ms() - start;
	assert_true(elapsed >= 190);
	if (elapsed > 2000)
		fail_msg("expected -ETIMEDOUT after 200 ms, took %ld ms", elapsed);

	/* the write was left to finish: a reader now gets the value */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	assert_true(fd >= 0);
	struct pollfd p = { .fd = fd, .events = POLLIN };
	assert_int_equal(poll(&p, 1, 5000), 1);
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_int_equal(n, 7);
	buf[n] = '\0';
	assert_string_equal(buf, "suspend");

	/* reading a FIFO must not block either: it is not a sysfs file */
	start = now_ms();
	assert_int_equal(dm_run_read(path, buf, sizeof(buf)), -EINVAL);
	assert_true(now_ms() - start < 1000);
}

int main(void)
{
	/* grandchildren of timed-out hooks become ours, so the tests can
	 * reap them whatever PID 1 of this machine does */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exit_status_and_output),
		cmocka_unit_test(test_arguments_without_shell),
		cmocka_unit_test(test_environment_is_exactly_the_given_one),
		cmocka_unit_test(test_script_environment),
		cmocka_unit_test(test_stdin_fds_and_group),
		cmocka_unit_test(test_working_directory_is_root),
		cmocka_unit_test(test_signal_dispositions_reset),
		cmocka_unit_test(test_cannot_start),
		cmocka_unit_test(test_crash_reports_signal),
		cmocka_unit_test(test_timeout_kills_group),
		cmocka_unit_test(test_timeout_escalates_to_sigkill),
		cmocka_unit_test(test_output_is_bounded),
		cmocka_unit_test(test_run_errno),
		cmocka_unit_test(test_write_and_read_files),
		cmocka_unit_test(test_write_to_blocked_fifo_times_out),
	};
	return cmocka_run_group_tests(tests, fixture_setup, fixture_teardown);
}
