/* extview.c - extent maps read from shared memory (view_extent_map in
 * shmview.h): find the map through the ebucket chain of its inode number,
 * descend the treap to the first extent, walk the list, and validate it
 * all with the bucket's and the tree head's seq (proto/mc_shm.h, notes 3
 * and 11). Every offset is checked before it is followed; every walk is
 * bounded; a map that keeps changing, or that is not loaded, goes to the
 * server. */
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

/* The head of ino's map, its seq in *ts: 0, VIEW_MISS (not linked), AGAIN. */
static int find_map(const struct view *v, uint64_t ino, const struct mc_etree **out, uint32_t *ts)
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
		if (LD(h->ino) == ino) {
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

int view_extent_map(struct view *v, uint64_t ino, uint64_t off, uint64_t len,
                    struct view_extent *out, size_t max, size_t *n)
{
	if (!v->ebuckets)
		return VIEW_MISS;
	uint64_t end = len == 0 || off + (len - 1) < off ? UINT64_MAX : off + (len - 1);
	for (unsigned tries = 0; tries <= v->lim.retries; tries++) {
		if (atomic_load_explicit(&v->hdr->closed, memory_order_acquire))
			return -ENOTCONN;
		const struct mc_etree *h;
		uint32_t ts;
		int rc = find_map(v, ino, &h, &ts);
		if (rc == 0)
			rc = read_map(v, h, ts, off, end, out, max, n);
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
