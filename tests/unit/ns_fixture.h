/* ns_fixture.h - what the namespace's unit tests share: a store under a
 * fresh temporary directory, a segment and a namespace over them, and a
 * commit of everything journaled (header only; include after cmocka.h). */
#ifndef MC_TEST_NS_FIXTURE_H
#define MC_TEST_NS_FIXTURE_H

#include <stdint.h>
#include <stdlib.h>

#include "fixture.h"
#include "ns.h"
#include "shm.h"
#include "store.h"

struct fx {
	char dir[256];
	struct store *st;
	struct shm *shm;
	struct ns *ns;
};

/* A fixture with a segment of size bytes, its directory named after name,
 * its store opened with o. */
static inline int ns_fixture_setup_opts(void **state, const char *name, uint64_t size,
                                        const struct store_opts *o)
{
	struct fx *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	fixture_template(f->dir, sizeof(f->dir), name);
	if (!mkdtemp(f->dir) || store_open(f->dir, o, &f->st) < 0 ||
	    shm_create(size, &f->shm) < 0 || ns_new(f->shm, f->st, NULL, &f->ns) < 0) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

/* The same with a root directory of mode 0755 and the store's defaults. */
static inline int ns_fixture_setup(void **state, const char *name, uint64_t size)
{
	struct store_opts o = { .root_mode = 0755 };
	return ns_fixture_setup_opts(state, name, size, &o);
}

static inline int ns_fixture_teardown(void **state)
{
	struct fx *f = *state;
	ns_free(f->ns);
	shm_destroy(f->shm);
	store_close(f->st);
	fixture_rmtree(f->dir);
	free(f);
	return 0;
}

/* The namespace's counters now. */
static inline struct ns_counts ns_fixture_counts(struct fx *f)
{
	struct ns_counts c;
	ns_get_counts(f->ns, &c);
	return c;
}

/* Commit and publish every batch journaled. */
static inline void commit_all(struct fx *f)
{
	struct journal_batch *b;
	while ((b = ns_swap(f->ns))) {
		struct store_commit_times t;
		assert_int_equal(store_commit(f->st, b, &t), 0);
		ns_publish(f->ns, b);
	}
}

/* A restart: everything committed, an empty cache of the same size. */
static inline void ns_fixture_reopen(struct fx *f)
{
	commit_all(f);
	ns_free(f->ns);
	uint64_t size = f->shm->size;
	shm_destroy(f->shm);
	assert_int_equal(shm_create(size, &f->shm), 0);
	assert_int_equal(ns_new(f->shm, f->st, NULL, &f->ns), 0);
}

#endif
