/* shmwalk.c - path walks over the read-only shared-memory segment, and
 * what they answer: stat, lstat, readlink, stat by inode number.
 *
 * NOTES ON THE READ PROTOCOL (see proto/mc_shm.h for the writer's side)
 *  1. Every offset is checked (inside the segment, inside a page of the
 *     expected type: view_at, one page-table test) before it is followed;
 *     a bad one means the data moved under us: the walk restarts.
 *  2. A slot is read between two reads of its seq (acquire, then an acquire
 *     fence before the second); an odd or changed seq restarts the walk.
 *     An inode passed on the way is read only for what a directory on the
 *     way needs (struct isnap); the result's other stat fields are read at
 *     the end and checked against the seq of that same snapshot.
 *  3. A dentry found in a hash chain is trusted when its own seq did not
 *     move around reading it and its inode, whatever the chain did: its
 *     (parent slot, name) identify it exactly (mc_shm.h note 5), and it is
 *     LIVE. The bucket's seq (its group's, mc_shm.h note 12) guards only
 *     the claim that a chain holds no such name; so a dentry that does not
 *     match is not re-checked: a chain that changed under us ends in a
 *     miss that the bucket seq rejects, or in a match that its own seq
 *     vouches for. A directory's children are
 *     trusted only if that directory's slot still holds the same inode
 *     number afterwards (inode numbers are never reused, and a freed slot
 *     reads ino 0). The walk's stack remembers each directory's inode
 *     number too, so ".." back into a slot that was freed and reused
 *     meanwhile restarts the walk.
 *  4. A whole walk is valid only if the segment's rename seq is the same at
 *     its end as at its start: a rename moves a subtree without touching
 *     the seqs below it.
 *  5. Every loop is bounded (chain length, stack depth, nested symlinks,
 *     restarts); a bound hit is a VIEW_MISS, answered by the server.
 *  6. The rules of the walk (components, ".", "..", symlinks, ELOOP,
 *     ENOTDIR, trailing slashes) are proto/mc_walk.h's, shared with the
 *     server; this file gives it the lock-free state (struct cwalk).
 *  7. An absolute path's prefix up to its last slash is looked up in the
 *     view's prefix cache (shmprefix.c) first: a hit, whose seqs all still
 *     hold, stands the walk in the prefix's directory with the stack the
 *     cached walk had, and only the last component is walked (by the
 *     skeleton's mc_walk_last, so a final symlink or ".." is handled as
 *     always). A miss walks the parent the long way and, when that walk
 *     took no symlink and no ".." and its stack fits, caches it. What the
 *     cache skips is re-proved by the seqs it checks; what it cannot prove
 *     it does not answer.
 *  8. A lookup prefetches the inode its bucket's hint names (mc_shm.h note
 *     12) before it reads the chain's first dentry, so that the two loads
 *     overlap; the hint is checked to lie inside the segment and read for
 *     nothing else: the inode is read as always, from the dentry's offset.
 */
#include "shmview_impl.h"

#include "mc_walk.h"

/* Symlink targets being walked, one per nesting level: per thread, since
 * one view (one client) may be walked by many threads at once. */
static _Thread_local char view_links[VIEW_LINKS_MAX][MC_SYMLINK_MAX];

/* The buffer of nesting level `level`. Out of line, so that only walks that
 * follow a symlink pay for finding this thread's buffers. */
static __attribute__((noinline)) char *link_buf(unsigned level)
{
	return view_links[level];
}

int view_dir_complete(const struct view *v, const struct isnap *s, bool *out)
{
	mc_off_t xo = LD(s->i->u.dir.dirx);
	if (!xo) {
		*out = false;
		return 0;
	}
	const struct mc_dirx *x = view_at(v, xo, sizeof(*x), MC_PT_DIRX);
	if (!x)
		return AGAIN;
	uint32_t s0 = seq_read(&x->seq);
	if (s0 & 1)
		return AGAIN;
	uint32_t flags = LD(x->flags);
	if (!seq_same(&x->seq, s0))
		return AGAIN;
	*out = flags & MC_X_COMPLETE;
	return 0;
}

/* Does dentry e (flags fl, name length c->len) hold c's name? Inline names
 * of up to 16 bytes are compared a word at a time with the words the
 * parser kept (mc_comp.w); only the name's own bytes count. NULL-name
 * dentries (see dentry_name) read as AGAIN. */
static int name_match(const struct view *v, const struct mc_dentry *e, uint16_t fl,
                      const struct mc_comp *c)
{
	size_t len = c->len;
	if (!(fl & MC_D_LONGNAME) && len <= MC_NAME_INLINE) {
		uint64_t a, b = 0;
		memcpy(&a, e->name.inl, 8);
		if (len <= 8)
			return ((a ^ c->w[0]) & (~0ull >> (64 - 8 * len))) == 0;
		memcpy(&b, e->name.inl + 8, 8);
		return a == c->w[0] && ((b ^ c->w[1]) & (~0ull >> (128 - 8 * len))) == 0;
	}
	const char *nm = dentry_name(v, e, fl, (uint8_t)len);
	if (!nm)
		return -1;
	return memcmp(nm, c->name, len) == 0;
}

/* Look c up in directory ds: 0 with *cs, and the dentry and its seq in
 * *dent and *dseq; -ENOENT when the cache vouches that the name is absent;
 * AGAIN; VIEW_MISS; BOUND; -ENAMETOOLONG. Inlined into every step of the
 * walk (the call's saves and restores were a tenth of a cached stat). */
static inline __attribute__((always_inline)) int
lookup(struct view *v, const struct isnap *ds, const struct mc_comp *c, struct isnap *cs,
       mc_off_t *dent, uint32_t *dseq)
{
	size_t len = c->len;
	if (len > MC_NAME_MAX)
		return -ENAMETOOLONG;
	uint64_t h = mc_hash_fin(c->hash, ds->ino, len);
	const struct mc_dgroup *g = &v->dgroups[h & v->dmask];
	const struct mc_dbucket *b = &g->b[mc_dgroup_slot(h)];
	uint32_t bs = seq_read(&g->seq);
	if (bs & 1)
		return AGAIN;
	uint64_t hint = (uint64_t)atomic_load_explicit(&b->inode, memory_order_relaxed) << MC_OFF_SHIFT;
	if (hint < v->size)
		__builtin_prefetch(v->base + hint);  /* note 8 */
	unsigned n = 0;
	int rc;
	for (mc_off_t d = LD(b->head); d;) {
		if (++n > v->lim.chain)
			return BOUND;
		const struct mc_dentry *e = view_at(v, d, sizeof(*e), MC_PT_DENTRY);
		if (!e)
			return AGAIN;
		uint32_t es = seq_read(&e->seq);
		mc_off_t next = LD(e->hnext);
		if (LD(e->parent) != ds->off || LD(e->namelen) != len) {
			d = next;  /* not re-checked (note 3) */
			continue;
		}
		uint16_t fl = LD(e->flags);
		mc_off_t ino = LD(e->inode);
		int m = name_match(v, e, fl, c);
		if (m < 0)
			return AGAIN;
		if (!m) {
			d = next;
			continue;
		}
		if (es & 1)
			return AGAIN;
		if (!(fl & MC_D_LIVE))
			return AGAIN;
		if (!(fl & MC_D_POSITIVE)) {
			rc = -ENOENT;
		} else {
			rc = inode_snap(v, ino, cs);
			if (rc)
				return rc;
		}
		/* One re-check covers the name, the flags and that the dentry
		 * still names the inode we read. */
		if (!seq_same(&e->seq, es) || !inode_still(ds))
			return AGAIN;
		if (rc == 0 && v->refbits)
			mc_ref_mark(v->refbits, v->nbits, d);
		*dent = d;
		*dseq = es;
		return rc;
	}
	bool complete;
	rc = view_dir_complete(v, ds, &complete);
	if (rc)
		return rc;
	if (!complete)
		return VIEW_MISS;
	if (!seq_same(&g->seq, bs) || !inode_still(ds))
		return AGAIN;
	return -ENOENT;
}

/* The client's walk state behind the skeleton (mc_walk.h). */
struct cwalk {
	struct mc_walk w;
	struct view *v;
	unsigned depth;
	bool top_ok;
	struct isnap top;            /* the directory stood in: stack[depth - 1] */
	struct isnap cur;            /* the current node */
	mc_off_t cur_d;              /* the dentry that named cur (0: none) */
	uint32_t cur_dseq;
	bool plain;                  /* no symlink, no "..": the stack may be cached */
	struct prefix_hit rec;       /* the stack as the prefix cache keeps it */
	mc_off_t stack[VIEW_DEPTH_MAX];
	uint64_t stack_ino[VIEW_DEPTH_MAX]; /* the inode each slot held when pushed */
};

static inline struct cwalk *cw_of(struct mc_walk *w)
{
	return (struct cwalk *)w;
}

static inline int cw_top(struct cwalk *w)
{
	if (w->top_ok)
		return 0;
	int rc = inode_snap(w->v, w->stack[w->depth - 1], &w->top);
	if (rc)
		return rc;
	/* After "..", the slot may have been freed and reused for another
	 * directory since we passed it (note 3): inode numbers tell. */
	if (w->top.ino != w->stack_ino[w->depth - 1])
		return AGAIN;
	w->top_ok = true;
	return 0;
}

static inline int cw_push(struct mc_walk *mw)
{
	struct cwalk *w = cw_of(mw);
	if (w->depth >= w->v->lim.depth || w->depth >= VIEW_DEPTH_MAX)
		return BOUND;
	if (w->depth < PREFIX_DEPTH)
		w->rec.lv[w->depth] = (struct prefix_level){ w->cur_d, w->cur_dseq, w->cur.off,
		                                             w->cur.seq, w->cur.ino };
	w->stack_ino[w->depth] = w->cur.ino;
	w->stack[w->depth++] = w->cur.off;
	w->top = w->cur;
	w->top_ok = true;
	return 0;
}

static inline int cw_root(struct mc_walk *mw)
{
	struct cwalk *w = cw_of(mw);
	w->depth = 0;
	w->cur_d = 0;
	w->cur_dseq = 0;
	int rc = inode_snap(w->v, LD(w->v->hdr->root), &w->cur);
	return rc ? rc : cw_push(mw);
}

static inline int cw_start(struct mc_walk *mw)
{
	return cw_of(mw)->depth ? 0 : -EINVAL;
}

static inline int cw_may_exec(struct mc_walk *mw)
{
	struct cwalk *w = cw_of(mw);
	int rc = cw_top(w);
	return rc ? rc : view_permission(&w->v->cred, &w->top, MC_MAY_EXEC);
}

static inline __attribute__((always_inline)) int
cw_lookup(struct mc_walk *mw, const struct mc_comp *c, uint32_t *mode)
{
	struct cwalk *w = cw_of(mw);
	int rc = cw_top(w);
	if (rc == 0)
		rc = lookup(w->v, &w->top, c, &w->cur, &w->cur_d, &w->cur_dseq);
	if (rc == 0)
		*mode = w->cur.mode;
	return rc;
}

static inline void cw_pop(struct mc_walk *mw)
{
	struct cwalk *w = cw_of(mw);
	w->plain = false;
	if (w->depth > 1) {
		w->depth--;
		w->top_ok = false;
	}
}

/* Copy the current node's target into the buffer of nesting level `level`. */
static int cw_target(struct mc_walk *mw, unsigned level, const char **t, size_t *tlen)
{
	struct cwalk *w = cw_of(mw);
	struct view *v = w->v;
	const struct isnap *s = &w->cur;
	w->plain = false;
	if (level >= v->lim.links || level >= VIEW_LINKS_MAX)
		return BOUND;
	size_t n = s->u.lnk.len;
	if (n == 0 || n > MC_SYMLINK_MAX)
		return AGAIN;
	const char *src = view_at(v, s->u.lnk.blob, n, blob_type(n));
	if (!src)
		return AGAIN;
	char *buf = link_buf(level);
	memcpy(buf, src, n);
	if (!seq_same(&s->i->seq, s->seq))
		return AGAIN;
	*t = buf;
	*tlen = n;
	return 0;
}

static inline int cw_here(struct mc_walk *mw, uint32_t *mode)
{
	struct cwalk *w = cw_of(mw);
	int rc = cw_top(w);
	if (rc)
		return rc;
	w->cur = w->top;
	*mode = w->cur.mode;
	return 0;
}

static const struct mc_walk_ops cw_ops = {
	.root = cw_root, .start = cw_start, .may_exec = cw_may_exec, .lookup = cw_lookup,
	.push = cw_push, .pop = cw_pop, .target = cw_target, .here = cw_here,
};

/* The walk proper: through the prefix cache when path has a cached
 * prefix, else the skeleton's whole walk, caching the prefix it resolved
 * when it may (note 7). */
static int walk_path(struct cwalk *w, const char *path, size_t len, bool follow, uint32_t *mode)
{
	struct view *v = w->v;
	const char *sl = len && path[0] == '/' ? memrchr(path, '/', len) : NULL;
	size_t klen = sl ? (size_t)(sl - path) + 1 : 0;
	bool keyed = klen >= 2 && klen < len && klen <= PREFIX_KEY_MAX;
	uint64_t kh = 0;
	int n = keyed ? prefix_find(v, path, klen, &kh, w->stack, w->stack_ino, &w->top) : 0;
	if (n) {
		/* Stand where the prefix leads, with the stack it was walked with. */
		w->depth = (unsigned)n;
		w->top_ok = true;
		mc_comp_make(path + klen, len - klen, w->w.seed, &w->w.last);
		w->w.last_type = mc_comp_type(w->w.last.name, w->w.last.len);
	} else {
		w->plain = keyed;
		int rc = mc_walk_parent(&w->w, &cw_ops, path, len, 0);
		if (rc)
			return rc;
		/* The parent walk stopped at the last slash: its stack is the
		 * prefix's. */
		if (w->plain && w->top_ok && w->depth <= PREFIX_DEPTH) {
			w->rec.n = w->depth;
			w->rec.mode = w->top.mode;
			w->rec.uid = w->top.uid;
			w->rec.gid = w->top.gid;
			w->rec.u = w->top.u.size;
			prefix_add(v, path, klen, kh, &w->rec);
		}
	}
	/* One copy of the last step for both ways in (the skeleton inlines
	 * the lookup into it). */
	return mc_walk_last(&w->w, &cw_ops, follow, 0, mode);
}

/* One whole walk inside a stable rename seq (note 4); with rest, also the
 * result's other stat fields. */
static inline __attribute__((always_inline)) int walk_once(struct view *v, const char *path,
                                                           size_t len, bool follow,
                                                           struct isnap *res, struct irest *rest)
{
	if (atomic_load_explicit(&v->hdr->closed, memory_order_acquire))
		return -ENOTCONN;
	const _Atomic uint32_t *rs = &v->hdr->rename_seq;
	uint32_t r0 = seq_read(rs);
	if (r0 & 1)
		return AGAIN;
	struct cwalk w;
	mc_walk_init(&w.w, &cw_ops, v->seed);
	w.v = v;
	w.depth = 0;
	w.top_ok = false;
	w.plain = false;
	uint32_t mode;
	int rc = walk_path(&w, path, len, follow, &mode);
	if (rc == AGAIN || rc == BOUND || rc == VIEW_MISS)
		return rc;
	if (rc == 0 && rest && inode_rest(&w.cur, rest))
		return AGAIN;
	if (!seq_same(rs, r0))
		return AGAIN;
	if (rc == 0)
		*res = w.cur;
	return rc;
}

/* Run walk_once with restarts, count, and fold the internal codes. */
static int walk_retry(struct view *v, const char *path, size_t len, bool follow,
                      struct isnap *res, struct irest *rest)
{
	for (unsigned r = 0;; r++) {
		int rc = walk_once(v, path, len, follow, res, rest);
		if (rc == -ENOTCONN)
			return rc;
		if (rc == AGAIN) {
			view_count(v, VC_RETRIES);
			if (r < v->lim.retries)
				continue;
			rc = BOUND;
		}
		if (rc == BOUND) {
			view_count(v, VC_FALLBACKS);
			return VIEW_MISS;
		}
		if (rc == VIEW_MISS) {
			view_count(v, VC_MISSES);
			return VIEW_MISS;
		}
		view_count(v, VC_HITS);
		return rc;
	}
}

int view_walk(struct view *v, const char *path, size_t len, bool follow, struct isnap *res)
{
	return walk_retry(v, path, len, follow, res, NULL);
}

/* A segment time into a timespec: a shift and a mask. */
static inline void to_timespec(mc_time_t t, struct timespec *ts)
{
	ts->tv_sec = (time_t)mc_time_sec(t);
	ts->tv_nsec = mc_time_nsec(t);
}

static void fill_stat(const struct isnap *s, const struct irest *r, struct stat *st)
{
	off_t size = (off_t)s->u.size;
	dev_t rdev = 0;
	switch (s->mode & S_IFMT) {
	case S_IFREG:
		break;
	case S_IFDIR:
		size = 40 + 20 * (off_t)s->u.dir.nentries;
		break;
	case S_IFLNK:
		size = (off_t)s->u.lnk.len;
		break;
	case S_IFCHR:
	case S_IFBLK:
		/* A device keeps its number where a file keeps its size. */
		rdev = (dev_t)s->u.size;
		size = 0;
		break;
	}
	/* Zeroed in two halves: gcc stores each with a few vector stores,
	 * where one 144-byte clear becomes a rep stos (microcoded, slow to
	 * start, and 18 instructions to callgrind). */
	const size_t half = sizeof(*st) / 2;
	memset(st, 0, half);
	memset((char *)st + half, 0, sizeof(*st) - half);
	st->st_ino = s->ino;
	st->st_mode = s->mode;
	st->st_nlink = r->nlink;
	st->st_uid = s->uid;
	st->st_gid = s->gid;
	st->st_size = size;
	st->st_rdev = rdev;
	st->st_blksize = 4096;
	to_timespec(r->atime, &st->st_atim);
	to_timespec(r->mtime, &st->st_mtim);
	to_timespec(r->ctime, &st->st_ctim);
}

int view_stat(struct view *v, const char *path, size_t len, bool follow, struct stat *st)
{
	struct isnap s;
	struct irest r;
	int rc = walk_retry(v, path, len, follow, &s, &r);
	if (rc == 0)
		fill_stat(&s, &r, st);
	return rc;
}

int view_stat_ino(struct view *v, uint64_t ino, struct stat *st)
{
	if (atomic_load_explicit(&v->hdr->closed, memory_order_acquire))
		return -ENOTCONN;
	const struct mc_bucket *b = &v->ibuckets[mc_hash_ino(v->seed, ino) & v->imask];
	for (unsigned r = 0; r <= v->lim.retries; r++) {
		uint32_t bs = seq_read(&b->seq);
		if (bs & 1)
			goto again;
		unsigned n = 0;
		for (mc_off_t off = LD(b->head); off;) {
			if (++n > v->lim.chain) {
				view_count(v, VC_FALLBACKS);
				return VIEW_MISS;
			}
			const struct mc_inode *i = view_at(v, off, sizeof(*i), MC_PT_INODE);
			if (!i)
				goto again;
			if (LD(i->ino) == ino) {
				struct isnap s;
				struct irest rest;
				if (inode_snap(v, off, &s) || s.ino != ino || inode_rest(&s, &rest) ||
				    !seq_same(&b->seq, bs))
					goto again;
				fill_stat(&s, &rest, st);
				view_count(v, VC_HITS);
				return 0;
			}
			off = LD(i->hnext);
		}
		if (seq_same(&b->seq, bs)) {
			view_count(v, VC_MISSES);
			return VIEW_MISS;
		}
again:
		view_count(v, VC_RETRIES);
	}
	view_count(v, VC_FALLBACKS);
	return VIEW_MISS;
}

int view_readlink(struct view *v, const char *path, size_t len, char *buf, size_t cap,
                  size_t *out_len)
{
	for (unsigned r = 0;; r++) {
		struct isnap s;
		int rc = walk_retry(v, path, len, false, &s, NULL);
		if (rc)
			return rc;
		if (!S_ISLNK(s.mode))
			return -EINVAL;
		size_t n = s.u.lnk.len;
		const char *t = view_at(v, s.u.lnk.blob, n ? n : 1, blob_type(n ? n : 1));
		if (t && n <= MC_SYMLINK_MAX) {
			size_t k = n < cap ? n : cap;
			memcpy(buf, t, k);
			if (seq_same(&s.i->seq, s.seq)) {
				*out_len = k;
				return 0;
			}
		}
		view_count(v, VC_RETRIES);
		if (r >= v->lim.retries) {
			view_count(v, VC_FALLBACKS);
			return VIEW_MISS;
		}
	}
}
