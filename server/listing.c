/* listing.c - directory listings (ns_readdir), in pages, from the cache or,
 * for a directory the cache cannot hold, streamed from the store.
 *
 * Two kinds of cursor share the 64-bit cookie:
 *   - below LIST_STORE_BIT, a cache cookie: the per-directory child id of
 *     the last entry returned (dcache.c invariant 2). The directory is
 *     loaded complete and listed from its child list in cookie order, as
 *     clients list it from shared memory, so a listing that began there
 *     continues here from the same cookie.
 *   - with LIST_STORE_BIT, a store cursor: a slot of a small table holding
 *     the last name returned. The directory is read from the store in name
 *     order after that name, corrected by what the cache knows that the
 *     store does not yet (uncommitted creates, renames and removals), and
 *     nothing is cached: a directory larger than the segment lists all the
 *     same.
 *
 *     ns_readdir(cookie 0) ────(fits)──► load complete ─► cache pages
 *              └──────(too big, or loading failed)──► store pages
 *     ns_readdir(cache cookie) ─► load complete ─► cache pages
 *              └──────(no longer fits)──► store pages, from the start
 *     ns_readdir(store cursor) ─► store pages after its name
 *
 * Why not one cursor for both: the store is keyed (parent ino, name), so
 * the only order it offers cheaply is name order, while the cache's order
 * is creation order (cookies), which clients walk lock-free in shared
 * memory; a name does not fit in the protocol's 64-bit cookie, hence the
 * table.
 *
 * Invariants:
 *  1. A listing keeps its kind: a cache cookie is answered from the cache
 *     (loading the directory again if it was evicted), a store cursor from
 *     the store -- but for a cache cookie of a directory that no longer
 *     fits: then the listing starts over from the store. Entries loaded
 *     again get new cookies, past the cursor. Either way a name may come
 *     twice in such a listing (one that began in shared memory and lost
 *     entries to the shrinker); libmcache drops the names it returned
 *     already (client/dir.c invariant 5). A listing through the server
 *     alone holds its directory, whose children are then never evicted.
 *  2. In a store listing, names come in strictly increasing name order, so
 *     one that existed throughout is returned exactly once; a cached dentry
 *     wins over the store for its name (it is newer).
 *  3. A store cursor lives until LIST_CURSORS newer ones were handed out;
 *     an older one is refused with -ESTALE (the listing must restart).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "name_order.h"
#include "ns_impl.h"

#define LIST_STORE_BIT (1ull << 63)
#define LIST_CURSORS 1024u
/* Bytes a cached entry costs at most, for the "does it fit" estimate:
 * dentry, inode and a name blob. */
#define LIST_ENTRY_COST (48u + 64u + 64u)

struct list_cursor {
	uint64_t ino;        /* directory; 0: free */
	uint32_t gen;        /* bumped on every reuse of the slot */
	uint8_t len;
	char name[MC_NAME_MAX];
};

void ns_listing_free(struct ns *ns)
{
	free(ns->cursors);
	ns->cursors = NULL;
}

/* ---- cursors ------------------------------------------------------------- */

static int cursor_new(struct ns *ns, uint64_t ino, const char *name, size_t len, uint64_t *out)
{
	if (!ns->cursors) {
		ns->cursors = calloc(LIST_CURSORS, sizeof(*ns->cursors));
		if (!ns->cursors)
			return -ENOMEM;
	}
	uint32_t slot = ns->cursor_next++ % LIST_CURSORS;
	struct list_cursor *k = &ns->cursors[slot];
	k->ino = ino;
	k->gen++;
	k->len = (uint8_t)len;
	memcpy(k->name, name, len);
	*out = LIST_STORE_BIT | ((uint64_t)k->gen << 16) | slot;
	return 0;
}

static int cursor_get(struct ns *ns, uint64_t ino, uint64_t cookie, const struct list_cursor **out)
{
	uint32_t slot = (uint32_t)(cookie & 0xffff);
	uint32_t gen = (uint32_t)((cookie & ~LIST_STORE_BIT) >> 16);
	if (!ns->cursors || slot >= LIST_CURSORS || ns->cursors[slot].ino != ino ||
	    ns->cursors[slot].gen != gen)
		return -ESTALE;
	*out = &ns->cursors[slot];
	return 0;
}

/* ---- from the store ------------------------------------------------------ */

/* A cached positive entry the store may not have yet. */
struct pend {
	const char *name;
	size_t len;
	uint64_t ino;
	uint8_t dtype;
};

struct store_page {
	struct ns *ns;
	mc_off_t dir;
	unsigned max, n;
	ns_dirent_fn fn;
	void *arg;
	struct pend *pend;
	size_t npend, ipend;
	char last[MC_NAME_MAX];
	size_t lastlen;
	int err;
};

static int pend_cmp(const void *a, const void *b)
{
	const struct pend *x = a, *y = b;
	return name_cmp(x->name, x->len, y->name, y->len);
}

/* Hand one entry out: 1 once the page is full, -errno from fn. */
static int page_emit(struct store_page *p, const char *name, size_t len, uint64_t ino,
                     uint8_t dtype)
{
	if (p->n == p->max)
		return 1;
	int rc = p->fn(p->arg, name, len, ino, dtype);
	if (rc < 0) {
		p->err = rc;
		return rc;
	}
	memcpy(p->last, name, len);
	p->lastlen = len;
	p->n++;
	return 0;
}

/* The pending entries before name (all of them when name is NULL). */
static int page_pend_before(struct store_page *p, const char *name, size_t len)
{
	while (p->ipend < p->npend) {
		const struct pend *q = &p->pend[p->ipend];
		int c = name ? name_cmp(q->name, q->len, name, len) : -1;
		if (c > 0)
			break;
		if (c == 0) {
			p->ipend++; /* the store has it too: store_one hands it out */
			break;
		}
		int rc = page_emit(p, q->name, q->len, q->ino, q->dtype);
		if (rc)
			return rc;
		p->ipend++;
	}
	return 0;
}

static int store_one(void *arg, const char *name, size_t len, uint64_t ino, uint8_t dtype)
{
	struct store_page *p = arg;
	struct shm *s = p->ns->shm;
	int rc = page_pend_before(p, name, len);
	if (rc)
		return rc;
	mc_off_t d = dcache_find(s, p->dir, name, len);
	if (d) {
		struct mc_dentry *e = dentry_at(s, d);
		if (!(e->flags & MC_D_POSITIVE))
			return 0; /* removed, not committed yet */
		ino = inode_at(s, e->inode)->ino;
		dtype = e->dtype;
	}
	return page_emit(p, name, len, ino, dtype);
}

/* Collect dir's dirty positive children after the cursor, in name order. */
static int page_pending(struct store_page *p, const char *after, size_t after_len)
{
	struct shm *s = p->ns->shm;
	struct mc_dirx *dx = dcache_dirx(s, p->dir, false);
	size_t cap = 0;
	for (mc_off_t d = dx ? dx->head : 0; d; d = dentry_at(s, d)->sib_next) {
		struct mc_dentry *e = dentry_at(s, d);
		if (!(e->flags & MC_D_POSITIVE) || !(e->flags & (MC_D_DIRTY0 | MC_D_DIRTY1)))
			continue;
		const char *nm = dcache_name(s, d);
		if (after && name_cmp(nm, e->namelen, after, after_len) <= 0)
			continue;
		if (p->npend == cap) {
			cap = cap ? cap * 2 : 64;
			struct pend *np = realloc(p->pend, cap * sizeof(*np));
			if (!np)
				return -ENOMEM;
			p->pend = np;
		}
		p->pend[p->npend++] = (struct pend){ nm, e->namelen, inode_at(s, e->inode)->ino,
		                                     e->dtype };
	}
	if (p->npend > 1)
		qsort(p->pend, p->npend, sizeof(*p->pend), pend_cmp);
	return 0;
}

/* One page of dir from the store, after the cursor (NULL: from the start). */
static int list_store(struct ns *ns, mc_off_t dir, const struct list_cursor *k, uint64_t cookie,
                      unsigned max, ns_dirent_fn fn, void *arg, uint64_t *next, bool *eof)
{
	struct store_page p = { .ns = ns, .dir = dir, .max = max, .fn = fn, .arg = arg };
	const char *after = k ? k->name : NULL;
	size_t after_len = k ? k->len : 0;
	int rc = page_pending(&p, after, after_len);
	if (rc == 0)
		rc = store_scan_dir_after(ns->store, inode_at(ns->shm, dir)->ino, after, after_len,
		                          store_one, &p);
	bool full = rc == 1;
	if (rc == 0)
		rc = page_pend_before(&p, NULL, 0);
	full = full || rc == 1;
	if (rc == 1)
		rc = 0;
	if (p.err)
		rc = p.err;
	free(p.pend);
	if (rc < 0)
		return rc;
	*eof = !full;
	if (p.n == 0) {
		*next = cookie; /* nothing more: the same cursor */
		return 0;
	}
	return cursor_new(ns, inode_at(ns->shm, dir)->ino, p.last, p.lastlen, next);
}

/* ---- from the cache ------------------------------------------------------ */

static int list_cache(struct ns *ns, mc_off_t dir, uint64_t cookie, unsigned max,
                      ns_dirent_fn fn, void *arg, uint64_t *next, bool *eof)
{
	struct shm *s = ns->shm;
	struct mc_dirx *dx = dcache_dirx(s, dir, false);
	uint64_t last = cookie;
	bool end = true;
	unsigned n = 0;
	for (mc_off_t d = dx ? dx->head : 0; d; d = dentry_at(s, d)->sib_next) {
		struct mc_dentry *e = dentry_at(s, d);
		if (e->cookie <= cookie || !(e->flags & MC_D_POSITIVE))
			continue;
		if (n == max) {
			end = false;
			break;
		}
		int rc = fn(arg, dcache_name(s, d), e->namelen, inode_at(s, e->inode)->ino, e->dtype);
		if (rc < 0)
			return rc;
		last = e->cookie;
		n++;
	}
	*next = last;
	*eof = end;
	return 0;
}

/* Would loading dir complete fit, after reclaim, in half of what the low
 * watermark leaves beside the fixed metadata? */
static bool dir_fits(struct ns *ns, mc_off_t dir)
{
	struct shm *s = ns->shm;
	struct mc_dirx *dx = dcache_dirx(s, dir, false);
	uint64_t have = dx ? dx->ncached - dx->nneg : 0;
	uint64_t n = inode_at(s, dir)->u.dir.nentries;
	uint64_t missing = n > have ? n - have : 0;
	uint64_t room = ns->shr.low > s->meta_bytes ? ns->shr.low - s->meta_bytes : 0;
	return missing * LIST_ENTRY_COST <= room / 2;
}

int ns_readdir(struct ns *ns, const struct cred *c, uint64_t ino, uint64_t cookie, unsigned max,
               ns_dirent_fn fn, void *arg, uint64_t *next, bool *eof)
{
	(void)c;
	struct shm *s = ns->shm;
	int rc = 0;
	pthread_mutex_lock(&ns->lock);
	mc_off_t dir = inode_find(s, ino);
	if (!dir) {
		rc = -EBADF;
		goto out;
	}
	if (!S_ISDIR(inode_at(s, dir)->mode)) {
		rc = -ENOTDIR;
		goto out;
	}
	if (inode_at(s, dir)->nlink == 0) {
		*next = cookie; /* a removed directory lists as empty */
		*eof = true;
		goto out;
	}
	if (cookie & LIST_STORE_BIT) {
		const struct list_cursor *k;
		rc = cursor_get(ns, ino, cookie, &k);
		if (rc == 0)
			rc = list_store(ns, dir, k, cookie, max, fn, arg, next, eof);
		goto out;
	}
	if (!dcache_complete(s, dir) && cookie == 0 && !dir_fits(ns, dir)) {
		rc = list_store(ns, dir, NULL, 0, max, fn, arg, next, eof);
		goto out;
	}
	struct reclaim r;
	reclaim_begin(ns, &r);
	do
		rc = ns_load_dir(ns, dir);
	while (do_reclaim_retry(ns, rc, &r));
	if (rc == -ENOSPC)
		rc = list_store(ns, dir, NULL, 0, max, fn, arg, next, eof);
	else if (rc == 0)
		rc = list_cache(ns, dir, cookie, max, fn, arg, next, eof);
out:
	pthread_mutex_unlock(&ns->lock);
	return rc;
}
