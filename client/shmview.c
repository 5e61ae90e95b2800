/* shmview.c - path walks over the read-only shared-memory segment.
 *
 * NOTES ON THE READ PROTOCOL (see proto/mc_shm.h for the writer's side)
 *  1. Every offset is checked (inside the segment, inside a page of the
 *     expected type) before it is followed; a bad one means the data moved
 *     under us: the walk restarts.
 *  2. A slot is read between two reads of its seq (acquire, then an acquire
 *     fence before the second); an odd or changed seq restarts the walk.
 *  3. A hash chain is trusted only if its bucket seq did not move during the
 *     walk of it; a dentry's inode only if the dentry seq did not move
 *     around reading the inode; a directory's children only if that
 *     directory's slot still holds the same inode number afterwards (inode
 *     numbers are never reused, and a freed slot reads ino 0). The walk's
 *     stack remembers each directory's inode number too, so ".." back into
 *     a slot that was freed and reused meanwhile restarts the walk.
 *  4. A whole walk is valid only if the segment's rename seq is the same at
 *     its end as at its start.
 *  5. Every loop is bounded (chain length, stack depth, nested symlinks,
 *     restarts); a bound hit is a VIEW_MISS, answered by the server.
 */
#include "shmview.h"

#include "mc_path.h"

#include <errno.h>
#include <string.h>

#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

/* Symlink targets being walked, one per nesting level: per thread, since
 * one view (one client) may be walked by many threads at once. */
static _Thread_local char view_links[VIEW_LINKS_MAX][MC_SYMLINK_MAX];

/* The buffer of nesting level `level`. Out of line, so that only walks that
 * follow a symlink pay for finding this thread's buffers. */
static __attribute__((noinline)) char *link_buf(unsigned level)
{
	return view_links[level];
}

/* Internal results besides 0, -errno and VIEW_MISS. */
#define AGAIN 2   /* data moved: restart the walk */
#define BOUND 3   /* a bound was hit: VIEW_MISS, counted as a fallback */

#define MAY_EXEC  MC_MAY_EXEC
#define MAY_READ  MC_MAY_READ

void view_default_limits(struct view_limits *l)
{
	l->chain = 64;
	l->depth = VIEW_DEPTH_MAX;
	l->retries = 32;
	l->links = VIEW_LINKS_MAX;
}

int view_init(struct view *v, const void *base, uint64_t size)
{
	const struct mc_shm_header *h = base;
	if (size < MC_PAGE_SIZE || h->magic != MC_SHM_MAGIC || h->version != MC_SHM_VERSION ||
	    h->size != size)
		return -EPROTO;
	uint64_t np = size >> MC_PAGE_SHIFT;
	if (h->npages != np || (uint64_t)h->page_types_off + np > size ||
	    (uint64_t)h->dbuckets_off + ((uint64_t)h->dbucket_mask + 1) * sizeof(struct mc_bucket) > size ||
	    (uint64_t)h->ibuckets_off + ((uint64_t)h->ibucket_mask + 1) * sizeof(struct mc_bucket) > size ||
	    ((h->dbucket_mask + 1) & h->dbucket_mask) || ((h->ibucket_mask + 1) & h->ibucket_mask) ||
	    h->dbuckets_off % _Alignof(struct mc_bucket) ||
	    h->ibuckets_off % _Alignof(struct mc_bucket))
		return -EPROTO;
	v->base = base;
	v->size = size;
	v->hdr = h;
	v->ptypes = (const uint8_t *)base + h->page_types_off;
	v->dbuckets = (const struct mc_bucket *)((const char *)base + h->dbuckets_off);
	v->ibuckets = (const struct mc_bucket *)((const char *)base + h->ibuckets_off);
	v->dmask = h->dbucket_mask;
	v->imask = h->ibucket_mask;
	v->ebuckets = NULL;
	if (h->ebuckets_off && !((h->ebucket_mask + 1) & h->ebucket_mask) &&
	    h->ebuckets_off % _Alignof(struct mc_bucket) == 0 &&
	    (uint64_t)h->ebuckets_off + ((uint64_t)h->ebucket_mask + 1) * sizeof(struct mc_bucket) <= size)
		v->ebuckets = (const struct mc_bucket *)((const char *)base + h->ebuckets_off);
	v->emask = h->ebucket_mask;
	v->seed = h->hash_seed;
	return 0;
}

static uint32_t seq_read(const _Atomic uint32_t *s)
{
	return atomic_load_explicit(s, memory_order_acquire);
}

static bool seq_same(const _Atomic uint32_t *s, uint32_t s0)
{
	atomic_thread_fence(memory_order_acquire);
	return atomic_load_explicit(s, memory_order_relaxed) == s0;
}

static const void *at(const struct view *v, mc_off_t off, size_t sz, unsigned type)
{
	if (!mc_shm_valid(v->base, v->size, v->ptypes, off, sz, type))
		return NULL;
	return v->base + ((size_t)off << MC_OFF_SHIFT);
}

static unsigned blob_type(size_t len)
{
	unsigned cls = 0;
	while (mc_blob_size(cls) < len)
		cls++;
	return MC_PT_BLOB32 + cls;
}

/* Where the nl bytes of e's name are, or NULL when e cannot hold such a
 * name (an empty name, an inline name longer than the slot's room, a blob
 * outside the segment): the caller retries, and in the end asks the server. */
static const char *dentry_name(const struct view *v, const struct mc_dentry *e, uint16_t fl,
                               uint8_t nl)
{
	if (nl == 0)
		return NULL;
	if (!(fl & MC_D_LONGNAME))
		return nl <= MC_NAME_INLINE ? e->name.inl : NULL;
	return at(v, LD(e->name.blob), nl, blob_type(nl));
}

static void count(struct view *v, _Atomic uint64_t *(*field)(struct mc_client_slot *))
{
	if (v->slot) {
		_Atomic uint64_t *f = field(v->slot);
		atomic_store_explicit(f, atomic_load_explicit(f, memory_order_relaxed) + 1,
		                      memory_order_relaxed);
	}
}
static _Atomic uint64_t *f_hits(struct mc_client_slot *s) { return &s->hits; }
static _Atomic uint64_t *f_misses(struct mc_client_slot *s) { return &s->misses; }
static _Atomic uint64_t *f_retries(struct mc_client_slot *s) { return &s->retries; }
static _Atomic uint64_t *f_fallbacks(struct mc_client_slot *s) { return &s->fallbacks; }

/* A consistent copy of an inode slot. */
struct isnap {
	mc_off_t off;
	uint64_t ino;
	uint32_t mode, nlink, uid, gid;
	uint64_t size;           /* regular file */
	uint32_t nentries;       /* directory */
	mc_off_t dirx;
	uint32_t lnk_len;        /* symlink */
	mc_off_t lnk_blob;
	int64_t atime, mtime, ctime;
};

static int inode_snap(const struct view *v, mc_off_t off, struct isnap *s)
{
	const struct mc_inode *i = at(v, off, sizeof(*i), MC_PT_INODE);
	if (!i)
		return AGAIN;
	uint32_t s0 = seq_read(&i->seq);
	if (s0 & 1)
		return AGAIN;
	s->off = off;
	s->ino = LD(i->ino);
	s->mode = LD(i->mode);
	uint16_t flags = LD(i->flags);
	s->nlink = LD(i->nlink);
	s->uid = LD(i->uid);
	s->gid = LD(i->gid);
	if (S_ISDIR(s->mode)) {
		s->nentries = LD(i->u.dir.nentries);
		s->dirx = LD(i->u.dir.dirx);
	} else if (S_ISLNK(s->mode)) {
		s->lnk_len = LD(i->u.lnk.len);
		s->lnk_blob = LD(i->u.lnk.blob);
	} else {
		s->size = LD(i->u.size);
	}
	s->atime = LD(i->atime_ns);
	s->mtime = LD(i->mtime_ns);
	s->ctime = LD(i->ctime_ns);
	if (!seq_same(&i->seq, s0) || !(flags & MC_I_LIVE))
		return AGAIN;
	return 0;
}

/* Does the slot still hold inode number ino? (note 3) */
static bool inode_still(const struct view *v, mc_off_t off, uint64_t ino)
{
	const struct mc_inode *i = at(v, off, sizeof(*i), MC_PT_INODE);
	return i && LD(i->ino) == ino;
}

/* The credentials this thread acts for (mc_cred_set), or NULL. */
static _Thread_local const struct view_cred *acting;

void view_cred_act(const struct view_cred *c)
{
	acting = c;
}

const struct view_cred *view_cred_acting(const struct view_cred *own)
{
	return acting ? acting : own;
}

/* The server's permission(), on a snapshot. */
static int permission(const struct view_cred *c, const struct isnap *i, int mask)
{
	return mc_permission(c->uid, c->gid, c->groups, c->ngroups, i->mode, i->uid, i->gid, mask);
}

/* Is directory dir complete right now? */
static int dir_complete(const struct view *v, mc_off_t dir, bool *out)
{
	const struct mc_inode *i = at(v, dir, sizeof(*i), MC_PT_INODE);
	if (!i)
		return AGAIN;
	mc_off_t xo = LD(i->u.dir.dirx);
	if (!xo) {
		*out = false;
		return 0;
	}
	const struct mc_dirx *x = at(v, xo, sizeof(*x), MC_PT_DIRX);
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

/* Look name up in directory ds. 0 with *found (false: the name is absent,
 * which the cache vouches for) and, when found, *cs; AGAIN; VIEW_MISS;
 * BOUND; -ENAMETOOLONG. */
static int lookup(struct view *v, const struct isnap *ds, const char *name, size_t len,
                  bool *found, struct isnap *cs)
{
	if (len > MC_NAME_MAX)
		return -ENAMETOOLONG;
	uint64_t h = mc_hash_name(v->seed, ds->ino, name, len);
	const struct mc_bucket *b = &v->dbuckets[h & v->dmask];
	uint32_t bs = seq_read(&b->seq);
	if (bs & 1)
		return AGAIN;
	unsigned n = 0;
	int rc;
	for (mc_off_t d = LD(b->head); d;) {
		if (++n > v->lim.chain)
			return BOUND;
		const struct mc_dentry *e = at(v, d, sizeof(*e), MC_PT_DENTRY);
		if (!e)
			return AGAIN;
		uint32_t es = seq_read(&e->seq);
		if (es & 1)
			return AGAIN;
		mc_off_t parent = LD(e->parent);
		mc_off_t ino = LD(e->inode);
		mc_off_t next = LD(e->hnext);
		uint8_t nl = LD(e->namelen);
		uint16_t fl = LD(e->flags);
		bool match = false;
		if (parent == ds->off && nl == len) {
			const char *nm = dentry_name(v, e, fl, nl);
			if (!nm)
				return AGAIN;
			match = memcmp(nm, name, len) == 0;
		}
		if (!seq_same(&e->seq, es))
			return AGAIN;
		if (match) {
			if (!(fl & MC_D_LIVE))
				return AGAIN;
			*found = fl & MC_D_POSITIVE;
			if (*found) {
				rc = inode_snap(v, ino, cs);
				if (rc)
					return rc;
				if (!seq_same(&e->seq, es))
					return AGAIN;
				if (v->refbits)
					mc_ref_mark(v->refbits, v->nbits, d);
			}
			goto done;
		}
		d = next;
	}
	bool complete;
	rc = dir_complete(v, ds->off, &complete);
	if (rc)
		return rc;
	if (!complete)
		return VIEW_MISS;
	*found = false;
done:
	if (!seq_same(&b->seq, bs) || !inode_still(v, ds->off, ds->ino))
		return AGAIN;
	return 0;
}

struct walk {
	struct view *v;
	mc_off_t stack[VIEW_DEPTH_MAX];
	uint64_t stack_ino[VIEW_DEPTH_MAX]; /* the inode each slot held when pushed */
	unsigned depth;
	struct isnap top;            /* snapshot of stack[depth - 1] */
	bool top_ok;
	const char *last;
	size_t lastlen;
	enum mc_last last_type;
	bool slash;
	unsigned nlinks;             /* symlinks followed in all */
};

static int push(struct walk *w, const struct isnap *s)
{
	if (w->depth >= w->v->lim.depth || w->depth >= VIEW_DEPTH_MAX)
		return BOUND;
	w->stack_ino[w->depth] = s->ino;
	w->stack[w->depth++] = s->off;
	w->top = *s;
	w->top_ok = true;
	return 0;
}

static int pop(struct walk *w)
{
	if (w->depth > 1) {
		w->depth--;
		w->top_ok = false;
	}
	return 0;
}

static int top_snap(struct walk *w)
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

static int walk_path(struct walk *w, const char *path, size_t len, bool follow, unsigned level,
                     struct isnap *res);

/* Copy a symlink's target into the buffer of nesting level `level`. */
static int read_target(struct walk *w, const struct isnap *s, unsigned level, size_t *tlen)
{
	struct view *v = w->v;
	if (level >= v->lim.links || level >= VIEW_LINKS_MAX || ++w->nlinks > 40)
		return BOUND;
	size_t n = s->lnk_len;
	if (n == 0 || n > MC_SYMLINK_MAX)
		return AGAIN;
	const char *t = at(v, s->lnk_blob, n, blob_type(n));
	if (!t)
		return AGAIN;
	const struct mc_inode *i = at(v, s->off, sizeof(*i), MC_PT_INODE);
	uint32_t s0 = seq_read(&i->seq);
	memcpy(link_buf(level), t, n);
	if ((s0 & 1) || !seq_same(&i->seq, s0) || LD(i->ino) != s->ino)
		return AGAIN;
	*tlen = n;
	return 0;
}

static int walk_step(struct walk *w, const char *name, size_t len, unsigned level)
{
	switch (mc_comp_type(name, len)) {
	case MC_LAST_DOT:
		return 0;
	case MC_LAST_DOTDOT:
		return pop(w);
	default:
		break;
	}
	struct isnap cs;
	bool found;
	int rc = lookup(w->v, &w->top, name, len, &found, &cs);
	if (rc)
		return rc;
	if (!found)
		return -ENOENT;
	if (S_ISDIR(cs.mode))
		return push(w, &cs);
	if (!S_ISLNK(cs.mode))
		return -ENOTDIR;
	size_t tlen;
	rc = read_target(w, &cs, level, &tlen);
	if (rc)
		return rc;
	struct isnap res;
	rc = walk_path(w, link_buf(level), tlen, true, level + 1, &res);
	if (rc)
		return rc;
	return S_ISDIR(res.mode) ? 0 : -ENOTDIR;
}

static int walk_parent(struct walk *w, const char *path, size_t len, unsigned level)
{
	const char *p = path, *end = path + len;
	int rc;
	if (len == 0)
		return -ENOENT;
	if (path[0] == '/') {
		w->depth = 0;
		struct isnap root;
		rc = inode_snap(w->v, LD(w->v->hdr->root), &root);
		if (rc)
			return rc;
		rc = push(w, &root);
		if (rc)
			return rc;
	} else if (w->depth == 0) {
		return -EINVAL;
	}
	for (;;) {
		struct mc_comp c;
		if (!mc_path_next(&p, end, &c)) {
			w->last_type = MC_LAST_ROOT;
			w->slash = false;
			return 0;
		}
		rc = top_snap(w);
		if (rc)
			return rc;
		rc = permission(view_cred_acting(&w->v->cred), &w->top, MAY_EXEC);
		if (rc)
			return rc;
		if (c.last) {
			w->last = c.name;
			w->lastlen = c.len;
			w->slash = c.slash;
			w->last_type = mc_comp_type(c.name, c.len);
			return 0;
		}
		rc = walk_step(w, c.name, c.len, level);
		if (rc)
			return rc;
	}
}

static int walk_last(struct walk *w, bool follow, unsigned level, struct isnap *res)
{
	int rc;
	switch (w->last_type) {
	case MC_LAST_DOTDOT:
		pop(w);
		/* fall through */
	case MC_LAST_ROOT:
	case MC_LAST_DOT:
		rc = top_snap(w);
		if (rc == 0)
			*res = w->top;
		return rc;
	case MC_LAST_NORM:
		break;
	}
	rc = top_snap(w);
	if (rc)
		return rc;
	bool found;
	struct isnap cs;
	rc = lookup(w->v, &w->top, w->last, w->lastlen, &found, &cs);
	if (rc)
		return rc;
	if (!found)
		return -ENOENT;
	if (S_ISLNK(cs.mode) && (follow || w->slash)) {
		bool slash = w->slash;
		size_t tlen;
		rc = read_target(w, &cs, level, &tlen);
		if (rc)
			return rc;
		rc = walk_path(w, link_buf(level), tlen, true, level + 1, &cs);
		if (rc)
			return rc;
		if (slash && !S_ISDIR(cs.mode))
			return -ENOTDIR;
		*res = cs;
		return 0;
	}
	if (w->slash && !S_ISDIR(cs.mode))
		return -ENOTDIR;
	if (S_ISDIR(cs.mode)) {
		rc = push(w, &cs);
		if (rc)
			return rc;
	}
	*res = cs;
	return 0;
}

static int walk_path(struct walk *w, const char *path, size_t len, bool follow, unsigned level,
                     struct isnap *res)
{
	int rc = walk_parent(w, path, len, level);
	if (rc)
		return rc;
	return walk_last(w, follow, level, res);
}

/* One whole walk inside a stable rename seq (note 4). */
static int walk_once(struct view *v, const char *path, size_t len, bool follow, struct isnap *res)
{
	if (atomic_load_explicit(&v->hdr->closed, memory_order_acquire))
		return -ENOTCONN;
	const _Atomic uint32_t *rs = &v->hdr->rename_seq;
	uint32_t r0 = seq_read(rs);
	if (r0 & 1)
		return AGAIN;
	struct walk w;
	w.v = v;
	w.depth = 0;
	w.top_ok = false;
	w.nlinks = 0;
	int rc = walk_path(&w, path, len, follow, 0, res);
	if (rc == AGAIN || rc == BOUND || rc == VIEW_MISS)
		return rc;
	return seq_same(rs, r0) ? rc : AGAIN;
}

/* Run walk_once with restarts, count, and fold the internal codes. */
static int walk_retry(struct view *v, const char *path, size_t len, bool follow, struct isnap *res)
{
	for (unsigned r = 0;; r++) {
		int rc = walk_once(v, path, len, follow, res);
		if (rc == -ENOTCONN)
			return rc;
		if (rc == AGAIN) {
			count(v, f_retries);
			if (r < v->lim.retries)
				continue;
			rc = BOUND;
		}
		if (rc == BOUND) {
			count(v, f_fallbacks);
			return VIEW_MISS;
		}
		if (rc == VIEW_MISS) {
			count(v, f_misses);
			return VIEW_MISS;
		}
		count(v, f_hits);
		return rc;
	}
}

static void to_timespec(int64_t ns, struct timespec *ts)
{
	int64_t s = ns / 1000000000, r = ns % 1000000000;
	if (r < 0) {
		r += 1000000000;
		s--;
	}
	ts->tv_sec = (time_t)s;
	ts->tv_nsec = (long)r;
}

static void fill_stat(const struct isnap *s, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = s->ino;
	st->st_mode = s->mode;
	st->st_nlink = s->nlink;
	st->st_uid = s->uid;
	st->st_gid = s->gid;
	if (S_ISDIR(s->mode))
		st->st_size = 40 + 20 * (off_t)s->nentries;
	else if (S_ISLNK(s->mode))
		st->st_size = s->lnk_len;
	else if (S_ISCHR(s->mode) || S_ISBLK(s->mode))
		st->st_rdev = (dev_t)s->size;   /* a device's number, where a file keeps its size */
	else
		st->st_size = (off_t)s->size;
	st->st_blksize = 4096;
	to_timespec(s->atime, &st->st_atim);
	to_timespec(s->mtime, &st->st_mtim);
	to_timespec(s->ctime, &st->st_ctim);
}

int view_stat(struct view *v, const char *path, size_t len, bool follow, struct stat *st)
{
	struct isnap s;
	int rc = walk_retry(v, path, len, follow, &s);
	if (rc == 0)
		fill_stat(&s, st);
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
				count(v, f_fallbacks);
				return VIEW_MISS;
			}
			const struct mc_inode *i = at(v, off, sizeof(*i), MC_PT_INODE);
			if (!i)
				goto again;
			if (LD(i->ino) == ino) {
				struct isnap s;
				int rc = inode_snap(v, off, &s);
				if (rc || s.ino != ino || !seq_same(&b->seq, bs))
					goto again;
				fill_stat(&s, st);
				count(v, f_hits);
				return 0;
			}
			off = LD(i->hnext);
		}
		if (seq_same(&b->seq, bs)) {
			count(v, f_misses);
			return VIEW_MISS;
		}
again:
		count(v, f_retries);
	}
	count(v, f_fallbacks);
	return VIEW_MISS;
}

int view_readlink(struct view *v, const char *path, size_t len, char *buf, size_t cap,
                  size_t *out_len)
{
	for (unsigned r = 0;; r++) {
		struct isnap s;
		int rc = walk_retry(v, path, len, false, &s);
		if (rc)
			return rc;
		if (!S_ISLNK(s.mode))
			return -EINVAL;
		size_t n = s.lnk_len;
		const char *t = at(v, s.lnk_blob, n ? n : 1, blob_type(n ? n : 1));
		const struct mc_inode *i = at(v, s.off, sizeof(*i), MC_PT_INODE);
		if (t && i && n <= MC_SYMLINK_MAX) {
			uint32_t s0 = seq_read(&i->seq);
			size_t k = n < cap ? n : cap;
			memcpy(buf, t, k);
			if (!(s0 & 1) && seq_same(&i->seq, s0) && LD(i->ino) == s.ino &&
			    LD(i->u.lnk.blob) == s.lnk_blob) {
				*out_len = k;
				return 0;
			}
		}
		count(v, f_retries);
		if (r >= v->lim.retries) {
			count(v, f_fallbacks);
			return VIEW_MISS;
		}
	}
}

int view_opendir(struct view *v, const char *path, size_t len, struct view_dir *d)
{
	struct isnap s;
	int rc = walk_retry(v, path, len, true, &s);
	if (rc)
		return rc;
	if (!S_ISDIR(s.mode))
		return -ENOTDIR;
	rc = permission(view_cred_acting(&v->cred), &s, MAY_READ);
	if (rc)
		return rc;
	bool complete;
	if (dir_complete(v, s.off, &complete) || !complete || !inode_still(v, s.off, s.ino))
		return VIEW_MISS;
	d->dir = s.off;
	d->ino = s.ino;
	d->cookie = 0;
	d->last = 0;
	return 0;
}

/* One attempt at a page of entries (note 2 applied to the dirx seq). */
static int readdir_once(struct view *v, struct view_dir *d, struct view_dirent *out,
                        unsigned max, unsigned *n, bool *eof, mc_off_t *last)
{
	if (atomic_load_explicit(&v->hdr->closed, memory_order_acquire))
		return -ENOTCONN;
	const struct mc_inode *di = at(v, d->dir, sizeof(*di), MC_PT_INODE);
	if (!di)
		return AGAIN;
	uint32_t ds = seq_read(&di->seq);
	if (ds & 1)
		return AGAIN;
	uint64_t ino = LD(di->ino);
	uint32_t nlink = LD(di->nlink);
	mc_off_t xo = LD(di->u.dir.dirx);
	if (!seq_same(&di->seq, ds))
		return AGAIN;
	if (ino != d->ino)
		return VIEW_MISS; /* the directory is gone from the cache */
	if (nlink == 0) {
		*n = 0;
		*eof = true;
		return 0;
	}
	const struct mc_dirx *x = at(v, xo, sizeof(*x), MC_PT_DIRX);
	if (!x)
		return VIEW_MISS;
	uint32_t xs = seq_read(&x->seq);
	if (xs & 1)
		return AGAIN;
	if (!(LD(x->flags) & MC_X_COMPLETE))
		return VIEW_MISS;
	uint32_t ncached = LD(x->ncached);
	mc_off_t e_off = LD(x->head);
	/* Resume after the last entry returned when it is still where it was. */
	if (d->last) {
		const struct mc_dentry *e = at(v, d->last, sizeof(*e), MC_PT_DENTRY);
		if (e && LD(e->parent) == d->dir && LD(e->cookie) == d->cookie &&
		    (LD(e->flags) & MC_D_LIVE))
			e_off = LD(e->sib_next);
	}
	unsigned k = 0, steps = 0;
	mc_off_t lastd = 0;
	bool end = true;
	while (e_off) {
		if (++steps > ncached + 1)
			return AGAIN;
		const struct mc_dentry *e = at(v, e_off, sizeof(*e), MC_PT_DENTRY);
		if (!e)
			return AGAIN;
		uint32_t es = seq_read(&e->seq);
		if (es & 1)
			return AGAIN;
		uint32_t cookie = LD(e->cookie);
		uint16_t fl = LD(e->flags);
		mc_off_t next = LD(e->sib_next);
		if (cookie <= d->cookie || !(fl & MC_D_POSITIVE)) {
			if (!seq_same(&e->seq, es))
				return AGAIN;
			e_off = next;
			continue;
		}
		if (k == max) {
			end = false;
			break;
		}
		struct view_dirent *o = &out[k];
		uint8_t nl = LD(e->namelen);
		const char *nm = dentry_name(v, e, fl, nl);
		if (!nm)
			return AGAIN;
		memcpy(o->name, nm, nl);
		o->name[nl] = 0;
		/* A name the server never writes (a NUL or a slash inside) is
		 * not passed on: it reads as a miss. */
		if (memchr(o->name, 0, nl) || memchr(o->name, '/', nl))
			return AGAIN;
		o->namelen = nl;
		o->type = LD(e->dtype);
		o->cookie = cookie;
		const struct mc_inode *ci = at(v, LD(e->inode), sizeof(*ci), MC_PT_INODE);
		if (!ci)
			return AGAIN;
		o->ino = LD(ci->ino);
		if (!seq_same(&e->seq, es))
			return AGAIN;
		k++;
		lastd = e_off;
		e_off = next;
	}
	/* Nothing in the list changed while we read it: every dentry we saw
	 * was linked, with the name, inode and cookie we copied. */
	if (!seq_same(&x->seq, xs) || !inode_still(v, d->dir, d->ino))
		return AGAIN;
	*n = k;
	*eof = end;
	*last = lastd;
	return 0;
}

int view_readdir(struct view *v, struct view_dir *d, struct view_dirent *out, unsigned max,
                 unsigned *n, bool *eof)
{
	for (unsigned r = 0;; r++) {
		mc_off_t last = 0;
		int rc = readdir_once(v, d, out, max, n, eof, &last);
		if (rc == 0) {
			if (*n) {
				d->cookie = out[*n - 1].cookie;
				d->last = last;
			}
			count(v, f_hits);
			return 0;
		}
		if (rc == VIEW_MISS) {
			count(v, f_misses);
			return VIEW_MISS;
		}
		if (rc < 0)
			return rc;
		count(v, f_retries);
		if (r >= v->lim.retries) {
			count(v, f_fallbacks);
			return VIEW_MISS;
		}
	}
}
