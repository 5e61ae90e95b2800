/* shmprefix.c - the view's cache of resolved directory prefixes.
 *
 * A walk of "/a/b/name" first resolves the prefix "/a/b/" to directory b;
 * this cache remembers that resolution, so the next walk under the same
 * prefix starts at b and looks up "name" alone: a deep path costs like a
 * shallow one.
 *
 * NOTES
 *  1. An entry is the exact prefix string (up to its last slash, so "." and
 *     repeated slashes are part of the key) and, for every directory it
 *     resolved to from the root down, the dentry that named it with that
 *     dentry's seq, its inode slot with that inode's seq, and its inode
 *     number. It is only made from a walk that took no symlink and no ".."
 *     (shmwalk.c) and crossed every directory with search permission.
 *  2. A hit is used only if every one of those seqs is still what the entry
 *     says, and the root slot is still the root. Then nothing the
 *     resolution read has changed: each dentry still joins the same parent
 *     slot and name to the same inode slot (mc_shm.h note 5: (parent, name)
 *     names one dentry), is LIVE and positive; each inode still has the
 *     same number, mode and owner, so the same search permission. A rename,
 *     an rmdir, a chmod or chown of a directory on the way, an eviction:
 *     each bumps one of those seqs, and the walk takes the long way. No
 *     global seq is needed for that; the walk's rename seq check still
 *     frames the whole walk (shmwalk.c note 4).
 *  3. Entries belong to one view and are shared by its threads: a writer
 *     takes an entry by moving its seq from even to odd (compare and swap;
 *     a writer that loses does not cache), a reader copies the entry between
 *     two reads of its seq. Every field is accessed with relaxed atomics.
 *     Page types do change (mc_shm.h note 2: a page whose slots are all
 *     free may serve another type, and an entry can outlive that), so a
 *     hit checks the page type of every stored offset again before it
 *     reads the seq there: a stale offset into a page that now holds
 *     blobs, extents or another slot type is refused, not compared as a
 *     seq; a page carved again for the same type starts its seqs above
 *     the old ones (server/shm.c note 2), so no stored seq matches there
 *     either. The type is all of view_at that is checked again
 *     (view_type_still): every offset an entry holds was accepted by view_at
 *     in this view when the walk that stored it read it (or is 0, from
 *     prefix_clear, whose page is the header's), and what else view_at
 *     checks (inside the segment, the slot inside its page) depends on the
 *     offset and the segment's size alone, neither of which changes. The
 *     seqs may thus be read before the entry's seq says the copy is whole:
 *     each field is one relaxed load, so an offset from a torn copy is
 *     still one some walk stored; a torn copy is then refused.
 *  4. Entries are made with the view's credentials and used only while
 *     they are the same uid and gid (the groups are fixed at set-up).
 *  5. A thread acting for other credentials (mc_cred_set) uses and makes
 *     entries only when it acts for root, whose search permission never
 *     fails, keyed by that uid and gid: another user's groups are not
 *     fixed, so its walks take the long way.
 */
#include "shmview_impl.h"

#define LDR(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define STR(x, val) __atomic_store_n(&(x), (val), __ATOMIC_RELAXED)

/* Word k of the key path[0..klen), zero-padded past klen. */
static inline uint64_t key_word(const char *path, size_t klen, size_t k)
{
	uint64_t w = 0;
	if (8 * k + 8 <= klen) {
		memcpy(&w, path + 8 * k, 8);
	} else if (klen >= 8) {
		/* The tail: the key's last 8 bytes, shifted down. */
		memcpy(&w, path + klen - 8, 8);
		w >>= 64 - 8 * (klen % 8);
	} else {
		w = mc_load_part(path, klen);
	}
	return w;
}

static inline uint64_t prefix_hash(const char *path, size_t klen)
{
	/* The length, the first and the last 8 bytes: prefixes that differ
	 * elsewhere only share a slot (the key compare tells them apart). */
	uint64_t h = mc_hash_mix(0, key_word(path, klen, 0));
	if (klen > 8) {
		uint64_t last;
		memcpy(&last, path + klen - 8, 8);
		h = mc_hash_mix(h, last);
	}
	return mc_hash_fin(h, 0, klen);
}

static inline struct prefix_entry *entry_of(struct view *v, uint64_t kh)
{
	return &v->prefixes[kh & (PREFIX_SLOTS - 1)];
}

/* The credentials an entry is keyed by (note 4), as one word. */
static inline uint64_t cred_key(const struct view_cred *c)
{
	return (uint64_t)c->gid << 32 | c->uid;
}

/* Does the slot at off, an offset view_at accepted once, still hold
 * `seq`? Its page's type first (note 3), then the seq itself. */
static inline bool slot_holds(const uint8_t *ptypes, const char *base, mc_off_t off,
                              unsigned type, uint32_t seq)
{
	if (!view_type_still(ptypes, off, type))
		return false;
	return seq_read((const _Atomic uint32_t *)mc_shm_at(base, off)) == seq;
}

int prefix_find(struct view *v, const char *path, size_t klen, uint64_t *khp,
                mc_off_t *stack, uint64_t *stack_ino, struct isnap *top)
{
	uint64_t kh = *khp = prefix_hash(path, klen);
	const struct view_cred *c = view_cred_acting(&v->cred);
	if (c != &v->cred && c->uid != 0)
		return 0;   /* note 5 */
	const struct prefix_entry *e = entry_of(v, kh);
	uint32_t s0 = seq_read(&e->seq);
	/* No hash to compare: the length and the key tell entries apart. */
	if ((s0 & 1) || LDR(e->klen) != klen || LDR(e->cred) != cred_key(c))
		return 0;
	size_t k = 0;
	for (; 8 * k + 8 <= klen; k++) {
		uint64_t w;
		memcpy(&w, path + 8 * k, 8);
		if (LDR(e->key[k]) != w)
			return 0;
	}
	if (8 * k < klen && LDR(e->key[k]) != key_word(path, klen, k))
		return 0;
	unsigned n = LDR(e->hit.n);
	mc_off_t io = LDR(e->hit.lv[0].inode);
	uint32_t is = LDR(e->hit.lv[0].iseq);
	if (n == 0 || n > PREFIX_DEPTH || io != LD(v->hdr->root))
		return 0;
	/* Every offset's page type is checked again before its seq is read:
	 * the entry may be older than the page's present type (note 3). The
	 * view's fields are taken once: each seq read is an acquire. */
	const uint8_t *pt = v->ptypes;
	const char *base = v->base;
	if (!slot_holds(pt, base, io, MC_PT_INODE, is))
		return 0;
	stack[0] = io;
	stack_ino[0] = LDR(e->hit.lv[0].ino);
	for (k = 1; k < n; k++) {
		const struct prefix_level *l = &e->hit.lv[k];
		if (!slot_holds(pt, base, LDR(l->dentry), MC_PT_DENTRY, LDR(l->dseq)))
			return 0;
		io = LDR(l->inode);
		is = LDR(l->iseq);
		if (!slot_holds(pt, base, io, MC_PT_INODE, is))
			return 0;
		stack[k] = io;
		stack_ino[k] = LDR(l->ino);
	}
	/* The last directory's walk fields, as inode_snap would give them
	 * under the seq just compared. */
	top->i = mc_shm_at(base, io);
	top->off = io;
	top->seq = is;
	top->ino = stack_ino[n - 1];
	top->mode = LDR(e->hit.mode);
	top->uid = LDR(e->hit.uid);
	top->gid = LDR(e->hit.gid);
	top->u.size = LDR(e->hit.u);
	if (!seq_same(&e->seq, s0))
		return 0;
	return (int)n;
}

void prefix_add(struct view *v, const char *path, size_t klen, uint64_t kh,
                const struct prefix_hit *h)
{
	const struct view_cred *c = view_cred_acting(&v->cred);
	if (klen > PREFIX_KEY_MAX || h->n == 0 || h->n > PREFIX_DEPTH ||
	    (c != &v->cred && c->uid != 0))
		return;   /* note 5 */
	struct prefix_entry *e = entry_of(v, kh);
	uint32_t s0 = atomic_load_explicit(&e->seq, memory_order_relaxed);
	if ((s0 & 1) || !atomic_compare_exchange_strong_explicit(&e->seq, &s0, s0 + 1,
	                                                         memory_order_acquire,
	                                                         memory_order_relaxed))
		return; /* another thread writes it */
	atomic_thread_fence(memory_order_release);
	STR(e->klen, (uint32_t)klen);
	STR(e->cred, cred_key(c));
	for (size_t k = 0; 8 * k < klen; k++)
		STR(e->key[k], key_word(path, klen, k));
	STR(e->hit.n, h->n);
	for (unsigned k = 0; k < h->n; k++) {
		STR(e->hit.lv[k].dentry, h->lv[k].dentry);
		STR(e->hit.lv[k].dseq, h->lv[k].dseq);
		STR(e->hit.lv[k].inode, h->lv[k].inode);
		STR(e->hit.lv[k].iseq, h->lv[k].iseq);
		STR(e->hit.lv[k].ino, h->lv[k].ino);
	}
	STR(e->hit.mode, h->mode);
	STR(e->hit.uid, h->uid);
	STR(e->hit.gid, h->gid);
	STR(e->hit.u, h->u);
	atomic_store_explicit(&e->seq, s0 + 2, memory_order_release);
}

void prefix_clear(struct view *v)
{
	memset(v->prefixes, 0, sizeof(v->prefixes));
}
