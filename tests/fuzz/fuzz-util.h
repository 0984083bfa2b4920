/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz-util.h - what the libFuzzer targets share: a scratch directory for
 * the parsers that read files, and the check that stops a run.
 */
#ifndef DM_FUZZ_UTIL_H
#define DM_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A directory of this process, made once (under /dev/shm when there is
 * one: the targets write a file per input) and removed at exit. */
const char *fuzz_dir(void);
/* @dir/@name holding exactly @data; aborts when it cannot be written. */
void fuzz_write(const char *dir, const char *name, const void *data, size_t size);
/* Reads @path whole into a malloc()ed, NUL-terminated buffer (*ret_len
 * bytes); aborts when it cannot. */
char *fuzz_read(const char *path, size_t *ret_len);

/* A property the parser must keep: abort (libFuzzer saves the input). */
#define FUZZ_CHECK(cond, ...)                                                              \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond);         \
			fprintf(stderr, __VA_ARGS__);                                      \
			fputc('\n', stderr);                                               \
			abort();                                                           \
		}                                                                          \
	} while (0)

#endif
