/* mcachectl_fsck.h - `mcachectl fsck`: the consistency check of a running
 * server's namespace, or of a stopped server's data directory
 * (mcachectl_fsck.c). */
#ifndef MCACHECTL_FSCK_H
#define MCACHECTL_FSCK_H

#include <stdbool.h>

/* Run `fsck [--json] [--offline DATA_DIR]` (argv[0] is "fsck"): through the
 * server at sock (NULL: the default socket), or, with --offline, on the
 * LMDB store in DATA_DIR read directly (the server must be stopped: it
 * holds the directory's lock). Prints every problem, one a line as
 *   KIND ino INO [name NAME]: DETAIL
 * then a summary line; with --json (here or before the command: json) the
 * report's JSON document instead (mc_server_fsck). Returns the exit
 * status: 0 clean, 1 problems found, 2 the check could not run (usage,
 * connection, store errors: said on stderr as "PROG: fsck: ..."). */
#define FSCK_HELP \
	"Check the namespace's consistency on the server: every name's inode\n" \
	"exists, link counts, directory sizes, no orphan inodes, no cycles,\n" \
	"extents inside their files, and the cache equal to the store. Prints one\n" \
	"line per problem (KIND ino INO [name NAME]: DETAIL) and a summary.\n" \
	"  --json             print the report as one JSON object\n" \
	"  --offline DATA_DIR check the store in DATA_DIR directly, without a\n" \
	"                     server (which must be stopped)\n" \
	"Exit status: 0 clean, 1 problems found, 2 the check could not run.\n"

int fsck_command(int argc, char **argv, const char *sock, bool json, const char *prog);

#endif
