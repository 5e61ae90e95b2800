/* logfeed.c - committed journal records as JSON lines (logfeed.h), read
 * from the store's commit log in one snapshot. */
#include "logfeed.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "journal.h"
#include "store.h"

/* A reply under construction; stop is the byte count past which no new
 * record starts. */
struct feed {
	char *buf;
	size_t len, cap, stop;
	uint64_t seq, rec;          /* where to start */
	uint64_t next_seq, next_rec;
	bool full;
	int err;
};

#define FEED_FULL 1             /* store_scan_log stop: the reply is full */

static int feed_reserve(struct feed *f, size_t need)
{
	char *nb = grow(f->buf, &f->cap, f->len + need + 1, 4096);
	if (!nb)
		return -ENOMEM;
	f->buf = nb;
	return 0;
}

static void feed_printf(struct feed *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void feed_printf(struct feed *f, const char *fmt, ...)
{
	va_list ap;
	if (f->err)
		return;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || (f->err = feed_reserve(f, (size_t)n)) != 0) {
		f->err = f->err ? f->err : -EINVAL;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(f->buf + f->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	f->len += (size_t)n;
}

/* A JSON string of bytes (logfeed.h). */
static void feed_bytes(struct feed *f, const char *key, const char *p, size_t n)
{
	feed_printf(f, ",\"%s\":\"", key);
	if (f->err || (f->err = feed_reserve(f, n * 6 + 1)) != 0)
		return;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];
		if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\')
			f->len += (size_t)sprintf(f->buf + f->len, "\\u%04x", c);
		else
			f->buf[f->len++] = (char)c;
	}
	f->buf[f->len++] = '"';
	f->buf[f->len] = '\0';
}

static void feed_rec(struct feed *f, uint64_t seq, uint64_t idx, uint64_t t,
                     const struct journal_rec *r)
{
	static const char *const names[] = {
		[JR_INODE_PUT] = "inode_put", [JR_INODE_DEL] = "inode_del",
		[JR_DENTRY_PUT] = "dentry_put", [JR_DENTRY_DEL] = "dentry_del",
		[JR_EXTENT_SET] = "extent_set", [JR_EXTENT_PUNCH] = "extent_punch",
		[JR_INODE_UNLINK] = "inode_unlink",
	};
	feed_printf(f, "{\"seq\":%llu,\"rec\":%llu,\"time_ns\":%llu,\"op\":\"%s\"",
	            (unsigned long long)seq, (unsigned long long)idx, (unsigned long long)t,
	            names[r->type]);
	switch (r->type) {
	case JR_INODE_PUT: {
		const struct mc_inode_rec *i = &r->inode;
		feed_printf(f, ",\"ino\":%llu,\"mode\":%u,\"nlink\":%u,\"uid\":%u,\"gid\":%u,"
		            "\"size\":%llu,\"atime_ns\":%lld,\"mtime_ns\":%lld,\"ctime_ns\":%lld",
		            (unsigned long long)i->ino, i->mode, i->nlink, i->uid, i->gid,
		            (unsigned long long)i->size, (long long)i->atime_ns,
		            (long long)i->mtime_ns, (long long)i->ctime_ns);
		if (r->target)
			feed_bytes(f, "target", r->target, r->target_len);
		break;
	}
	case JR_INODE_DEL:
		feed_printf(f, ",\"ino\":%llu", (unsigned long long)r->ino);
		break;
	case JR_INODE_UNLINK:
		feed_printf(f, ",\"ino\":%llu,\"ctime_ns\":%lld", (unsigned long long)r->ino,
		            (long long)r->ctime_ns);
		break;
	case JR_DENTRY_PUT:
		feed_printf(f, ",\"parent\":%llu", (unsigned long long)r->parent);
		feed_bytes(f, "name", r->name, r->namelen);
		feed_printf(f, ",\"ino\":%llu,\"type\":%u", (unsigned long long)r->ino, r->dtype);
		break;
	case JR_DENTRY_DEL:
		feed_printf(f, ",\"parent\":%llu", (unsigned long long)r->parent);
		feed_bytes(f, "name", r->name, r->namelen);
		break;
	case JR_EXTENT_SET:
		feed_printf(f, ",\"ino\":%llu,\"start\":%llu,\"end\":%llu,\"phys\":%llu,\"flags\":%u",
		            (unsigned long long)r->ino, (unsigned long long)r->start,
		            (unsigned long long)r->end, (unsigned long long)r->phys, r->flags);
		break;
	case JR_EXTENT_PUNCH:
		feed_printf(f, ",\"ino\":%llu,\"start\":%llu,\"end\":%llu",
		            (unsigned long long)r->ino, (unsigned long long)r->start,
		            (unsigned long long)r->end);
		break;
	}
	feed_printf(f, "}\n");
}

static int feed_batch(void *arg, uint64_t seq, uint64_t time_ns, const uint8_t *recs, size_t len)
{
	struct feed *f = arg;
	struct journal_rec r;
	size_t pos = 0;
	uint64_t idx = 0, skip = seq == f->seq ? f->rec : 0;
	int rc;
	while ((rc = journal_next(recs, len, &pos, &r)) == 1) {
		if (idx >= skip) {
			if (f->len >= f->stop) {
				f->next_seq = seq;
				f->next_rec = idx;
				f->full = true;
				return FEED_FULL;
			}
			feed_rec(f, seq, idx, time_ns, &r);
			if (f->err)
				return f->err;
		}
		idx++;
	}
	if (rc < 0)
		return rc;
	f->next_seq = seq + 1;
	f->next_rec = 0;
	return 0;
}

int logfeed_read(struct store *st, uint64_t seq, uint64_t rec, size_t max,
                 struct logfeed_out *out)
{
	struct feed f = { .stop = max ? max : 1, .seq = seq, .rec = rec,
	                  .next_seq = seq, .next_rec = rec };
	uint64_t first = 0;
	int err = feed_reserve(&f, 0);
	if (!err)
		err = store_scan_log(st, seq, &first, feed_batch, &f);
	if (err == FEED_FULL)
		err = 0;
	if (err) {
		free(f.buf);
		return err;
	}
	f.buf[f.len] = '\0';
	/* Nothing at or after seq: the next batch to come is after the last. */
	if (!f.full && f.next_seq < first)
		f.next_seq = first, f.next_rec = 0;
	*out = (struct logfeed_out){ f.buf, f.len, f.next_seq, f.next_rec, first, !f.full };
	return 0;
}
