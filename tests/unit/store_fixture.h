/* store_fixture.h - what the store's unit tests share: a store directory
 * under a fresh temporary directory, a store_open and store_commit that
 * fail the test on error, batches of creates and the names a scan passes
 * (header only; include after cmocka.h). */
#ifndef MC_TEST_STORE_FIXTURE_H
#define MC_TEST_STORE_FIXTURE_H

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

/* A regular file's inode record, mtime its ino. */
static inline struct mc_inode_rec file_rec(uint64_t ino, uint64_t size)
{
	return (struct mc_inode_rec){ .ino = ino, .mode = S_IFREG | 0644, .nlink = 1,
	                              .size = size, .mtime_ns = (int64_t)ino };
}

/* The name create_batch gives inode ino: "f<ino>" in 16 bytes. */
static inline void store_fixture_name(char name[32], uint64_t ino)
{
	snprintf(name, 32, "f%015llu", (unsigned long long)ino);
}

/* Batch seq: n files created in directory 1, named by store_fixture_name,
 * inodes from *ino on, and the directory's own inode. */
static inline void create_batch(struct journal_batch *b, uint64_t seq, unsigned n, uint64_t *ino)
{
	char name[32];
	journal_batch_reset(b, seq);
	for (unsigned i = 0; i < n; i++, (*ino)++) {
		struct mc_inode_rec r = file_rec(*ino, 0);
		store_fixture_name(name, *ino);
		assert_int_equal(journal_put_inode(b, &r, NULL, 0), 0);
		assert_int_equal(journal_put_dentry(b, 1, name, 16, *ino, DT_REG), 0);
	}
	struct mc_inode_rec root = { .ino = 1, .mode = S_IFDIR | 0755, .nlink = 2,
	                             .size = *ino, .mtime_ns = (int64_t)seq };
	assert_int_equal(journal_put_inode(b, &root, NULL, 0), 0);
	b->next_ino = *ino;
}

/* The first 8 names a directory scan passes to names_cb (-E2BIG past 8,
 * or for a name of 32 bytes or more). */
struct names {
	char v[8][32];
	int n;
};

static inline int names_cb(void *arg, const char *name, size_t namelen, uint64_t ino,
                           uint8_t dtype)
{
	struct names *nm = arg;
	(void)ino;
	(void)dtype;
	if (nm->n == 8 || namelen >= sizeof(nm->v[0]))
		return -E2BIG;
	memcpy(nm->v[nm->n], name, namelen + 1);
	nm->n++;
	return 0;
}

#endif
