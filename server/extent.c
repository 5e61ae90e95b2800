/* extent.c - the extent cache's arenas. Each inode's tree owns a list of
 * 4 KiB chunks (85 slots of 48 bytes and a 16-byte tail); slot 0 of the
 * first chunk is the tree's head. Chunks come from MC_PT_EXTENT pages, 16 to
 * a page, and go back to one free list.
 *
 * Invariants:
 *  1. A chunk belongs to one tree or to the free list, never both; pages of
 *     type MC_PT_EXTENT hold chunks only (type-stable: a slot that held a
 *     record or a head only ever holds a record or a head again).
 *  2. The arena of tree T is T's first chunk, then each tail's next, up to
 *     T->chunk_tail; slots [0, T->bump) of chunk_tail and every slot of the
 *     other chunks have been handed out (to a record, T's free list, or the
 *     head).
 *  3. Freeing a tree is O(1): the head's seq moves (odd, cleared, even) and
 *     the chunk list is spliced whole onto the free list. Record seqs do not
 *     move then: readers check records against the head's seq.
 *  4. A slot's seq only counts up: allocation and freeing each move it by 2.
 */
#include "extent.h"

#include <errno.h>
#include <string.h>

#include "clock.h"

#define SLOT_UNITS  (MC_ECHUNK_SLOT >> MC_OFF_SHIFT)
#define TAIL_UNITS  ((MC_ECHUNK_SLOTS * MC_ECHUNK_SLOT) >> MC_OFF_SHIFT)
#define CHUNK_UNITS (MC_ECHUNK_SIZE >> MC_OFF_SHIFT)

static struct mc_echunk_tail *tail_of(const struct extent_cache *c, mc_off_t chunk)
{
	return shm_at(c->s, chunk + TAIL_UNITS);
}

void extent_cache_init(struct extent_cache *c, struct shm *s)
{
	memset(c, 0, sizeof(*c));
	c->s = s;
}

/* A chunk off the free list or carved from a new page; 0 when full. */
void extent_cache_fini(struct extent_cache *c)
{
	map_free(&c->state_trees);
}

int extent_state_tree(struct extent_cache *c, uint64_t ino, bool create, mc_off_t *out)
{
	uint64_t *v = map_find(&c->state_trees, ino);
	if (v) {
		*out = (mc_off_t)*v;
		return 0;
	}
	if (!create)
		return -ENOENT;
	int rc = map_reserve(&c->state_trees);
	if (rc < 0)
		return rc;
	mc_off_t t;
	rc = extent_tree_new(c, ino, &t);
	if (rc < 0)
		return rc;
	rc = map_put(&c->state_trees, ino, t);
	(void)rc; /* reserved above */
	*out = t;
	return 0;
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

uint64_t extent_ino_drop(struct extent_cache *c, uint64_t ino)
{
	uint64_t *v = map_find(&c->state_trees, ino);
	if (!v)
		return 0;
	mc_off_t t = (mc_off_t)*v;
	uint64_t n = etree_at(c, t)->count;
	map_del(&c->state_trees, ino);
	extent_tree_free(c, t);
	return n;
}

static mc_off_t chunk_get(struct extent_cache *c)
{
	if (!c->free_chunks) {
		mc_off_t page = shm_page_new(c->s, MC_PT_EXTENT);
		if (!page)
			return 0;
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
	c->chunks_free--;
	return ch;
}

static void slot_init(struct extent_cache *c, mc_off_t slot)
{
	_Atomic uint32_t *seq = shm_at(c->s, slot);
	shm_write_begin(seq);
	memset((char *)seq + sizeof(*seq), 0, MC_ECHUNK_SLOT - sizeof(*seq));
	shm_write_end(seq);
}

int extent_tree_new(struct extent_cache *c, uint64_t ino, mc_off_t *out)
{
	mc_off_t ch = chunk_get(c);
	if (!ch)
		return -ENOSPC;
	struct mc_etree *t = etree_at(c, ch);
	shm_write_begin(&t->seq);
	memset((char *)t + sizeof(t->seq), 0, sizeof(*t) - sizeof(t->seq));
	t->chunk_tail = ch;
	t->bump = 1;
	t->nchunks = 1;
	t->ino = ino;
	shm_write_end(&t->seq);
	c->trees++;
	*out = ch;
	return 0;
}

void extent_tree_free(struct extent_cache *c, mc_off_t tree)
{
	uint64_t t0 = mono_ns();
	struct mc_etree *t = etree_at(c, tree);
	mc_off_t last = t->chunk_tail;
	uint32_t nchunks = t->nchunks;
	c->states -= t->count;
	c->evicted_states += t->count;
	shm_write_begin(&t->seq);
	t->root = t->first = t->last = t->hint = t->free = 0;
	t->count = 0;
	t->chunk_tail = 0;
	shm_write_end(&t->seq);
	tail_of(c, last)->next = c->free_chunks;
	c->free_chunks = tree;
	c->chunks_free += nchunks;
	c->trees--;
	c->evictions++;
	hist_add(&c->evict_ns, mono_ns() - t0);
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

int extent_slot_alloc(struct extent_cache *c, mc_off_t tree, mc_off_t *out)
{
	struct mc_etree *t = etree_at(c, tree);
	mc_off_t slot = t->free;
	if (slot) {
		struct mc_estate *r = shm_at(c->s, slot);
		t->free = r->next;
	} else {
		if (t->bump == MC_ECHUNK_SLOTS && arena_grow(c, t) < 0)
			return -ENOSPC;
		slot = t->chunk_tail + t->bump++ * SLOT_UNITS;
	}
	slot_init(c, slot);
	*out = slot;
	return 0;
}

void extent_slot_free(struct extent_cache *c, mc_off_t tree, mc_off_t slot)
{
	struct mc_etree *t = etree_at(c, tree);
	struct mc_estate *r = shm_at(c->s, slot);
	shm_write_begin(&r->seq);
	r->next = t->free;
	shm_write_end(&r->seq);
	t->free = slot;
}

int extent_reserve(struct extent_cache *c, mc_off_t tree, uint32_t n)
{
	struct mc_etree *t = etree_at(c, tree);
	uint64_t have = MC_ECHUNK_SLOTS - t->bump;
	for (mc_off_t f = t->free; f && have < n; f = ((struct mc_estate *)shm_at(c->s, f))->next)
		have++;
	while (have < n) {
		/* Grow now; the new chunk's slots are handed out by bump, so move
		 * the old tail's unused slots to the free list first. */
		while (t->bump < MC_ECHUNK_SLOTS) {
			mc_off_t slot = t->chunk_tail + t->bump++ * SLOT_UNITS;
			slot_init(c, slot);
			extent_slot_free(c, tree, slot);
		}
		if (arena_grow(c, t) < 0)
			return -ENOSPC;
		have += MC_ECHUNK_SLOTS;
	}
	return 0;
}
