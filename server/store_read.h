/* store_read.h - long-lived LMDB read snapshots for threads that read the
 * store in bounded steps and must let go of their snapshot between them
 * (the warmers, warm.c): begin once, then reset (mdb_txn_reset) and renew
 * (mdb_txn_renew) instead of a new transaction per read.
 *
 *   store_snap_new ──► [released] ──store_snap_take──► [held]
 *                          ▲                              │
 *                          └──────store_snap_release──────┘
 *   store_snap_free from either state.
 *
 * While held, a snapshot keeps the store's map from being resized (the
 * store's resize lock is held for reading) and pins the LMDB pages it sees:
 * hold it for one bounded step only, and never call store_commit (which
 * takes the store's commit lock before the resize lock) while holding it.
 */
#ifndef MC_STORE_READ_H
#define MC_STORE_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "journal.h"
#include "store.h"

struct store_snap;

/* A released snapshot reader of s. -ENOMEM. */
int store_snap_new(struct store *s, struct store_snap **out);
/* Release (if held) and free. */
void store_snap_free(struct store_snap *sn);
/* Take a fresh snapshot: what every store_commit that returned before this
 * call wrote is visible. -EAGAIN (LMDB's reader table is full), -EIO. On
 * failure the reader stays released. */
int store_snap_take(struct store_snap *sn);
/* Let the snapshot go (mdb_txn_reset); the reader's slot is kept for the
 * next store_snap_take. No-op when released. */
void store_snap_release(struct store_snap *sn);

/* One entry of a directory with its inode record, read from the held
 * snapshot: rec is NULL when the inode is missing; target holds a
 * symlink's target (tlen bytes, not NUL-terminated; tlen 0 otherwise).
 * name is NUL-terminated. Everything is a copy valid during the call. fn
 * returns 0 to go on, 1 to stop (the scan returns 0), or a negative errno
 * (returned). */
typedef int (*store_snap_fn)(void *arg, const char *name, size_t namelen, uint64_t ino,
                             uint8_t dtype, const struct mc_inode_rec *rec, const char *target,
                             size_t tlen);
/* Call fn for every entry of directory parent after the name `after`
 * (after_len bytes; 0: from the first) in name order: the tables merged
 * with the batches committed but not applied, never applying them. The
 * snapshot is renewed for every chunk of 64 entries (store_read.c note
 * 1d), so it shows what every commit that returned before the chunk
 * wrote, and it is held again when the scan returns 0. Needs a held
 * snapshot (assert). -EINVAL (after_len above MC_NAME_MAX), -EIO (a
 * malformed entry or inode record). */
int store_snap_scan_dir(struct store_snap *sn, uint64_t parent, const char *after,
                        size_t after_len, store_snap_fn fn, void *arg);

/* The last name of directory parent in the tables of the held snapshot
 * (assert), or with from (from_len bytes) its first name at or after
 * from, copied to name (MC_NAME_MAX bytes, not NUL-terminated, *len): 1,
 * or 0 when the tables hold no such entry, or -errno. The batches
 * committed but not applied are not looked at: these are hints (where to
 * split a directory between warmers, warm.c), not a directory's truth. */
int store_snap_last_name(struct store_snap *sn, uint64_t parent, char *name, size_t *len);
int store_snap_name_from(struct store_snap *sn, uint64_t parent, const char *from,
                         size_t from_len, char *name, size_t *len);

/* Name name (namelen bytes) in directory parent, and the inode it names,
 * read in one snapshot of its own (no store_snap needed): *ino and *dtype,
 * and in *rec (with a symlink's target copied to target, MC_SYMLINK_MAX
 * bytes, *tlen) the inode record when *have_rec, which is false when the
 * store has no record of that inode. -ENOENT (no such name), -EINVAL (an
 * empty name), -ENAMETOOLONG, -EIO (malformed), -EAGAIN (LMDB's reader
 * table is full). */
int store_get_entry(struct store *s, uint64_t parent, const char *name, size_t namelen,
                    uint64_t *ino, uint8_t *dtype, struct mc_inode_rec *rec, char *target,
                    size_t *tlen, bool *have_rec);

#endif
