/* test-shm.c - unit tests of the shared-memory segment (server/shm.c):
 * bounds, header, type-stable slabs, blob classes, full segment, seals,
 * pages populated ahead. */
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "mc_shm.h"
#include "shm.h"

#define MIB (1ull << 20)

static struct shm *create_ok(uint64_t size)
{
	struct shm *s = NULL;
	int rc = shm_create(size, &s);
	if (rc != 0)
		fail_msg("shm_create(%llu): %d", (unsigned long long)size, rc);
	assert_non_null(s);
	return s;
}

static uint32_t seq_of(const struct shm *s, mc_off_t off)
{
	_Atomic uint32_t *q = shm_at(s, off);
	return atomic_load(q);
}

static uint8_t page_type_of(const struct shm *s, mc_off_t off)
{
	uint64_t b = (uint64_t)off << MC_OFF_SHIFT;
	return s->page_types[b >> MC_PAGE_SHIFT];
}

/* Below 1 MiB (after rounding down to pages) and above the maximum: -EINVAL,
 * out untouched. */
static void test_create_bounds(void **state)
{
	(void)state;
	struct shm *s = (struct shm *)(uintptr_t)0x1;
	assert_int_equal(shm_create(0, &s), -EINVAL);
	assert_int_equal(shm_create(MIB - 1, &s), -EINVAL);
	assert_int_equal(shm_create(MIB - MC_PAGE_SIZE, &s), -EINVAL);
	assert_int_equal(shm_create(MC_SHM_MAX_SIZE + MC_PAGE_SIZE, &s), -EINVAL);
	assert_ptr_equal(s, (struct shm *)(uintptr_t)0x1);

	s = create_ok(MIB);
	assert_int_equal(s->size, MIB);
	shm_destroy(s);
	/* Rounded down to whole pages. */
	s = create_ok(MIB + MC_PAGE_SIZE + 100);
	assert_int_equal(s->size, MIB + MC_PAGE_SIZE);
	shm_destroy(s);
}

static void test_header(void **state)
{
	(void)state;
	struct shm *s = create_ok(4 * MIB);
	const struct mc_shm_header *h = s->base;
	assert_ptr_equal(h, s->hdr);
	assert_int_equal(h->magic, MC_SHM_MAGIC);
	assert_int_equal(h->version, MC_SHM_VERSION);
	assert_int_equal(h->size, 4 * MIB);
	assert_int_equal(h->npages, 4 * MIB / MC_PAGE_SIZE);
	assert_int_equal(h->server_pid, (uint32_t)getpid());
	assert_int_equal(h->root, 0);
	assert_int_equal(atomic_load(&h->committed_seq), 0);
	/* Tables inside the metadata pages, buckets a power of two. */
	assert_ptr_equal((uint8_t *)s->base + h->page_types_off, s->page_types);
	assert_ptr_equal((char *)s->base + h->dbuckets_off, (char *)s->dgroups);
	assert_ptr_equal((char *)s->base + h->ibuckets_off, (char *)s->ibuckets);
	assert_int_equal(h->dbucket_mask & (h->dbucket_mask + 1), 0);
	assert_int_equal(h->ibucket_mask & (h->ibucket_mask + 1), 0);
	assert_true(h->dbucket_mask > 0);
	uint64_t end = h->ibuckets_off + (uint64_t)(h->ibucket_mask + 1) * sizeof(struct mc_bucket);
	assert_true(end <= s->meta_bytes);
	assert_true(h->page_types_off >= sizeof(*h));
	for (uint64_t p = 0; p < s->meta_bytes / MC_PAGE_SIZE; p++)
		assert_int_equal(s->page_types[p], MC_PT_META);
	for (uint64_t p = s->meta_bytes / MC_PAGE_SIZE; p < h->npages; p++)
		assert_int_equal(s->page_types[p], MC_PT_FREE);
	/* Empty hash tables. */
	for (uint32_t g = 0; g <= h->dbucket_mask; g++)
		for (unsigned b = 0; b < MC_DGROUP_BUCKETS; b++)
			assert_int_equal(s->dgroups[g].b[b].head, 0);
	assert_int_equal(shm_bytes_used(s), s->meta_bytes);
	shm_destroy(s);
}

/* Distinct, zeroed, correctly typed slots; seq even. */
static void test_alloc_distinct_zeroed_typed(void **state)
{
	(void)state;
	struct shm *s = create_ok(2 * MIB);
	static const struct {
		enum shm_slab slab;
		uint8_t pt;
		size_t size;
	} kinds[] = {
		{ SLAB_DENTRY, MC_PT_DENTRY, sizeof(struct mc_dentry) },
		{ SLAB_INODE, MC_PT_INODE, sizeof(struct mc_inode) },
		{ SLAB_DIRX, MC_PT_DIRX, sizeof(struct mc_dirx) },
	};
	enum { N = 300 };
	mc_off_t offs[3][N];
	for (size_t k = 0; k < 3; k++) {
		for (size_t i = 0; i < N; i++) {
			mc_off_t off = shm_alloc(s, kinds[k].slab);
			assert_int_not_equal(off, 0);
			assert_true(mc_shm_valid(s->base, s->size, s->page_types, off, kinds[k].size,
			                         kinds[k].pt));
			assert_int_equal(seq_of(s, off) & 1, 0);
			const uint8_t *p = shm_at(s, off);
			for (size_t b = sizeof(uint32_t); b < kinds[k].size; b++)
				assert_int_equal(p[b], 0);
			/* Scribble, so a reused-but-not-zeroed slot would show. */
			memset((uint8_t *)shm_at(s, off) + 4, 0xa5, kinds[k].size - 4);
			offs[k][i] = off;
		}
		assert_int_equal(s->slab[kinds[k].slab].live, N);
	}
	/* All distinct, across kinds too (and slots do not overlap). */
	for (size_t k = 0; k < 3; k++)
		for (size_t i = 0; i < N; i++)
			for (size_t l = 0; l < 3; l++)
				for (size_t j = 0; j < N; j++) {
					if (k == l && i == j)
						continue;
					uint64_t a = (uint64_t)offs[k][i] << MC_OFF_SHIFT;
					uint64_t b = (uint64_t)offs[l][j] << MC_OFF_SHIFT;
					assert_true(a + kinds[k].size <= b || b + kinds[l].size <= a);
				}
	shm_destroy(s);
}

/* shm_free bumps the seq by 2 (odd then even); the slot comes back zeroed
 * (seq kept) and only for its own type. */
static void test_free_seq_and_reuse(void **state)
{
	(void)state;
	struct shm *s = create_ok(MIB);
	mc_off_t d = shm_alloc(s, SLAB_DENTRY);
	assert_int_not_equal(d, 0);
	memset((uint8_t *)shm_at(s, d) + 4, 0x5a, sizeof(struct mc_dentry) - 4);
	uint32_t before = seq_of(s, d);
	uint64_t used = shm_bytes_used(s);
	shm_free(s, SLAB_DENTRY, d);
	assert_int_equal(seq_of(s, d), before + 2);
	assert_int_equal(shm_bytes_used(s), used - sizeof(struct mc_dentry));
	assert_int_equal(s->slab[SLAB_DENTRY].live, 0);

	/* Other types never get the dentry slot. */
	for (int i = 0; i < 50; i++) {
		mc_off_t x = shm_alloc(s, SLAB_INODE);
		assert_int_not_equal(x, d);
		assert_int_equal(page_type_of(s, x), MC_PT_INODE);
		mc_off_t y = shm_alloc(s, SLAB_DIRX);
		assert_int_not_equal(y, d);
		mc_off_t z = shm_blob_new(s, "abc", 3);
		assert_int_not_equal(z, d);
	}
	/* The dentry slab hands it back, zeroed, seq kept. */
	mc_off_t d2 = shm_alloc(s, SLAB_DENTRY);
	assert_int_equal(d2, d);
	assert_int_equal(seq_of(s, d2), before + 2);
	const uint8_t *p = shm_at(s, d2);
	for (size_t b = 4; b < sizeof(struct mc_dentry); b++)
		assert_int_equal(p[b], 0);
	/* Free and reuse again: the seq keeps counting. */
	shm_free(s, SLAB_DENTRY, d2);
	assert_int_equal(seq_of(s, d2), before + 4);

	/* Inode slots too. */
	mc_off_t i1 = shm_alloc(s, SLAB_INODE);
	uint32_t is = seq_of(s, i1);
	shm_free(s, SLAB_INODE, i1);
	assert_int_equal(seq_of(s, i1), is + 2);
	shm_destroy(s);
}

/* Blob lengths map to the smallest class that holds them. */
static void test_blob_classes(void **state)
{
	(void)state;
	struct shm *s = create_ok(2 * MIB);
	static const struct {
		size_t len;
		unsigned cls;
	} cases[] = {
		{ 1, 0 }, { 32, 0 }, { 33, 1 }, { 64, 1 }, { 65, 2 },
		{ 255, 3 }, { 256, 3 }, { 257, 4 }, { 2048, 6 }, { 4095, 7 }, { 4096, 7 },
	};
	static char data[4096];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)('a' + i % 26);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t used = shm_bytes_used(s);
		mc_off_t b = shm_blob_new(s, data, cases[i].len);
		if (!b)
			fail_msg("blob of %zu bytes: 0", cases[i].len);
		assert_int_equal(page_type_of(s, b), MC_PT_BLOB32 + cases[i].cls);
		assert_true(mc_shm_valid(s->base, s->size, s->page_types, b,
		                         mc_blob_size(cases[i].cls), MC_PT_BLOB32 + cases[i].cls));
		assert_memory_equal(shm_at(s, b), data, cases[i].len);
		/* The rest of the slot is zero. */
		const uint8_t *p = shm_at(s, b);
		for (size_t k = cases[i].len; k < mc_blob_size(cases[i].cls); k++)
			assert_int_equal(p[k], 0);
		assert_int_equal(shm_bytes_used(s), used + mc_blob_size(cases[i].cls));
		assert_int_equal(s->slab[SLAB_BLOB0 + cases[i].cls].live, 1);
		shm_blob_free(s, b, cases[i].len);
		assert_int_equal(shm_bytes_used(s), used);
		assert_int_equal(s->slab[SLAB_BLOB0 + cases[i].cls].live, 0);
	}
	/* Out of range. */
	assert_int_equal(shm_blob_new(s, data, 0), 0);
	assert_int_equal(shm_blob_new(s, data, 4097), 0);
	shm_blob_free(s, 0, 10); /* no-op */
	shm_destroy(s);
}

/* Fill a 1 MiB segment with dentries until shm_alloc says 0; failures are
 * counted; the last page (one of sixteen) is kept for a slab that has none
 * (shm.c, note 5): inodes get it, and then blobs nothing. Freeing every
 * slot brings bytes used back to the baseline and gives the pages back
 * (shm.c, note 6): another slab then gets every page of the segment but
 * the one kept back, a spare empty page of another slab included. */
static void test_fill_until_full(void **state)
{
	(void)state;
	struct shm *s = create_ok(MIB);
	uint64_t base = shm_bytes_used(s);
	uint32_t free_pages = s->hdr->npages - s->next_page;
	assert_int_equal(s->hdr->npages / 16, 1);
	size_t cap = (size_t)(free_pages - 1) * (MC_PAGE_SIZE / sizeof(struct mc_dentry));
	mc_off_t *v = calloc(cap + 1, sizeof(*v));
	assert_non_null(v);
	size_t n = 0;
	for (;;) {
		mc_off_t off = shm_alloc(s, SLAB_DENTRY);
		if (!off)
			break;
		assert_true(n < cap);
		v[n++] = off;
	}
	assert_int_equal(n, cap);
	assert_int_equal(s->alloc_failures, 1);
	assert_false(shm_slab_room(s, SLAB_DENTRY));
	assert_true(shm_slab_room(s, SLAB_INODE));
	assert_int_equal(shm_alloc(s, SLAB_DENTRY), 0);
	mc_off_t ino = shm_alloc(s, SLAB_INODE);
	assert_int_not_equal(ino, 0);
	assert_false(shm_slab_room(s, SLAB_BLOB0));
	assert_int_equal(shm_blob_new(s, "x", 1), 0);
	assert_int_equal(s->alloc_failures, 3);
	assert_int_equal(shm_bytes_used(s),
	                 base + cap * sizeof(struct mc_dentry) + sizeof(struct mc_inode));

	for (size_t i = 0; i < n; i++)
		shm_free(s, SLAB_DENTRY, v[i]);
	shm_free(s, SLAB_INODE, ino);
	assert_int_equal(shm_bytes_used(s), base);
	assert_int_equal(s->slab[SLAB_DENTRY].live, 0);
	/* One empty page stays with each slab, the others are in the pool. */
	assert_int_equal(s->slab[SLAB_DENTRY].pages, 1);
	assert_int_equal(s->slab[SLAB_INODE].pages, 1);
	assert_int_equal(s->pool_pages, free_pages - 2);
	/* The biggest blob class takes every page, 16 slots each. */
	static char big[4096];
	memset(big, 'b', sizeof(big));
	size_t nb = 0;
	mc_off_t *bv = calloc((size_t)free_pages * 16 + 1, sizeof(*bv));
	assert_non_null(bv);
	for (mc_off_t off; (off = shm_blob_new(s, big, sizeof(big))) != 0;) {
		assert_int_equal(page_type_of(s, off), MC_PT_BLOB_LAST);
		bv[nb++] = off;
	}
	/* All but the page kept back (note 5): one spare was taken. */
	assert_int_equal(nb, (size_t)(free_pages - 1) * 16);
	assert_int_equal(s->slab[SLAB_DENTRY].pages + s->slab[SLAB_INODE].pages, 1);
	assert_int_equal(s->pages_stolen, 1);
	/* And back: dentries get every page but the one kept back again. */
	for (size_t i = 0; i < nb; i++)
		shm_blob_free(s, bv[i], sizeof(big));
	assert_int_equal(shm_bytes_used(s), base);
	n = 0;
	while (shm_alloc(s, SLAB_DENTRY))
		n++;
	assert_int_equal(n, cap);
	free(bv);
	free(v);
	shm_destroy(s);
}

/* A page that served one slab and is carved for another comes zeroed, its
 * page type changed, and its seq-carrying slots start above every seq the
 * page had: a stale reader's seq never matches (shm.c, note 2). */
static void test_page_retype(void **state)
{
	(void)state;
	struct shm *s = create_ok(MIB);
	enum { PER = MC_PAGE_SIZE / sizeof(struct mc_dentry) };
	/* Two pages of dentries; churn the seqs of the first. */
	static mc_off_t d[2 * PER];
	for (size_t i = 0; i < 2 * PER; i++) {
		d[i] = shm_alloc(s, SLAB_DENTRY);
		assert_int_not_equal(d[i], 0);
		memset((uint8_t *)shm_at(s, d[i]) + 4, 0xee, sizeof(struct mc_dentry) - 4);
	}
	for (int r = 0; r < 5; r++) {
		shm_free(s, SLAB_DENTRY, d[7]);
		assert_int_equal(shm_alloc(s, SLAB_DENTRY), d[7]);
	}
	uint32_t old_max = 0;
	for (size_t i = 0; i < PER; i++)
		if (seq_of(s, d[i]) > old_max)
			old_max = seq_of(s, d[i]);
	assert_true(old_max >= 10);
	uint32_t page = (uint32_t)(((uint64_t)d[0] << MC_OFF_SHIFT) >> MC_PAGE_SHIFT);
	/* Free both pages: the second stays as the spare, the first goes. */
	for (size_t i = PER; i < 2 * PER; i++)
		shm_free(s, SLAB_DENTRY, d[i]);
	assert_int_equal(s->pool_pages, 0);
	for (size_t i = 0; i < PER; i++)
		shm_free(s, SLAB_DENTRY, d[i]);
	assert_int_equal(s->pool_pages, 1);
	assert_int_equal(s->page_types[page], MC_PT_FREE);
	/* Inodes: the never-used pages first, then the pool's page. */
	uint32_t fresh = s->hdr->npages - s->next_page;
	mc_off_t i1 = 0;
	for (uint64_t k = 0; k < (uint64_t)fresh * (MC_PAGE_SIZE / sizeof(struct mc_inode)) + 1; k++) {
		i1 = shm_alloc(s, SLAB_INODE);
		assert_int_not_equal(i1, 0);
		if ((((uint64_t)i1 << MC_OFF_SHIFT) >> MC_PAGE_SHIFT) == page)
			break;
	}
	assert_int_equal((((uint64_t)i1 << MC_OFF_SHIFT) >> MC_PAGE_SHIFT), page);
	assert_int_equal(s->page_types[page], MC_PT_INODE);
	assert_int_equal(s->pool_pages, 0);
	/* Every slot of the page: zero but for a seq above the old ones. */
	const uint8_t *pb = (const uint8_t *)s->base + ((uint64_t)page << MC_PAGE_SHIFT);
	for (size_t k = 0; k < MC_PAGE_SIZE / sizeof(struct mc_inode); k++) {
		const uint8_t *slot = pb + k * sizeof(struct mc_inode);
		uint32_t q;
		memcpy(&q, slot, 4);
		assert_true(q > old_max);
		assert_int_equal(q & 1, 0);
		/* The free link (second word) aside, the rest is zero. */
		for (size_t b = 8; b < sizeof(struct mc_inode); b++)
			assert_int_equal(slot[b], 0);
	}
	shm_destroy(s);
}

/* Whole pages (shm_page_new) come from the pool zeroed and go back to it. */
static void test_page_new_free(void **state)
{
	(void)state;
	struct shm *s = create_ok(MIB);
	uint32_t fresh = s->hdr->npages - s->next_page;
	mc_off_t *pg = calloc(fresh + 1, sizeof(*pg));
	assert_non_null(pg);
	for (uint32_t i = 0; i < fresh; i++) {
		pg[i] = shm_page_new(s, MC_PT_EXTENT);
		assert_int_not_equal(pg[i], 0);
		memset(shm_at(s, pg[i]), 0x77, MC_PAGE_SIZE);
	}
	assert_int_equal(shm_page_new(s, MC_PT_EXTENT), 0);
	assert_int_equal(shm_alloc(s, SLAB_DENTRY), 0);
	uint64_t used = shm_bytes_used(s);
	shm_page_free(s, pg[3]);
	assert_int_equal(page_type_of(s, pg[3]), MC_PT_FREE);
	assert_int_equal(shm_bytes_used(s), used - MC_PAGE_SIZE);
	/* A slab gets the page, zeroed. */
	mc_off_t d = shm_alloc(s, SLAB_DENTRY);
	assert_int_not_equal(d, 0);
	assert_int_equal(page_type_of(s, d), MC_PT_DENTRY);
	const uint8_t *p = shm_at(s, d);
	for (size_t b = 4; b < sizeof(struct mc_dentry); b++)
		assert_int_equal(p[b], 0);
	shm_free(s, SLAB_DENTRY, d);
	/* The slab's spare empty page is taken by a whole-page request. */
	mc_off_t again = shm_page_new(s, MC_PT_EXTENT);
	assert_int_equal(again, pg[3]);
	assert_int_equal(s->slab[SLAB_DENTRY].pages, 0);
	const uint8_t *q = shm_at(s, again);
	for (size_t b = 0; b < MC_PAGE_SIZE; b++)
		assert_int_equal(q[b], 0);
	free(pg);
	shm_destroy(s);
}

/* Random allocations and frees over every slab and whole pages in a small
 * segment, so that pages keep moving between slabs: a live slot is never
 * handed out twice nor overwritten by another's carving, always lies in a
 * page of its type, and the counts add up. */
/* shm_bytes_used as the sum it stands for: the slabs' live slots, the
 * metadata area and the whole pages held (the running sum it keeps must
 * match at every step). */
static uint64_t bytes_used_summed(const struct shm *s)
{
	uint64_t b = s->meta_bytes + (s->raw_pages << MC_PAGE_SHIFT) - s->raw_idle;
	for (unsigned k = 0; k < SLAB_COUNT; k++)
		b += s->slab[k].live * s->slab[k].slot_size;
	return b;
}

static void test_random_churn(void **state)
{
	(void)state;
	struct shm *s = create_ok(MIB);
	enum { MAXLIVE = 20000, STEPS = 400000 };
	struct live { mc_off_t off; uint8_t slab; uint32_t tag; } *lv = calloc(MAXLIVE, sizeof(*lv));
	mc_off_t pages[16];
	unsigned npages = 0;
	assert_non_null(lv);
	size_t n = 0;
	uint64_t x = 0x243f6a8885a308d3ull;
	uint64_t fails = 0;
	for (uint32_t step = 1; step <= STEPS; step++) {
		if (step % 997 == 0)
			assert_int_equal(shm_bytes_used(s), bytes_used_summed(s));
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		/* Phases of mostly allocating and mostly freeing, and a slab
		 * preference that drifts, so pages empty and change hands. */
		bool grow = ((step / 20000) & 1) == 0;
		unsigned r = (unsigned)(x % 100);
		if (r < 2) {
			if (npages < 16 && r == 0) {
				mc_off_t pg = shm_page_new(s, MC_PT_EXTENT);
				if (pg) {
					const uint8_t *b = shm_at(s, pg);
					for (size_t k = 0; k < MC_PAGE_SIZE; k += 512)
						assert_int_equal(b[k], 0);
					memset(shm_at(s, pg), 0x3c, MC_PAGE_SIZE);
					pages[npages++] = pg;
				}
			} else if (npages) {
				shm_page_free(s, pages[--npages]);
			}
			continue;
		}
		if ((grow ? r < 70 : r < 35) && n < MAXLIVE) {
			unsigned slab = (unsigned)((x >> 20) % (((step / 50000) % 3) + 2 + (step / 30000) % SLAB_COUNT));
			slab %= SLAB_COUNT;
			mc_off_t off = shm_alloc(s, (enum shm_slab)slab);
			if (!off) {
				fails++;
				continue;
			}
			assert_true(mc_shm_valid(s->base, s->size, s->page_types, off,
			                         s->slab[slab].slot_size, s->slab[slab].page_type));
			uint32_t *w = shm_at(s, off);
			if (slab < SLAB_BLOB0)
				assert_int_equal(w[0] & 1, 0);
			/* a tag in every word after the seq */
			for (uint32_t k = 1; k < s->slab[slab].slot_size / 4; k++)
				w[k] = step;
			lv[n++] = (struct live){ off, (uint8_t)slab, step };
		} else if (n) {
			size_t k = (size_t)((x >> 32) % n);
			struct live l = lv[k];
			uint32_t *w = shm_at(s, l.off);
			for (uint32_t j = 1; j < s->slab[l.slab].slot_size / 4; j++)
				if (w[j] != l.tag)
					fail_msg("slot %u of slab %u overwritten at step %u", l.off, l.slab, step);
			assert_true(mc_shm_valid(s->base, s->size, s->page_types, l.off,
			                         s->slab[l.slab].slot_size, s->slab[l.slab].page_type));
			shm_free(s, (enum shm_slab)l.slab, l.off);
			lv[k] = lv[--n];
		}
	}
	/* Every live slot intact; counts consistent. */
	uint64_t live[SLAB_COUNT] = { 0 };
	for (size_t k = 0; k < n; k++) {
		uint32_t *w = shm_at(s, lv[k].off);
		for (uint32_t j = 1; j < s->slab[lv[k].slab].slot_size / 4; j++)
			assert_int_equal(w[j], lv[k].tag);
		live[lv[k].slab]++;
	}
	uint64_t pages_held = s->raw_pages;
	for (unsigned k = 0; k < SLAB_COUNT; k++) {
		assert_int_equal(s->slab[k].live, live[k]);
		assert_true(s->slab[k].empty <= 1);
		assert_int_equal(s->slab[k].nfree + s->slab[k].live,
		                 s->slab[k].pages * (MC_PAGE_SIZE / s->slab[k].slot_size));
		pages_held += s->slab[k].pages;
	}
	assert_int_equal(pages_held + s->pool_pages, s->next_page - s->meta_bytes / MC_PAGE_SIZE);
	assert_true(s->pages_returned > 100);
	print_message("# %u steps: %llu pages given back, %llu taken from another slab, %llu failed allocations\n",
	              (unsigned)STEPS, (unsigned long long)s->pages_returned,
	              (unsigned long long)s->pages_stolen, (unsigned long long)fails);
	for (size_t k = 0; k < n; k++)
		shm_free(s, (enum shm_slab)lv[k].slab, lv[k].off);
	while (npages)
		shm_page_free(s, pages[--npages]);
	assert_int_equal(shm_bytes_used(s), s->meta_bytes);
	free(lv);
	shm_destroy(s);
}

/* Mixed slabs: everything allocated and freed returns to the baseline. */
static void test_bytes_used_baseline(void **state)
{
	(void)state;
	struct shm *s = create_ok(4 * MIB);
	uint64_t base = shm_bytes_used(s);
	enum { N = 2000 };
	static mc_off_t d[N], in[N], x[N], b[N];
	static size_t bl[N];
	for (size_t i = 0; i < N; i++) {
		d[i] = shm_alloc(s, SLAB_DENTRY);
		in[i] = shm_alloc(s, SLAB_INODE);
		x[i] = shm_alloc(s, SLAB_DIRX);
		bl[i] = 1 + (i * 37) % 600;
		char buf[600];
		memset(buf, 'q', sizeof(buf));
		b[i] = shm_blob_new(s, buf, bl[i]);
		assert_true(d[i] && in[i] && x[i] && b[i]);
	}
	assert_true(shm_bytes_used(s) > base + N * (48 + 64 + 32));
	assert_int_equal(shm_bytes_used(s), bytes_used_summed(s));
	/* A reserved page counts whole until its slots go back. */
	size_t nres;
	mc_off_t r = shm_reserve_page(s, SLAB_DENTRY, &nres);
	assert_true(r && nres > 0);
	assert_int_equal(shm_bytes_used(s), bytes_used_summed(s));
	mc_off_t *rv = calloc(nres, sizeof(*rv));
	assert_non_null(rv);
	for (size_t k = 0; k < nres; k++, r = shm_reserve_next(s, SLAB_DENTRY, r))
		rv[k] = r;
	shm_reserve_used(s, SLAB_DENTRY);
	shm_reserve_return(s, SLAB_DENTRY, rv + 1, nres - 1);
	assert_int_equal(shm_bytes_used(s), bytes_used_summed(s));
	shm_free(s, SLAB_DENTRY, rv[0]);
	free(rv);
	for (size_t i = N; i-- > 0;) {
		shm_free(s, SLAB_DENTRY, d[i]);
		shm_free(s, SLAB_INODE, in[i]);
		shm_free(s, SLAB_DIRX, x[i]);
		shm_blob_free(s, b[i], bl[i]);
	}
	assert_int_equal(shm_bytes_used(s), base);
	for (unsigned k = 0; k < SLAB_COUNT; k++)
		assert_int_equal(s->slab[k].live, 0);
	assert_int_equal(s->alloc_failures, 0);
	shm_destroy(s);
}

/* The memfd cannot change size (a client's map never faults). */
static void test_sealed(void **state)
{
	(void)state;
	struct shm *s = create_ok(MIB);
	int seals = fcntl(s->fd, F_GET_SEALS);
	assert_true(seals >= 0);
	assert_true(seals & F_SEAL_SHRINK);
	assert_true(seals & F_SEAL_GROW);
	assert_true(seals & F_SEAL_SEAL);
	assert_int_equal(ftruncate(s->fd, (off_t)(MIB / 2)), -1);
	assert_int_equal(errno, EPERM);
	assert_int_equal(ftruncate(s->fd, (off_t)(2 * MIB)), -1);
	assert_int_equal(errno, EPERM);
	/* No more seals can be added or removed. */
	assert_int_equal(fcntl(s->fd, F_ADD_SEALS, F_SEAL_WRITE), -1);
	assert_int_equal(errno, EPERM);
	/* The header survives. */
	assert_int_equal(s->hdr->magic, MC_SHM_MAGIC);
	shm_destroy(s);
}

/* A client holding a read-only descriptor of the segment can map it for
 * reading and sees the server's writes, but cannot map it for writing or
 * upgrade a read-only map. */
static void test_readonly_reopen(void **state)
{
	(void)state;
	struct shm *s = create_ok(MIB);
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", s->fd);
	int ro = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(ro >= 0);
	void *w = mmap(NULL, s->size, PROT_READ | PROT_WRITE, MAP_SHARED, ro, 0);
	assert_ptr_equal(w, MAP_FAILED);
	assert_int_equal(errno, EACCES);
	void *r = mmap(NULL, s->size, PROT_READ, MAP_SHARED, ro, 0);
	assert_ptr_not_equal(r, MAP_FAILED);
	assert_int_equal(((const struct mc_shm_header *)r)->magic, MC_SHM_MAGIC);
	s->hdr->reserved[0] = 0x42;
	assert_int_equal(((const struct mc_shm_header *)r)->reserved[0], 0x42);
	assert_int_equal(mprotect(r, s->size, PROT_READ | PROT_WRITE), -1);
	assert_int_equal(errno, EACCES);
	munmap(r, s->size);
	close(ro);
	shm_destroy(s);
}

/* The design: clients map the segment read-only, and a bad client "can only
 * skew eviction, never corrupt the cache". The descriptor passed to clients
 * at hello is shm->fd itself (server/main.c: .shm_fd = m.shm->fd), so a
 * client receiving it must not be able to get a writable shared map of it
 * (F_SEAL_FUTURE_WRITE), while the server's own map stays writable. */
static void test_client_fd_not_writable(void **state)
{
	(void)state;
	struct shm *s = create_ok(MIB);
	int fd = dup(s->fd); /* what SCM_RIGHTS hands the client */
	assert_true(fd >= 0);
	void *w = mmap(NULL, s->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	bool writable = w != MAP_FAILED;
	if (writable)
		munmap(w, s->size);
	void *r = mmap(NULL, s->size, PROT_READ, MAP_SHARED, fd, 0);
	assert_ptr_not_equal(r, MAP_FAILED);
	bool upgradable = mprotect(r, s->size, PROT_READ | PROT_WRITE) == 0;
	munmap(r, s->size);
	close(fd);
	/* The server's own map stays writable. */
	s->hdr->reserved[1] = 1;
	shm_destroy(s);
	if (writable || upgradable)
		fail_msg("client descriptor of the segment allows writing (mmap %s, mprotect %s)",
		         writable ? "rw ok" : "refused", upgradable ? "rw ok" : "refused");
}

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The heartbeat is fresh at creation, keeps moving while the thread runs
 * (so clients trust the segment), and stops when it is stopped (so they
 * notice a dead server). */
static void test_heartbeat(void **state)
{
	(void)state;
	struct shm *s = create_ok(MIB);
	uint64_t b0 = atomic_load(&s->hdr->heartbeat_ms);
	assert_true(mono_ms() - b0 < 1000);
	assert_int_equal(shm_beat_start(s), 0);
	assert_int_equal(shm_beat_start(s), -EALREADY);
	usleep(3 * MC_HEARTBEAT_MS * 1000);
	uint64_t b1 = atomic_load(&s->hdr->heartbeat_ms);
	assert_true(b1 >= b0 + MC_HEARTBEAT_MS);
	assert_true(mono_ms() - b1 <= MC_HEARTBEAT_STALE_MS);
	shm_beat_stop(s);
	uint64_t b2 = atomic_load(&s->hdr->heartbeat_ms);
	usleep(2 * MC_HEARTBEAT_MS * 1000);
	assert_int_equal(atomic_load(&s->hdr->heartbeat_ms), b2);
	shm_beat_stop(s);                      /* twice: a no-op */
	assert_int_equal(shm_beat_start(s), 0); /* shm_destroy stops it */
	shm_destroy(s);
}

/* Resident 4 KiB pages among the segment's 64 KiB pages [from, to). */
static size_t resident(const struct shm *s, uint32_t from, uint32_t to)
{
	size_t len = (size_t)(to - from) << MC_PAGE_SHIFT, n = 0;
	long os = sysconf(_SC_PAGESIZE);
	unsigned char *vec = malloc(len / (size_t)os);
	assert_non_null(vec);
	assert_int_equal(mincore((char *)s->base + ((uint64_t)from << MC_PAGE_SHIFT), len, vec), 0);
	for (size_t i = 0; i < len / (size_t)os; i++)
		n += vec[i] & 1;
	free(vec);
	return n;
}

/* shm.c note 9: the pages after the last handed out are faulted in, a run
 * at a time, never counted as used, and the slabs carve them as any
 * fresh page (zero, seqs from 0). */
static void test_populate_ahead(void **state)
{
	(void)state;
	struct shm *s = create_ok(64 * MIB);
	size_t per = MC_PAGE_SIZE / (size_t)sysconf(_SC_PAGESIZE);
	uint32_t next = s->next_page;
	uint64_t used = shm_bytes_used(s);
	assert_int_equal(resident(s, next, next + 16), 0);
	shm_populate_ahead(s, 8);
	assert_int_equal(resident(s, next, next + 8), 8 * per);
	assert_int_equal(resident(s, next + 8, next + 16), 0);
	assert_int_equal(shm_bytes_used(s), used);
	/* Half the run left: nothing more yet. */
	shm_populate_ahead(s, 8);
	assert_int_equal(resident(s, next + 8, next + 16), 0);
	/* Five pages carved: the next run goes on from the last populated. */
	size_t per_page = MC_PAGE_SIZE / sizeof(struct mc_dentry);
	for (size_t i = 0; i < 5 * per_page; i++) {
		mc_off_t d = shm_alloc(s, SLAB_DENTRY);
		assert_true(d != 0);
		assert_int_equal(seq_of(s, d), 0);
		const char *b = shm_at(s, d);
		for (size_t k = 0; k < sizeof(struct mc_dentry); k++)
			assert_int_equal(b[k], 0);
	}
	assert_int_equal(s->next_page, next + 5);
	shm_populate_ahead(s, 8);
	assert_int_equal(resident(s, next + 8, next + 13), 5 * per);
	assert_int_equal(resident(s, next + 13, next + 16), 0);
	/* Never past the segment's end. */
	shm_populate_ahead(s, 1u << 30);
	assert_int_equal(atomic_load(&s->populated), s->hdr->npages);
	assert_int_equal(resident(s, next, s->hdr->npages),
	                 (size_t)(s->hdr->npages - next) * per);
	shm_destroy(s);
}

struct populater {
	struct shm *s;
	atomic_bool stop;
};

static void *populate_main(void *arg)
{
	struct populater *p = arg;
	while (!atomic_load(&p->stop))
		shm_populate_ahead(p->s, 4);
	return NULL;
}

/* Fill an 8 MiB segment with inode and dentry slots, nthreads threads
 * populating ahead meanwhile: the allocations made. */
static size_t fill_populating(int nthreads, uint32_t *next_page)
{
	struct shm *s = create_ok(8 * MIB);
	struct populater p = { .s = s };
	pthread_t th[2];
	for (int i = 0; i < nthreads; i++)
		assert_int_equal(pthread_create(&th[i], NULL, populate_main, &p), 0);
	size_t n = 0;
	mc_off_t off;
	while ((off = shm_alloc(s, n % 3 ? SLAB_DENTRY : SLAB_INODE))) {
		/* Fresh pages: nothing wrote their seqs but the slab. */
		assert_int_equal(seq_of(s, off), 0);
		n++;
	}
	atomic_store(&p.stop, true);
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(s->slab[SLAB_DENTRY].live + s->slab[SLAB_INODE].live, n);
	*next_page = s->next_page;
	shm_destroy(s);
	return n;
}

/* Threads populating ahead while the slabs carve pages (under the lock
 * the namespace would hold): no byte of a fresh page changes (its seqs
 * start at 0), and the segment fills up exactly as without them. */
static void test_populate_ahead_concurrent(void **state)
{
	(void)state;
	uint32_t pages_alone, pages_with;
	size_t alone = fill_populating(0, &pages_alone);
	size_t with = fill_populating(2, &pages_with);
	assert_true(alone > 0);
	assert_int_equal(with, alone);
	assert_int_equal(pages_with, pages_alone);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_bounds),
		cmocka_unit_test(test_header),
		cmocka_unit_test(test_alloc_distinct_zeroed_typed),
		cmocka_unit_test(test_free_seq_and_reuse),
		cmocka_unit_test(test_blob_classes),
		cmocka_unit_test(test_fill_until_full),
		cmocka_unit_test(test_page_retype),
		cmocka_unit_test(test_page_new_free),
		cmocka_unit_test(test_random_churn),
		cmocka_unit_test(test_bytes_used_baseline),
		cmocka_unit_test(test_sealed),
		cmocka_unit_test(test_readonly_reopen),
		cmocka_unit_test(test_client_fd_not_writable),
		cmocka_unit_test(test_heartbeat),
		cmocka_unit_test(test_populate_ahead),
		cmocka_unit_test(test_populate_ahead_concurrent),
	};
	return cmocka_run_group_tests_name("shm", tests, NULL, NULL);
}
