/* shmview.c - the client's view of the shared-memory segment: set-up
 * over a mapped segment, and directory listings answered from memory. The
 * read protocol (offset checks, seqs, rename seq, bounds) is in shmwalk.c's
 * notes; the path walks and stat are there too.
 */
#include "shmview_impl.h"

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
	    (uint64_t)h->dbuckets_off + ((uint64_t)h->dbucket_mask + 1) * sizeof(struct mc_dgroup) > size ||
	    (uint64_t)h->ibuckets_off + ((uint64_t)h->ibucket_mask + 1) * sizeof(struct mc_bucket) > size ||
	    ((h->dbucket_mask + 1) & h->dbucket_mask) || ((h->ibucket_mask + 1) & h->ibucket_mask) ||
	    h->dbuckets_off % _Alignof(struct mc_dgroup) ||
	    h->ibuckets_off % _Alignof(struct mc_bucket))
		return -EPROTO;
	if (((const uint8_t *)base + h->page_types_off)[0] != MC_PT_META)
		return -EPROTO; /* view_at relies on it: offset 0 is no slot */
	v->base = base;
	v->npages = h->npages;
	prefix_clear(v);
	v->size = size;
	v->hdr = h;
	v->ptypes = (const uint8_t *)base + h->page_types_off;
	v->dgroups = (const struct mc_dgroup *)((const char *)base + h->dbuckets_off);
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

int view_opendir(struct view *v, const char *path, size_t len, struct view_dir *d)
{
	struct isnap s;
	int rc = view_walk(v, path, len, true, &s);
	if (rc)
		return rc;
	if (!S_ISDIR(s.mode))
		return -ENOTDIR;
	rc = view_permission(&v->cred, &s, MC_MAY_READ);
	if (rc)
		return rc;
	bool complete;
	if (view_dir_complete(v, &s, &complete) || !complete || !inode_still(&s))
		return VIEW_MISS;
	d->dir = s.off;
	d->ino = s.ino;
	d->cookie = 0;
	d->last = 0;
	return 0;
}


/* The credentials this thread acts for (mc_cred_set), or NULL. */
static _Thread_local const struct view_cred *acting;

_Atomic bool view_cred_any;

void view_cred_act(const struct view_cred *c)
{
	if (c && !atomic_load_explicit(&view_cred_any, memory_order_relaxed))
		atomic_store_explicit(&view_cred_any, true, memory_order_relaxed);
	acting = c;
}

const struct view_cred *view_cred_acting_tls(const struct view_cred *own)
{
	return acting ? acting : own;
}

/* One attempt at a page of entries (note 2 applied to the dirx seq). */
static int readdir_once(struct view *v, struct view_dir *d, struct view_dirent *out,
                        unsigned max, unsigned *n, bool *eof, mc_off_t *last)
{
	if (atomic_load_explicit(&v->hdr->closed, memory_order_acquire))
		return -ENOTCONN;
	const struct mc_inode *di = view_at(v, d->dir, sizeof(*di), MC_PT_INODE);
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
	const struct mc_dirx *x = view_at(v, xo, sizeof(*x), MC_PT_DIRX);
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
		const struct mc_dentry *e = view_at(v, d->last, sizeof(*e), MC_PT_DENTRY);
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
		const struct mc_dentry *e = view_at(v, e_off, sizeof(*e), MC_PT_DENTRY);
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
		const struct mc_inode *ci = view_at(v, LD(e->inode), sizeof(*ci), MC_PT_INODE);
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
	if (!seq_same(&x->seq, xs) || LD(di->ino) != d->ino)
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
			view_count(v, VC_HITS);
			return 0;
		}
		if (rc == VIEW_MISS) {
			view_count(v, VC_MISSES);
			return VIEW_MISS;
		}
		if (rc < 0)
			return rc;
		view_count(v, VC_RETRIES);
		if (r >= v->lim.retries) {
			view_count(v, VC_FALLBACKS);
			return VIEW_MISS;
		}
	}
}
