/* extent.c - the extent cache's arenas. Each inode's tree owns a list of
 * 4 KiB chunks: 102 slots of 40 bytes (a state tree) or 85 of 48 (an extent
 * map), then a 16-byte tail; the first slots of the first chunk hold the
 * tree's head. Chunks come from MC_PT_EXTENT pages, 16 to a page, and go
 * back to one free list (a chunk serves either kind). Records are named by
 * reference (mc_eref, proto/mc_shm.h), not by offset.
 *
 * Invariants:
 *  1. A chunk belongs to one tree or to the free list, never both; pages of
 *     type MC_PT_EXTENT hold chunks only (type-stable: a slot that held a
 *     record, a head or a tail only ever holds one of those again).
 *  2. The arena of tree T is T's first chunk, then each tail's next, up to
 *     T->chunk_tail; slots [0, T->bump) of chunk_tail and every slot of the
 *     other chunks have been handed out (to a record, T's free list, or the
 *     head).
 *  3. Freeing a tree is O(1): the head's seq moves (odd, cleared, even) and
 *     the chunk list is spliced whole onto the free list. Record seqs do not
 *     move then: readers check records against the head's seq.
 *  4. Records carry no seq: every change of a record happens with its
 *     tree's seq odd, or to a slot no linked record refers to.
 *  5. A tree's records are in a treap keyed by start (priorities: a hash of
 *     the slot offset, so they cost no memory and need no random source)
 *     and in a doubly linked list in start order; both hold the same
 *     records, which never overlap. A record's start may change in place as
 *     long as the order stays the same (the treap's in-order sequence is
 *     the list's).
 */
#include "extent.h"

#include <assert.h>
#include <errno.h>
#include <string.h>

#include "clock.h"

#define TAIL_UNITS  (MC_ECHUNK_TAIL_OFF >> MC_OFF_SHIFT)
#define CHUNK_UNITS (MC_ECHUNK_SIZE >> MC_OFF_SHIFT)

static uint32_t tree_slots(const struct mc_etree *t)
{
	return t->kind ? MC_EM_SLOTS : MC_ES_SLOTS;
}

static uint32_t tree_slot_size(const struct mc_etree *t)
{
	return t->kind ? MC_EM_SLOT : MC_ES_SLOT;
}

/* The reference of slot i of chunk in a tree of kind. */
static mc_eref slot_ref(mc_off_t chunk, uint16_t kind, uint32_t i)
{
	return (chunk / CHUNK_UNITS) << 8 | kind | i;
}

static struct mc_echunk_tail *tail_of(const struct extent_cache *c, mc_off_t chunk)
{
	return shm_at(c->s, chunk + TAIL_UNITS);
}

static uint32_t tree_release(struct extent_cache *c, mc_off_t tree);

void extent_cache_init(struct extent_cache *c, struct shm *s)
{
	memset(c, 0, sizeof(*c));
	c->s = s;
}

void extent_cache_fini(struct extent_cache *c)
{
	map_free(&c->state_trees);
	map_free(&c->map_trees);
}

static void map_link(struct extent_cache *c, uint64_t ino, mc_off_t t);
static void map_unlink(struct extent_cache *c, uint64_t ino, mc_off_t t);

/* The tree of ino in index m, made when absent and create. A new state
 * tree is linked in the ebucket index at once (mc_shm.h, note 11). */
static int tree_of(struct extent_cache *c, struct map *m, uint64_t ino, bool create,
                   mc_off_t *out)
{
	uint64_t *v = map_find(m, ino);
	if (v) {
		*out = (mc_off_t)*v;
		return 0;
	}
	if (!create)
		return -ENOENT;
	int rc = map_reserve(m);
	if (rc < 0)
		return rc;
	mc_off_t t;
	rc = extent_tree_new(c, ino, m == &c->map_trees ? MC_EREF_MAP : 0, &t);
	if (rc < 0)
		return rc;
	rc = map_put(m, ino, t);
	(void)rc; /* reserved above */
	if (m == &c->state_trees)
		map_link(c, ino, t);   /* whole from the start: empty */
	*out = t;
	return 0;
}

int extent_state_tree(struct extent_cache *c, uint64_t ino, bool create, mc_off_t *out)
{
	return tree_of(c, &c->state_trees, ino, create, out);
}

int extent_map_tree(struct extent_cache *c, uint64_t ino, bool create, mc_off_t *out)
{
	return tree_of(c, &c->map_trees, ino, create, out);
}

/* ---- the index of loaded maps and state trees in the segment (mc_shm.h,
 * note 11) ---------------------------------------------------------------- */

#define MAP_LINKED (1ull << 32)   /* in map_trees' value: the map is in its chain */

static struct mc_bucket *ebucket(const struct extent_cache *c, uint64_t ino)
{
	const struct mc_shm_header *h = c->s->hdr;
	return &c->s->ebuckets[mc_hash_ino(h->hash_seed, ino) & h->ebucket_mask];
}

static void map_link(struct extent_cache *c, uint64_t ino, mc_off_t t)
{
	struct mc_bucket *b = ebucket(c, ino);
	shm_write_begin(&b->seq);
	tail_of(c, t)->hnext = b->head;
	b->head = t;
	shm_write_end(&b->seq);
}

static void map_unlink(struct extent_cache *c, uint64_t ino, mc_off_t t)
{
	struct mc_bucket *b = ebucket(c, ino);
	mc_off_t *link = &b->head;
	while (*link && *link != t)
		link = &tail_of(c, *link)->hnext;
	if (!*link)
		return;
	shm_write_begin(&b->seq);
	*link = tail_of(c, t)->hnext;
	shm_write_end(&b->seq);
	tail_of(c, t)->hnext = 0;
}

void extent_map_publish(struct extent_cache *c, uint64_t ino)
{
	uint64_t *v = map_find(&c->map_trees, ino);
	if (!v || (*v & MAP_LINKED))
		return;
	map_link(c, ino, (mc_off_t)*v);
	*v |= MAP_LINKED;
}

void extent_map_drop(struct extent_cache *c, uint64_t ino)
{
	uint64_t *v = map_find(&c->map_trees, ino);
	if (!v)
		return;
	mc_off_t t = (mc_off_t)*v;
	if (*v & MAP_LINKED)
		map_unlink(c, ino, t);
	map_del(&c->map_trees, ino);
	c->mapped -= extent_tree_free(c, t);
}

void extent_map_clear(struct extent_cache *c, uint64_t ino)
{
	uint64_t *v = map_find(&c->map_trees, ino);
	if (!v)
		return;
	bool linked = *v & MAP_LINKED;
	if (linked)
		map_unlink(c, ino, (mc_off_t)*v);
	c->mapped -= extent_tree_free(c, (mc_off_t)*v);
	mc_off_t t;
	int rc = extent_tree_new(c, ino, MC_EREF_MAP, &t); /* takes the chunk just freed */
	assert(rc == 0);
	(void)rc;
	*v = t;
	if (linked) {
		map_link(c, ino, t);
		*v |= MAP_LINKED;
	}
}

size_t extent_idle_scan(struct extent_cache *c, uint64_t *out, size_t max)
{
	struct map *m[2] = { &c->state_trees, &c->map_trees };
	size_t n = 0;
	for (int k = 0; k < 2; k++) {
		size_t cap = m[k]->cap;
		for (size_t j = 0; j < cap && n < max; j++) {
			size_t i = (c->scan_at[k] + j) & (cap - 1);
			if (m[k]->keys[i])
				out[n++] = m[k]->keys[i];
			if (n == max)
				c->scan_at[k] = i + 1;
		}
	}
	return n;
}

uint32_t extent_lockers(struct extent_cache *c, uint64_t ino, int delta)
{
	uint64_t *v = map_find(&c->state_trees, ino);
	if (!v)
		return 0;
	uint32_t n = (uint32_t)((int64_t)(*v >> 32) + delta);
	*v = (*v & UINT32_MAX) | (uint64_t)n << 32;
	return n;
}

void extent_tree_forget(struct extent_cache *c, uint64_t ino)
{
	uint64_t *v = map_find(&c->state_trees, ino);
	if (!v)
		return;
	mc_off_t t = (mc_off_t)*v;
	map_del(&c->state_trees, ino);
	map_unlink(c, ino, t);
	tree_release(c, t);
}

uint64_t extent_state_drop(struct extent_cache *c, uint64_t ino)
{
	uint64_t *v = map_find(&c->state_trees, ino);
	if (!v)
		return 0;
	mc_off_t t = (mc_off_t)*v;
	map_del(&c->state_trees, ino);
	map_unlink(c, ino, t);
	uint32_t n = extent_tree_free(c, t);
	c->states -= n;
	c->evicted_states += n;
	return n;
}

uint64_t extent_ino_drop(struct extent_cache *c, uint64_t ino)
{
	if (c->trees == 0)
		return 0; /* the common case: no file has extents cached */
	uint64_t n = extent_state_drop(c, ino);
	extent_map_drop(c, ino);
	return n;
}

/* A chunk off the free list or carved from a new page; 0 when full. */
static mc_off_t chunk_get(struct extent_cache *c)
{
	if (!c->free_chunks) {
		mc_off_t page = shm_page_new(c->s, MC_PT_EXTENT);
		if (!page) {
			c->page_failed = true;
			return 0;
		}
		uint32_t n = MC_PAGE_SIZE / MC_ECHUNK_SIZE;
		for (uint32_t i = n; i-- > 0;) {
			mc_off_t ch = page + i * CHUNK_UNITS;
			tail_of(c, ch)->next = c->free_chunks;
			c->free_chunks = ch;
		}
		c->chunks += n;
		c->chunks_free += n;
	}
	mc_off_t ch = c->free_chunks;
	c->free_chunks = tail_of(c, ch)->next;
	tail_of(c, ch)->next = 0;
	tail_of(c, ch)->hnext = 0;
	c->chunks_free--;
	c->s->raw_idle = c->chunks_free * MC_ECHUNK_SIZE;
	return ch;
}

static void slot_init(struct extent_cache *c, const struct mc_etree *t, mc_eref slot)
{
	memset(erec_at(c, slot), 0, tree_slot_size(t));
}

int extent_tree_new(struct extent_cache *c, uint64_t ino, uint16_t kind, mc_off_t *out)
{
	mc_off_t ch = chunk_get(c);
	if (!ch)
		return -ENOSPC;
	struct mc_etree *t = etree_at(c, ch);
	shm_write_begin(&t->seq);
	memset((char *)t + sizeof(t->seq), 0, sizeof(*t) - sizeof(t->seq));
	t->chunk_tail = ch;
	t->kind = kind;
	t->bump = kind ? MC_EM_HEAD_SLOTS : MC_ES_HEAD_SLOTS;
	t->nchunks = 1;
	t->ino = ino;
	shm_write_end(&t->seq);
	c->trees++;
	*out = ch;
	return 0;
}

/* extent_tree_free without the figures of an eviction. */
static uint32_t tree_release(struct extent_cache *c, mc_off_t tree)
{
	struct mc_etree *t = etree_at(c, tree);
	mc_off_t last = t->chunk_tail;
	uint32_t nchunks = t->nchunks;
	uint32_t count = t->count;
	shm_write_begin(&t->seq);
	t->root = t->first = t->last = t->hint = t->free = 0;
	t->count = 0;
	t->chunk_tail = 0;
	shm_write_end(&t->seq);
	tail_of(c, last)->next = c->free_chunks;
	c->free_chunks = tree;
	c->chunks_free += nchunks;
	c->s->raw_idle = c->chunks_free * MC_ECHUNK_SIZE;
	c->trees--;
	return count;
}

uint32_t extent_tree_free(struct extent_cache *c, mc_off_t tree)
{
	uint64_t t0 = mono_ns();
	uint32_t count = tree_release(c, tree);
	c->evictions++;
	hist_add(&c->evict_ns, mono_ns() - t0);
	return count;
}

/* Append a chunk to the tree's arena. */
static int arena_grow(struct extent_cache *c, struct mc_etree *t)
{
	mc_off_t ch = chunk_get(c);
	if (!ch)
		return -ENOSPC;
	tail_of(c, t->chunk_tail)->next = ch;
	t->chunk_tail = ch;
	t->bump = 0;
	t->nchunks++;
	return 0;
}

int extent_slot_alloc(struct extent_cache *c, mc_off_t tree, mc_eref *out)
{
	struct mc_etree *t = etree_at(c, tree);
	mc_eref slot = t->free;
	if (slot) {
		t->free = erec_at(c, slot)->next;
	} else {
		if (t->bump == tree_slots(t) && arena_grow(c, t) < 0)
			return -ENOSPC;
		slot = slot_ref(t->chunk_tail, t->kind, t->bump++);
	}
	slot_init(c, t, slot);
	*out = slot;
	return 0;
}

void extent_slot_free(struct extent_cache *c, mc_off_t tree, mc_eref slot)
{
	struct mc_etree *t = etree_at(c, tree);
	erec_at(c, slot)->next = t->free;
	t->free = slot;
}

/* ---- record trees: a treap keyed by start, a list in start order ------ */

static uint32_t prio(mc_eref o)
{
	uint32_t x = o;
	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	x ^= x >> 16;
	return x;
}

/* ---- treap ------------------------------------------------------------- */

/* The record with the greatest start <= pos, 0 if none. */
static mc_eref treap_floor(const struct extent_cache *c, const struct mc_etree *t, uint64_t pos)
{
	mc_eref best = 0;
	for (mc_eref n = t->root; n;) {
		const struct mc_estate *r = erec_at(c, n);
		if (r->start <= pos) {
			best = n;
			n = r->right;
		} else {
			n = r->left;
		}
	}
	return best;
}

static void treap_insert(struct extent_cache *c, struct mc_etree *t, mc_eref n)
{
	struct mc_estate *nr = erec_at(c, n);
	uint32_t np = prio(n);
	mc_eref *link = &t->root;
	while (*link && prio(*link) > np) {
		struct mc_estate *r = erec_at(c, *link);
		link = nr->start < r->start ? &r->left : &r->right;
	}
	/* Split the subtree at *link by key into n's children. */
	mc_eref cur = *link;
	mc_eref *lp = &nr->left, *rp = &nr->right;
	while (cur) {
		struct mc_estate *r = erec_at(c, cur);
		if (r->start < nr->start) {
			*lp = cur;
			lp = &r->right;
			cur = r->right;
		} else {
			*rp = cur;
			rp = &r->left;
			cur = r->left;
		}
	}
	*lp = 0;
	*rp = 0;
	*link = n;
}

static void treap_remove(struct extent_cache *c, struct mc_etree *t, mc_eref n)
{
	struct mc_estate *nr = erec_at(c, n);
	mc_eref *link = &t->root;
	while (*link != n) {
		struct mc_estate *r = erec_at(c, *link);
		link = nr->start < r->start ? &r->left : &r->right;
	}
	mc_eref a = nr->left, b = nr->right;
	while (a && b) {
		if (prio(a) > prio(b)) {
			*link = a;
			link = &erec_at(c, a)->right;
			a = *link;
		} else {
			*link = b;
			link = &erec_at(c, b)->left;
			b = *link;
		}
	}
	*link = a ? a : b;
}

mc_eref erec_first_from(const struct extent_cache *c, const struct mc_etree *t, uint64_t pos,
                           mc_eref *prevp)
{
	mc_eref f = 0;
	if (t->hint) {
		const struct mc_estate *h = erec_at(c, t->hint);
		if (h->start <= pos && (h->end >= pos || !h->next || erec_at(c, h->next)->start > pos))
			f = t->hint;
	}
	if (!f)
		f = treap_floor(c, t, pos);
	mc_eref cur;
	if (!f) {
		cur = t->first;
	} else if (erec_at(c, f)->end >= pos) {
		cur = f;
	} else {
		cur = erec_at(c, f)->next;
	}
	if (prevp)
		*prevp = cur ? erec_at(c, cur)->prev : t->last;
	return cur;
}

mc_eref erec_insert(struct extent_cache *c, mc_off_t tree, mc_eref prev, uint64_t start,
                     uint64_t end, uint32_t bits)
{
	struct mc_etree *t = etree_at(c, tree);
	mc_eref n;
	int rc = extent_slot_alloc(c, tree, &n);
	assert(rc == 0); /* reserved by the caller */
	(void)rc;
	struct mc_estate *r = erec_at(c, n);
	r->start = start;
	r->end = end;
	r->bits = bits;
	r->prev = prev;
	r->next = prev ? erec_at(c, prev)->next : t->first;
	if (r->next)
		erec_at(c, r->next)->prev = n;
	else
		t->last = n;
	if (prev)
		erec_at(c, prev)->next = n;
	else
		t->first = n;
	treap_insert(c, t, n);
	t->count++;
	return n;
}

void erec_remove(struct extent_cache *c, mc_off_t tree, mc_eref n)
{
	struct mc_etree *t = etree_at(c, tree);
	struct mc_estate *r = erec_at(c, n);
	treap_remove(c, t, n);
	if (r->prev)
		erec_at(c, r->prev)->next = r->next;
	else
		t->first = r->next;
	if (r->next)
		erec_at(c, r->next)->prev = r->prev;
	else
		t->last = r->prev;
	if (t->hint == n)
		t->hint = r->prev ? r->prev : r->next;
	t->count--;
	extent_slot_free(c, tree, n);
}

int extent_reserve(struct extent_cache *c, mc_off_t tree, uint32_t n)
{
	struct mc_etree *t = etree_at(c, tree);
	uint64_t have = tree_slots(t) - t->bump;
	for (mc_eref f = t->free; f && have < n; f = erec_at(c, f)->next)
		have++;
	while (have < n) {
		/* Grow now; the new chunk's slots are handed out by bump, so move
		 * the old tail's unused slots to the free list first. */
		while (t->bump < tree_slots(t)) {
			mc_eref slot = slot_ref(t->chunk_tail, t->kind, t->bump++);
			slot_init(c, t, slot);
			extent_slot_free(c, tree, slot);
		}
		if (arena_grow(c, t) < 0)
			return -ENOSPC;
		have += tree_slots(t);
	}
	return 0;
}
