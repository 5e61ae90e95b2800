/* inode.c - the inode cache: type-stable 64-byte slots in shared memory,
 * hashed by inode number for the server (clients reach inodes through
 * dentries). Writers hold the namespace lock and wrap every change in the
 * slot's seq (proto/mc_shm.h); inode_fill alone writes a slot no reader
 * and no other thread can reach (shm.c note 11) without the lock, and
 * leaves its flags (which scans of the slots read, under the lock) and
 * its hash link alone: the slot is live from inode_link on. */
#include "inode.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

static struct mc_bucket *ibucket(const struct shm *s, uint64_t ino)
{
	return &s->ibuckets[mc_hash_ino(s->hdr->hash_seed, ino) & s->hdr->ibucket_mask];
}

mc_off_t inode_find(const struct shm *s, uint64_t ino)
{
	for (mc_off_t off = ibucket(s, ino)->head; off; off = inode_at(s, off)->hnext)
		if (inode_at(s, off)->ino == ino)
			return off;
	return 0;
}

const void *inode_bucket_of(const struct shm *s, uint64_t ino)
{
	return ibucket(s, ino);
}

const void *inode_prefetch(const struct shm *s, uint64_t ino)
{
	const struct mc_bucket *b = ibucket(s, ino);
	__builtin_prefetch(b, 1);
	return b;
}

void inode_prefetch_chain(const struct shm *s, uint64_t ino)
{
	/* Without the lock the head may be changing: any value is as good
	 * a guess (a prefetch never faults), read whole. */
	mc_off_t off = __atomic_load_n(&ibucket(s, ino)->head, __ATOMIC_RELAXED);
	if (off)
		__builtin_prefetch(inode_at(s, off));
}

void inode_fill(struct shm *s, mc_off_t off, const struct mc_inode_rec *rec, size_t target_len)
{
	struct mc_inode *i = inode_at(s, off);
	shm_write_begin(&i->seq);
	i->ino = rec->ino;
	i->mode = (uint16_t)rec->mode;
	i->nlink = rec->nlink;
	i->uid = rec->uid;
	i->gid = rec->gid;
	if (S_ISDIR(rec->mode)) {
		i->u.dir.nentries = (uint32_t)rec->size;
		i->u.dir.dirx = 0;
	} else if (S_ISLNK(rec->mode)) {
		i->u.lnk.len = (uint32_t)target_len;
		i->u.lnk.blob = 0;
	} else {
		i->u.size = rec->size;
	}
	i->atime = mc_time_from_ns(rec->atime_ns);
	i->mtime = mc_time_from_ns(rec->mtime_ns);
	i->ctime = mc_time_from_ns(rec->ctime_ns);
	shm_write_end(&i->seq);
}

int inode_link(struct shm *s, mc_off_t off, const char *target)
{
	struct mc_inode *i = inode_at(s, off);
	mc_off_t blob = 0;
	if (S_ISLNK(i->mode)) {
		blob = shm_blob_new(s, target, i->u.lnk.len);
		if (!blob)
			return -ENOSPC;
	}
	struct mc_bucket *b = ibucket(s, i->ino);
	shm_write_begin(&i->seq);
	if (blob)
		i->u.lnk.blob = blob;
	i->flags = MC_I_LIVE;
	i->hnext = b->head;
	shm_write_end(&i->seq);
	shm_write_begin(&b->seq);
	__atomic_store_n(&b->head, off, __ATOMIC_RELAXED); /* inode_prefetch_chain */
	shm_write_end(&b->seq);
	return 0;
}

mc_off_t inode_add(struct shm *s, const struct mc_inode_rec *rec, const char *target,
                   size_t target_len)
{
	mc_off_t off = shm_alloc(s, SLAB_INODE);
	if (!off)
		return 0;
	inode_fill(s, off, rec, target_len);
	if (inode_link(s, off, target) < 0) {
		shm_free(s, SLAB_INODE, off);
		return 0;
	}
	return off;
}

void inode_del(struct shm *s, mc_off_t off)
{
	struct mc_inode *i = inode_at(s, off);
	struct mc_bucket *b = ibucket(s, i->ino);
	shm_write_begin(&b->seq);
	if (b->head == off) {
		__atomic_store_n(&b->head, i->hnext, __ATOMIC_RELAXED);
	} else {
		for (mc_off_t p = b->head; p; p = inode_at(s, p)->hnext) {
			if (inode_at(s, p)->hnext == off) {
				inode_at(s, p)->hnext = i->hnext;
				break;
			}
		}
	}
	shm_write_end(&b->seq);
	if (i->flags & (MC_I_DIRTY0 | MC_I_DIRTY1))
		s->i_dirty--;
	/* The target is freed inside the seq's odd window (mc_shm.h note 6):
	 * freeing writes the free-list link over its first word, which a
	 * reader copying it must see as a moved seq. */
	shm_write_begin(&i->seq);
	if (S_ISLNK(i->mode))
		shm_blob_free(s, i->u.lnk.blob, i->u.lnk.len);
	else if (S_ISDIR(i->mode) && i->u.dir.dirx) {
		struct mc_dirx *dx = shm_at(s, i->u.dir.dirx);
		if (dx->flags & MC_X_COMPLETE)
			s->dirs_complete--;
		if (dx->next_cookie > s->cookie_floor)
			s->cookie_floor = dx->next_cookie;
		shm_free(s, SLAB_DIRX, i->u.dir.dirx);
	}
	i->flags = 0;
	i->ino = 0;
	shm_write_end(&i->seq);
	shm_free(s, SLAB_INODE, off);
}

void inode_rec(const struct shm *s, mc_off_t off, struct mc_inode_rec *out)
{
	const struct mc_inode *i = inode_at(s, off);
	memset(out, 0, sizeof(*out));
	out->ino = i->ino;
	out->mode = i->mode;
	out->nlink = i->nlink;
	out->uid = i->uid;
	out->gid = i->gid;
	if (S_ISDIR(i->mode))
		out->size = i->u.dir.nentries;
	else if (S_ISLNK(i->mode))
		out->size = i->u.lnk.len;
	else
		out->size = i->u.size;
	out->atime_ns = mc_time_ns(i->atime);
	out->mtime_ns = mc_time_ns(i->mtime);
	out->ctime_ns = mc_time_ns(i->ctime);
}

const char *inode_target(const struct shm *s, mc_off_t off, size_t *len)
{
	const struct mc_inode *i = inode_at(s, off);
	*len = i->u.lnk.len;
	return shm_at(s, i->u.lnk.blob);
}
