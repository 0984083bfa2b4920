/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz-drivers-d.c - the *.conf files of drivers.d (src/drivers/exec-parse.c on
 * src/conffile.c). The input is split into up to four files at lines
 * "#--next-file--", so that definitions across files meet. Checked: the
 * count of errors is the number of "FILE:LINE: message" lines, each naming
 * one of the files; a directory without errors registers its drivers on a
 * model (which has no device, so that no hook the input names ever runs)
 * and unregisters them again.
 */
#include "fuzz-util.h"

#include "drivers/exec.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SEPARATOR "#--next-file--\n"
#define MAX_FILES 4

static const char *drivers_dir(void)
{
	static char dir[PATH_MAX];
	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "%s/drivers.d", fuzz_dir());
		if (mkdir(dir, 0755) < 0)
			abort();
	}
	return dir;
}

static bool names_a_file(const char *line, size_t len, const char *dir)
{
	size_t dlen = strlen(dir);
	if (len < dlen + 1 || strncmp(line, dir, dlen) != 0 || line[dlen] != '/')
		return false;
	/* NN-fuzz.conf, then ':' */
	const char *name = line + dlen + 1;
	return len >= dlen + 1 + 13 && strncmp(name + 2, "-fuzz.conf:", 11) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *dir = drivers_dir();
	const char *p = (const char *)data, *end = p + size;
	char name[32];
	int n_files = 0;

	while (n_files < MAX_FILES) {
		const char *sep = memmem(p, (size_t)(end - p), SEPARATOR, strlen(SEPARATOR));
		const char *stop = sep && n_files < MAX_FILES - 1 ? sep : end;
		snprintf(name, sizeof(name), "%02d-fuzz.conf", n_files++);
		fuzz_write(dir, name, p, (size_t)(stop - p));
		if (stop == end)
			break;
		p = stop + strlen(SEPARATOR);
	}

	char *errors = NULL;
	size_t errors_len = 0;
	FILE *err = open_memstream(&errors, &errors_len);
	if (!err)
		abort();
	int r = dm_exec_check_dir(dir, 0, err);
	fclose(err);
	FUZZ_CHECK(r >= 0 || r == -ENOMEM, "dm_exec_check_dir: %d", r);
	int lines = 0;
	for (const char *l = errors; r >= 0 && l < errors + errors_len; lines++) {
		const char *nl = memchr(l, '\n', (size_t)(errors + errors_len - l));
		FUZZ_CHECK(nl, "an error without its newline");
		FUZZ_CHECK(names_a_file(l, (size_t)(nl - l), dir), "an error naming no file: '%.*s'",
			   (int)(nl - l), l);
		l = nl + 1;
	}
	FUZZ_CHECK(r < 0 || lines == r, "%d errors counted, %d reported", r, lines);
	free(errors);

	if (r == 0) {
		struct dm_model *m;
		struct dm_exec_set *set = NULL;
		if (dm_model_new(&m) < 0)
			abort();
		r = dm_exec_load_dir(m, NULL, dir, 0, NULL, &set);
		FUZZ_CHECK(r == 0 || r == -ENOMEM, "a checked directory does not load: %d", r);
		dm_exec_unload(set);
		dm_model_free(m);
	}

	for (int i = 0; i < n_files; i++) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/%02d-fuzz.conf", dir, i);
		unlink(path);
	}
	return 0;
}
