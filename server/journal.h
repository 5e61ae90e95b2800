/* journal.h - the records of the commit log: what changed in the namespace,
 * encoded into one byte buffer per group-commit batch.
 *
 * The namespace appends a record for every change while it holds the
 * namespace lock; the committer swaps the running batch for an empty one and
 * hands the full one to the store, which writes it to the `log` database and
 * applies it to the tables. Records are self-delimiting and little-endian:
 *
 *   u8 type, u8 dtype, u16 namelen, u32 body_len, then the body:
 *   INODE_PUT:  struct journal_inode_disk, then the symlink target
 *   INODE_DEL:  u64 ino
 *   INODE_UNLINK: u64 ino, i64 ctime_ns: the inode lost one link (of a name
 *               the cache did not hold it by); at 0 it is deleted as by
 *               INODE_DEL, else its nlink drops by one and ctime is set
 *   DENTRY_PUT: u64 parent, u64 ino, name
 *   DENTRY_DEL: u64 parent, name
 *   EXTENT_SET: u64 ino, u64 start, u64 end (inclusive), u64 phys, u32 flags
 *   EXTENT_PUNCH: u64 ino, u64 start, u64 end (inclusive)
 */
#ifndef MC_JOURNAL_H
#define MC_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

/* A persistent inode: the value of the `inodes` table (plus the symlink
 * target after it) and the body of an INODE_PUT record. */
struct mc_inode_rec {
	uint64_t ino;
	uint32_t mode;
	uint32_t nlink;
	uint32_t uid;
	uint32_t gid;
	uint64_t size;            /* regular file size; symlink target length; directory entry count */
	int64_t atime_ns;
	int64_t mtime_ns;
	int64_t ctime_ns;
};

enum journal_type {
	JR_INODE_PUT = 1,
	JR_INODE_DEL = 2,
	JR_DENTRY_PUT = 3,
	JR_DENTRY_DEL = 4,
	JR_EXTENT_SET = 5,
	JR_EXTENT_PUNCH = 6,
	JR_INODE_UNLINK = 7,
};

/* One group-commit batch. */
struct journal_batch {
	uint64_t seq;             /* batch number, assigned when it starts running */
	uint64_t next_ino;        /* the inode counter after the batch's changes */
	uint32_t nrecs;
	uint32_t types;           /* 1 << type of every record in buf */
	uint8_t *buf;             /* encoded records */
	size_t len;
	size_t cap;
};

/* A decoded record; pointers point into the batch buffer. */
struct journal_rec {
	enum journal_type type;
	struct mc_inode_rec inode;   /* INODE_PUT */
	const char *target;          /* INODE_PUT of a symlink, else NULL */
	size_t target_len;
	uint64_t ino;                /* INODE_DEL, INODE_UNLINK; DENTRY_PUT: the child */
	int64_t ctime_ns;            /* INODE_UNLINK */
	uint64_t parent;             /* DENTRY_PUT, DENTRY_DEL */
	const char *name;
	size_t namelen;
	uint8_t dtype;               /* DENTRY_PUT: DT_* */
	uint64_t start, end;         /* EXTENT_*: the range, inclusive; ino is the file */
	uint64_t phys;               /* EXTENT_SET */
	uint32_t flags;
};

void journal_batch_init(struct journal_batch *b, uint64_t seq);
/* Do b's records follow each other as journal_next reads them: every
 * header of a known type with the lengths that type takes, the last one
 * ending at b->len, b->nrecs of them? 0 or -EPROTO. Their contents are
 * not looked at (the appenders checked them, journal.c invariant 2): a
 * pass of a few instructions a record, where journal_next decodes each. */
int journal_check_frames(const struct journal_batch *b);
/* Empty the batch for reuse as batch number seq; keeps its buffer and
 * next_ino. */
void journal_batch_reset(struct journal_batch *b, uint64_t seq);
void journal_batch_free(struct journal_batch *b);

/* Append a record. 0, or -ENOMEM (the batch is unchanged), or -EINVAL (the
 * batch is unchanged) when the record would not decode: ino or parent 0, a
 * name not 1..MC_NAME_MAX bytes or containing '/' or NUL, a mode whose type
 * is not a file type, a dtype that is not a DT_* value, a target longer than
 * MC_SYMLINK_MAX or given for an inode that is not a symlink. */
int journal_put_inode(struct journal_batch *b, const struct mc_inode_rec *rec,
                      const char *target, size_t target_len);
/* Rewrite, with rec, the INODE_PUT record that starts at byte off of b (b->len
 * when journal_put_inode appended it): a batch keeps one record per inode
 * however often the inode changes. The symlink target stays. 0, or -EINVAL
 * (the batch unchanged) when there is no INODE_PUT of rec->ino at off. */
int journal_update_inode(struct journal_batch *b, size_t off, const struct mc_inode_rec *rec);
int journal_del_inode(struct journal_batch *b, uint64_t ino);
/* INODE_UNLINK: ino lost one link at ctime_ns. 0, -ENOMEM, -EINVAL (ino 0). */
int journal_unlink_inode(struct journal_batch *b, uint64_t ino, int64_t ctime_ns);
int journal_put_dentry(struct journal_batch *b, uint64_t parent, const char *name,
                       size_t namelen, uint64_t ino, uint8_t dtype);
int journal_del_dentry(struct journal_batch *b, uint64_t parent, const char *name,
                       size_t namelen);

/* Map [start, end] of file ino to phys (replacing what overlaps), or unmap
 * it. 0, -ENOMEM, or -EINVAL (ino 0, start > end); the batch unchanged on
 * error. */
int journal_set_extent(struct journal_batch *b, uint64_t ino, uint64_t start, uint64_t end,
                       uint64_t phys, uint32_t flags);
int journal_punch_extent(struct journal_batch *b, uint64_t ino, uint64_t start, uint64_t end);

/* Decode the record at *pos of buf[0..len). Returns 1 and advances *pos, 0 at
 * the end, -EPROTO if the bytes are not a valid record (truncated, bad
 * type, lengths out of range, any check of the append functions fails);
 * *pos and *out are unchanged then. Never reads outside buf[0..len). */
int journal_next(const uint8_t *buf, size_t len, size_t *pos, struct journal_rec *out);

/* The on-disk encoding of an inode record (fixed 56 bytes, little-endian);
 * shared by the journal and the store's `inodes` table. */
#define JOURNAL_INODE_DISK_SIZE 56u
void journal_inode_encode(const struct mc_inode_rec *rec, uint8_t out[JOURNAL_INODE_DISK_SIZE]);
void journal_inode_decode(const uint8_t in[JOURNAL_INODE_DISK_SIZE], struct mc_inode_rec *rec);

#endif
