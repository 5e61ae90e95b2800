/* logfeed.h - the commit log as an operator or a replica reads it (OP_LOG,
 * `mcachectl log`): committed journal records rendered as JSON lines, one
 * per record, resumable at any record.
 *
 * Each line is an object with "seq" (the batch), "rec" (the record's index
 * in its batch), "time_ns" (the batch's commit time, ns since the epoch; 0
 * when unknown) and "op", then the record's fields:
 *   inode_put:    ino, mode (number), nlink, uid, gid, size, atime_ns,
 *                 mtime_ns, ctime_ns, and target for a symlink
 *   inode_del:    ino
 *   dentry_put:   parent, name, ino, type (DT_* number)
 *   dentry_del:   parent, name
 *   extent_set:   ino, start, end (inclusive), phys, flags
 *   extent_punch: ino, start, end (inclusive)
 * Names and targets are byte strings: bytes below 0x20, from 0x7f, '"' and
 * '\' are written as \u00XX, so every code point up to U+00FF is one byte.
 */
#ifndef MC_LOGFEED_H
#define MC_LOGFEED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;

struct logfeed_out {
	char *buf;            /* malloc'd JSON lines (NUL-terminated); the caller frees */
	size_t len;
	uint64_t next_seq;    /* where the next read starts: batch ... */
	uint64_t next_rec;    /* ... and record index in it */
	uint64_t first;       /* the oldest batch the log keeps; 0: empty */
	bool eof;             /* every committed record up to now was returned */
};

/* Render the records from record rec of batch seq on (an earlier batch
 * than the oldest kept starts at the oldest), whole lines, until about max
 * bytes (at least one record). 0, or -ENOMEM, or the store's error (-EIO,
 * -EPROTO for a record that does not decode, -EAGAIN). */
int logfeed_read(struct store *st, uint64_t seq, uint64_t rec, size_t max,
                 struct logfeed_out *out);

#endif
