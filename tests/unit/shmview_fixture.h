/* shmview_fixture.h - what the unit tests of the client's shared-memory
 * read path (test-shmview.c, test-shmview_time.c) share: a segment built
 * by the real server modules (shm, dcache, ns over an LMDB store in a
 * temporary directory), the client's view of it, and the check that a
 * local answer equals the server's (header only; include after cmocka.h). */
#ifndef MC_TEST_SHMVIEW_FIXTURE_H
#define MC_TEST_SHMVIEW_FIXTURE_H

#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ns.h"
#include "ops.h"
#include "shm.h"
#include "shmview_impl.h"
#include "store.h"
#include "fixture.h"

struct fx {
	char dir[64];
	struct store *st;
	struct shm *shm;
	struct ns *ns;
	struct cred root;
	struct view *v;
};

/* A fixture whose temporary directory, /tmp/mc-<name>-XXXXXX, is named
 * after name. */
static inline int shmview_fixture_setup(void **state, const char *name)
{
	struct fx *f = calloc(1, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/mc-%s-XXXXXX", name);
	assert_non_null(mkdtemp(f->dir));
	struct store_opts so = { .root_mode = 0755 };
	assert_int_equal(store_open(f->dir, &so, &f->st), 0);
	assert_int_equal(shm_create(8u << 20, &f->shm), 0);
	assert_int_equal(ns_new(f->shm, f->st, NULL, &f->ns), 0);
	f->v = calloc(1, sizeof(*f->v));
	assert_int_equal(view_init(f->v, f->shm->base, f->shm->size), 0);
	view_default_limits(&f->v->lim);
	*state = f;
	return 0;
}

static inline int shmview_fixture_teardown(void **state)
{
	struct fx *f = *state;
	ns_free(f->ns);
	shm_destroy(f->shm);
	store_close(f->st);
	fixture_rmtree(f->dir);
	free(f->v);
	free(f);
	return 0;
}

#define P(s) (s), strlen(s)

static inline void mkfile(struct fx *f, const char *p)
{
	assert_int_equal(ns_open(f->ns, &f->root, P(p), O_CREAT | O_EXCL | O_WRONLY, 0644, false, NULL), 0);
}

/* The local answer equals the server's, field by field. */
static inline void same_as_server(struct fx *f, const char *p, bool follow)
{
	struct stat st;
	ns_attr a;
	int lrc = view_stat(f->v, P(p), follow, &st);
	int src = ns_stat(f->ns, &f->root, P(p), follow, &a);
	assert_int_not_equal(lrc, VIEW_MISS);
	assert_int_equal(lrc, src);
	if (lrc == 0) {
		assert_int_equal(st.st_ino, a.ino);
		assert_int_equal(st.st_mode, a.mode);
		assert_int_equal(st.st_nlink, a.nlink);
		assert_int_equal(st.st_size, S_ISDIR(a.mode) ? 40 + 20 * (off_t)a.size : (off_t)a.size);
		assert_int_equal((int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec, a.mtime_ns);
	}
}

#endif
