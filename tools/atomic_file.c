/*
 * atomic_file.c - replace a file in one step (atomic_file.h).
 */
#define _GNU_SOURCE
#include "autoconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic_file.h"

/* write(2) until all of @len is out (a regular file may take less). */
static int write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* fsync the directory @dir so that a rename in it is on disk.  Some file
 * systems refuse fsync on a directory (EINVAL): nothing to do there. */
static int sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = 0;

	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0 && errno != EINVAL)
		rc = -errno;
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	return rc;
}

int atomic_file_replace(const char *path, const void *data, size_t len, mode_t mode)
{
	char dir[PATH_MAX], tmp[PATH_MAX];
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	size_t dirlen = slash ? (size_t)(slash - path) : 0;
	int fd, rc, n;

	if (!*base)
		return -EISDIR;
	if (dirlen + 1 >= sizeof(dir))
		return -ENAMETOOLONG;
	if (slash) {
		memcpy(dir, path, dirlen);
		dir[dirlen] = '\0';
		if (dirlen == 0)
			strcpy(dir, "/");
	} else {
		strcpy(dir, ".");
	}
	n = snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, base);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	rc = write_all(fd, data, len);
	/* mkstemp made it 0600; readers (node_exporter runs as another
	 * user) need @mode. */
	if (rc == 0 && fchmod(fd, mode) < 0)
		rc = -errno;
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) < 0)
		rc = -errno;
	if (rc) {
		/* Nothing to add if this fails too: @path is untouched. */
		(void)unlink(tmp);
		return rc;
	}
	return sync_dir(dir);
}
