/*
 * replay.c - run every file of a corpus through a fuzz harness, without
 * libFuzzer: the regression test of each harness in "make check" (any
 * compiler), so that every input a fuzzer ever found stays one.
 *
 *   replay_NAME [FILE|DIR]...
 * Without arguments: $top_srcdir/fuzz/corpus/NAME (FUZZ_NAME, set at
 * build time; top_srcdir from the environment, "." when unset).  A
 * directory's files run in name order.  A crash or sanitizer report ends
 * the run (after "replay: FILE" names the input); a clean run ends with a
 * line in Check's summary format, one check per input, which
 * scripts/test counts.  Exit status 0, or 1 when an input cannot be read
 * or no input was found.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_daemon.h"

#ifndef FUZZ_NAME
#error "FUZZ_NAME: the corpus directory's name"
#endif

/* Inputs above this are not fuzz inputs (libFuzzer's -max_len is far
 * below); refusing them keeps a stray file from eating memory. */
#define REPLAY_MAX_BYTES (16u << 20)

static unsigned ran;

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	size_t n;
	long len;

	if (!f) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fseek(f, 0, SEEK_END) < 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) < 0 ||
	    (unsigned long)len > REPLAY_MAX_BYTES) {
		fprintf(stderr, "replay: %s: cannot size it, or over %u bytes\n", path,
			REPLAY_MAX_BYTES);
		fclose(f);
		return -1;
	}
	/* + 1: a zero-length input is a valid one; malloc(0) may be NULL. */
	buf = malloc((size_t)len + 1);
	if (!buf) {
		fclose(f);
		fprintf(stderr, "replay: %s: out of memory\n", path);
		return -1;
	}
	n = fread(buf, 1, (size_t)len, f);
	if (n != (size_t)len || ferror(f)) {
		fprintf(stderr, "replay: %s: short read\n", path);
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	/* Named before the run: a crash leaves the culprit on the screen. */
	fprintf(stderr, "replay: %s\n", path);
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	ran++;
	return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int replay_path(const char *path)
{
	struct dirent **names;
	struct stat st;
	int i, n, rc = 0;

	if (stat(path, &st) < 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return replay_file(path);
	n = scandir(path, &names, NULL, by_name);
	if (n < 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	for (i = 0; i < n; i++) {
		char file[4096];

		if (names[i]->d_name[0] != '.' &&
		    (size_t)snprintf(file, sizeof(file), "%s/%s", path, names[i]->d_name) <
			    sizeof(file) &&
		    replay_file(file) < 0)
			rc = -1;
		free(names[i]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	const char *top = getenv("top_srcdir");
	char dir[4096];
	int i, rc = 0;

	if (argc < 2) {
		snprintf(dir, sizeof(dir), "%s/fuzz/corpus/%s", top && top[0] ? top : ".",
			 FUZZ_NAME);
		rc = replay_path(dir);
	}
	for (i = 1; i < argc; i++)
		if (replay_path(argv[i]) < 0)
			rc = -1;
	if (ran == 0) {
		fprintf(stderr, "replay: no input found\n");
		rc = -1;
	}
	/* Check's format (scripts/test adds these up). */
	printf("replay_%s: %u inputs: %d%%: Checks: %u, Failures: %d, Errors: 0\n", FUZZ_NAME,
	       ran, rc ? 0 : 100, ran, rc ? 1 : 0);
	return rc ? 1 : 0;
}
