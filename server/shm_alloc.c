/* shm_alloc.c - the segment's allocator: its 64 KiB pages handed to the
 * slabs (one slot type a page), the slabs' partial lists and the common
 * pool, slots allocated, reserved and freed, blobs, and pages faulted in
 * ahead. The segment itself (its layout, backing and sealing, attach,
 * the metadata area) is shm.c's, and so are the notes this follows: 1
 * and 2 (page types, seqs), 5 to 7 (pages kept back, partial lists and
 * pool, pages given back), 9 (pages populated ahead) and 11 (reserved
 * slots).
 */
#include "shm.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define RESERVE_DIV 16u   /* at most this fraction of the pages kept back (shm.c note 5) */

/* The word that links a free slot: the second for seq-carrying slots. */
static mc_off_t *free_link(const struct shm *s, enum shm_slab slab, mc_off_t off)
{
	uint32_t *w = shm_at(s, off);
	return slab < SLAB_BLOB0 ? &w[1] : &w[0];
}

static uint32_t page_of(mc_off_t off)
{
	return (uint32_t)(((uint64_t)off << MC_OFF_SHIFT) >> MC_PAGE_SHIFT);
}

static uint32_t slots_per_page(const struct shm_slab_state *st)
{
	return MC_PAGE_SIZE / st->slot_size;
}

/* ---- the partial lists and the pool (shm.c notes 6, 7) ----------------- */

static void partial_unlink(struct shm *s, struct shm_slab_state *st, uint32_t p)
{
	struct shm_page *g = &s->pg[p];
	if (g->prev)
		s->pg[g->prev].next = g->next;
	else
		st->partial = g->next;
	if (g->next)
		s->pg[g->next].prev = g->prev;
	else
		st->partial_tail = g->prev;
	g->next = g->prev = 0;
}

static void partial_push_head(struct shm *s, struct shm_slab_state *st, uint32_t p)
{
	struct shm_page *g = &s->pg[p];
	g->prev = 0;
	g->next = st->partial;
	if (st->partial)
		s->pg[st->partial].prev = p;
	else
		st->partial_tail = p;
	st->partial = p;
}

static void partial_push_tail(struct shm *s, struct shm_slab_state *st, uint32_t p)
{
	struct shm_page *g = &s->pg[p];
	g->next = 0;
	g->prev = st->partial_tail;
	if (st->partial_tail)
		s->pg[st->partial_tail].next = p;
	else
		st->partial = p;
	st->partial_tail = p;
}

/* The highest seq among the slots of page p of slab st (shm.c note 2). */
static uint32_t page_seqmax(struct shm *s, const struct shm_slab_state *st, uint32_t p,
                            uint32_t floor)
{
	uint32_t n = slots_per_page(st), m = floor;
	const char *base = (const char *)s->base + ((uint64_t)p << MC_PAGE_SHIFT);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t q = atomic_load_explicit((const _Atomic uint32_t *)(const void *)
		                                  (base + (uint64_t)i * st->slot_size),
		                                  memory_order_relaxed);
		if (q > m)
			m = q;
	}
	return m;
}

/* Page p holds no slot in use any more: to the pool, type FREE (shm.c note 7). */
static void pool_put(struct shm *s, uint32_t p)
{
	__atomic_store_n(&s->page_types[p], (uint8_t)MC_PT_FREE, __ATOMIC_RELEASE);
	s->pg[p].next = 0;
	if (s->pool_tail)
		s->pg[s->pool_tail].next = p;
	else
		s->pool = p;
	s->pool_tail = p;
	s->pool_pages++;
	s->pages_returned++;
}

/* A page nobody uses, or 0: the pool's oldest, a never-used one, or (when
 * steal) another slab's empty page. *fresh: never used, its bytes zero. */
static uint32_t page_take(struct shm *s, bool steal, bool *fresh)
{
	*fresh = false;
	if (s->pool) {
		uint32_t p = s->pool;
		s->pool = s->pg[p].next;
		if (!s->pool)
			s->pool_tail = 0;
		s->pg[p].next = 0;
		s->pool_pages--;
		return p;
	}
	if (s->next_page < s->hdr->npages) {
		*fresh = true;
		uint32_t p = s->next_page++;
		atomic_store_explicit(&s->fresh_next, s->next_page, memory_order_relaxed);
		return p;
	}
	if (!steal)
		return 0;
	for (unsigned i = 0; i < SLAB_COUNT; i++) {
		struct shm_slab_state *o = &s->slab[i];
		if (o->empty == 0)
			continue;
		uint32_t p = o->partial_tail; /* empty pages come last (shm.c note 6) */
		partial_unlink(s, o, p);
		if (i < SLAB_BLOB0)
			s->pg[p].seqmax = page_seqmax(s, o, p, s->pg[p].seqmax);
		__atomic_store_n(&s->page_types[p], (uint8_t)MC_PT_FREE, __ATOMIC_RELEASE);
		o->empty--;
		o->pages--;
		o->nfree -= slots_per_page(o);
		s->pg[p].nfree = 0;
		s->pg[p].free = 0;
		s->pages_stolen++;
		return p;
	}
	return 0;
}

static uint32_t pages_left(const struct shm *s)
{
	uint32_t left = s->hdr->npages - s->next_page + (uint32_t)s->pool_pages;
	for (unsigned i = 0; i < SLAB_COUNT; i++)
		left += (uint32_t)s->slab[i].empty;
	return left;
}

bool shm_page_for(const struct shm *s, enum shm_slab slab)
{
	uint32_t left = pages_left(s);
	if (left == 0)
		return false;
	if (s->slab[slab].pages == 0)
		return true;
	uint32_t none = 0, cap = s->hdr->npages / RESERVE_DIV;
	for (unsigned i = 0; i < SLAB_COUNT; i++)
		none += s->slab[i].pages == 0;
	return left > (none < cap ? none : cap);
}

static int grow_slab(struct shm *s, enum shm_slab slab)
{
	struct shm_slab_state *st = &s->slab[slab];
	if (!shm_page_for(s, slab))
		return -ENOSPC;
	bool fresh;
	uint32_t p = page_take(s, true, &fresh);
	if (!p)
		return -ENOSPC;
	uint64_t base = (uint64_t)p << MC_PAGE_SHIFT;
	uint32_t n = slots_per_page(st);
	struct shm_page *g = &s->pg[p];
	if (!fresh)
		memset((char *)s->base + base, 0, MC_PAGE_SIZE);
	/* Seqs go on from above any this page had (shm.c note 2). */
	uint32_t seq0 = g->seqmax ? (g->seqmax + 2) & ~1u : 0;
#ifdef MADV_POPULATE_WRITE
	/* The loop below touches every 4 KiB of the page: one call faults
	 * them all in, instead of one fault each (a warm-up grows many slabs).
	 * Best effort: without it, the faults happen as before. */
	if (fresh && p >= atomic_load_explicit(&s->populated, memory_order_relaxed))
		(void)madvise((char *)s->base + base, MC_PAGE_SIZE, MADV_POPULATE_WRITE);
#endif
	/* Push in reverse so slots are handed out in address order. */
	g->free = 0;
	for (uint32_t i = n; i-- > 0;) {
		mc_off_t off = (mc_off_t)((base + (uint64_t)i * st->slot_size) >> MC_OFF_SHIFT);
		if (slab < SLAB_BLOB0 && seq0)
			atomic_store_explicit((_Atomic uint32_t *)shm_at(s, off), seq0,
			                      memory_order_relaxed);
		*free_link(s, slab, off) = g->free;
		g->free = off;
	}
	g->nfree = (uint16_t)n;
	g->slab = (uint8_t)slab;
	__atomic_store_n(&s->page_types[p], st->page_type, __ATOMIC_RELEASE);
	partial_push_tail(s, st, p);
	st->pages++;
	st->nfree += n;
	st->empty++;
	return 0;
}

void shm_populate_ahead(struct shm *s, uint32_t ahead)
{
#ifdef MADV_POPULATE_WRITE
	uint32_t from = atomic_load_explicit(&s->fresh_next, memory_order_relaxed);
	uint32_t to = s->hdr->npages - from > ahead ? from + ahead : s->hdr->npages;
	uint32_t cur = atomic_load_explicit(&s->populated, memory_order_relaxed);
	/* Nothing while half the run is left: one call faults in a run, not
	 * a page at a time. */
	if (cur >= to || cur >= from + ahead / 2)
		return;
	do {
		if (cur >= to)
			return;
	} while (!atomic_compare_exchange_weak_explicit(&s->populated, &cur, to,
	                                                memory_order_relaxed,
	                                                memory_order_relaxed));
	uint32_t start = cur > from ? cur : from;
	(void)madvise((char *)s->base + ((uint64_t)start << MC_PAGE_SHIFT),
	              (uint64_t)(to - start) << MC_PAGE_SHIFT, MADV_POPULATE_WRITE);
#else
	(void)s;
	(void)ahead;
#endif
}

/* The page the next slots of slab come from, carving one when none has
 * any free, no longer counted as empty: the caller takes slots of it. 0
 * when the segment is full (counted as a failed allocation). */
static uint32_t page_to_take(struct shm *s, enum shm_slab slab)
{
	struct shm_slab_state *st = &s->slab[slab];
	if (!st->partial && grow_slab(s, slab) < 0) {
		s->alloc_failures++;
		s->fail_slab = slab;
		return 0;
	}
	uint32_t p = st->partial;
	if (s->pg[p].nfree == slots_per_page(st))
		st->empty--;
	return p;
}

mc_off_t shm_alloc(struct shm *s, enum shm_slab slab)
{
	struct shm_slab_state *st = &s->slab[slab];
	uint32_t p = page_to_take(s, slab);
	if (!p)
		return 0;
	struct shm_page *g = &s->pg[p];
	mc_off_t off = g->free;
	g->free = *free_link(s, slab, off);
	if (--g->nfree == 0)
		partial_unlink(s, st, p);
	st->nfree--;
	char *q = shm_at(s, off);
	if (slab < SLAB_BLOB0) {
		/* Keep the seq word; zero the rest. Readers cannot reach the slot
		 * until it is linked, and the seq already moved when it was freed. */
		memset(q + sizeof(uint32_t), 0, st->slot_size - sizeof(uint32_t));
	} else {
		memset(q, 0, st->slot_size);
	}
	st->live++;
	s->live_bytes += st->slot_size;
	return off;
}

mc_off_t shm_reserve_page(struct shm *s, enum shm_slab slab, size_t *n)
{
	struct shm_slab_state *st = &s->slab[slab];
	*n = 0;
	uint32_t p = page_to_take(s, slab);
	if (!p)
		return 0;
	struct shm_page *g = &s->pg[p];
	mc_off_t head = g->free;
	*n = g->nfree;
	partial_unlink(s, st, p);
	g->free = 0;
	g->nfree = 0;
	st->nfree -= *n;
	st->live += *n;
	s->live_bytes += *n * st->slot_size;
	s->reserved[slab] += *n;
	return head;
}

mc_off_t shm_reserve_next(const struct shm *s, enum shm_slab slab, mc_off_t off)
{
	return *free_link(s, slab, off);
}

void shm_reserve_used(struct shm *s, enum shm_slab slab)
{
	assert(s->reserved[slab] > 0);
	s->reserved[slab]--;
}

void shm_reserve_return(struct shm *s, enum shm_slab slab, const mc_off_t *v, size_t n)
{
	assert(s->reserved[slab] >= n);
	for (size_t k = 0; k < n; k++)
		shm_free(s, slab, v[k]);
	s->reserved[slab] -= n;
}

void shm_free(struct shm *s, enum shm_slab slab, mc_off_t off)
{
	struct shm_slab_state *st = &s->slab[slab];
	uint32_t p = page_of(off);
	struct shm_page *g = &s->pg[p];
	assert(s->page_types[p] == st->page_type && g->slab == slab &&
	       g->nfree < slots_per_page(st));
	if (slab < SLAB_BLOB0) {
		_Atomic uint32_t *seq = shm_at(s, off);
		shm_write_begin(seq);
		shm_write_end(seq);
	}
	*free_link(s, slab, off) = g->free;
	g->free = off;
	st->nfree++;
	st->live--;
	s->live_bytes -= st->slot_size;
	uint32_t n = slots_per_page(st);
	if (++g->nfree == 1)
		partial_push_head(s, st, p);
	if (g->nfree < n)
		return;
	/* Empty: kept last as the slab's spare, or given back (shm.c note 6). */
	partial_unlink(s, st, p);
	if (st->empty == 0) {
		partial_push_tail(s, st, p);
		st->empty++;
		return;
	}
	if (slab < SLAB_BLOB0)
		g->seqmax = page_seqmax(s, st, p, g->seqmax);
	st->pages--;
	st->nfree -= n;
	g->nfree = 0;
	g->free = 0;
	pool_put(s, p);
}

mc_off_t shm_page_new(struct shm *s, uint8_t type)
{
	bool fresh;
	uint32_t p = page_take(s, true, &fresh);
	if (!p) {
		s->alloc_failures++;
		return 0;
	}
	if (!fresh)
		memset((char *)s->base + ((uint64_t)p << MC_PAGE_SHIFT), 0, MC_PAGE_SIZE);
	__atomic_store_n(&s->page_types[p], type, __ATOMIC_RELEASE);
	s->raw_pages++;
	return (mc_off_t)(((uint64_t)p << MC_PAGE_SHIFT) >> MC_OFF_SHIFT);
}

void shm_page_free(struct shm *s, mc_off_t off)
{
	uint32_t p = page_of(off);
	assert(p < s->hdr->npages && s->raw_pages > 0);
	assert(s->page_types[p] != MC_PT_FREE && s->page_types[p] != MC_PT_META);
	s->raw_pages--;
	pool_put(s, p);
}

static enum shm_slab blob_slab(size_t len)
{
	unsigned cls = 0;
	while (mc_blob_size(cls) < len)
		cls++;
	return (enum shm_slab)(SLAB_BLOB0 + cls);
}

mc_off_t shm_blob_new(struct shm *s, const void *data, size_t len)
{
	if (len == 0 || len > mc_blob_size(MC_BLOB_CLASSES - 1))
		return 0;
	mc_off_t off = shm_alloc(s, blob_slab(len));
	if (off)
		memcpy(shm_at(s, off), data, len);
	return off;
}

void shm_blob_free(struct shm *s, mc_off_t off, size_t len)
{
	if (off)
		shm_free(s, blob_slab(len), off);
}
