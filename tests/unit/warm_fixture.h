/* warm_fixture.h - what the warming unit tests (test-warm.c,
 * test-warm_mark.c) share: a namespace over a store and segment
 * (ns_fixture.h), /d with files that a restart left uncached, and batches
 * of /d read from a store snapshot as a warmer reads them (header only;
 * include after cmocka.h). */
#ifndef MC_TEST_WARM_FIXTURE_H
#define MC_TEST_WARM_FIXTURE_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ns.h"
#include "ops.h"
#include "store.h"
#include "store_read.h"
#include "ns_fixture.h"

#define MIB (1ull << 20)
#define P(s) (s), strlen(s)
#define NFILES 100
#define BATCH 40

static const struct cred root_cred = { .uid = 0, .gid = 0 };

/* /d with n files f0000.. after a restart: /d cached, none of its files.
 * Its inode number. */
static inline uint64_t make_dir(struct fx *f, int n)
{
	char p[64];
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/d"), 0755, NULL), 0);
	for (int i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "/d/f%04d", i);
		assert_int_equal(ns_open(f->ns, &root_cred, P(p), O_CREAT | O_EXCL | O_WRONLY, 0644,
		                         false, NULL),
		                 0);
	}
	ns_fixture_reopen(f);
	ns_attr a;
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/d"), false, &a), 0);
	assert_int_equal(ns_fixture_counts(f).positive, 1);
	return a.ino;
}

struct batch {
	struct ns_warm_ent v[NFILES];
	size_t n, max;
};

static inline int collect(void *arg, const char *name, size_t namelen, uint64_t ino,
                          uint8_t dtype, const struct mc_inode_rec *rec, const char *target,
                          size_t tlen)
{
	struct batch *b = arg;
	ns_warm_ent_set(&b->v[b->n++], name, namelen, ino, dtype, rec, target, tlen);
	return b->n == b->max ? 1 : 0;
}

/* Up to max entries of dir after the name after (NULL: from the first),
 * read from a snapshot as a warmer does. */
static inline void read_batch(struct fx *f, uint64_t dir, const char *after, size_t max,
                              struct batch *b)
{
	struct store_snap *sn;
	b->n = 0;
	b->max = max;
	assert_int_equal(store_snap_new(f->st, &sn), 0);
	assert_int_equal(store_snap_take(sn), 0);
	assert_int_equal(store_snap_scan_dir(sn, dir, after, after ? strlen(after) : 0, collect, b),
	                 0);
	store_snap_free(sn);
}

#endif
