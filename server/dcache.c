/* dcache.c - the dentry cache: (parent, name) -> inode, in shared memory.
 *
 * Invariants (with proto/mc_shm.h's):
 *  1. A dentry is in exactly one hash chain and in its parent's child list
 *     from dcache_add until dcache_del.
 *  2. A child list is in increasing cookie order; cookies of one directory
 *     are never reused while it is cached (next_cookie only grows), nor
 *     after it was evicted and loaded again: a new directory state starts
 *     at shm->cookie_floor, above every cookie of one that was freed (so a
 *     listing that began before the eviction resumes below every entry of
 *     the new state, and its client drops what it returned already). The
 *     floor only grows; past 2^32 cookies in all it would wrap.
 *  3. A directory is complete only if every name it holds has a positive
 *     dentry; lookups of other names in it are answered ENOENT.
 *  4. Every change to a dentry, a chain or a list is inside the seq of the
 *     dentry, the bucket group or the dirx it changes. All of them are made
 *     under the namespace lock but dcache_fill's, on a slot nobody else
 *     can reach (shm.c note 11): it writes the name alone, not the flags
 *     that scans of the slots read under the lock; the slot is live, and
 *     reachable, from dcache_link on.
 *  5. A negative dentry never carries the referenced bit (the server clears
 *     it whenever a slot becomes negative or is reused), so stale names of
 *     a removed tree get no second chance from the shrinker.
 *  6. A bucket's inode hint (proto/mc_shm.h note 12) is what its first
 *     dentry names, 0 when the chain is empty or starts with a negative
 *     entry: every change of a chain's head (dcache_link, unhash,
 *     unhash_dir) and of the inode its head names (dcache_set) rewrites it
 *     (bucket_hint).
 */
#include "dcache.h"

#include <string.h>

uint64_t dcache_hash(const struct shm *s, uint64_t parent_ino, const char *name, size_t len)
{
	return mc_hash_name(s->hdr->hash_seed, parent_ino, name, len);
}

static struct mc_dgroup *dgroup(const struct shm *s, uint64_t hash)
{
	return &s->dgroups[hash & s->hdr->dbucket_mask];
}

/* The bucket of hash in its group g. */
static struct mc_dbucket *dbucket(struct mc_dgroup *g, uint64_t hash)
{
	return &g->b[mc_dgroup_slot(hash)];
}

uint64_t dcache_nbuckets(const struct shm *s)
{
	return ((uint64_t)s->hdr->dbucket_mask + 1) * MC_DGROUP_BUCKETS;
}

const void *dcache_bucket_of(const struct shm *s, uint64_t hash)
{
	return dbucket(dgroup(s, hash), hash);
}

const void *dcache_prefetch_hash(const struct shm *s, uint64_t hash)
{
	const void *b = dcache_bucket_of(s, hash);
	__builtin_prefetch(b, 1);
	return b;
}

const void *dcache_prefetch(const struct shm *s, uint64_t parent_ino, const char *name,
                            size_t len)
{
	return dcache_prefetch_hash(s, dcache_hash(s, parent_ino, name, len));
}

/* dcache_name, inlined where chains are walked. */
static inline const char *name_of(const struct shm *s, const struct mc_dentry *e)
{
	if (e->flags & MC_D_LONGNAME)
		return shm_at(s, e->name.blob);
	return e->name.inl;
}

const char *dcache_name(const struct shm *s, mc_off_t d)
{
	return name_of(s, dentry_at(s, d));
}

/* The hash of dentry e's name. */
static uint64_t hash_of(const struct shm *s, const struct mc_dentry *e)
{
	return dcache_hash(s, inode_at(s, e->parent)->ino, name_of(s, e), e->namelen);
}

/* Make b's hint what its first dentry names now (note 6): a relaxed
 * store, outside the bucket's seq, and none when it holds already. */
static void bucket_hint(const struct shm *s, struct mc_dbucket *b)
{
	mc_off_t i = b->head ? dentry_at(s, b->head)->inode : 0;
	if (atomic_load_explicit(&b->inode, memory_order_relaxed) != i)
		atomic_store_explicit(&b->inode, i, memory_order_relaxed);
}

/* The last 8 bytes of a name of at least 8. */
static inline uint64_t name_tail(const char *name, size_t len)
{
	uint64_t w;
	memcpy(&w, name + len - 8, 8);
	return w;
}

mc_off_t dcache_find(const struct shm *s, mc_off_t dir, const char *name, size_t len)
{
	uint64_t pino = inode_at(s, dir)->ino;
	/* The names of one directory met in a chain have the same length
	 * more often than not, and tend to share a prefix (f.000017,
	 * f.000042): their last word tells most of them apart without a
	 * call to memcmp. */
	uint64_t tail = len >= 8 ? name_tail(name, len) : 0;
	uint64_t h = dcache_hash(s, pino, name, len);
	for (mc_off_t d = dbucket(dgroup(s, h), h)->head; d; d = dentry_at(s, d)->hnext) {
		const struct mc_dentry *e = dentry_at(s, d);
		if (e->parent != dir || e->namelen != len)
			continue;
		const char *n = name_of(s, e);
		if (len >= 8 && name_tail(n, len) != tail)
			continue;
		if (memcmp(n, name, len) == 0)
			return d;
	}
	return 0;
}

struct mc_dirx *dcache_dirx_new(struct shm *s, mc_off_t dir)
{
	struct mc_inode *i = inode_at(s, dir);
	mc_off_t x = shm_alloc(s, SLAB_DIRX);
	if (!x)
		return NULL;
	struct mc_dirx *dx = shm_at(s, x);
	shm_write_begin(&dx->seq);
	dx->next_cookie = s->cookie_floor > 1 ? s->cookie_floor : 1;
	shm_write_end(&dx->seq);
	shm_write_begin(&i->seq);
	i->u.dir.dirx = x;
	shm_write_end(&i->seq);
	return dx;
}

bool dcache_set_complete(struct shm *s, mc_off_t dir)
{
	struct mc_dirx *dx = dcache_dirx(s, dir, true);
	if (!dx)
		return false;
	if (!(dx->flags & MC_X_COMPLETE)) {
		shm_write_begin(&dx->seq);
		dx->flags |= MC_X_COMPLETE;
		shm_write_end(&dx->seq);
		s->dirs_complete++;
	}
	return true;
}

void dcache_clear_complete(struct shm *s, mc_off_t dir)
{
	struct mc_dirx *dx = dcache_dirx(s, dir, false);
	if (!dx || !(dx->flags & MC_X_COMPLETE))
		return;
	shm_write_begin(&dx->seq);
	dx->flags &= ~MC_X_COMPLETE;
	shm_write_end(&dx->seq);
	s->dirs_complete--;
}

/* Link d at the tail of dir's child list with a new cookie. */
static void list_append(struct shm *s, struct mc_dirx *dx, mc_off_t d)
{
	struct mc_dentry *e = dentry_at(s, d);
	shm_write_begin(&dx->seq);
	e->cookie = dx->next_cookie++;
	e->sib_prev = dx->tail;
	e->sib_next = 0;
	if (dx->tail)
		dentry_at(s, dx->tail)->sib_next = d;
	else
		dx->head = d;
	dx->tail = d;
	dx->ncached++;
	shm_write_end(&dx->seq);
}

static void list_unlink(struct shm *s, struct mc_dirx *dx, mc_off_t d)
{
	struct mc_dentry *e = dentry_at(s, d);
	shm_write_begin(&dx->seq);
	if (e->sib_prev)
		dentry_at(s, e->sib_prev)->sib_next = e->sib_next;
	else
		dx->head = e->sib_next;
	if (e->sib_next)
		dentry_at(s, e->sib_next)->sib_prev = e->sib_prev;
	else
		dx->tail = e->sib_prev;
	dx->ncached--;
	shm_write_end(&dx->seq);
}

void dcache_fill(struct shm *s, mc_off_t d, const char *name, size_t len)
{
	struct mc_dentry *e = dentry_at(s, d);
	shm_write_begin(&e->seq);
	e->namelen = (uint8_t)len;
	memset(e->name.inl, 0, sizeof(e->name.inl));
	if (len <= MC_NAME_INLINE)
		memcpy(e->name.inl, name, len);
	shm_write_end(&e->seq);
}

mc_off_t dcache_link(struct shm *s, mc_off_t dir, mc_off_t d, const char *name,
                     mc_off_t inode, uint8_t dtype, uint64_t hash)
{
	struct mc_dirx *dx = dcache_dirx(s, dir, true);
	if (!dx)
		return 0;
	struct mc_dentry *e = dentry_at(s, d);
	size_t len = e->namelen;
	mc_off_t blob = 0;
	if (len > MC_NAME_INLINE) {
		blob = shm_blob_new(s, name, len);
		if (!blob)
			return 0;
	}
	shm_ref_take(s, d); /* a hit on the slot's last user is no hit on this one */
	struct mc_dgroup *g = dgroup(s, hash);
	struct mc_dbucket *b = dbucket(g, hash);
	shm_write_begin(&e->seq);
	e->parent = dir;
	e->inode = inode;
	e->dtype = inode ? dtype : 0;
	e->flags = MC_D_LIVE | (inode ? MC_D_POSITIVE : 0);
	if (blob) {
		e->flags |= MC_D_LONGNAME;
		e->name.blob = blob;
	}
	e->hnext = b->head;
	list_append(s, dx, d);
	shm_write_end(&e->seq);
	shm_write_begin(&g->seq);
	b->head = d;
	shm_write_end(&g->seq);
	bucket_hint(s, b);
	if (inode)
		s->d_positive++;
	else {
		s->d_negative++;
		dx->nneg++;
	}
	return d;
}

mc_off_t dcache_add(struct shm *s, mc_off_t dir, const char *name, size_t len,
                    mc_off_t inode, uint8_t dtype)
{
	mc_off_t d = shm_alloc(s, SLAB_DENTRY);
	if (!d)
		return 0;
	dcache_fill(s, d, name, len);
	uint64_t h = dcache_hash(s, inode_at(s, dir)->ino, name, len);
	if (!dcache_link(s, dir, d, name, inode, dtype, h)) {
		shm_free(s, SLAB_DENTRY, d);
		return 0;
	}
	return d;
}

void dcache_set(struct shm *s, mc_off_t d, mc_off_t inode, uint8_t dtype)
{
	struct mc_dentry *e = dentry_at(s, d);
	struct mc_dirx *dx = dcache_dirx(s, e->parent, false);
	bool was = e->flags & MC_D_POSITIVE;
	shm_write_begin(&e->seq);
	if (inode) {
		/* A new entry under this name: a fresh cookie at the list's end so a
		 * listing in progress neither repeats nor skips the old ones. */
		list_unlink(s, dx, d);
		list_append(s, dx, d);
		e->flags |= MC_D_POSITIVE;
	} else {
		e->flags &= (uint16_t)~MC_D_POSITIVE;
		shm_ref_take(s, d); /* note 5 */
	}
	e->inode = inode;
	e->dtype = inode ? dtype : 0;
	shm_write_end(&e->seq);
	uint64_t h = hash_of(s, e);
	struct mc_dbucket *b = dbucket(dgroup(s, h), h);
	if (b->head == d)
		bucket_hint(s, b);
	if (was && !inode) {
		s->d_positive--;
		s->d_negative++;
		dx->nneg++;
	} else if (!was && inode) {
		s->d_negative--;
		s->d_positive++;
		dx->nneg--;
	}
}

/* Take d out of its hash chain. */
static void unhash(struct shm *s, mc_off_t d)
{
	struct mc_dentry *e = dentry_at(s, d);
	uint64_t h = hash_of(s, e);
	struct mc_dgroup *g = dgroup(s, h);
	struct mc_dbucket *b = dbucket(g, h);
	shm_write_begin(&g->seq);
	if (b->head == d) {
		b->head = e->hnext;
		bucket_hint(s, b);
	} else {
		for (mc_off_t p = b->head; p; p = dentry_at(s, p)->hnext) {
			if (dentry_at(s, p)->hnext == d) {
				dentry_at(s, p)->hnext = e->hnext;
				break;
			}
		}
	}
	shm_write_end(&g->seq);
}

/* Free d, out of every chain and list already. */
static void release(struct shm *s, mc_off_t d)
{
	struct mc_dentry *e = dentry_at(s, d);
	if (e->flags & (MC_D_DIRTY0 | MC_D_DIRTY1))
		s->d_dirty--;
	shm_write_begin(&e->seq);
	if (e->flags & MC_D_LONGNAME)
		shm_blob_free(s, e->name.blob, e->namelen);
	e->flags = 0;
	e->parent = 0;
	e->inode = 0;
	shm_write_end(&e->seq);
	shm_free(s, SLAB_DENTRY, d);
}

void dcache_del(struct shm *s, mc_off_t d)
{
	struct mc_dentry *e = dentry_at(s, d);
	struct mc_dirx *dx = dcache_dirx(s, e->parent, false);
	unhash(s, d);
	list_unlink(s, dx, d);
	if (e->flags & MC_D_POSITIVE) {
		s->d_positive--;
	} else {
		s->d_negative--;
		dx->nneg--;
	}
	release(s, d);
}

size_t dcache_prune(struct shm *s, mc_off_t dir)
{
	struct mc_dirx *dx = dcache_dirx(s, dir, false);
	if (!dx)
		return 0;
	size_t n = 0;
	while (dx->head) {
		dcache_del(s, dx->head);
		n++;
	}
	dcache_clear_complete(s, dir);
	if (n) {
		s->prunes++;
		s->pruned += n;
	}
	return n;
}

mc_off_t dcache_neg_oldest(const struct shm *s, mc_off_t dir, unsigned budget)
{
	const struct mc_inode *i = inode_at(s, dir);
	if (!i->u.dir.dirx)
		return 0;
	const struct mc_dirx *dx = shm_at(s, i->u.dir.dirx);
	for (mc_off_t d = dx->head; d && budget > 0; d = dentry_at(s, d)->sib_next, budget--) {
		const struct mc_dentry *e = dentry_at(s, d);
		if (!(e->flags & (MC_D_POSITIVE | MC_D_DIRTY0 | MC_D_DIRTY1)))
			return d;
	}
	return 0;
}

/* Take every dentry of dir out of its hash chain: one pass over the
 * buckets, which costs less than hashing each name and walking its chain
 * once they are many. */
static void unhash_dir(struct shm *s, mc_off_t dir)
{
	uint32_t ng = s->hdr->dbucket_mask + 1;
	for (uint32_t i = 0; i < ng; i++) {
		struct mc_dgroup *g = &s->dgroups[i];
		bool writing = false;
		for (unsigned k = 0; k < MC_DGROUP_BUCKETS; k++) {
			struct mc_dbucket *b = &g->b[k];
			mc_off_t *link = &b->head, head = b->head;
			for (mc_off_t d = *link; d; d = *link) {
				struct mc_dentry *e = dentry_at(s, d);
				if (e->parent != dir) {
					link = &e->hnext;
					continue;
				}
				if (!writing) {
					shm_write_begin(&g->seq);
					writing = true;
				}
				*link = e->hnext;
			}
			if (b->head != head)
				bucket_hint(s, b);
		}
		if (writing)
			shm_write_end(&g->seq);
	}
}

/* Free every child of dir, all negative: the list goes in one write of
 * its seq (a reader walking it starts over, as after any change), the
 * names out of their chains name by name, or in one pass over the
 * buckets when they are at least half as many. */
static void drop_negatives(struct shm *s, mc_off_t dir, struct mc_dirx *dx)
{
	mc_off_t d = dx->head;
	uint32_t n = dx->nneg;
	bool sweep = n >= dcache_nbuckets(s) / 2;
	if (sweep)
		unhash_dir(s, dir);
	else
		for (mc_off_t e = d; e; e = dentry_at(s, e)->sib_next)
			unhash(s, e);
	shm_write_begin(&dx->seq);
	dx->head = dx->tail = 0;
	dx->ncached = 0;
	dx->nneg = 0;
	shm_write_end(&dx->seq);
	s->d_negative -= n;
	while (d) {
		mc_off_t next = dentry_at(s, d)->sib_next;
		release(s, d);
		d = next;
	}
}

void dcache_now_empty(struct shm *s, mc_off_t dir)
{
	if (!dcache_set_complete(s, dir))
		return;
	struct mc_dirx *dx = dcache_dirx(s, dir, false);
	if (dx->ncached == dx->nneg) {
		drop_negatives(s, dir, dx);
		return;
	}
	mc_off_t d = dx->head;
	while (d) {
		mc_off_t next = dentry_at(s, d)->sib_next;
		if (!(dentry_at(s, d)->flags & MC_D_POSITIVE))
			dcache_del(s, d);
		d = next;
	}
}
