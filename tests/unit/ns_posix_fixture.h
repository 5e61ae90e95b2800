/* ns_posix_fixture.h - what test-ns.c and its siblings (test-ns_rename.c,
 * test-ns_perm.c, test-ns_commit.c, test-ns_memory.c, test-ns_readdir.c)
 * share: a real LMDB store in a temporary directory and a namespace over a
 * segment of a given size, a group commit and a restart by hand, and the
 * calls by path the tests make (header only: each test program is one
 * source file). */
#ifndef MC_TEST_NS_POSIX_FIXTURE_H
#define MC_TEST_NS_POSIX_FIXTURE_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "journal.h"
#include "mc_shm.h"
#include "ns.h"
#include "ops.h"
#include "shm.h"
#include "store.h"
#include "fixture.h"

#define MIB (1ull << 20)
#define P(s) (s), strlen(s)

static const struct cred root_cred = { .uid = 0, .gid = 0 };
static const struct cred user_cred = { .uid = 1000, .gid = 1000 };
static const struct cred other_cred = { .uid = 1001, .gid = 1001 };

struct fx {
	char dir[256];
	struct store *st;
	struct shm *shm;
	struct ns *ns;
	uint64_t shm_size;
};

static inline int fx_open_ns(struct fx *f)
{
	if (shm_create(f->shm_size, &f->shm) < 0)
		return -1;
	if (ns_new(f->shm, f->st, NULL, &f->ns) < 0) {
		shm_destroy(f->shm);
		f->shm = NULL;
		return -1;
	}
	return 0;
}

static inline void fx_close_ns(struct fx *f)
{
	ns_free(f->ns);
	shm_destroy(f->shm);
	f->ns = NULL;
	f->shm = NULL;
}

static inline int setup_size(void **state, uint64_t size)
{
	struct fx *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	fixture_template(f->dir, sizeof(f->dir), "test-ns");
	if (!mkdtemp(f->dir))
		goto fail;
	struct store_opts o = { .root_mode = 0755 };
	if (store_open(f->dir, &o, &f->st) < 0)
		goto fail;
	f->shm_size = size;
	if (fx_open_ns(f) < 0)
		goto fail;
	*state = f;
	return 0;
fail:
	if (f->st)
		store_close(f->st);
	free(f);
	return -1;
}

static inline int setup(void **state) { return setup_size(state, 8 * MIB); }
static inline int setup_small(void **state) { return setup_size(state, MIB); }

static inline int teardown(void **state)
{
	struct fx *f = *state;
	if (f->ns)
		fx_close_ns(f);
	store_close(f->st);
	fixture_rmtree(f->dir);
	free(f);
	return 0;
}

/* One group commit by hand: swap, write, publish. false when nothing was
 * pending. */
static inline bool commit_now(struct fx *f)
{
	struct journal_batch *b = ns_swap(f->ns);
	if (!b)
		return false;
	struct store_commit_times t;
	int rc = store_commit(f->st, b, &t);
	if (rc != 0)
		fail_msg("store_commit: %d", rc);
	ns_publish(f->ns, b);
	return true;
}

/* Drop the cache and bring it back over the same store. */
static inline void reopen(struct fx *f)
{
	while (commit_now(f))
		;
	fx_close_ns(f);
	assert_int_equal(fx_open_ns(f), 0);
}

static inline ns_attr st_ok(struct fx *f, const char *path)
{
	ns_attr a;
	int rc = ns_stat(f->ns, &root_cred, P(path), true, &a);
	if (rc != 0)
		fail_msg("stat(%s): %d", path, rc);
	return a;
}

static inline ns_attr lst_ok(struct fx *f, const char *path)
{
	ns_attr a;
	int rc = ns_stat(f->ns, &root_cred, P(path), false, &a);
	if (rc != 0)
		fail_msg("lstat(%s): %d", path, rc);
	return a;
}

static inline int st_err(struct fx *f, const struct cred *c, const char *path)
{
	ns_attr a;
	return ns_stat(f->ns, c, P(path), true, &a);
}

static inline void mkdir_ok(struct fx *f, const char *path, uint32_t mode)
{
	int rc = ns_mkdir(f->ns, &root_cred, P(path), mode, NULL);
	if (rc != 0)
		fail_msg("mkdir(%s): %d", path, rc);
}

static inline uint64_t create_as(struct fx *f, const struct cred *c, const char *path, uint32_t mode)
{
	ns_attr a;
	int rc = ns_open(f->ns, c, P(path), O_CREAT | O_EXCL | O_WRONLY, mode, false, &a);
	if (rc != 0)
		fail_msg("create(%s): %d", path, rc);
	return a.ino;
}

static inline uint64_t create_ok(struct fx *f, const char *path)
{
	return create_as(f, &root_cred, path, 0644);
}

static inline int create_err(struct fx *f, const struct cred *c, const char *path)
{
	return ns_open(f->ns, c, P(path), O_CREAT | O_EXCL | O_WRONLY, 0644, false, NULL);
}

static inline int do_rename(struct fx *f, const char *a, const char *b)
{
	return ns_rename(f->ns, &root_cred, P(a), P(b));
}

/* Create n files in dir, every third with a longer name. */
static inline void fill_dir(struct fx *f, const char *dir, int n)
{
	char p[256];
	for (int i = 0; i < n; i++) {
		snprintf(p, sizeof(p), i % 3 ? "%s/file-%d" : "%s/a-longer-file-name-%d", dir, i);
		create_ok(f, p);
	}
}

#endif
