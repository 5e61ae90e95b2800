/* test-inode.c - the inode cache (server/inode.c) as the lock-free readers
 * see it: whatever a reader copies between two equal reads of an inode's
 * seq is what the server wrote there, while the server adds and drops
 * symlinks under it. The reader is the client's own (client/shmview_impl.h:
 * view_at, seq_read, seq_same), as view_readlink uses it. */
#include <errno.h>
#include <pthread.h>
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

#include <cmocka.h>

#include "inode.h"
#include "shm.h"
#include "shmview_impl.h"

#define TARGET_LEN 100u
#define RUN_NS     1500000000ull   /* bounded: at most this long */
#define BAD_ENOUGH 8u              /* stop early once this many bad copies were seen */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct race {
	struct shm *shm;
	struct view v;
	char target[TARGET_LEN];
	_Atomic mc_off_t slot;     /* the inode the writer last added */
	_Atomic bool stop;
	_Atomic uint64_t good, bad;
};

/* One readlink as view_readlink does it, on the inode at off: 1 when a copy
 * was vouched for by the seq, 0 when the reader would retry. */
static int read_once(struct race *r, mc_off_t off, char *buf)
{
	const struct mc_inode *i = view_at(&r->v, off, sizeof(*i), MC_PT_INODE);
	if (!i)
		return 0;
	uint32_t s0 = seq_read(&i->seq);
	if (s0 & 1)
		return 0;
	uint16_t mode = LD(i->mode), flags = LD(i->flags);
	uint32_t len = LD(i->u.lnk.len);
	mc_off_t blob = LD(i->u.lnk.blob);
	if (!seq_same(&i->seq, s0) || !(flags & MC_I_LIVE) || !S_ISLNK(mode) ||
	    len == 0 || len > MC_SYMLINK_MAX)
		return 0;
	const char *t = view_at(&r->v, blob, len, blob_type(len));
	if (!t)
		return 0;
	memcpy(buf, t, len);
	if (!seq_same(&i->seq, s0))
		return 0;
	return len == TARGET_LEN ? 1 : -1;
}

static void *reader_main(void *arg)
{
	struct race *r = arg;
	char buf[MC_SYMLINK_MAX];
	while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
		mc_off_t off = atomic_load_explicit(&r->slot, memory_order_acquire);
		int rc = read_once(r, off, buf);
		if (rc == 0)
			continue;
		if (rc < 0 || memcmp(buf, r->target, TARGET_LEN) != 0)
			atomic_fetch_add_explicit(&r->bad, 1, memory_order_relaxed);
		else
			atomic_fetch_add_explicit(&r->good, 1, memory_order_relaxed);
	}
	return NULL;
}

/* A symlink's target is never seen freed under an unchanged seq: dropping
 * the inode frees the target's blob (whose first word then links the free
 * list), which a reader copying it must see as a moved seq. */
static void test_readers_never_see_freed_target(void **state)
{
	(void)state;
	struct race *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	assert_int_equal(shm_create(4u << 20, &r->shm), 0);
	assert_int_equal(view_init(&r->v, r->shm->base, r->shm->size), 0);
	view_default_limits(&r->v.lim);
	memset(r->target, 'x', sizeof(r->target));
	/* A second blob of the class, so a freed target's link is not 0. */
	mc_off_t other = shm_blob_new(r->shm, r->target, TARGET_LEN);
	assert_int_not_equal(other, 0);

	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, reader_main, r), 0);
	uint64_t end = now_ns() + RUN_NS, ino = 100;
	unsigned rounds = 0;
	while (now_ns() < end && atomic_load_explicit(&r->bad, memory_order_relaxed) < BAD_ENOUGH) {
		for (unsigned k = 0; k < 256; k++) {
			struct mc_inode_rec rec = { .ino = ino++, .mode = S_IFLNK | 0777, .nlink = 1,
			                            .size = TARGET_LEN };
			mc_off_t off = inode_add(r->shm, &rec, r->target, TARGET_LEN);
			assert_int_not_equal(off, 0);
			atomic_store_explicit(&r->slot, off, memory_order_release);
			inode_del(r->shm, off);
		}
		rounds++;
	}
	atomic_store(&r->stop, true);
	pthread_join(th, NULL);
	uint64_t good = atomic_load(&r->good), bad = atomic_load(&r->bad);
	print_message("# %u rounds, %llu good copies, %llu bad\n", rounds,
	              (unsigned long long)good, (unsigned long long)bad);
	shm_blob_free(r->shm, other, TARGET_LEN);
	shm_destroy(r->shm);
	free(r);
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_readers_never_see_freed_target),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
