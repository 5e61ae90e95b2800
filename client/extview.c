/* extview.c - extent maps and extent-state trees read from shared memory
 * (view_extent_map, view_range_test, view_range_find in shmview.h): find
 * the tree through the ebucket chain of its inode number, descend the treap
 * to the first record, walk the list, and validate it all with the
 * bucket's and the tree head's seq (proto/mc_shm.h, notes 3 and 11). Every
 * reference is checked before it is followed; every walk is bounded; a tree
 * that keeps changing, or that is not there, goes to the server. */
#include "shmview.h"

#include <errno.h>

#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

#define AGAIN 2
#define EXT_DEPTH_MAX 256u       /* treap levels descended (expected ~2 log2 n) */

static uint32_t seq_read(const _Atomic uint32_t *s)
{
	return atomic_load_explicit(s, memory_order_acquire);
}

static bool seq_same(const _Atomic uint32_t *s, uint32_t s0)
{
	atomic_thread_fence(memory_order_acquire);
	return atomic_load_explicit(s, memory_order_relaxed) == s0;
}

/* The record ref names, of a map (MC_EREF_MAP) or a state tree as kind
 * says, or NULL. */
static const struct mc_estate *slot_at(const struct view *v, mc_eref ref, mc_eref kind)
{
	uint64_t b = mc_eref_byte(ref);
	if (b == 0 || (ref & MC_EREF_MAP) != kind || b + MC_EM_SLOT > v->size ||
	    v->ptypes[b >> MC_PAGE_SHIFT] != MC_PT_EXTENT)
		return NULL;
	return (const struct mc_estate *)(v->base + b);
}

/* The head of the tree whose first chunk is at off, or NULL. */
static const struct mc_etree *head_at(const struct view *v, mc_off_t off)
{
	if (((uint64_t)off << MC_OFF_SHIFT) % MC_ECHUNK_SIZE != 0 ||
	    !mc_shm_valid(v->base, v->size, v->ptypes, off, sizeof(struct mc_etree), MC_PT_EXTENT))
		return NULL;
	return (const struct mc_etree *)(v->base + ((size_t)off << MC_OFF_SHIFT));
}

static const struct mc_echunk_tail *tail_at(const struct view *v, mc_off_t chunk)
{
	mc_off_t off = chunk + (MC_ECHUNK_TAIL_OFF >> MC_OFF_SHIFT);
	if (!mc_shm_valid(v->base, v->size, v->ptypes, off, sizeof(struct mc_echunk_tail),
	                  MC_PT_EXTENT))
		return NULL;
	return (const struct mc_echunk_tail *)(v->base + ((size_t)off << MC_OFF_SHIFT));
}

/* The head of ino's tree of kind (MC_EREF_MAP: its map; 0: its state
 * tree), its seq in *ts: 0, VIEW_MISS (not linked), AGAIN. */
static int find_tree(const struct view *v, uint64_t ino, uint16_t kind,
                     const struct mc_etree **out, uint32_t *ts)
{
	const struct mc_bucket *b = &v->ebuckets[mc_hash_ino(v->seed, ino) & v->emask];
	uint32_t bs = seq_read(&b->seq);
	if (bs & 1)
		return AGAIN;
	mc_off_t t = LD(b->head);
	for (unsigned n = 0; t; n++) {
		if (n >= v->lim.chain)
			return VIEW_MISS;
		const struct mc_etree *h = head_at(v, t);
		const struct mc_echunk_tail *tl = tail_at(v, t);
		if (!h || !tl)
			return AGAIN;
		uint32_t s = seq_read(&h->seq);
		if (s & 1)
			return AGAIN;
		if (LD(h->ino) == ino && LD(h->kind) == kind) {
			if (!seq_same(&b->seq, bs))
				return AGAIN;
			*out = h;
			*ts = s;
			return 0;
		}
		t = LD(tl->hnext);
	}
	return seq_same(&b->seq, bs) ? VIEW_MISS : AGAIN;
}

static int read_map(const struct view *v, const struct mc_etree *h, uint32_t ts, uint64_t off,
                    uint64_t end, struct view_extent *out, size_t max, size_t *np)
{
	/* The record with the greatest start <= off. */
	mc_eref best = 0, m = LD(h->root);
	for (unsigned d = 0; m; d++) {
		const struct mc_estate *r = slot_at(v, m, MC_EREF_MAP);
		if (!r || d >= EXT_DEPTH_MAX)
			return AGAIN;
		if (LD(r->start) <= off) {
			best = m;
			m = LD(r->right);
		} else {
			m = LD(r->left);
		}
	}
	if (!best)
		best = LD(h->first);
	uint32_t count = LD(h->count);
	size_t n = 0;
	for (uint32_t k = 0; best; k++) {
		const struct mc_estate *r = slot_at(v, best, MC_EREF_MAP);
		if (!r || k > count)
			return AGAIN;
		uint64_t s = LD(r->start), e = LD(r->end);
		if (s > end)
			break;
		if (e >= off) {
			if (n < max)
				out[n] = (struct view_extent){ s, e - s + 1,
				                               LD(((const struct mc_emap *)r)->phys),
				                               LD(r->bits) };
			n++;
		}
		best = LD(r->next);
	}
	if (!seq_same(&h->seq, ts))
		return AGAIN;
	*np = n;
	return 0;
}

/* One lookup in ino's extent tree of the given kind (find_tree()), read by
 * fn (0, -errno, VIEW_MISS or AGAIN): AGAIN retries up to lim.retries times,
 * then VIEW_MISS; hits, retries and fallbacks counted in the view's slot.
 * Inline so fn is a direct call. */
static inline int tree_read(struct view *v, uint64_t ino, uint16_t kind,
                            int (*fn)(const struct view *, const struct mc_etree *, uint32_t,
                                      void *),
                            void *arg)
{
	if (!v->ebuckets)
		return VIEW_MISS;
	for (unsigned tries = 0; tries <= v->lim.retries; tries++) {
		if (atomic_load_explicit(&v->hdr->closed, memory_order_acquire))
			return -ENOTCONN;
		const struct mc_etree *h;
		uint32_t ts;
		int rc = find_tree(v, ino, kind, &h, &ts);
		if (rc == 0)
			rc = fn(v, h, ts, arg);
		if (rc != AGAIN) {
			if (v->slot && rc == 0)
				atomic_fetch_add_explicit(&v->slot->hits, 1, memory_order_relaxed);
			return rc;
		}
		if (v->slot)
			atomic_fetch_add_explicit(&v->slot->retries, 1, memory_order_relaxed);
	}
	if (v->slot)
		atomic_fetch_add_explicit(&v->slot->fallbacks, 1, memory_order_relaxed);
	return VIEW_MISS;
}

/* read_map()'s arguments, for tree_read(). */
struct map_args {
	uint64_t off, end;
	struct view_extent *out;
	size_t max;
	size_t *n;
};

static int map_read(const struct view *v, const struct mc_etree *h, uint32_t ts, void *arg)
{
	struct map_args *a = arg;
	return read_map(v, h, ts, a->off, a->end, a->out, a->max, a->n);
}

int view_extent_map(struct view *v, uint64_t ino, uint64_t off, uint64_t len,
                    struct view_extent *out, size_t max, size_t *n)
{
	uint64_t end = len == 0 || off + (len - 1) < off ? UINT64_MAX : off + (len - 1);
	struct map_args a = { off, end, out, max, n };
	return tree_read(v, ino, MC_EREF_MAP, map_read, &a);
}

/* ---- extent-state trees -------------------------------------------------- */

/* The first record of state tree h with end >= pos into *out (0: none):
 * 0 or AGAIN. */
static int state_first_from(const struct view *v, const struct mc_etree *h, uint64_t pos,
                            mc_eref *out)
{
	mc_eref best = 0, m = LD(h->root);
	for (unsigned d = 0; m; d++) {
		const struct mc_estate *r = slot_at(v, m, 0);
		if (!r || d >= EXT_DEPTH_MAX)
			return AGAIN;
		if (LD(r->start) <= pos) {
			best = m;
			m = LD(r->right);
		} else {
			m = LD(r->left);
		}
	}
	if (!best) {
		*out = LD(h->first);
		return 0;
	}
	const struct mc_estate *r = slot_at(v, best, 0);
	if (!r)
		return AGAIN;
	*out = LD(r->end) >= pos ? best : LD(r->next);
	return 0;
}

/* What estate_test answers (server/extent_state.h), into *res. */
static int read_test(const struct view *v, const struct mc_etree *h, uint32_t ts,
                     const struct view_range *q, int *res)
{
	mc_eref n;
	if (state_first_from(v, h, q->start, &n) != 0)
		return AGAIN;
	uint32_t count = LD(h->count);
	uint64_t pos = q->start;
	int ans = 0;
	for (uint32_t k = 0; n; k++) {
		const struct mc_estate *r = slot_at(v, n, 0);
		if (!r || k > count)
			return AGAIN;
		uint64_t s = LD(r->start), e = LD(r->end);
		uint32_t b = LD(r->bits);
		if (s > q->end)
			break;
		if (q->all) {
			if (s > pos || (b & q->bits) != q->bits)
				break;
			if (e >= q->end) {
				ans = 1;
				break;
			}
			pos = e + 1;
		} else if (b & q->bits) {
			ans = 1;
			break;
		}
		n = LD(r->next);
	}
	if (!seq_same(&h->seq, ts))
		return AGAIN;
	*res = ans;
	return 0;
}

/* What estate_find answers: 0 with *res 1 and [q->start, q->end] the run,
 * or *res 0 (none). */
static int read_find(const struct view *v, const struct mc_etree *h, uint32_t ts,
                     struct view_range *q, int *res)
{
	mc_eref n;
	if (state_first_from(v, h, q->from, &n) != 0)
		return AGAIN;
	uint32_t count = LD(h->count), k = 0;
	const struct mc_estate *r = NULL;
	for (; n; k++) {
		r = slot_at(v, n, 0);
		if (!r || k > count)
			return AGAIN;
		if (LD(r->bits) & q->bits)
			break;
		n = LD(r->next);
	}
	bool found = n != 0;
	uint64_t s = 0, e = 0;
	if (found) {
		s = LD(r->start);
		s = s > q->from ? s : q->from;
		e = LD(r->end);
		for (n = LD(r->next); n && e != UINT64_MAX; n = LD(r->next), k++) {
			r = slot_at(v, n, 0);
			if (!r || k > count)
				return AGAIN;
			if (LD(r->start) != e + 1 || !(LD(r->bits) & q->bits))
				break;
			e = LD(r->end);
		}
	}
	if (!seq_same(&h->seq, ts))
		return AGAIN;
	*res = found;
	q->start = s;
	q->end = e;
	return 0;
}

/* read_find()'s or read_test()'s arguments, for tree_read(). */
struct range_args {
	struct view_range *q;
	bool find;
	int *res;
};

static int range_read(const struct view *v, const struct mc_etree *h, uint32_t ts, void *arg)
{
	struct range_args *a = arg;
	return a->find ? read_find(v, h, ts, a->q, a->res) : read_test(v, h, ts, a->q, a->res);
}

static int view_range(struct view *v, uint64_t ino, struct view_range *q, bool find, int *res)
{
	struct range_args a = { q, find, res };
	return tree_read(v, ino, 0, range_read, &a);
}

int view_range_test(struct view *v, uint64_t ino, const struct view_range *q, int *res)
{
	struct view_range c = *q;
	return view_range(v, ino, &c, false, res);
}

int view_range_find(struct view *v, uint64_t ino, struct view_range *q, int *found)
{
	return view_range(v, ino, q, true, found);
}
