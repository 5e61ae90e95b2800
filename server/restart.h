/* restart.h - warm restart: with --shm-path the segment is a file that
 * outlives the server. A clean stop saves the allocator state next to it
 * (PATH.state); the next start re-attaches the file and serves its cached
 * namespace at once when both still match the store, and otherwise
 * creates a new segment (the warmers then load it).
 *
 * Re-attaching is safe only for a segment whose every entry is committed:
 *  1. The state file is written only at a clean stop, after the last
 *     commit, when the namespace holds nothing uncommitted nor anything
 *     the process alone knew about (ns_restart_blocker).
 *  2. It is removed when a server starts with the path, before anything
 *     else: after a crash (kill -9 included) there is no state file, so a
 *     segment that may hold uncommitted changes is never re-attached.
 *  3. It records the store's uuid and last committed batch, and the
 *     segment's hash seed; the segment's header records the committed
 *     batch too. All must match the store and the file now: a store
 *     changed since (another server, a restore) refuses the segment.
 */
#ifndef MC_RESTART_H
#define MC_RESTART_H

#include <stdbool.h>
#include <stdint.h>

struct ns;
struct shm;
struct store;

/* Re-attach the segment file at path if a clean stop left it matching
 * store and size (bytes, rounded down to pages as shm_create does). The
 * state file is removed in any case. 0 (*out set, and *warmed: whether
 * the server that left it had finished its warm-up), -ENOENT (no state
 * file: no clean stop), -ESTALE (it does not match: *why says how), or an
 * errno of reading it or of shm_attach. */
int restart_attach(const char *path, uint64_t size, struct store *st, struct shm **out,
                   bool *warmed, const char **why);
/* Save the state of a segment created at path, for restart_attach;
 * warmed: the warm-up was over. 0, -EBUSY (ns cannot be kept: *why says
 * why), or the errno of writing it. */
int restart_save(const char *path, struct shm *s, struct ns *ns, struct store *st, bool warmed,
                 const char **why);

#endif
