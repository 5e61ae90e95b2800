/* fsck.h - the consistency check of a namespace: its store alone (offline,
 * on a data directory, or online) and, on a running server, the cache
 * against the store.
 *
 * What the store must satisfy (each violation is one problem of the kind
 * named):
 *  1. every record decodes (bad-record); the root, inode 1, is a directory
 *     (no-root); no inode number reaches meta's next_ino (ino-range);
 *  2. every dentry's parent is a directory (bad-parent), its inode exists
 *     (dangling) and has the dentry's type (dtype);
 *  3. nlink is the number of names of a file, 2 + the subdirectories of a
 *     directory (nlink); a directory's size is its entry count, a
 *     symlink's its target's length (size);
 *  4. every inode but the root has a name (orphan), unless the server
 *     holds it open after its last unlink; a directory has one name
 *     (multi-parent) and is reached from the root (unreachable: a cycle or
 *     a detached subtree);
 *  5. extents belong to a regular file, lie inside its size and do not
 *     overlap (extent).
 * On a running server (fsck_cache.c), what the cache holds clean must equal
 * the store (cache-inode, cache-dentry), and a complete directory with
 * nothing uncommitted must hold exactly the store's children (cache-dir).
 */
#ifndef MC_FSCK_H
#define MC_FSCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;
struct ns;

#define FSCK_KINDS(X) \
	X(BAD_RECORD,   "bad-record",   "a record of the store does not decode") \
	X(NO_ROOT,      "no-root",      "the root directory is missing or not a directory") \
	X(INO_RANGE,    "ino-range",    "an inode number at or above meta's next_ino") \
	X(BAD_PARENT,   "bad-parent",   "a dentry whose parent is missing or not a directory") \
	X(DANGLING,     "dangling",     "a dentry naming a missing inode") \
	X(DTYPE,        "dtype",        "a dentry whose type is not its inode's") \
	X(NLINK,        "nlink",        "nlink differs from the names (and subdirectories)") \
	X(SIZE,         "size",         "a directory's size is not its entry count, or a symlink's not its target length") \
	X(ORPHAN,       "orphan",       "an inode without a name, not held open") \
	X(MULTI_PARENT, "multi-parent", "a directory with more than one name") \
	X(UNREACHABLE,  "unreachable",  "a directory not reached from the root (a cycle)") \
	X(EXTENT,       "extent",       "an extent outside its file, past its size, or overlapping") \
	X(CACHE_INODE,  "cache-inode",  "a clean cached inode differs from the store") \
	X(CACHE_DENTRY, "cache-dentry", "a clean cached dentry differs from the store") \
	X(CACHE_DIR,    "cache-dir",    "a complete directory's cached children differ from the store")

#define FSCK_KIND_ENUM(id, name, desc) FSCK_##id,
enum fsck_kind { FSCK_KINDS(FSCK_KIND_ENUM) FSCK_KIND_COUNT };
#undef FSCK_KIND_ENUM

/* The kind's name ("nlink") and one-line description. */
const char *fsck_kind_name(enum fsck_kind k);
const char *fsck_kind_desc(enum fsck_kind k);

struct fsck_problem {
	enum fsck_kind kind;
	uint64_t ino;             /* the inode concerned (the dentry's parent for a dentry), 0: none */
	char *name;               /* the dentry's name, or NULL */
	char *detail;             /* what was found against what was expected */
};

#define FSCK_PROBLEMS_MAX 10000u   /* kept at most; the rest are only counted */

struct fsck_report {
	struct fsck_problem *v;
	size_t n, cap;
	uint64_t dropped;         /* problems past FSCK_PROBLEMS_MAX */
	uint64_t inodes, dentries, extents;          /* store records checked */
	uint64_t cached_inodes, cached_dentries, cached_dirs; /* clean cache entries compared */
};

/* Whether ino is held open by the server after its last unlink (so not an
 * orphan); NULL: nothing is. */
typedef bool (*fsck_held_fn)(void *arg, uint64_t ino);

/* Check the store (rules 1-5) from one snapshot, adding problems to rep
 * (zeroed by the caller, or holding earlier findings). Problems are not
 * errors: the return is 0 with problems found. -ENOMEM, -EAGAIN (LMDB's
 * reader table is full), -EIO (LMDB finds its pages corrupt). */
int fsck_store(struct store *st, fsck_held_fn held, void *held_arg, struct fsck_report *rep);

/* Check the data directory of a stopped server: open it read-only (a shared
 * lock on its lock file when there is one; nothing is created or written:
 * store.c note 8), read it in one snapshot and run fsck_store. -ENOENT (no store
 * there), -EBUSY (a running mcached has it: check through the server),
 * -EINVAL (not an mcache store), -EPROTONOSUPPORT (a newer format), and
 * fsck_store's. */
int fsck_offline(const char *dir, struct fsck_report *rep);

/* The whole check on a running server: the store, then the cache against
 * it, under the namespace lock in batches (mutations wait for one batch at
 * most). fsck_store's errors. (fsck_cache.c) */
int fsck_ns(struct ns *ns, struct fsck_report *rep);

/* Add a problem (detail is printf-formatted); name may be NULL.
 * -ENOMEM (nothing added). Past FSCK_PROBLEMS_MAX it is only counted. */
int fsck_add(struct fsck_report *rep, enum fsck_kind kind, uint64_t ino, const char *name,
             size_t namelen, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* The report as a JSON document (malloc'd, NUL-terminated):
 *   {"clean": bool, "checked": {"inodes": n, "dentries": n, "extents": n,
 *    "cached_inodes": n, "cached_dentries": n, "cached_dirs": n},
 *    "problems": [{"kind": "nlink", "ino": n, "name": "x" (or null),
 *                  "detail": "..."}, ...], "dropped": n}
 * NULL on ENOMEM. */
char *fsck_report_json(const struct fsck_report *rep);
void fsck_report_free(struct fsck_report *rep);

#endif
