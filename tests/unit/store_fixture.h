/* store_fixture.h - what the store's unit tests share: a store directory
 * under a fresh temporary directory, and a store_open and store_commit that
 * fail the test on error (header only; include after cmocka.h). */
#ifndef MC_TEST_STORE_FIXTURE_H
#define MC_TEST_STORE_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>

#include "fixture.h"
#include "journal.h"
#include "store.h"

struct fixture {
	char tmp[256];     /* removed at teardown */
	char dir[300];     /* the store directory, tmp/d (not made) */
};

/* A fixture whose temporary directory is named after name. */
static inline int store_fixture_setup(void **state, const char *name)
{
	struct fixture *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	fixture_template(f->tmp, sizeof(f->tmp), name);
	if (!mkdtemp(f->tmp)) {
		free(f);
		return -1;
	}
	snprintf(f->dir, sizeof(f->dir), "%s/d", f->tmp);
	*state = f;
	return 0;
}

static inline int store_fixture_teardown(void **state)
{
	struct fixture *f = *state;
	fixture_rmtree(f->tmp);
	free(f);
	return 0;
}

static inline struct store *open_ok(const char *dir, const struct store_opts *o)
{
	struct store *s = NULL;
	int rc = store_open(dir, o, &s);
	if (rc != 0)
		fail_msg("store_open(%s): %d", dir, rc);
	return s;
}

static inline void commit_ok(struct store *s, const struct journal_batch *b)
{
	int rc = store_commit(s, b, NULL);
	if (rc != 0)
		fail_msg("store_commit(seq %llu): %d", (unsigned long long)b->seq, rc);
}

#endif
