/* shmview_impl.h - what the modules of the shared-memory view share
 * (shmview.c: set-up and listings; shmwalk.c: path walks and stat): the
 * checked access to the segment, seq reads, inode snapshots and the
 * internal result codes. The read protocol is in shmwalk.c's notes. */
#ifndef MC_SHMVIEW_IMPL_H
#define MC_SHMVIEW_IMPL_H

#include "shmview.h"

#include "mc_path.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

/* Internal results besides 0, -errno and VIEW_MISS. */
#define AGAIN 2   /* data moved: restart the walk */
#define BOUND 3   /* a bound was hit: VIEW_MISS, counted as a fallback */

static inline uint32_t seq_read(const _Atomic uint32_t *s)
{
	return atomic_load_explicit(s, memory_order_acquire);
}

static inline bool seq_same(const _Atomic uint32_t *s, uint32_t s0)
{
	atomic_thread_fence(memory_order_acquire);
	return atomic_load_explicit(s, memory_order_relaxed) == s0;
}

/* The address of [off, off + sz) if it lies inside one page of type
 * `type`, else NULL: one range check per offset. Page 0 holds the header
 * (view_init checks it is MC_PT_META), so offset 0, "none", fails the type
 * test; a page index below npages lies inside the segment; sz is at most a
 * page. */
static inline const void *view_at(const struct view *v, mc_off_t off, size_t sz, unsigned type)
{
	uint32_t pg = off >> (MC_PAGE_SHIFT - MC_OFF_SHIFT);
	uint32_t in = (off & ((MC_PAGE_SIZE >> MC_OFF_SHIFT) - 1)) << MC_OFF_SHIFT;
	if (pg >= v->npages || v->ptypes[pg] != type || in + sz > MC_PAGE_SIZE)
		return NULL;
	return v->base + ((size_t)off << MC_OFF_SHIFT);
}

/* view_at again, for an offset that view_at accepted once for a slot of
 * `type` in this view (the prefix cache's): of what view_at checks, only
 * the page's type can have changed since (mc_shm.h note 2). The page index
 * stays below npages and the slot inside its page, as both are fixed by
 * the offset and the segment's size, which never changes under a view. */
static inline bool view_type_still(const uint8_t *ptypes, mc_off_t off, unsigned type)
{
	return ptypes[off >> (MC_PAGE_SHIFT - MC_OFF_SHIFT)] == type;
}

static inline unsigned blob_type(size_t len)
{
	unsigned cls = 0;
	while (mc_blob_size(cls) < len)
		cls++;
	return MC_PT_BLOB32 + cls;
}

/* Where the nl bytes of e's name are, or NULL when e cannot hold such a
 * name (an empty name, an inline name longer than the slot's room, a blob
 * outside the segment): the caller retries, and in the end asks the server. */
static inline const char *dentry_name(const struct view *v, const struct mc_dentry *e,
                                      uint16_t fl, uint8_t nl)
{
	if (nl == 0)
		return NULL;
	if (!(fl & MC_D_LONGNAME))
		return nl <= MC_NAME_INLINE ? e->name.inl : NULL;
	return view_at(v, LD(e->name.blob), nl, blob_type(nl));
}

/* Client counters (relaxed: written by this client only). */
enum view_counter { VC_HITS, VC_MISSES, VC_RETRIES, VC_FALLBACKS };

static inline void view_count(struct view *v, enum view_counter k)
{
	if (v->slot) {
		_Atomic uint64_t *f = k == VC_HITS ? &v->slot->hits
		                    : k == VC_MISSES ? &v->slot->misses
		                    : k == VC_RETRIES ? &v->slot->retries : &v->slot->fallbacks;
		atomic_store_explicit(f, atomic_load_explicit(f, memory_order_relaxed) + 1,
		                      memory_order_relaxed);
	}
}

/* What a walk needs of an inode it passes, read between two reads of the
 * slot's seq: a directory on the way needs no more. The other stat fields
 * are read at the end (inode_rest), checked against the same seq. */
struct isnap {
	const struct mc_inode *i;
	mc_off_t off;
	uint32_t seq;
	uint64_t ino;
	uint32_t mode, uid, gid;
	union {
		uint64_t size;                                   /* regular file */
		struct { uint32_t nentries; mc_off_t dirx; } dir; /* directory */
		struct { uint32_t len; mc_off_t blob; } lnk;      /* symlink */
	} u;
};

/* The rest of struct stat's fields. */
struct irest {
	uint32_t nlink;
	mc_time_t atime, mtime, ctime;
};

static inline int inode_snap(const struct view *v, mc_off_t off, struct isnap *s)
{
	const struct mc_inode *i = view_at(v, off, sizeof(*i), MC_PT_INODE);
	if (!i)
		return AGAIN;
	uint32_t s0 = seq_read(&i->seq);
	s->i = i;
	s->off = off;
	s->seq = s0;
	s->ino = LD(i->ino);
	s->mode = LD(i->mode);
	uint16_t flags = LD(i->flags);
	s->uid = LD(i->uid);
	s->gid = LD(i->gid);
	s->u.size = LD(i->u.size);
	if ((s0 & 1) || !seq_same(&i->seq, s0) || !(flags & MC_I_LIVE))
		return AGAIN;
	return 0;
}

/* The rest of s's inode, as it was when s was taken. */
static inline int inode_rest(const struct isnap *s, struct irest *r)
{
	const struct mc_inode *i = s->i;
	r->nlink = LD(i->nlink);
	r->atime = LD(i->atime);
	r->mtime = LD(i->mtime);
	r->ctime = LD(i->ctime);
	return seq_same(&i->seq, s->seq) ? 0 : AGAIN;
}

/* Does s's slot still hold its inode number? (inode numbers are never
 * reused, and a freed slot reads ino 0) */
static inline bool inode_still(const struct isnap *s)
{
	return LD(s->i->ino) == s->ino;
}

/* The server's permission(), on a snapshot. */
static inline int view_permission(const struct view_cred *c, const struct isnap *i, int mask)
{
	c = view_cred_acting(c);   /* mc_cred_set */
	return mc_permission(c->uid, c->gid, c->groups, c->ngroups, i->mode, i->uid, i->gid, mask);
}

/* Is directory s complete right now? 0 with *out, or AGAIN. */
int view_dir_complete(const struct view *v, const struct isnap *s, bool *out);

/* Resolve path to a snapshot of what it names (shmwalk.c), with restarts
 * and counting: 0, -errno, -ENOTCONN or VIEW_MISS. */
int view_walk(struct view *v, const char *path, size_t len, bool follow, struct isnap *res);

/* The prefix cache (shmprefix.c): for the key path[0..klen), its hash in
 * *kh and a hit whose seqs all hold: the number of directories (0: none),
 * their slots and numbers into stack and stack_ino (PREFIX_DEPTH each), the
 * last one's snapshot (as inode_snap would take it) into *top; remember a
 * resolution under hash kh (no effect when the entry is busy or the key too
 * long); forget everything. */
int prefix_find(struct view *v, const char *path, size_t klen, uint64_t *kh,
                mc_off_t *stack, uint64_t *stack_ino, struct isnap *top);
void prefix_add(struct view *v, const char *path, size_t klen, uint64_t kh,
                const struct prefix_hit *h);
void prefix_clear(struct view *v);

#endif
