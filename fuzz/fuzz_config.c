/*
 * fuzz_config.c - the configuration parser (daemon/config.c over inih):
 * the input is a whole sluiced.conf, read with config_load() over the
 * defaults as sluiced -c reads it.
 *
 * Oracles beyond the sanitizers: a refused file has one error line; an
 * accepted one prints (config_print) to a file that loads again and
 * prints to the same bytes (config.h promises the round trip), and a
 * reload from the defaults to it (config_reload_merge) runs.  The peers
 * each load allocates are released after each input ([daemon]
 * peers_file is not read: config_load() never reads it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"
#include "fuzz_daemon.h"
#include "log.h"

/* Larger files say nothing new to the parser, which reads lines. */
#define FUZZ_CONFIG_MAX (64u << 10)

static struct config defaults, loaded, again;

/* A memfd holding @len bytes of @data; its /proc path in @path. */
static int file_with(int *fd, const void *data, size_t len, char *path, size_t pathlen)
{
	if (*fd < 0) {
		*fd = memfd_create("fuzz-config", MFD_CLOEXEC);
		if (*fd < 0)
			return -errno;
	}
	if (ftruncate(*fd, 0) < 0 || (len && pwrite(*fd, data, len, 0) != (ssize_t)len))
		return -errno;
	snprintf(path, pathlen, "/proc/self/fd/%d", *fd);
	return 0;
}

static void fail(const char *what, const char *err)
{
	fprintf(stderr, "fuzz_config: %s%s%s\n", what, err ? ": " : "", err ? err : "");
	abort();
}

/* config_print to a memory buffer (malloc'd, *len bytes). */
static char *print_config(const struct config *c, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	if (!f)
		fail("open_memstream", strerror(errno));
	if (config_print(f, c) < 0)
		fail("config_print failed", NULL);
	if (fclose(f) != 0)
		fail("fclose", strerror(errno));
	return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int in_fd = -1, out_fd = -1;
	static bool ready;
	char path[64], err[512];
	char *text, *text2;
	size_t len, len2;
	int rc;

	if (!ready) {
		log_set_level(getenv("FUZZ_LOG") ? LOG_LVL_DEBUG : LOG_LVL_ERR);
		if (config_defaults(&defaults))
			fail("config_defaults", NULL);
		ready = true;
	}
	if (size > FUZZ_CONFIG_MAX)
		return 0;
	if (file_with(&in_fd, data, size, path, sizeof(path)) < 0)
		fail("memfd", strerror(errno));
	loaded = defaults;
	rc = config_load(&loaded, path, err, sizeof(err));
	if (rc) {
		if (!err[0] || strchr(err, '\n'))
			fail("a refused file without one error line", err);
		return 0;
	}
	text = print_config(&loaded, &len);
	if (file_with(&out_fd, text, len, path, sizeof(path)) < 0)
		fail("memfd", strerror(errno));
	again = defaults;
	if (config_load(&again, path, err, sizeof(err)))
		fail("config_print wrote a file config_load refuses", err);
	text2 = print_config(&again, &len2);
	if (len != len2 || memcmp(text, text2, len) != 0)
		fail("config_print, config_load, config_print is not a fixed point", NULL);
	free(text);
	free(text2);
	config_release(&again);
	again = defaults;
	(void)config_reload_merge(&again, &loaded, NULL, NULL);
	config_release(&again);
	config_release(&loaded);
	return 0;
}
