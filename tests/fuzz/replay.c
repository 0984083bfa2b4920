/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * replay.c - a main() for the fuzz targets without libFuzzer: every file
 * named on the command line, and every file of every directory named
 * there, goes once through LLVMFuzzerTestOneInput(). Linked with each
 * target in the normal build so that a plain `meson test` replays the
 * seed corpora (suite fuzz-replay). A check that fails aborts, and so
 * fails the test; the input that did it is printed first.
 */
#include "fuzz-util.h"

#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char current[PATH_MAX]; /* the input being run, for the crash message */

static void crashed(int sig)
{
	static const char what[] = "replay: crashed on input ";
	/* write(), not stdio: this runs in a signal handler */
	if (current[0]) {
		ssize_t r = write(STDERR_FILENO, what, sizeof(what) - 1);
		r = write(STDERR_FILENO, current, strlen(current));
		r = write(STDERR_FILENO, "\n", 1);
		(void)r;
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

/* One input, in a buffer of exactly its size as libFuzzer gives it, so
 * that a sanitizer build sees a read past its end. */
static void replay_file(const char *path)
{
	size_t len;
	char *text = fuzz_read(path, &len);
	uint8_t *data = malloc(len ? len : 1);
	if (!data)
		abort();
	memcpy(data, text, len);
	free(text);
	snprintf(current, sizeof(current), "%s", path);
	LLVMFuzzerTestOneInput(data, len);
	free(data);
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

/* Returns how many inputs @path held (itself or the regular files of the
 * directory, in name order); aborts when it cannot be read. */
static size_t replay_path(const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0) {
		perror(path);
		abort();
	}
	if (!S_ISDIR(st.st_mode)) {
		replay_file(path);
		return 1;
	}
	struct dirent **names;
	int n = scandir(path, &names, NULL, by_name);
	if (n < 0) {
		perror(path);
		abort();
	}
	size_t count = 0;
	for (int i = 0; i < n; i++) {
		char file[PATH_MAX];
		snprintf(file, sizeof(file), "%s/%s", path, names[i]->d_name);
		if (stat(file, &st) == 0 && S_ISREG(st.st_mode)) {
			replay_file(file);
			count++;
		}
		free(names[i]);
	}
	free(names);
	return count;
}

int main(int argc, char **argv)
{
	static const int sigs[] = { SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL };
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], crashed);

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 2;
	}
	size_t count = 0;
	for (int i = 1; i < argc; i++)
		count += replay_path(argv[i]);
	/* no input at all is a wrong path in the test's arguments */
	if (count == 0) {
		fprintf(stderr, "replay: no input in the paths given\n");
		return 1;
	}
	printf("replay: %zu inputs, no failure\n", count);
	return 0;
}
