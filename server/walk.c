/* walk.c - path resolution over the dentry cache (the kernel's namei):
 * the skeleton's rules (components, ".", "..", symlinks, ELOOP after 40,
 * search permission on every directory crossed) are proto/mc_walk.h's,
 * shared with the client's lock-free walk; this file gives it the server's
 * state and loads misses from the store.
 *
 * ".." needs no parent pointer: the walk keeps the chain of directories from
 * the root to where it stands (nd->stack), and a directory has exactly one
 * parent, so the chain is the real ancestry. Called with the lock held.
 *
 * THE PARENT MEMO (ns->memo): within one run of operations under one lock
 * (ns_hold_begin), a batch of creates names one directory again and again;
 * walk_parent remembers where the last path prefix led and starts the next
 * walk under the same prefix there, as the client's prefix cache does
 * (client/shmprefix.c).
 *  1. The memo is the exact prefix (the path up to its last slash) and, for
 *     every directory it resolved to from the root down, its inode slot
 *     with that inode's seq and the dentry naming it with that dentry's
 *     seq. It is made only by a walk from the root that followed no
 *     symlink and took no "..", with credentials cred, in a hold.
 *  2. It is used only in the same hold (ns->hold_epoch: a new hold, a
 *     yield to the committer or a retry after reclaim or a miss read
 *     starts another), by the same credentials, for a path that does not
 *     end in a slash, and only if every seq is still what it says. Then
 *     nothing the walk read has changed: each dentry still joins the same
 *     parent to the same directory, each directory has the same mode and
 *     owner (so the same search permission). A rename, an rmdir, a chmod
 *     or chown, an eviction: each bumps one of those seqs (a freed slot's
 *     seq keeps counting across reuse), and the walk takes the long way.
 *     Each dentry must also still join the two slots it joined: a page
 *     freed whole may be carved again for blobs, which have no seq (shm.c
 *     note 2), so a seq alone could match by chance there.
 *  3. A create or a removal changes its directory inside the inode's seq
 *     (entries, times, links: dir_entries) but nothing a walk reads;
 *     walk_memo_carry carries the memo over such a change when the memo was
 *     current just before it, so the next create or removal in the same
 *     directory still hits.
 *  4. The same memo tells ns_hold_prefetch, before an operation of a batch
 *     runs, which directory the next one is likely to name: the lookup of
 *     that name reads one hash bucket picked by (directory inode number,
 *     name), a random line of a large table and in a big cache a miss, so
 *     its load starts an operation early (as does the bucket of the next
 *     inode number a create will take, in create_in). Only the epoch and
 *     the key are checked, not the seqs: a stale memo costs a useless load,
 *     never a wrong answer, since nothing but the CPU cache is touched.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mc_walk.h"
#include "ns_impl.h"

bool in_group(const struct cred *c, uint32_t gid)
{
	return mc_in_group(c->gid, c->groups, c->ngroups, gid);
}

int permission(const struct cred *c, const struct mc_inode *i, int mask)
{
	return mc_permission(c->uid, c->gid, c->groups, c->ngroups, i->mode, i->uid, i->gid, mask);
}

bool sticky_denies(const struct cred *c, const struct mc_inode *dir, const struct mc_inode *victim)
{
	if (!(dir->mode & S_ISVTX) || c->uid == 0)
		return false;
	return c->uid != victim->uid && c->uid != dir->uid;
}

void nd_init(struct nd *nd, struct ns *ns, const struct cred *c)
{
	nd->ns = ns;
	nd->cred = c;
	nd->stack = nd->inline_stack;
	nd->depth = 0;
	nd->cap = ND_INLINE;
	nd->nlinks = 0;
	nd->last = NULL;
	nd->lastlen = 0;
	nd->last_type = MC_LAST_NORM;
	nd->slash = false;
}

void nd_free(struct nd *nd)
{
	if (nd->stack != nd->inline_stack)
		free(nd->stack);
	nd->stack = nd->inline_stack;
	nd->cap = ND_INLINE;
	nd->depth = 0;
}

int nd_push(struct nd *nd, mc_off_t dir)
{
	if (nd->depth == nd->cap) {
		unsigned cap = nd->cap * 2;
		mc_off_t *s = malloc(cap * sizeof(*s));
		if (!s)
			return -ENOMEM;
		memcpy(s, nd->stack, nd->depth * sizeof(*s));
		if (nd->stack != nd->inline_stack)
			free(nd->stack);
		nd->stack = s;
		nd->cap = cap;
	}
	nd->stack[nd->depth++] = dir;
	return 0;
}

int ns_cache_inode_rec(struct ns *ns, const struct mc_inode_rec *rec, const char *target,
                       size_t tlen, mc_off_t *out)
{
	struct mc_inode_rec r = *rec;
	int rc = inode_unlink_adjust(ns, &r);
	if (rc < 0) {
		ns->drop_wait = rc == -EAGAIN;
		return rc;
	}
	mc_off_t off = inode_add(ns->shm, &r, target, tlen);
	if (!off)
		return -ENOSPC;
	if (rc > 0)
		inode_dirty(ns, off); /* newer than the store until the commit */
	ns->shr.st.reloads++;
	/* An empty directory answers misses itself (a new namespace's
	 * root, above all); without room for that, it just does not. */
	if (S_ISDIR(rec->mode) && rec->size == 0)
		dcache_set_complete(ns->shm, off);
	*out = off;
	return 0;
}

int ns_load_inode(struct ns *ns, uint64_t ino, mc_off_t *out)
{
	mc_off_t off = inode_find(ns->shm, ino);
	if (off) {
		*out = off;
		return 0;
	}
	struct mc_inode_rec rec;
	char target[MC_SYMLINK_MAX];
	size_t tlen = 0;
	int rc = store_get_inode(ns->store, ino, &rec, target, &tlen);
	if (rc == -ENOENT)
		return -EIO; /* a dentry names an inode the store does not have */
	if (rc < 0)
		return rc;
	return ns_cache_inode_rec(ns, &rec, target, tlen, out);
}

int ns_lookup(struct ns *ns, mc_off_t dir, const char *name, size_t len, mc_off_t *d,
              mc_off_t *ino)
{
	if (len > MC_NAME_MAX)
		return -ENAMETOOLONG;
	struct shm *s = ns->shm;
	mc_off_t de = dcache_find(s, dir, name, len);
	if (de) {
		*d = de;
		*ino = dentry_at(s, de)->inode;
		return 0;
	}
	if (dcache_complete(s, dir)) {
		*d = 0;
		*ino = 0;
		return 0;
	}
	uint64_t cino, pino = inode_at(s, dir)->ino;
	uint8_t dtype;
	/* Read-ahead (warm.c), but for a removal: its names are going, and
	 * its own read reads ahead the next ones (ns_miss.c note 5). */
	if (ns->miss_fn && !ns_miss_removing())
		ns->miss_fn(ns->miss_arg, pino);
	/* The store: read without the lock when the caller can start over
	 * (ns_miss.c), else here. */
	int rc = ns_miss_defer(ns, pino, name, len);
	if (rc < 0)
		return rc;
	struct ns_miss_ans a;
	ns_miss_read(ns, pino, name, len, &a);
	rc = a.err;
	cino = a.ino;
	dtype = a.dtype;
	if (rc == -ENOENT) {
		*ino = 0;
		*d = 0;
		if (do_neg_room(ns, dir))
			*d = dcache_add(s, dir, name, len, 0, 0);
		return 0;
	}
	if (rc < 0)
		return rc;
	mc_off_t ioff = inode_find(s, cino); /* cached: newer than any read */
	if (!ioff && !a.have_rec)
		return -EIO; /* a dentry names an inode the store does not have */
	if (!ioff)
		rc = ns_cache_inode_rec(ns, &a.rec, a.target, a.tlen, &ioff);
	if (rc < 0)
		return rc;
	de = dcache_add(s, dir, name, len, ioff, dtype);
	if (!de)
		return -ENOSPC;
	*d = de;
	*ino = ioff;
	return 0;
}

struct load_ctx {
	struct ns *ns;
	mc_off_t dir;
};

static int load_one(void *arg, const char *name, size_t len, uint64_t ino, uint8_t dtype)
{
	struct load_ctx *lc = arg;
	struct shm *s = lc->ns->shm;
	if (dcache_find(s, lc->dir, name, len))
		return 0; /* the cache is newer than any snapshot */
	mc_off_t ioff;
	int rc = ns_load_inode(lc->ns, ino, &ioff);
	if (rc < 0)
		return rc;
	return dcache_add(s, lc->dir, name, len, ioff, dtype) ? 0 : -ENOSPC;
}

int ns_load_dir(struct ns *ns, mc_off_t dir)
{
	if (dcache_complete(ns->shm, dir))
		return 0;
	struct load_ctx lc = { ns, dir };
	int rc = store_scan_dir(ns->store, inode_at(ns->shm, dir)->ino, load_one, &lc);
	if (rc < 0)
		return rc;
	/* Names removed but not yet committed stay as dirty negative dentries
	 * (load_one skipped them); ns_publish drops them once committed, since
	 * a complete directory answers misses itself. */
	if (!dcache_set_complete(ns->shm, dir))
		return -ENOSPC;
	return 0;
}

/* The server's side of the walk skeleton (mc_walk.h): the stack is
 * nd->stack, the current node an inode slot, misses are loaded from the
 * store by ns_lookup. */
struct swalk {
	struct mc_walk w;
	struct nd *nd;
	mc_off_t cur;
	mc_off_t cur_d;                  /* the dentry that named cur */
	bool plain;                      /* no symlink, no "..", not too deep: memo note 1 */
	mc_off_t dent[WALK_MEMO_DEPTH];  /* the dentry naming each stack entry */
};

static struct swalk *sw_of(struct mc_walk *w)
{
	return (struct swalk *)w;
}

static int sw_root(struct mc_walk *w)
{
	struct nd *nd = sw_of(w)->nd;
	nd->depth = 0;
	sw_of(w)->dent[0] = 0;
	return nd_push(nd, nd->ns->shm->hdr->root);
}

static int sw_start(struct mc_walk *w)
{
	return sw_of(w)->nd->depth ? 0 : -EINVAL; /* no working directory to be relative to */
}

static int sw_may_exec(struct mc_walk *w)
{
	struct nd *nd = sw_of(w)->nd;
	return permission(nd->cred, inode_at(nd->ns->shm, nd_top(nd)), MAY_EXEC);
}

static int sw_lookup(struct mc_walk *w, const struct mc_comp *c, uint32_t *mode)
{
	struct swalk *sw = sw_of(w);
	mc_off_t d, ino;
	int rc = ns_lookup(sw->nd->ns, nd_top(sw->nd), c->name, c->len, &d, &ino);
	if (rc < 0)
		return rc;
	if (!ino)
		return -ENOENT;
	sw->cur = ino;
	sw->cur_d = d;
	*mode = inode_at(sw->nd->ns->shm, ino)->mode;
	return 0;
}

static int sw_push(struct mc_walk *w)
{
	struct swalk *sw = sw_of(w);
	if (sw->nd->depth < WALK_MEMO_DEPTH)
		sw->dent[sw->nd->depth] = sw->cur_d;
	else
		sw->plain = false;
	return nd_push(sw->nd, sw->cur);
}

static void sw_pop(struct mc_walk *w)
{
	struct nd *nd = sw_of(w)->nd;
	sw_of(w)->plain = false;
	if (nd->depth > 1)
		nd->depth--;
}

static int sw_target(struct mc_walk *w, unsigned level, const char **t, size_t *len)
{
	(void)level;
	sw_of(w)->plain = false;
	*t = inode_target(sw_of(w)->nd->ns->shm, sw_of(w)->cur, len);
	return 0;
}

static int sw_here(struct mc_walk *w, uint32_t *mode)
{
	struct swalk *sw = sw_of(w);
	sw->cur = nd_top(sw->nd);
	*mode = inode_at(sw->nd->ns->shm, sw->cur)->mode;
	return 0;
}

static const struct mc_walk_ops sw_ops = {
	.root = sw_root, .start = sw_start, .may_exec = sw_may_exec, .lookup = sw_lookup,
	.push = sw_push, .pop = sw_pop, .target = sw_target, .here = sw_here,
};

static void sw_init(struct swalk *sw, struct nd *nd)
{
	mc_walk_init(&sw->w, &sw_ops, 0);
	sw->w.nlinks = nd->nlinks;
	sw->nd = nd;
	sw->cur = 0;
	sw->cur_d = 0;
	sw->plain = true;
}

/* The length of path's memo key (up to its last slash), or 0 when the path
 * cannot use the memo: relative, ending in a slash, or too long. */
static size_t memo_key_len(const char *path, size_t len)
{
	if (len < 2 || path[0] != '/' || path[len - 1] == '/')
		return 0;
	const char *slash = memrchr(path, '/', len);
	size_t klen = (size_t)(slash - path) + 1;
	return klen <= WALK_MEMO_KEY ? klen : 0;
}

static uint32_t seq_of(const _Atomic uint32_t *seq)
{
	return atomic_load_explicit(seq, memory_order_relaxed);
}

/* The memo was made in this hold for path's prefix of klen bytes (note 2). */
static bool memo_matches(const struct ns *ns, const char *path, size_t klen)
{
	const struct walk_memo *m = &ns->memo;
	return m->epoch == ns->hold_epoch && m->klen == klen && memcmp(m->key, path, klen) == 0;
}

/* Memo note 2: stand where the memo says, and leave the last component. */
static bool memo_use(struct nd *nd, const char *path, size_t len, size_t klen)
{
	struct ns *ns = nd->ns;
	struct walk_memo *m = &ns->memo;
	struct shm *s = ns->shm;
	if (!memo_matches(ns, path, klen) || m->cred != nd->cred || m->uid != nd->cred->uid ||
	    m->gid != nd->cred->gid || m->dir[0] != s->hdr->root)
		return false;
	for (unsigned k = 0; k < m->depth; k++) {
		if (seq_of(&inode_at(s, m->dir[k])->seq) != m->iseq[k])
			return false;
		if (k == 0)
			continue;
		const struct mc_dentry *e = dentry_at(s, m->dent[k]);
		if (seq_of(&e->seq) != m->dseq[k] || e->parent != m->dir[k - 1] ||
		    e->inode != m->dir[k])
			return false;
	}
	_Static_assert(WALK_MEMO_DEPTH <= ND_INLINE, "a memo's stack fits nd's inline one");
	memcpy(nd->stack, m->dir, m->depth * sizeof(m->dir[0]));
	nd->depth = m->depth;
	nd->last = path + klen;
	nd->lastlen = len - klen;
	nd->slash = false;
	nd->last_type = mc_comp_type(nd->last, nd->lastlen);
	ns->memo_hits++;
	return true;
}

/* Memo note 1: remember where the walk of path's prefix led. */
static void memo_make(struct nd *nd, const struct swalk *sw, const char *path, size_t klen)
{
	struct ns *ns = nd->ns;
	struct walk_memo *m = &ns->memo;
	struct shm *s = ns->shm;
	if (!sw->plain || nd->depth > WALK_MEMO_DEPTH) {
		m->epoch = 0;
		return;
	}
	m->epoch = ns->hold_epoch;
	m->cred = nd->cred;
	m->uid = nd->cred->uid;
	m->gid = nd->cred->gid;
	m->depth = nd->depth;
	for (unsigned k = 0; k < nd->depth; k++) {
		m->dir[k] = nd->stack[k];
		m->iseq[k] = seq_of(&inode_at(s, nd->stack[k])->seq);
		m->dent[k] = k ? sw->dent[k] : 0;
		m->dseq[k] = k ? seq_of(&dentry_at(s, sw->dent[k])->seq) : 0;
	}
	m->klen = klen;
	memcpy(m->key, path, klen);
}

const void *ns_hold_prefetch(struct ns *ns, const char *path, size_t len)
{
	const struct walk_memo *m = &ns->memo;
	size_t klen = memo_key_len(path, len);
	if (ns_held != ns || !klen || m->depth == 0 || !memo_matches(ns, path, klen))
		return NULL;
	uint64_t pino = inode_at(ns->shm, m->dir[m->depth - 1])->ino;
	return dcache_prefetch(ns->shm, pino, path + klen, len - klen);
}

void walk_memo_forget(struct ns *ns)
{
	ns->hold_epoch++;
}

void walk_memo_carry(struct ns *ns, mc_off_t dir, uint32_t seq_before)
{
	struct walk_memo *m = &ns->memo;
	if (m->epoch == ns->hold_epoch && m->depth > 0 && m->dir[m->depth - 1] == dir &&
	    m->iseq[m->depth - 1] == seq_before)
		m->iseq[m->depth - 1] = seq_of(&inode_at(ns->shm, dir)->seq);
}

int walk_parent(struct nd *nd, const char *path, size_t len)
{
	/* The memo serves a fresh walk from the root only, in a hold. */
	size_t klen = 0;
	if (nd->depth == 0 && nd->nlinks == 0 && ns_held == nd->ns)
		klen = memo_key_len(path, len);
	if (klen && memo_use(nd, path, len, klen))
		return 0;
	struct swalk sw;
	sw_init(&sw, nd);
	int rc = mc_walk_parent(&sw.w, &sw_ops, path, len, 0);
	nd->nlinks = sw.w.nlinks;
	if (rc < 0)
		return rc;
	if (klen)
		memo_make(nd, &sw, path, klen);
	nd->last = sw.w.last.name;
	nd->lastlen = sw.w.last.len;
	nd->slash = sw.w.last.slash;
	nd->last_type = sw.w.last_type;
	return 0;
}

int walk_last(struct nd *nd, bool follow, mc_off_t *res)
{
	struct swalk sw;
	sw_init(&sw, nd);
	sw.w.last.name = nd->last;
	sw.w.last.len = nd->lastlen;
	sw.w.last.slash = nd->slash;
	sw.w.last_type = nd->last_type;
	uint32_t mode;
	int rc = mc_walk_last(&sw.w, &sw_ops, follow, 0, &mode);
	nd->nlinks = sw.w.nlinks;
	if (rc < 0)
		return rc;
	*res = sw.cur;
	return 0;
}

int walk_path(struct nd *nd, const char *path, size_t len, bool follow, mc_off_t *res)
{
	int rc = walk_parent(nd, path, len);
	if (rc < 0)
		return rc;
	return walk_last(nd, follow, res);
}
