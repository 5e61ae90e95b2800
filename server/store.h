/* store.h - the LMDB environment behind the cache: the durable namespace
 * (`inodes`, `dentries`), the commit `log`, and `meta`.
 *
 * Keys are big-endian so LMDB order is numeric order:
 *   inodes:   u64 ino                  -> journal inode encoding + symlink target
 *   dentries: u64 parent ino, name     -> u64 child ino (LE), u8 DT_*
 *   extents:  u64 ino, u64 offset      -> (reserved for the extent map)
 *   log:      u64 batch seq, u32 chunk -> a piece of the batch's value, in
 *                                         chunk order (store_log.c note 1):
 *                                         log header (24 bytes: u8 0xC1, u8 2,
 *                                         u16 0, u32 records, u64 commit time
 *                                         in ns since the epoch, u64 next_ino;
 *                                         format 1: u8 1 and 16 bytes, no
 *                                         next_ino), then the batch's journal
 *                                         records (a value without the header
 *                                         is records only); a key of the seq
 *                                         alone holds the value whole (written
 *                                         before chunks)
 *   meta:     "format" u32, "next_ino" u64, "last_seq" u64, "applied_seq" u64
 *             (format 2), "uuid" 16 bytes
 *
 * A commit writes `log` only; meta is written when the batches after
 * applied_seq are applied to the tables, later, in groups (store_log.c note
 * 5): last_seq and next_ino are then those of the log's last batch when it
 * is newer. Every read below sees every committed batch all the same. A store of format 1 (every batch applied
 * at its commit) is upgraded in place when opened for writing.
 *
 * Every function returns 0 or a negative errno; MDB_* codes never leave
 * store.c. Readers may call from any thread concurrently with one committer.
 */
#ifndef MC_STORE_H
#define MC_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "journal.h"

#define STORE_FORMAT 2u

struct store;

struct store_opts {
	uint64_t map_size;        /* initial LMDB map size in bytes; 0: 256 MiB */
	uint64_t map_size_max;    /* growth limit on MDB_MAP_FULL; 0: 64 GiB */
	/* Retention of `log`, checked at every commit (the batch just written
	 * always stays); 0: no bound of that kind. */
	uint64_t log_retention;   /* batches kept */
	uint64_t log_max_bytes;   /* bytes of values kept */
	uint64_t log_max_age_s;   /* batches older than this go */
	/* Attributes of the root directory (ino 1) when the store is new. */
	uint32_t root_mode;       /* permission bits; the type is added */
	uint32_t root_uid;
	uint32_t root_gid;
	/* Only an existing store, read-only (mcachectl fsck --offline; store.c
	 * note 8): nothing is created or written, an environment with nothing
	 * in it is -EINVAL, and only reads may follow. */
	bool existing;
	/* Apply the log to the tables at least every apply_batches commits
	 * (0: 32; 1: at every commit, as format 1 did) and when the batches not
	 * applied hold apply_bytes of records (0: 1 MiB). */
	unsigned apply_batches;
	uint64_t apply_bytes;
};

struct store_meta {
	uint32_t format;
	uint64_t next_ino;
	uint64_t last_seq;
	uint64_t applied_seq;     /* batches up to this one are in the tables */
	uint8_t uuid[16];
};

struct store_commit_times {
	uint64_t log_ns;          /* appending the batch to `log` */
	uint64_t apply_ns;        /* applying its records to the tables */
	uint64_t sync_ns;         /* mdb_txn_commit (write + fsync) */
	uint64_t grow_ns;         /* growing the map after MDB_MAP_FULL, if it happened */
};

/* Open (creating if missing) the environment in dir and take an exclusive
 * lock on it. A new store gets meta and the root inode. dir and its missing
 * parents are created with mode 0700; the lock is flock(2) on
 * dir/mcached.lock, held until store_close. opts may be NULL (defaults,
 * root mode 0). *out is set only on success.
 * Errors: -EBUSY (another process holds the directory), -EPROTONOSUPPORT
 * (written by a newer format), -EINVAL (not an mcache store / corrupt meta;
 * with opts->existing, an empty environment too),
 * -EACCES, -ENOTDIR, -ENOMEM, -EIO. */
int store_open(const char *dir, const struct store_opts *opts, struct store **out);
/* Applies the batches not applied yet (store_open would otherwise). */
void store_close(struct store *s);

int store_get_meta(struct store *s, struct store_meta *out);

/* -ENOENT when absent. target (MC_SYMLINK_MAX bytes, may be NULL) receives a
 * symlink's target and *target_len (may be NULL) its length; both are copies.
 * store_get_dentry: ino and dtype may be NULL; -EINVAL for an empty name,
 * -ENAMETOOLONG above MC_NAME_MAX bytes. Both: -EIO for a malformed value,
 * -EAGAIN when LMDB's reader table is full. */
int store_get_inode(struct store *s, uint64_t ino, struct mc_inode_rec *out,
                    char *target, size_t *target_len);
int store_get_dentry(struct store *s, uint64_t parent, const char *name, size_t namelen,
                     uint64_t *ino, uint8_t *dtype);

/* Call fn for every entry of directory parent in name order (bytewise, a
 * shorter prefix first), from one snapshot. name is a NUL-terminated copy,
 * valid during the call. fn returns 0 to go on; anything else stops the scan
 * and is returned. fn may call the other read functions but not
 * store_commit or store_close. -EIO for a malformed entry. */
typedef int (*store_dirent_fn)(void *arg, const char *name, size_t namelen,
                               uint64_t ino, uint8_t dtype);
int store_scan_dir(struct store *s, uint64_t parent, store_dirent_fn fn, void *arg);
/* The same from the first name after `after` (after_len bytes, 0: from the
 * start) in that order. -EINVAL when after_len is above MC_NAME_MAX. */
int store_scan_dir_after(struct store *s, uint64_t parent, const char *after, size_t after_len,
                         store_dirent_fn fn, void *arg);
/* The same, with each entry's inode record read in the same snapshot: rec
 * is NULL when the inode is missing or is a symlink (its target is not
 * read; store_get_inode has it). */
typedef int (*store_dirent_attr_fn)(void *arg, const char *name, size_t namelen, uint64_t ino,
                                    uint8_t dtype, const struct mc_inode_rec *rec);
int store_scan_dir_attrs(struct store *s, uint64_t parent, const char *after, size_t after_len,
                         store_dirent_attr_fn fn, void *arg);

/* store_get_dentry, and in the same snapshot a read-ahead: up to max of
 * the names that follow name in parent in the tables' order (as
 * store_scan_dir's), each through fn with what store_get_dentry would say
 * of it then. Names that only batches not applied yet hold are left out:
 * the read-ahead gives part of the directory, each name of it exact. fn
 * runs with the store's read locks held, so it must not call into the
 * store; it returns 0 to go on, anything else to stop. The read-ahead is
 * best effort: an error ends it and is not returned; the errors are
 * store_get_dentry's. */
int store_get_dentry_ahead(struct store *s, uint64_t parent, const char *name, size_t namelen,
                           uint64_t *ino, uint8_t *dtype, unsigned max, store_dirent_fn fn,
                           void *arg);

/* Call fn for each extent of file ino (the `extents` table) in order, from
 * one snapshot: start, length, physical location, flags. fn returns 0 to go
 * on; anything else stops the scan and is returned. -EIO for a malformed
 * entry, -EAGAIN when LMDB's reader table is full. */
typedef int (*store_extent_fn)(void *arg, uint64_t start, uint64_t len, uint64_t phys,
                               uint32_t flags);
int store_scan_extents(struct store *s, uint64_t ino, store_extent_fn fn, void *arg);

/* Write batch b in one write transaction: log[b->seq] = header + records,
 * in chunks (store_log.c note 1)
 * (so store_get_meta says last_seq b->seq, next_ino b->next_ino), when due
 * apply the batches not applied yet (b included) and move meta, trim the
 * log to the retention bounds (never past applied_seq), commit (durable on
 * return). MDB_MAP_FULL grows the map
 * (doubling, up to map_size_max) and retries. On failure nothing is written
 * and the batch may be committed again: -ENOSPC (map full at its limit, or
 * the file system full: LMDB's short write), -EPROTO (a record does not
 * decode), -EIO, or another errno of the failed write or fsync as the
 * system gave it. */
int store_commit(struct store *s, const struct journal_batch *b, struct store_commit_times *t);
/* store_commit of a batch someone waits for: an apply that only the soft
 * bounds (apply_batches, apply_bytes) make due is put off, up to
 * STORE_APPLY_HARD times those bounds (store_log.c note 8), and
 * store_apply_owed says so until an apply ran. */
int store_commit_waited(struct store *s, const struct journal_batch *b,
                        struct store_commit_times *t);
/* When (CLOCK_REALTIME ns) to trim a log no commit writes to: a 100th of
 * the age bound (log_max_age_s; 1 s at least) after its oldest batch
 * passed it, so that the batches of a stretch go together; 1 when that
 * batch has no time (it goes at once), or 0 when nothing will age: no age
 * bound, or the log holds one batch at most (the last always stays). One
 * read transaction. */
uint64_t store_log_trim_due_ns(struct store *s);
/* Drop the batches past the age bound (and any other retention bound)
 * now, with no batch to commit, as a commit would after its append: the
 * number dropped (0 when no trim was due: nothing is written), or the
 * error of the failed transaction. Retention otherwise runs only in
 * commits, so an idle server's committer calls this when
 * store_log_trim_due_ns comes. */
int store_trim_aged(struct store *s);
/* Did a commit put off an apply (store_commit_waited) that no commit has
 * run since? */
bool store_apply_owed(struct store *s);
/* Run the apply put off, if any, in a transaction of its own (the
 * committer, when no one waits): 1 applied, 0 none was owed, or the
 * error of the failed commit (the apply stays owed). */
int store_apply_owed_run(struct store *s);

/* Keep room written ahead past the last page of the LMDB file, so that the
 * commits write inside the file (store_prealloc.c): when less than low
 * is left, append STORE_ROOM_STEP bytes of zeros (never past the map) and
 * fdatasync them. low is STORE_ROOM_LOW, or STORE_ROOM_MIN between the
 * commits of clients that wait for them (note 4): less than STORE_ROOM_LOW
 * left then makes store_room_owed true until a call writes. Between
 * commits, by the committer (it waits for commit_lock). 1 when it wrote,
 * 0 when there was room (or a read-only store), or the write's -errno
 * (the file is as it was). */
#define STORE_ROOM_MIN  (256ull << 10)
#define STORE_ROOM_LOW  (1ull << 20)
#define STORE_ROOM_STEP (2ull << 20)
int store_prealloc(struct store *s, uint64_t low);
/* Did a store_prealloc with a low of STORE_ROOM_MIN leave less than
 * STORE_ROOM_LOW of room, not written since? */
bool store_room_owed(struct store *s);

/* Call fn for each batch of the log with seq >= since, in order, from one
 * snapshot: its sequence number, commit time (ns since the epoch; 0 when
 * written before times were kept) and journal records (decode them with
 * journal_next). fn returns 0 to go on; anything else stops the scan and is
 * returned. *first (may be NULL) receives the oldest batch kept (0: the log
 * is empty). -EIO for a malformed entry, -EAGAIN when LMDB's reader table
 * is full. */
typedef int (*store_log_fn)(void *arg, uint64_t seq, uint64_t time_ns, const uint8_t *recs,
                            size_t len);
int store_scan_log(struct store *s, uint64_t since, uint64_t *first, store_log_fn fn, void *arg);

/* Fault injection for tests: the next n store_commit calls (UINT_MAX: all,
 * until called again; 0: none) fail with err (a negative errno) and write
 * nothing. */
void store_fail_commits(struct store *s, unsigned n, int err);
/* The same, failing late: the next n transactions that would commit a
 * batch are aborted where mdb_txn_commit would run (after the log append,
 * the apply and the overlay adder's job: store_ovladd.c) and the commit
 * fails with err. */
void store_fail_syncs(struct store *s, unsigned n, int err);

/* Environment figures for stats: used_bytes is (last page + 1) * page size. */
struct store_info {
	uint64_t map_size;
	uint64_t used_bytes;
	uint64_t log_entries;     /* batches kept (not chunks) */
	uint64_t log_bytes;       /* bytes of the batches kept (headers, records) */
	uint64_t log_trimmed;     /* batches dropped by retention since store_open */
};
int store_info(struct store *s, struct store_info *out);

/* One record of the whole-store walk (store_walk). */
enum store_rec_kind {
	STORE_REC_INODE,   /* ino, inode, target_len */
	STORE_REC_DENTRY,  /* parent, name, namelen (not NUL-terminated), ino, dtype */
	STORE_REC_EXTENT,  /* ino, start, len, phys, flags */
	STORE_REC_BAD,     /* a record that does not decode: table, why, ino (from the
	                    * key when it holds one, else 0) */
};
struct store_rec {
	enum store_rec_kind kind;
	uint64_t ino;
	struct mc_inode_rec inode;
	size_t target_len;
	uint64_t parent;
	const char *name;
	size_t namelen;
	uint8_t dtype;
	uint64_t start, len, phys;
	uint32_t flags;
	const char *table, *why;
};
/* Call fn for every record of `inodes`, then `dentries`, then `extents`,
 * each in key order, from one snapshot; r and what it points to live for
 * the call only. fn returns 0 to go on; anything else stops the walk and
 * is returned. -EAGAIN when LMDB's reader table is full, -EIO when LMDB
 * finds its own pages corrupt. */
typedef int (*store_walk_fn)(void *arg, const struct store_rec *r);
int store_walk(struct store *s, store_walk_fn fn, void *arg);

#endif
