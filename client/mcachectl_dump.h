/* mcachectl_dump.h - `mcachectl dump` and `mcachectl load`: a namespace
 * tree as JSON lines, and back (mcachectl_dump.c). */
#ifndef MCACHECTL_DUMP_H
#define MCACHECTL_DUMP_H

#include <stdio.h>

#include "mcache.h"

/* Write the tree at path (symlinks not followed) to out, one JSON object
 * per line, in pre-order (a directory before its entries, entries sorted by
 * name):
 *
 *   {"path", "type": "dir"|"file"|"symlink", "mode" (permission bits),
 *    "uid", "gid", "size", "mtime", "atime" (ns since the epoch),
 *    "ino", "nlink", and "target" for a symlink}
 *
 * Entries with the same "ino" are hard links to one file. Entries that
 * vanish during the walk are skipped. 0, or -errno: those of mc_lstat,
 * mc_opendir, mc_readlink on path or an entry, ENOMEM, EIO (writing out). */
int dump_tree(mc_client *c, const char *path, FILE *out);

/* Recreate the entries of a dump read from in, each at prefix + its "path"
 * (prefix "" or NULL: at its path; the dumped "/" is prefix itself):
 * directories (an existing one is kept and gets the dumped attributes),
 * regular files (created, then truncated to "size"), symlinks, and hard
 * links (a later entry with an "ino" already loaded is linked to the first).
 * Then mode, times and, when run as root, owner (a symlink keeps its own:
 * no call sets them without following it); a directory's times are set
 * after its entries are loaded. A line that is not such an object, or an
 * entry that cannot be made, is reported on stderr as "PROG: line N: ..."
 * and the load goes on. 0, or -EINVAL (some line was bad), -EIO (some
 * entry failed, or reading in failed), -ENOMEM. */
int load_stream(mc_client *c, FILE *in, const char *prefix, const char *prog);

#endif
