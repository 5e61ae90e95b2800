/* test-inode.c - the inode cache (server/inode.c) as the lock-free readers
 * see it: whatever a reader copies between two equal reads of an inode's
 * seq is what the server wrote there, while the server adds and drops
 * symlinks under it. The writer is a forked process sharing the segment,
 * as the server is; the reader uses the client's own primitives
 * (client/shmview_impl.h: view_at, seq_read, seq_same) as view_readlink
 * does. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

/* What the writer process and the reader share besides the segment. */
struct ctl {
	_Atomic mc_off_t slot;     /* the inode the writer last added */
	_Atomic bool stop;
	_Atomic uint64_t rounds;
};

struct race {
	struct shm *shm;
	struct view v;
	char target[TARGET_LEN];
	struct ctl *ctl;
};

/* One readlink as view_readlink does it, on the inode at off: 1 when a copy
 * was vouched for by the seq, -1 when it has the wrong length, 0 when the
 * reader would retry. */
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

/* The server's side, in a process of its own as the server is: add a
 * symlink, show it to the reader, drop it, until told to stop. */
static void writer_main(struct race *r, uint64_t end)
{
	uint64_t ino = 100;
	while (!atomic_load_explicit(&r->ctl->stop, memory_order_relaxed) && now_ns() < end) {
		for (unsigned k = 0; k < 256; k++) {
			struct mc_inode_rec rec = { .ino = ino++, .mode = S_IFLNK | 0777, .nlink = 1,
			                            .size = TARGET_LEN };
			mc_off_t off = inode_add(r->shm, &rec, r->target, TARGET_LEN);
			if (!off)
				_exit(2);
			atomic_store_explicit(&r->ctl->slot, off, memory_order_release);
			inode_del(r->shm, off);
		}
		atomic_fetch_add_explicit(&r->ctl->rounds, 1, memory_order_relaxed);
	}
	_exit(0);
}

/* A symlink's target is never seen freed under an unchanged seq: dropping
 * the inode frees the target's blob (whose first word then links the free
 * list), which a reader copying it must see as a moved seq. */
static void test_readers_never_see_freed_target(void **state)
{
	(void)state;
	struct race *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	r->ctl = mmap(NULL, sizeof(*r->ctl), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
	              -1, 0);
	assert_true(r->ctl != MAP_FAILED);
	assert_int_equal(shm_create(4u << 20, &r->shm), 0);
	assert_int_equal(view_init(&r->v, r->shm->base, r->shm->size), 0);
	view_default_limits(&r->v.lim);
	memset(r->target, 'x', sizeof(r->target));
	/* A second blob of the class, so a freed target's link is not 0. */
	mc_off_t other = shm_blob_new(r->shm, r->target, TARGET_LEN);
	assert_int_not_equal(other, 0);

	uint64_t end = now_ns() + RUN_NS, good = 0, bad = 0;
	pid_t w = fork();
	assert_true(w >= 0);
	if (w == 0)
		writer_main(r, end);
	char buf[MC_SYMLINK_MAX];
	while (now_ns() < end && bad < BAD_ENOUGH) {
		for (unsigned k = 0; k < 1024; k++) {
			mc_off_t off = atomic_load_explicit(&r->ctl->slot, memory_order_acquire);
			int rc = read_once(r, off, buf);
			if (rc < 0 || (rc > 0 && memcmp(buf, r->target, TARGET_LEN) != 0))
				bad++;
			else if (rc > 0)
				good++;
		}
	}
	atomic_store(&r->ctl->stop, true);
	int st = -1;
	assert_int_equal(waitpid(w, &st, 0), w);
	print_message("# %llu writer rounds, %llu good copies, %llu bad\n",
	              (unsigned long long)atomic_load(&r->ctl->rounds),
	              (unsigned long long)good, (unsigned long long)bad);
	shm_blob_free(r->shm, other, TARGET_LEN);
	shm_destroy(r->shm);
	munmap(r->ctl, sizeof(*r->ctl));
	free(r);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(bad, 0);
	assert_true(good > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_readers_never_see_freed_target),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
