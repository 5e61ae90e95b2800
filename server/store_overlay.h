/* store_overlay.h - the namespace changes of committed batches that the
 * `inodes` and `dentries` tables do not hold yet (store_log.c note 5): the
 * newest value (or a deletion) per table key, in memory, for the store's
 * point reads. Not for other modules; not thread-safe (the store locks). */
#ifndef MC_STORE_OVERLAY_H
#define MC_STORE_OVERLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "journal.h"
#include "map.h"

enum ovl_table {
	OVL_INODES,
	OVL_DENTRIES,
};

/* One key's newest state: key and value bytes as the table holds them
 * (store.h), or `deleted`. */
struct ovl_ent {
	struct ovl_ent *next;     /* hash chain */
	struct ovl_ent *dnext;    /* a dentry: the next of its parent's (struct ovl_dir) */
	uint64_t hash;
	uint64_t k8;              /* the key's first 8 bytes, big-endian (keys have 8 at least) */
	uint8_t table;            /* enum ovl_table */
	bool deleted;
	bool dropped;             /* deleted at some point in these batches */
	uint16_t klen, vlen;
	uint16_t vcap;            /* value bytes allocated: an entry is reused, never moved */
	uint32_t at;              /* its place in store_ovl.made */
	uint8_t data[];           /* klen key bytes, then vlen value bytes */
};

/* The dentries of one parent, so a directory scan finds its names
 * without going through the whole overlay. */
struct ovl_dir {
	uint64_t parent;
	struct ovl_ent *first;    /* in no order; deletions too */
	size_t n;
};

/* A block of the arena entries and directory lists come from. */
struct ovl_chunk {
	struct ovl_chunk *next;
	size_t used, cap;
	_Alignas(8) uint8_t mem[];
};

struct store_ovl {
	struct ovl_ent **tab;
	size_t nbuckets;          /* a power of two, or 0 before the first add */
	size_t n;                 /* entries */
	struct ovl_ent **made;    /* the n entries in the order their keys came */
	size_t made_cap;
	struct map dirs;          /* parent inode number -> its struct ovl_dir */
	struct ovl_dir *last_dir; /* the one ovl_set found last (NULL: none) */
	uint64_t gen;             /* moves at every change, never back (not even at a clear) */
	struct ovl_chunk *arena;  /* the newest first; every entry and list, freed at a clear */
};

/* Record what r does to the tables; extent records change nothing here
 * (the extents table is read only once everything is applied). 0, or
 * -ENOMEM (the overlay may then hold part of r's effect only), or -EINVAL for
 * an INODE_UNLINK, which only the tables can apply. */
int ovl_add(struct store_ovl *o, const struct journal_rec *r);
/* ovl_add of every record of an encoded batch (journal.h), read in
 * place: as journal.c writes them (journal.c invariant 2), so only their
 * lengths are checked, not what journal_next checks besides. 0, -ENOMEM
 * or -EINVAL as ovl_add (the overlay may then hold part of the batch), or
 * -EPROTO for a record that does not fit. */
int ovl_add_batch(struct store_ovl *o, const uint8_t *buf, size_t len);
/* 1 and *val, *vlen (pointing into the overlay, valid until the next add or
 * clear) when the key has a value, -ENOENT when the key was deleted, 0 when
 * the overlay knows nothing of it. */
int ovl_get(const struct store_ovl *o, enum ovl_table t, const uint8_t *key, size_t klen,
            const uint8_t **val, size_t *vlen);
/* Was inode ino deleted in the batches the overlay holds (even if made
 * again since)? Its extents in the tables are then gone too. */
bool ovl_inode_dropped(const struct store_ovl *o, uint64_t ino);
/* The entries of table t in the tables' key order (bytewise, a shorter
 * prefix first), in a new array (*out, free() it; NULL when *n is 0).
 * 0 or -ENOMEM. */
int ovl_sorted(const struct store_ovl *o, enum ovl_table t, const struct ovl_ent ***out,
               size_t *n);
/* The dentries of directory parent (deletions too) whose name sorts after
 * `after` (after_len bytes; 0: every one), in name order, in a new array
 * (*out, free() it; NULL when *n is 0). 0 or -ENOMEM. */
int ovl_dir_sorted(const struct store_ovl *o, uint64_t parent, const char *after,
                   size_t after_len, const struct ovl_ent ***out, size_t *n);
/* How many dentries (deletions too) the overlay holds for parent. */
size_t ovl_dir_count(const struct store_ovl *o, uint64_t parent);
/* Compare an entry's key with k the way the tables order keys. */
int ovl_keycmp(const struct ovl_ent *e, const uint8_t *k, size_t klen);
/* Empty the overlay and free its memory. */
void ovl_clear(struct store_ovl *o);
/* Empty it, keeping its bucket table for the next batches (up to a bound). */
void ovl_reset(struct store_ovl *o);

#endif
