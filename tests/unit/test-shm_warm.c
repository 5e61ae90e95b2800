/* test-shm_warm.c - unit tests of the segment's side of warming (server/
 * shm.c note 10; test-shm.c has the rest of shm.c): shm_populate_meta
 * faults in a page of the hash buckets once. */
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

static struct shm *create_ok(uint64_t size)
{
	struct shm *s = NULL;
	assert_int_equal(shm_create(size, &s), 0);
	return s;
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
	const struct mc_bucket *b = &s->dbuckets[s->hdr->dbucket_mask / 2];
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_populate_meta),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
