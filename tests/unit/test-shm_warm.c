/* test-shm_warm.c - unit tests of the segment's side of warming, metadata
 * populated ahead and slots reserved (server/shm.c notes 10 and 11;
 * test-shm.c has the rest of shm.c): a page's free slots reserved at once
 * are counted as used and as reserved, exactly, through partial use and
 * return; a reserved page is neither stolen by another slab nor given
 * back to the pool while a slot of it is reserved; shm_populate_meta
 * faults in a page of the hash buckets once, and the heartbeat thread the
 * whole metadata area at start (shm_populate_meta_run). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "mc_shm.h"
#include "shm.h"

#define MIB (1ull << 20)
#define DPP (MC_PAGE_SIZE / sizeof(struct mc_dentry))

static struct shm *create_ok(uint64_t size)
{
	struct shm *s = NULL;
	assert_int_equal(shm_create(size, &s), 0);
	return s;
}

static uint32_t page_of(mc_off_t off)
{
	return (uint32_t)(((uint64_t)off << MC_OFF_SHIFT) >> MC_PAGE_SHIFT);
}

/* The n slots of a reserved list, into v; checks they are distinct
 * dentry slots of one page with zero flags, and that the list ends. */
static void walk(const struct shm *s, mc_off_t head, size_t n, mc_off_t *v)
{
	mc_off_t off = head;
	for (size_t k = 0; k < n; k++) {
		assert_int_not_equal(off, 0);
		assert_int_equal(shm_off_type(s, off), MC_PT_DENTRY);
		assert_int_equal(page_of(off), page_of(head));
		const struct mc_dentry *e = shm_at(s, off);
		assert_int_equal(e->flags, 0);
		for (size_t j = 0; j < k; j++)
			assert_int_not_equal(v[j], off);
		v[k] = off;
		off = shm_reserve_next(s, SLAB_DENTRY, off);
	}
	assert_int_equal(off, 0);
}

/* A page reserved whole: its slots are used bytes and reserved, off the
 * partial list (the next allocation carves another page); ten put to use,
 * the rest given back: the counts are exact at every step, and the page
 * is on the partial list again with the slots given back. */
static void test_reserve_page_accounting(void **state)
{
	(void)state;
	struct shm *s = create_ok(16 * MIB);
	const struct shm_slab_state *st = &s->slab[SLAB_DENTRY];
	uint64_t used0 = shm_bytes_used(s);
	size_t n;
	mc_off_t head = shm_reserve_page(s, SLAB_DENTRY, &n);
	assert_int_not_equal(head, 0);
	assert_int_equal(n, DPP);
	assert_int_equal(s->reserved[SLAB_DENTRY], DPP);
	assert_int_equal(st->live, DPP);
	assert_int_equal(st->nfree, 0);
	assert_int_equal(st->partial, 0);
	assert_int_equal(st->empty, 0);
	assert_int_equal(shm_bytes_used(s), used0 + DPP * sizeof(struct mc_dentry));
	mc_off_t *v = calloc(DPP, sizeof(*v));
	assert_non_null(v);
	walk(s, head, n, v);
	mc_off_t other = shm_alloc(s, SLAB_DENTRY);
	assert_int_not_equal(page_of(other), page_of(head));

	for (int k = 0; k < 10; k++)
		shm_reserve_used(s, SLAB_DENTRY); /* as dcache_link would */
	assert_int_equal(s->reserved[SLAB_DENTRY], DPP - 10);
	assert_int_equal(st->live, DPP + 1);
	shm_reserve_return(s, SLAB_DENTRY, v + 10, DPP - 10);
	assert_int_equal(s->reserved[SLAB_DENTRY], 0);
	assert_int_equal(st->live, 11);
	assert_int_equal(shm_bytes_used(s), used0 + 11 * sizeof(struct mc_dentry));
	/* The page serves allocations again, from the slots given back. */
	assert_int_equal(st->partial, page_of(head));
	mc_off_t again = shm_alloc(s, SLAB_DENTRY);
	assert_int_equal(page_of(again), page_of(head));
	shm_free(s, SLAB_DENTRY, again);
	for (int k = 0; k < 10; k++)
		shm_free(s, SLAB_DENTRY, v[k]);
	shm_free(s, SLAB_DENTRY, other);
	assert_int_equal(st->live, 0);
	assert_int_equal(shm_bytes_used(s), used0);
	free(v);
	shm_destroy(s);
}

/* A page with slots in use: only its free ones are reserved, then a new
 * page's. */
static void test_reserve_partial_page(void **state)
{
	(void)state;
	struct shm *s = create_ok(16 * MIB);
	mc_off_t a[5];
	for (int k = 0; k < 5; k++)
		a[k] = shm_alloc(s, SLAB_DENTRY);
	size_t n, m;
	mc_off_t h1 = shm_reserve_page(s, SLAB_DENTRY, &n);
	assert_int_equal(n, DPP - 5);
	assert_int_equal(page_of(h1), page_of(a[0]));
	mc_off_t h2 = shm_reserve_page(s, SLAB_DENTRY, &m);
	assert_int_equal(m, DPP);
	assert_int_not_equal(page_of(h2), page_of(h1));
	assert_int_equal(s->reserved[SLAB_DENTRY], n + m);
	assert_int_equal(s->slab[SLAB_DENTRY].live, 5 + n + m);
	mc_off_t *v = calloc(DPP, sizeof(*v));
	assert_non_null(v);
	walk(s, h1, n, v);
	shm_reserve_return(s, SLAB_DENTRY, v, n);
	walk(s, h2, m, v);
	shm_reserve_return(s, SLAB_DENTRY, v, m);
	assert_int_equal(s->reserved[SLAB_DENTRY], 0);
	assert_int_equal(s->slab[SLAB_DENTRY].live, 5);
	free(v);
	shm_destroy(s);
}

/* Another slab that fills the segment never takes a reserved page (it is
 * no slab's empty page, and not in the pool); given back, the page is
 * empty and a slab that needs a page gets it. */
static void test_reserved_page_kept(void **state)
{
	(void)state;
	struct shm *s = create_ok(MIB);
	size_t n;
	mc_off_t head = shm_reserve_page(s, SLAB_DENTRY, &n);
	assert_int_equal(n, DPP);
	size_t inodes = 0;
	while (shm_alloc(s, SLAB_INODE))
		inodes++;
	assert_true(inodes > 0);
	assert_int_equal(shm_off_type(s, head), MC_PT_DENTRY);
	assert_int_equal(s->reserved[SLAB_DENTRY], DPP);
	mc_off_t *v = calloc(DPP, sizeof(*v));
	assert_non_null(v);
	walk(s, head, n, v); /* the list is intact */
	shm_reserve_return(s, SLAB_DENTRY, v, n);
	assert_int_equal(s->slab[SLAB_DENTRY].live, 0);
	/* Empty now: the dentry slab keeps it as its spare; the inodes take
	 * what is left of the segment but the last page, kept for a slab
	 * that has none (shm.c notes 5 and 6): the spare, which such a slab
	 * takes. */
	assert_int_equal(s->slab[SLAB_DENTRY].empty, 1);
	while (shm_alloc(s, SLAB_INODE))
		inodes++;
	assert_int_equal(shm_off_type(s, head), MC_PT_DENTRY);
	mc_off_t blob = shm_blob_new(s, "x", 1);
	assert_int_not_equal(blob, 0);
	assert_int_equal(page_of(blob), page_of(head));
	assert_int_equal(shm_off_type(s, head), MC_PT_BLOB32);
	free(v);
	shm_destroy(s);
}

/* Resident 4 KiB pages of [p, p + len). */
static size_t resident(const void *p, size_t len)
{
	long os = sysconf(_SC_PAGESIZE);
	unsigned char *vec = malloc(len / (size_t)os);
	size_t n = 0;
	assert_non_null(vec);
	assert_int_equal(mincore((void *)p, len, vec), 0);
	for (size_t i = 0; i < len / (size_t)os; i++)
		n += vec[i] & 1;
	free(vec);
	return n;
}

/* shm.c note 10: the 64 KiB page of the buckets around a bucket is faulted
 * in, and marked so; a bucket far away stays out; nothing outside the
 * metadata area is touched. */
static void test_populate_meta(void **state)
{
	(void)state;
	struct shm *s = create_ok(64 * MIB);
	long os = sysconf(_SC_PAGESIZE);
	const struct mc_dgroup *b = &s->dgroups[s->hdr->dbucket_mask / 2];
	const struct mc_bucket *far = &s->ibuckets[s->hdr->ibucket_mask];
	uintptr_t pg = ((uintptr_t)b - (uintptr_t)s->base) & ~(uintptr_t)(MC_PAGE_SIZE - 1);
	const char *page = (const char *)s->base + pg;
	uintptr_t fpg = ((uintptr_t)far - (uintptr_t)s->base) & ~(uintptr_t)(MC_PAGE_SIZE - 1);
	assert_int_not_equal(pg, fpg);
	assert_int_equal(resident(page, MC_PAGE_SIZE), 0);
	shm_populate_meta(s, b);
	assert_int_equal(resident(page, MC_PAGE_SIZE), MC_PAGE_SIZE / (size_t)os);
	assert_true(atomic_load(&s->meta_populated[(pg >> MC_PAGE_SHIFT) / 64]) &
	            (1ull << ((pg >> MC_PAGE_SHIFT) % 64)));
	assert_int_equal(resident((const char *)s->base + fpg, MC_PAGE_SIZE), 0);
	/* A slot page is no metadata: left alone. */
	const char *slots = (const char *)s->base + ((uint64_t)s->next_page << MC_PAGE_SHIFT);
	shm_populate_meta(s, slots);
	assert_int_equal(resident(slots, MC_PAGE_SIZE), 0);
	shm_destroy(s);
}

/* Run by run, the whole metadata area becomes resident, from the start
 * and past a page another thread populated first, and nothing past it. */
static void test_populate_meta_runs(void **state)
{
	(void)state;
	struct shm *s = create_ok(64 * MIB);
	long os = sysconf(_SC_PAGESIZE);
	uint64_t meta = s->meta_bytes;
	assert_true(meta > 2 * SHM_META_RUN * (uint64_t)MC_PAGE_SIZE);
	/* Only the header, written at creation, is in. */
	assert_true(resident(s->base, meta) <= MC_PAGE_SIZE / (size_t)os);
	const char *past = (const char *)s->base + meta;
	size_t past_len = (size_t)(s->size - meta), past0 = resident(past, past_len);
	/* A page in the middle, done by someone else first. */
	const struct mc_bucket *mid = &s->ibuckets[s->hdr->ibucket_mask / 2];
	shm_populate_meta(s, mid);
	unsigned runs = 0;
	while (shm_populate_meta_run(s))
		runs++;
	assert_true(runs >= meta / ((uint64_t)SHM_META_RUN * MC_PAGE_SIZE) - 1);
	assert_int_equal(resident(s->base, meta), meta / (uint64_t)os);
	for (uint64_t p = 0; p < meta >> MC_PAGE_SHIFT; p++)
		assert_true(atomic_load(&s->meta_populated[p / 64]) & (1ull << (p % 64)));
	assert_int_equal(resident(past, past_len), past0);
	assert_false(shm_populate_meta_run(s));
	shm_destroy(s);
}

/* A served segment's heartbeat thread does it on its own at start. */
static void test_beat_populates_meta(void **state)
{
	(void)state;
	struct shm *s = create_ok(64 * MIB);
	long os = sysconf(_SC_PAGESIZE);
	assert_int_equal(shm_beat_start(s), 0);
	size_t want = s->meta_bytes / (size_t)os, got = 0;
	for (int i = 0; i < 2000 && got < want; i++) {
		usleep(1000);
		got = resident(s->base, s->meta_bytes);
	}
	shm_beat_stop(s);
	assert_int_equal(got, want);
	shm_destroy(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reserve_page_accounting),
		cmocka_unit_test(test_reserve_partial_page),
		cmocka_unit_test(test_reserved_page_kept),
		cmocka_unit_test(test_populate_meta),
		cmocka_unit_test(test_populate_meta_runs),
		cmocka_unit_test(test_beat_populates_meta),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
