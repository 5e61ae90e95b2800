/* extent_fixture.h - the segment-and-extent-cache fixture test-extent_map.c
 * and test-extent_state.c share (header only; include after cmocka.h). */
#ifndef MC_TEST_EXTENT_FIXTURE_H
#define MC_TEST_EXTENT_FIXTURE_H

#include <stdint.h>
#include <stdlib.h>

#include "extent.h"
#include "mc_shm.h"
#include "shm.h"

struct fx {
	struct shm *s;
	struct extent_cache c;
	mc_off_t t;
};

/* A segment of size bytes and an extent cache on it; the caller makes f->t. */
static inline struct fx *fx_alloc(uint64_t size)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	assert_int_equal(shm_create(size, &f->s), 0);
	extent_cache_init(&f->c, f->s);
	return f;
}

static inline void fx_free(struct fx *f)
{
	extent_cache_fini(&f->c);
	shm_destroy(f->s);
	free(f);
}

static inline const struct mc_estate *R(const struct fx *f, mc_eref ref)
{
	return erec_at(&f->c, ref);
}

#endif
