/*
 * atomic_file.h - replace a file so that a reader sees the old content or
 * the new, never a part: the new content goes to a temporary file in the
 * same directory, which is flushed to disk (fsync) and renamed over the
 * target (rename(2) is atomic within one file system); the directory is
 * then synced so that the rename survives a crash.  This is what
 * prometheus-node-exporter's textfile collector asks of the programs that
 * feed it, and the usual recipe (write, fsync, rename, fsync the
 * directory) of careful writers.
 */
#ifndef SLUICE_TOOLS_ATOMIC_FILE_H
#define SLUICE_TOOLS_ATOMIC_FILE_H

#include <stddef.h>
#include <sys/types.h>

/*
 * atomic_file_replace - make @path hold exactly the @len bytes at @data,
 * with permissions @mode (0644 for a file others read; the umask does
 * not apply), replacing what was there in one step.  The temporary file
 * is ".NAME.XXXXXX" beside @path (NAME its last component): hidden, and
 * matching no "*.prom" glob, so a collector never reads it half written.
 * A symbolic link at @path is replaced by the file, not followed.
 *
 * Returns 0, or -errno with @path unchanged and no temporary file left:
 * -ENAMETOOLONG (@path too long), -ENOSPC, -EDQUOT, -EFBIG, -EIO (the
 * data did not fit or reach the disk), -EACCES / -EROFS (the directory
 * cannot take a new file), or any other errno of mkstemp(3), write(2),
 * fchmod(2), fsync(2), close(2) or rename(2).  A failure to sync the
 * directory after the rename returns its -errno although @path already
 * holds the new content.  Not thread-safe only in that two writers of
 * one @path each win in turn: every rename is whole.
 */
int atomic_file_replace(const char *path, const void *data, size_t len, mode_t mode);

#endif
