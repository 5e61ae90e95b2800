/* journal.c - encode and decode the commit-log records of one group-commit batch.
 *
 * NOTES
 *  1. Every multi-byte field is written and read byte by byte, little-endian;
 *     no struct is ever copied to or from the buffer.
 *  2. b->buf[0..b->len) always holds whole, valid records: the append
 *     functions check their arguments with the same rules journal_next
 *     applies, so whatever is appended decodes. A failed append (-EINVAL,
 *     -ENOMEM) leaves the batch exactly as it was.
 *  3. The buffer only grows (doubling); journal_batch_reset keeps it.
 *  4. journal_next trusts nothing: every length is checked against the
 *     remaining bytes before it is used, and any inconsistency is -EPROTO.
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bytes.h"
#include "grow.h"
#include "journal.h"
#include "mc_shm.h"

#define JOURNAL_HDR_SIZE 8u          /* u8 type, u8 dtype, u16 namelen, u32 body_len */
#define JOURNAL_BUF_MIN 4096u

void journal_inode_encode(const struct mc_inode_rec *rec, uint8_t out[JOURNAL_INODE_DISK_SIZE])
{
	put_le64(out + 0, rec->ino);
	put_le32(out + 8, rec->mode);
	put_le32(out + 12, rec->nlink);
	put_le32(out + 16, rec->uid);
	put_le32(out + 20, rec->gid);
	put_le64(out + 24, rec->size);
	put_le64(out + 32, (uint64_t)rec->atime_ns);
	put_le64(out + 40, (uint64_t)rec->mtime_ns);
	put_le64(out + 48, (uint64_t)rec->ctime_ns);
}

void journal_inode_decode(const uint8_t in[JOURNAL_INODE_DISK_SIZE], struct mc_inode_rec *rec)
{
	rec->ino = get_le64(in + 0);
	rec->mode = get_le32(in + 8);
	rec->nlink = get_le32(in + 12);
	rec->uid = get_le32(in + 16);
	rec->gid = get_le32(in + 20);
	rec->size = get_le64(in + 24);
	rec->atime_ns = (int64_t)get_le64(in + 32);
	rec->mtime_ns = (int64_t)get_le64(in + 40);
	rec->ctime_ns = (int64_t)get_le64(in + 48);
}

void journal_batch_init(struct journal_batch *b, uint64_t seq)
{
	memset(b, 0, sizeof(*b));
	b->seq = seq;
}

void journal_batch_reset(struct journal_batch *b, uint64_t seq)
{
	b->seq = seq;
	b->nrecs = 0;
	b->types = 0;
	b->len = 0;
}

void journal_batch_free(struct journal_batch *b)
{
	free(b->buf);
	b->buf = NULL;
	b->len = 0;
	b->cap = 0;
	b->nrecs = 0;
	b->types = 0;
}

/* Make room for need more bytes; 0 or -ENOMEM with the batch unchanged. */
static int journal_reserve(struct journal_batch *b, size_t need)
{
	if (need > SIZE_MAX - b->len)
		return -ENOMEM;
	uint8_t *nb = grow(b->buf, &b->cap, b->len + need, JOURNAL_BUF_MIN);
	if (!nb)
		return -ENOMEM;
	b->buf = nb;
	return 0;
}

/* Reserve and write a record header; returns the body pointer or NULL. */
static uint8_t *journal_begin(struct journal_batch *b, enum journal_type type, uint8_t dtype,
                              uint16_t namelen, uint32_t body_len)
{
	if (journal_reserve(b, JOURNAL_HDR_SIZE + (size_t)body_len) < 0)
		return NULL;
	uint8_t *p = b->buf + b->len;
	p[0] = (uint8_t)type;
	p[1] = dtype;
	put_le16(p + 2, namelen);
	put_le32(p + 4, body_len);
	return p + JOURNAL_HDR_SIZE;
}

static void journal_end(struct journal_batch *b, uint32_t body_len)
{
	b->types |= 1u << b->buf[b->len];      /* the type journal_begin wrote */
	b->len += JOURNAL_HDR_SIZE + (size_t)body_len;
	b->nrecs++;
}

static bool journal_name_ok(const char *name, size_t namelen)
{
	if (namelen < 1 || namelen > MC_NAME_MAX)
		return false;
	return memchr(name, '/', namelen) == NULL && memchr(name, '\0', namelen) == NULL;
}

static bool journal_mode_ok(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: case S_IFDIR: case S_IFLNK: case S_IFIFO:
	case S_IFCHR: case S_IFBLK: case S_IFSOCK:
		return true;
	default:
		return false;
	}
}

static bool journal_dtype_ok(uint8_t dtype)
{
	switch (dtype) {
	case DT_UNKNOWN: case DT_FIFO: case DT_CHR: case DT_DIR:
	case DT_BLK: case DT_REG: case DT_LNK: case DT_SOCK:
		return true;
	default:
		return false;
	}
}

int journal_put_inode(struct journal_batch *b, const struct mc_inode_rec *rec,
                      const char *target, size_t target_len)
{
	if (rec->ino == 0 || !journal_mode_ok(rec->mode) || target_len > MC_SYMLINK_MAX ||
	    (target_len != 0 && (!target || !S_ISLNK(rec->mode))))
		return -EINVAL;

	uint32_t body_len = JOURNAL_INODE_DISK_SIZE + (uint32_t)target_len;
	uint8_t *p = journal_begin(b, JR_INODE_PUT, 0, 0, body_len);
	if (!p)
		return -ENOMEM;
	journal_inode_encode(rec, p);
	if (target_len)
		memcpy(p + JOURNAL_INODE_DISK_SIZE, target, target_len);
	journal_end(b, body_len);
	return 0;
}

int journal_update_inode(struct journal_batch *b, size_t off, const struct mc_inode_rec *rec)
{
	if (off > b->len || b->len - off < JOURNAL_HDR_SIZE + JOURNAL_INODE_DISK_SIZE)
		return -EINVAL;
	uint8_t *p = b->buf + off;
	if (p[0] != JR_INODE_PUT || get_le32(p + 4) < JOURNAL_INODE_DISK_SIZE ||
	    get_le64(p + JOURNAL_HDR_SIZE) != rec->ino || !journal_mode_ok(rec->mode))
		return -EINVAL;
	journal_inode_encode(rec, p + JOURNAL_HDR_SIZE);
	return 0;
}

int journal_del_inode(struct journal_batch *b, uint64_t ino)
{
	if (ino == 0)
		return -EINVAL;
	uint8_t *p = journal_begin(b, JR_INODE_DEL, 0, 0, 8);
	if (!p)
		return -ENOMEM;
	put_le64(p, ino);
	journal_end(b, 8);
	return 0;
}

int journal_unlink_inode(struct journal_batch *b, uint64_t ino, int64_t ctime_ns)
{
	if (ino == 0)
		return -EINVAL;
	uint8_t *p = journal_begin(b, JR_INODE_UNLINK, 0, 0, 16);
	if (!p)
		return -ENOMEM;
	put_le64(p, ino);
	put_le64(p + 8, (uint64_t)ctime_ns);
	journal_end(b, 16);
	return 0;
}

int journal_put_dentry(struct journal_batch *b, uint64_t parent, const char *name,
                       size_t namelen, uint64_t ino, uint8_t dtype)
{
	if (parent == 0 || ino == 0 || !journal_name_ok(name, namelen) || !journal_dtype_ok(dtype))
		return -EINVAL;

	uint32_t body_len = 16 + (uint32_t)namelen;
	uint8_t *p = journal_begin(b, JR_DENTRY_PUT, dtype, (uint16_t)namelen, body_len);
	if (!p)
		return -ENOMEM;
	put_le64(p, parent);
	put_le64(p + 8, ino);
	memcpy(p + 16, name, namelen);
	journal_end(b, body_len);
	return 0;
}

int journal_del_dentry(struct journal_batch *b, uint64_t parent, const char *name,
                       size_t namelen)
{
	if (parent == 0 || !journal_name_ok(name, namelen))
		return -EINVAL;

	uint32_t body_len = 8 + (uint32_t)namelen;
	uint8_t *p = journal_begin(b, JR_DENTRY_DEL, 0, (uint16_t)namelen, body_len);
	if (!p)
		return -ENOMEM;
	put_le64(p, parent);
	memcpy(p + 8, name, namelen);
	journal_end(b, body_len);
	return 0;
}

/* Begin an extent record of type and len bytes with its ino, start, end
 * head written; the caller writes the rest and ends it. -EINVAL for ino 0
 * or start > end, -ENOMEM when the batch has no room. */
static int extent_begin(struct journal_batch *b, enum journal_type type, uint64_t ino,
                        uint64_t start, uint64_t end, uint32_t len, uint8_t **out)
{
	if (ino == 0 || start > end)
		return -EINVAL;
	uint8_t *p = journal_begin(b, type, 0, 0, len);
	if (!p)
		return -ENOMEM;
	put_le64(p, ino);
	put_le64(p + 8, start);
	put_le64(p + 16, end);
	*out = p;
	return 0;
}

int journal_set_extent(struct journal_batch *b, uint64_t ino, uint64_t start, uint64_t end,
                       uint64_t phys, uint32_t flags)
{
	uint8_t *p;
	int rc = extent_begin(b, JR_EXTENT_SET, ino, start, end, 36, &p);
	if (rc)
		return rc;
	put_le64(p + 24, phys);
	put_le32(p + 32, flags);
	journal_end(b, 36);
	return 0;
}

int journal_punch_extent(struct journal_batch *b, uint64_t ino, uint64_t start, uint64_t end)
{
	uint8_t *p;
	int rc = extent_begin(b, JR_EXTENT_PUNCH, ino, start, end, 24, &p);
	if (rc)
		return rc;
	journal_end(b, 24);
	return 0;
}

/* Does a record of this type take these header fields (journal_next's
 * length rules)? */
static bool journal_frame_ok(uint8_t type, uint8_t dtype, size_t namelen, size_t body_len)
{
	switch (type) {
	case JR_INODE_PUT:
		return dtype == 0 && namelen == 0 && body_len >= JOURNAL_INODE_DISK_SIZE &&
		       body_len - JOURNAL_INODE_DISK_SIZE <= MC_SYMLINK_MAX;
	case JR_INODE_DEL:
		return dtype == 0 && namelen == 0 && body_len == 8;
	case JR_INODE_UNLINK:
		return dtype == 0 && namelen == 0 && body_len == 16;
	case JR_DENTRY_PUT:
		return namelen >= 1 && namelen <= MC_NAME_MAX && body_len == 16 + namelen;
	case JR_DENTRY_DEL:
		return dtype == 0 && namelen >= 1 && namelen <= MC_NAME_MAX && body_len == 8 + namelen;
	case JR_EXTENT_SET:
		return dtype == 0 && namelen == 0 && body_len == 36;
	case JR_EXTENT_PUNCH:
		return dtype == 0 && namelen == 0 && body_len == 24;
	}
	return false;
}

int journal_check_frames(const struct journal_batch *b)
{
	size_t at = 0;
	uint32_t n = 0;
	while (at < b->len) {
		if (b->len - at < JOURNAL_HDR_SIZE)
			return -EPROTO;
		const uint8_t *h = b->buf + at;
		size_t namelen = get_le16(h + 2), body_len = get_le32(h + 4);
		if (body_len > b->len - at - JOURNAL_HDR_SIZE ||
		    !journal_frame_ok(h[0], h[1], namelen, body_len))
			return -EPROTO;
		at += JOURNAL_HDR_SIZE + body_len;
		n++;
	}
	return n == b->nrecs ? 0 : -EPROTO;
}

int journal_next(const uint8_t *buf, size_t len, size_t *pos, struct journal_rec *out)
{
	size_t at = *pos;
	if (at > len)
		return -EPROTO;
	if (at == len)
		return 0;
	if (len - at < JOURNAL_HDR_SIZE)
		return -EPROTO;

	const uint8_t *h = buf + at;
	uint8_t type = h[0];
	uint8_t dtype = h[1];
	size_t namelen = get_le16(h + 2);
	size_t body_len = get_le32(h + 4);
	if (body_len > len - at - JOURNAL_HDR_SIZE)
		return -EPROTO;
	const uint8_t *body = h + JOURNAL_HDR_SIZE;

	struct journal_rec r;
	memset(&r, 0, sizeof(r));
	switch (type) {
	case JR_INODE_PUT:
		if (dtype != 0 || namelen != 0 || body_len < JOURNAL_INODE_DISK_SIZE ||
		    body_len - JOURNAL_INODE_DISK_SIZE > MC_SYMLINK_MAX)
			return -EPROTO;
		journal_inode_decode(body, &r.inode);
		if (r.inode.ino == 0 || !journal_mode_ok(r.inode.mode))
			return -EPROTO;
		r.target_len = body_len - JOURNAL_INODE_DISK_SIZE;
		if (S_ISLNK(r.inode.mode))
			r.target = (const char *)body + JOURNAL_INODE_DISK_SIZE;
		else if (r.target_len != 0)
			return -EPROTO;
		r.ino = r.inode.ino;
		break;
	case JR_INODE_DEL:
		if (dtype != 0 || namelen != 0 || body_len != 8)
			return -EPROTO;
		r.ino = get_le64(body);
		if (r.ino == 0)
			return -EPROTO;
		break;
	case JR_INODE_UNLINK:
		if (dtype != 0 || namelen != 0 || body_len != 16)
			return -EPROTO;
		r.ino = get_le64(body);
		r.ctime_ns = (int64_t)get_le64(body + 8);
		if (r.ino == 0)
			return -EPROTO;
		break;
	case JR_DENTRY_PUT:
		if (!journal_dtype_ok(dtype) || body_len != 16 + namelen)
			return -EPROTO;
		r.parent = get_le64(body);
		r.ino = get_le64(body + 8);
		r.name = (const char *)body + 16;
		r.namelen = namelen;
		r.dtype = dtype;
		if (r.parent == 0 || r.ino == 0 || !journal_name_ok(r.name, namelen))
			return -EPROTO;
		break;
	case JR_DENTRY_DEL:
		if (dtype != 0 || body_len != 8 + namelen)
			return -EPROTO;
		r.parent = get_le64(body);
		r.name = (const char *)body + 8;
		r.namelen = namelen;
		if (r.parent == 0 || !journal_name_ok(r.name, namelen))
			return -EPROTO;
		break;
	case JR_EXTENT_SET:
	case JR_EXTENT_PUNCH:
		if (dtype != 0 || namelen != 0 || body_len != (type == JR_EXTENT_SET ? 36u : 24u))
			return -EPROTO;
		r.ino = get_le64(body);
		r.start = get_le64(body + 8);
		r.end = get_le64(body + 16);
		if (type == JR_EXTENT_SET) {
			r.phys = get_le64(body + 24);
			r.flags = get_le32(body + 32);
		}
		if (r.ino == 0 || r.start > r.end)
			return -EPROTO;
		break;
	default:
		return -EPROTO;
	}
	r.type = (enum journal_type)type;
	*out = r;
	*pos = at + JOURNAL_HDR_SIZE + body_len;
	return 1;
}
