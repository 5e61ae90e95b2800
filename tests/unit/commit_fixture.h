/* commit_fixture.h - the fixture test-commit.c and test-commit_wait.c share:
 * a real LMDB store in a temporary directory, a namespace over an 8 MiB
 * segment, and the committer started on them (header only: each test
 * program is one source file). */
#ifndef MC_TEST_COMMIT_FIXTURE_H
#define MC_TEST_COMMIT_FIXTURE_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
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

#include "commit.h"
#include "commit_sem.h"
#include "mc_shm.h"
#include "ns.h"
#include "ops.h"
#include "shm.h"
#include "stats.h"
#include "store.h"
#include "fixture.h"

#define P(s) (s), strlen(s)

static const struct cred root_cred = { .uid = 0, .gid = 0 };

struct fx {
	char dir[256];
	struct store_opts so;
	struct ns_opts no;
	struct store *st;
	struct shm *shm;
	struct ns *ns;
	struct commit *c;
};

static inline int open_all(struct fx *f)
{
	if (!f->st && store_open(f->dir, &f->so, &f->st) < 0)
		return -1;
	if (shm_create(8u << 20, &f->shm) < 0)
		return -1;
	if (ns_new(f->shm, f->st, &f->no, &f->ns) < 0)
		return -1;
	return 0;
}

static inline void close_ns(struct fx *f)
{
	ns_free(f->ns);
	shm_destroy(f->shm);
	f->ns = NULL;
	f->shm = NULL;
}

static inline int setup_opts(void **state, const struct store_opts *o)
{
	struct fx *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	fixture_template(f->dir, sizeof(f->dir), "test-commit");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	f->so = *o;
	*state = f;
	return open_all(f);
}

static inline int setup(void **state)
{
	struct store_opts o = { .root_mode = 0755 };
	return setup_opts(state, &o);
}

/* A store that cannot grow past 128 KiB. */
static inline int setup_tiny(void **state)
{
	struct store_opts o = { .root_mode = 0755, .map_size = 64 << 10,
	                        .map_size_max = 128 << 10 };
	return setup_opts(state, &o);
}

static inline int teardown(void **state)
{
	struct fx *f = *state;
	commit_stop(f->c);
	if (f->ns)
		close_ns(f);
	store_close(f->st);
	fixture_rmtree(f->dir);
	free(f);
	return 0;
}

static inline void start(struct fx *f, unsigned interval_ms)
{
	assert_int_equal(commit_start(f->ns, f->st, interval_ms, &f->c), 0);
	assert_non_null(f->c);
}

static inline uint64_t load(const _Atomic uint64_t *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

static inline void mkfile(struct fx *f, const char *path)
{
	int rc = ns_open(f->ns, &root_cred, P(path), O_CREAT | O_EXCL | O_WRONLY, 0644, false, NULL);
	if (rc != 0)
		fail_msg("create(%s): %d", path, rc);
}

static inline int stat_err(struct fx *f, const char *path)
{
	ns_attr a;
	return ns_stat(f->ns, &root_cred, P(path), true, &a);
}

static inline void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}


static inline double ms_since(const struct timespec *t0)
{
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

#endif
