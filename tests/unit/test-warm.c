/* test-warm.c - unit tests of warming (server/ns_warm.c, server/warm.c)
 * over a real LMDB store and segment: the segment's pages are faulted in
 * before the commit semaphore is taken, the warm-up stops at the low
 * watermark, the slots a stage reserves and fills ahead are linked by the
 * insert alone, never evicted, and accounted exactly through partial use,
 * a shrink and a stop (ns_warm.c note 6), a lock held briefly is spun
 * for, two warmers running against mutations, commits and evictions leave
 * the cache equal to the store, and a warmer reads in the SCHED_IDLE
 * class and inserts outside it. The reader's mark (note 5) is in
 * test-warm_mark.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmocka.h>

#include "dcache.h"
#include "fsck.h"
#include "ns.h"
#include "ns_impl.h"
#include "shrink.h"
#include "warm.h"

#include "warm_fixture.h"

static int setup(void **state)
{
	return ns_fixture_setup(state, "test-warm", 16 * MIB);
}

static int teardown(void **state)
{
	return ns_fixture_teardown(state);
}

/* The pages the inserts will carve are faulted in by ns_warm_prepare,
 * which a warmer calls before it takes the commit semaphore; ns_warm_dir,
 * called with the semaphore held (a committer may wait for it), faults
 * none in beyond those the slabs carve. */
static void test_prepare_populates_insert_does_not(void **state)
{
	struct fx *f = *state;
	static struct batch b;
	struct ns_warm_mark mark = { 0 };
	struct ns_warm_res res;
	uint64_t dir = make_dir(f, NFILES);
	read_batch(f, dir, NULL, NFILES, &b);
	uint32_t populated = atomic_load(&f->shm->populated);
	assert_int_equal(ns_warm_dir(f->ns, NULL, dir, b.v, b.n, true, &mark, &res), 0);
	assert_int_equal(res.added, NFILES);
	assert_int_equal(atomic_load(&f->shm->populated), populated);
	ns_warm_prepare(f->ns);
	assert_true(atomic_load(&f->shm->populated) > atomic_load(&f->shm->fresh_next));
}

/* The segment filled to within 4 KiB of the low watermark: the warm-up
 * inserts while use is below it and not one entry more, though it asks
 * for the use only once the inserts since the last time may have taken
 * what was left. */
static void test_stops_at_low_watermark(void **state)
{
	struct fx *f = *state;
	static struct batch b;
	static char pad[4096];
	struct ns_warm_mark mark = { 0 };
	struct ns_warm_res res;
	uint64_t dir = make_dir(f, 2 * NFILES);
	struct ns_counts c = ns_fixture_counts(f);
	while (c.shm_used + MC_PAGE_SIZE < c.low_bytes) {
		assert_int_not_equal(shm_page_new(f->shm, MC_PT_EXTENT), 0);
		c = ns_fixture_counts(f);
	}
	while (c.shm_used + sizeof(pad) < c.low_bytes) {
		assert_int_not_equal(shm_blob_new(f->shm, pad, sizeof(pad)), 0);
		c = ns_fixture_counts(f);
	}
	size_t one = sizeof(struct mc_inode) + sizeof(struct mc_dentry);
	/* Room for fewer entries than the directory has. */
	assert_true((c.low_bytes - c.shm_used) / one < 2 * NFILES - 10);
	size_t added = 0;
	const char *after = NULL;
	int rc = 0;
	while (rc == 0) {
		read_batch(f, dir, after, NFILES, &b);
		assert_true(b.n > 0);
		rc = ns_warm_dir(f->ns, NULL, dir, b.v, b.n, b.n < NFILES, &mark, &res);
		added += res.added;
		after = b.v[res.processed ? res.processed - 1 : 0].name;
	}
	assert_int_equal(rc, -ENOSPC);
	c = ns_fixture_counts(f);
	print_message("# %zu entries inserted; %llu bytes used, low mark %llu\n", added,
	              (unsigned long long)c.shm_used, (unsigned long long)c.low_bytes);
	assert_true(c.shm_used >= c.low_bytes);
	assert_true(c.shm_used < c.low_bytes + one);
}

/* ---- the stage: slots reserved and filled ahead (ns_warm.c note 6) ----- */

/* The slots in use are exactly the cached entries and the ri inode and rd
 * dentry slots reserved (shm.c note 11): after a commit, fsck compares
 * every cached inode (it finds those whose slot is live) and agrees. */
static void assert_slots_exact(struct fx *f, uint64_t ri, uint64_t rd)
{
	commit_all(f);
	struct fsck_report rep = { 0 };
	assert_int_equal(fsck_ns(f->ns, &rep), 0);
	assert_int_equal(rep.n, 0);
	struct ns_counts c = ns_fixture_counts(f);
	assert_int_equal(f->shm->reserved[SLAB_INODE], ri);
	assert_int_equal(f->shm->reserved[SLAB_DENTRY], rd);
	assert_int_equal(rep.cached_inodes, c.inodes);
	assert_int_equal(f->shm->slab[SLAB_INODE].live, c.inodes + ri);
	assert_int_equal(f->shm->slab[SLAB_DENTRY].live, c.positive + c.negative + rd);
	fsck_report_free(&rep);
}

static bool meta_marked(const struct shm *s, const void *p)
{
	uint64_t pg = (uint64_t)((const char *)p - (const char *)s->base) >> MC_PAGE_SHIFT;
	return atomic_load(&s->meta_populated[pg / 64]) & (1ull << (pg % 64));
}

/* The meta_populated words, to see whether a call faulted any page in. */
static size_t meta_words(const struct shm *s, uint64_t *out, size_t max)
{
	size_t n = (size_t)(((s->meta_bytes >> MC_PAGE_SHIFT) + 63) / 64);
	assert_true(n <= max);
	for (size_t i = 0; i < n; i++)
		out[i] = atomic_load(&s->meta_populated[i]);
	return n;
}

/* A staged batch: the stage reserves the slots, fills them and faults in
 * the buckets' pages, reachable by nothing (nothing is cached, nothing
 * counted); ns_warm_dir then allocates no slot (the slabs' live counts do
 * not move), faults in no bucket page, and links the staged ones: the
 * counts are exact, the directory complete and right (fsck). */
static void test_stage_then_link(void **state)
{
	struct fx *f = *state;
	static struct batch b;
	struct ns_warm_mark mark = { 0 };
	struct ns_warm_res res;
	uint64_t dir = make_dir(f, NFILES);
	read_batch(f, dir, NULL, NFILES, &b);
	struct ns_warm_stage *st = ns_warm_stage_new();
	assert_non_null(st);
	struct ns_counts c0 = ns_fixture_counts(f);
	ns_warm_stage(f->ns, st, dir, b.v, b.n);
	uint64_t ri = f->shm->reserved[SLAB_INODE], rd = f->shm->reserved[SLAB_DENTRY];
	assert_true(ri >= NFILES && rd >= NFILES);
	assert_true(ns_warm_stage_holds(st));
	struct ns_counts c1 = ns_fixture_counts(f);
	assert_int_equal(c1.inodes, c0.inodes);
	assert_int_equal(c1.positive, c0.positive);
	for (size_t k = 0; k < b.n; k++) {
		assert_true(meta_marked(f->shm, dcache_prefetch(f->shm, dir, b.v[k].name,
		                                                b.v[k].namelen)));
		assert_true(meta_marked(f->shm, inode_prefetch(f->shm, b.v[k].ino)));
	}
	uint64_t live_i = f->shm->slab[SLAB_INODE].live, live_d = f->shm->slab[SLAB_DENTRY].live;
	static uint64_t words0[4096], words1[4096];
	size_t nw = meta_words(f->shm, words0, 4096);
	assert_int_equal(ns_warm_dir(f->ns, st, dir, b.v, b.n, true, &mark, &res), 0);
	assert_int_equal(res.added, NFILES);
	assert_true(res.complete);
	assert_int_equal(f->shm->slab[SLAB_INODE].live, live_i);
	assert_int_equal(f->shm->slab[SLAB_DENTRY].live, live_d);
	meta_words(f->shm, words1, 4096);
	assert_memory_equal(words0, words1, nw * sizeof(*words0));
	/* The bytes of what was linked, counted when reserved, and /d's
	 * directory state, allocated by the first link. */
	assert_int_equal(res.bytes, NFILES * (sizeof(struct mc_inode) + sizeof(struct mc_dentry)) +
	                            sizeof(struct mc_dirx));
	assert_slots_exact(f, ri - NFILES, rd - NFILES);
	for (int i = 0; i < NFILES; i++) {
		char p[32];
		ns_attr a;
		snprintf(p, sizeof(p), "/d/f%04d", i);
		assert_int_equal(ns_stat(f->ns, &root_cred, P(p), false, &a), 0);
		assert_int_equal(a.ino, b.v[i].ino);
	}
	ns_warm_stage_free(f->ns, st);
	assert_slots_exact(f, 0, 0);
}

/* Part of a staged batch is cached already (names looked up): their slots
 * stay reserved, and only theirs; a batch staged for another call is not
 * used by this one. Given back, nothing is left reserved. */
static void test_stage_partial_use(void **state)
{
	struct fx *f = *state;
	static struct batch b;
	struct ns_warm_mark mark = { 0 };
	struct ns_warm_res res;
	uint64_t dir = make_dir(f, NFILES);
	ns_attr a;
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/d/f0003"), false, &a), 0);
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/d/f0050"), false, &a), 0);
	read_batch(f, dir, NULL, NFILES, &b);
	struct ns_warm_stage *st = ns_warm_stage_new();
	assert_non_null(st);
	ns_warm_stage(f->ns, st, dir, b.v, b.n);
	uint64_t ri = f->shm->reserved[SLAB_INODE], rd = f->shm->reserved[SLAB_DENTRY];
	/* Staged for b.v, not for a copy of it: the copy's call allocates. */
	static struct batch copy;
	copy = b;
	uint64_t live_i = f->shm->slab[SLAB_INODE].live;
	assert_int_equal(ns_warm_dir(f->ns, st, dir, copy.v, 10, false, &mark, &res), 0);
	assert_int_equal(res.added, 9);
	assert_int_equal(f->shm->reserved[SLAB_INODE], ri);
	assert_int_equal(f->shm->slab[SLAB_INODE].live, live_i + 9);
	assert_slots_exact(f, ri, rd);
	/* It stays staged for b.v: the other 88 come from it. */
	mark = (struct ns_warm_mark){ 0 };
	assert_int_equal(ns_warm_dir(f->ns, st, dir, b.v, b.n, true, &mark, &res), 0);
	assert_int_equal(res.added, NFILES - 11);
	assert_true(res.complete);
	assert_slots_exact(f, ri - (NFILES - 11), rd - (NFILES - 11));
	/* Used once: the same batch again takes nothing from it. */
	assert_int_equal(ns_warm_dir(f->ns, st, dir, b.v, b.n, true, &mark, &res), 0);
	assert_int_equal(res.added, 0);
	assert_slots_exact(f, ri - (NFILES - 11), rd - (NFILES - 11));
	ns_warm_stage_return(f->ns, st);
	assert_false(ns_warm_stage_holds(st));
	assert_slots_exact(f, 0, 0);
	ns_warm_stage_free(f->ns, st);
}

/* A shrink between staging and linking evicts what is cached, never a
 * reserved slot (not live: the hand passes it by); the staged batch is
 * inserted after it all the same, and the counts stay exact. */
static void test_stage_survives_shrink(void **state)
{
	struct fx *f = *state;
	static struct batch first, second;
	struct ns_warm_mark mark = { 0 };
	struct ns_warm_res res;
	uint64_t dir = make_dir(f, NFILES);
	struct ns_warm_stage *st = ns_warm_stage_new();
	assert_non_null(st);
	read_batch(f, dir, NULL, BATCH, &first);
	ns_warm_stage(f->ns, st, dir, first.v, first.n);
	assert_int_equal(ns_warm_dir(f->ns, st, dir, first.v, first.n, false, &mark, &res), 0);
	assert_int_equal(res.added, BATCH);
	read_batch(f, dir, first.v[BATCH - 1].name, NFILES, &second);
	ns_warm_stage(f->ns, st, dir, second.v, second.n);
	uint64_t ri = f->shm->reserved[SLAB_INODE], rd = f->shm->reserved[SLAB_DENTRY];
	assert_true(ri >= NFILES - BATCH && rd >= NFILES - BATCH);
	/* Every slot scanned, twice over: the files go, /d stays (its
	 * children went only during the pass). */
	uint64_t evicted = shrink_now(f->ns, 0, 2 * f->shm->slab[SLAB_DENTRY].pages *
	                                            (MC_PAGE_SIZE / sizeof(struct mc_dentry)));
	assert_true(evicted >= BATCH);
	assert_int_equal(f->shm->reserved[SLAB_INODE], ri);
	assert_int_equal(f->shm->reserved[SLAB_DENTRY], rd);
	assert_slots_exact(f, ri, rd);
	ns_attr a;
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/d"), false, &a), 0);
	mark = (struct ns_warm_mark){ 0 };
	assert_int_equal(ns_warm_dir(f->ns, st, dir, second.v, second.n, true, &mark, &res), 0);
	assert_int_equal(res.added, NFILES - BATCH);
	assert_slots_exact(f, ri - (NFILES - BATCH), rd - (NFILES - BATCH));
	ns_warm_stage_free(f->ns, st);
	assert_slots_exact(f, 0, 0);
}

/* This thread on CPU cpu alone: the holder and the waiter below run at
 * once, each on its CPU, whatever else the machine runs. */
static void pin_to(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	assert_int_equal(pthread_setaffinity_np(pthread_self(), sizeof(set), &set), 0);
}

struct holder {
	struct ns *ns;
	long hold_ns;     /* hold_main: how long (0: 150 us) */
	atomic_int state; /* 1: holding, 2: letting go */
};

/* Hold the namespace lock for a run of operations (ns_hold_begin) for
 * h->hold_ns, then let it go. */
static void *hold_main(void *arg)
{
	struct holder *h = arg;
	struct timespec t0, t;
	long ns = h->hold_ns ? h->hold_ns : 150000;
	pin_to(1);
	ns_hold_begin(h->ns);
	atomic_store(&h->state, 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < ns);
	atomic_store(&h->state, 2); /* before the unlock: the next holder sees it */
	ns_hold_end(h->ns);
	return NULL;
}

static long voluntary_switches(void)
{
	struct rusage ru;
	assert_int_equal(getrusage(RUSAGE_THREAD, &ru), 0);
	return ru.ru_nvcsw;
}

/* A warmer that finds the namespace lock held briefly (by another warmer,
 * usually) spins for it rather than sleep on it: staging a batch while
 * another thread holds the lock for 150 us costs the stager no voluntary
 * context switch. Five tries, one of which must stay on the CPU (a loaded
 * machine may preempt the holder past the spin). */
static void test_stage_spins_for_the_lock(void **state)
{
	struct fx *f = *state;
	static struct batch b;
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		skip();
	uint64_t dir = make_dir(f, NFILES);
	read_batch(f, dir, NULL, 10, &b);
	cpu_set_t was;
	assert_int_equal(pthread_getaffinity_np(pthread_self(), sizeof(was), &was), 0);
	pin_to(0);
	int stayed = 0;
	for (int k = 0; k < 5; k++) {
		struct ns_warm_stage *st = ns_warm_stage_new();
		assert_non_null(st);
		struct holder h = { .ns = f->ns };
		pthread_t th;
		assert_int_equal(pthread_create(&th, NULL, hold_main, &h), 0);
		while (atomic_load(&h.state) == 0)
			;
		long before = voluntary_switches();
		ns_warm_stage(f->ns, st, dir, b.v, b.n); /* takes the lock to reserve */
		long after = voluntary_switches();
		assert_int_equal(atomic_load(&h.state), 2);
		stayed += after == before;
		pthread_join(th, NULL);
		ns_warm_stage_free(f->ns, st);
	}
	assert_int_equal(pthread_setaffinity_np(pthread_self(), sizeof(was), &was), 0);
	print_message("# %d of 5 stayed on the CPU\n", stayed);
	assert_true(stayed > 0);
}

/* Hold the namespace lock as a warmer's slice does (lock_short set) for
 * 50 us, then let it go. */
static void *hold_slice_main(void *arg)
{
	struct holder *h = arg;
	struct timespec t0, t;
	pin_to(1);
	pthread_mutex_lock(&h->ns->lock);
	atomic_store(&h->ns->lock_short, true);
	atomic_store(&h->state, 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 50000);
	atomic_store(&h->state, 2); /* before the unlock: the next holder sees it */
	atomic_store(&h->ns->lock_short, false);
	pthread_mutex_unlock(&h->ns->lock);
	return NULL;
}

/* Five mkdirs (names prefix0..4), each while a thread started with
 * holder_main holds the namespace lock; how many of them cost no
 * voluntary context switch (spun for the lock rather than slept). */
static int mkdirs_that_stayed(struct fx *f, void *(*holder_main)(void *), long hold_ns,
                              const char *prefix)
{
	cpu_set_t was;
	assert_int_equal(pthread_getaffinity_np(pthread_self(), sizeof(was), &was), 0);
	pin_to(0);
	int stayed = 0;
	for (int k = 0; k < 5; k++) {
		struct holder h = { .ns = f->ns, .hold_ns = hold_ns };
		pthread_t th;
		char p[32];
		snprintf(p, sizeof(p), "/%s%d", prefix, k);
		assert_int_equal(pthread_create(&th, NULL, holder_main, &h), 0);
		while (atomic_load(&h.state) == 0)
			;
		long before = voluntary_switches();
		assert_int_equal(ns_mkdir(f->ns, &root_cred, P(p), 0755, NULL), 0);
		long after = voluntary_switches();
		assert_int_equal(atomic_load(&h.state), 2);
		stayed += after == before;
		pthread_join(th, NULL);
	}
	assert_int_equal(pthread_setaffinity_np(pthread_self(), sizeof(was), &was), 0);
	print_message("# %d of 5 stayed on the CPU\n", stayed);
	return stayed;
}

/* An operation that finds the lock held for a warmer's slice spins for it
 * rather than sleep on it (ns_warm.c note 7): an mkdir while another
 * thread holds a slice for 50 us costs no voluntary context switch. Five
 * tries, one of which must stay on the CPU (a loaded machine may preempt
 * the holder past the spin). */
static void test_operation_spins_for_a_slice(void **state)
{
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		skip();
	assert_true(mkdirs_that_stayed(*state, hold_slice_main, 0, "spin") > 0);
}

/* An operation that finds the lock held for another worker's run of
 * operations (ns_hold_begin, 50 us here: a run of 64 creates is about
 * that) spins for it as for a warmer's slice: no voluntary context
 * switch. Five tries, one of which must stay on the CPU. */
static void test_operation_spins_for_a_run(void **state)
{
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		skip();
	assert_true(mkdirs_that_stayed(*state, hold_main, 50000, "run") > 0);
}

/* Warmers stopped in the middle of the warm-up give back what their
 * stages held: nothing is left reserved, the counts are exact. */
static void test_stop_midway_returns_slots(void **state)
{
	struct fx *f = *state;
	make_dir(f, 4 * NFILES);
	setenv("MCACHED_WARM_ENTRY_DELAY_US", "100", 1);
	struct warm *w;
	assert_int_equal(warm_start(f->ns, f->st, 2, 0, true, &w), 0);
	unsetenv("MCACHED_WARM_ENTRY_DELAY_US");
	for (int i = 0; i < 20000 && ns_fixture_counts(f).positive < 50; i++)
		usleep(100);
	assert_false(warm_done(w));
	/* The warmers reserve slots under the namespace lock. */
	ns_hold_begin(f->ns);
	size_t reserved = f->shm->reserved[SLAB_DENTRY];
	ns_hold_end(f->ns);
	assert_true(reserved > 0);
	warm_stop(w);
	assert_true(ns_fixture_counts(f).positive < 1 + 4 * NFILES);
	assert_slots_exact(f, 0, 0);
}

/* ---- two warmers against mutations, commits and evictions ------------- */

#define NDIRS 12

#define NPER 300

struct stress {
	struct fx *f;
	atomic_bool stop;
	pthread_mutex_t commit_mu; /* one committer at a time */
};

static void *commit_main(void *arg)
{
	struct stress *s = arg;
	while (!atomic_load(&s->stop)) {
		pthread_mutex_lock(&s->commit_mu);
		commit_all(s->f);
		pthread_mutex_unlock(&s->commit_mu);
		struct timespec ts = { 0, 500000 };
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/* Evicts a little at a time once the warmers are under way (sooner, it
 * would evict the directories before they have a cached child, and the
 * warmers would have nothing to insert into). */
static void *evict_main(void *arg)
{
	struct stress *s = arg;
	struct timespec ts = { 0, 1000000 };
	while (!atomic_load(&s->stop) && ns_fixture_counts(s->f).positive < 1000)
		nanosleep(&ts, NULL);
	while (!atomic_load(&s->stop)) {
		shrink_now(s->f->ns, 0, 32);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static void stress_path(char *p, size_t size, int d, int i)
{
	snprintf(p, size, "/d%02d/f%04d", d, i);
}

/* While two warmers load a tree (slowed, so that everything overlaps),
 * files are removed and created in every directory, commits are published
 * and clean entries evicted: afterwards every name is what the mutations
 * left, and the cache agrees with the store (fsck). Under TSan this is the
 * test that the warmers share the namespace safely. */
static void test_two_warmers_mutations_evictions(void **state)
{
	struct fx *f = *state;
	char p[64];
	for (int d = 0; d < NDIRS; d++) {
		snprintf(p, sizeof(p), "/d%02d", d);
		assert_int_equal(ns_mkdir(f->ns, &root_cred, P(p), 0755, NULL), 0);
		for (int i = 0; i < NPER; i++) {
			stress_path(p, sizeof(p), d, i);
			assert_int_equal(ns_open(f->ns, &root_cred, P(p), O_CREAT | O_EXCL | O_WRONLY,
			                         0644, false, NULL),
			                 0);
		}
	}
	ns_fixture_reopen(f);

	struct stress s = { .f = f };
	pthread_mutex_init(&s.commit_mu, NULL);
	setenv("MCACHED_WARM_ENTRY_DELAY_US", "20", 1);
	struct warm *w;
	assert_int_equal(warm_start(f->ns, f->st, 2, 0, true, &w), 0);
	unsetenv("MCACHED_WARM_ENTRY_DELAY_US");
	pthread_t ct, et;
	assert_int_equal(pthread_create(&ct, NULL, commit_main, &s), 0);
	assert_int_equal(pthread_create(&et, NULL, evict_main, &s), 0);
	/* Every third file removed, a new one created beside every fifth,
	 * in an order that crosses the warmers' batches. */
	for (int i = 0; i < NPER; i++) {
		for (int d = 0; d < NDIRS; d++) {
			int k = (i * 7 + d * 13) % NPER;
			if (k % 3 == 0) {
				stress_path(p, sizeof(p), d, k);
				assert_int_equal(ns_unlink(f->ns, &root_cred, P(p)), 0);
			}
			if (k % 5 == 0) {
				snprintf(p, sizeof(p), "/d%02d/f%04dn", d, k);
				assert_int_equal(ns_open(f->ns, &root_cred, P(p),
				                         O_CREAT | O_EXCL | O_WRONLY, 0644, false, NULL),
				                 0);
			}
		}
		struct timespec ts = { 0, 100000 };
		nanosleep(&ts, NULL);
	}
	warm_wait(w);
	atomic_store(&s.stop, true);
	pthread_join(ct, NULL);
	pthread_join(et, NULL);
	struct stats_warm ws;
	warm_get_stats(w, &ws);
	print_message("# 2 warmers: %llu entries inserted, %llu yields, %llu entries evicted\n",
	              (unsigned long long)ws.entries, (unsigned long long)ws.yields,
	              (unsigned long long)ns_fixture_counts(f).shrink.evicted);
	assert_true(ws.entries > 0);
	assert_true(ns_fixture_counts(f).shrink.evicted > 0);
	/* Out of work, the warmers gave their reserved slots back. */
	assert_slots_exact(f, 0, 0);
	warm_stop(w);

	for (int pass = 0; pass < 2; pass++) {
		for (int d = 0; d < NDIRS; d++) {
			for (int k = 0; k < NPER; k++) {
				ns_attr a;
				stress_path(p, sizeof(p), d, k);
				assert_int_equal(ns_stat(f->ns, &root_cred, P(p), false, &a),
				                 k % 3 == 0 ? -ENOENT : 0);
				snprintf(p, sizeof(p), "/d%02d/f%04dn", d, k);
				assert_int_equal(ns_stat(f->ns, &root_cred, P(p), false, &a),
				                 k % 5 == 0 ? 0 : -ENOENT);
			}
		}
		commit_all(f);
		struct fsck_report rep = { 0 };
		assert_int_equal(fsck_ns(f->ns, &rep), 0);
		for (size_t i = 0; i < rep.n; i++)
			print_message("# fsck: %s %llu %s: %s\n", fsck_kind_name(rep.v[i].kind),
			              (unsigned long long)rep.v[i].ino,
			              rep.v[i].name ? rep.v[i].name : "-", rep.v[i].detail);
		assert_int_equal(rep.n, 0);
		fsck_report_free(&rep);
		ns_fixture_reopen(f); /* then the same from the store alone */
	}
	pthread_mutex_destroy(&s.commit_mu);
}

/* The scheduling policy of this process's thread named "mcached-warm",
 * or -1 when there is none. */
static int warmer_policy(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	int policy = -1;
	assert_non_null(d);
	while (policy < 0 && (de = readdir(d))) {
		char path[300], comm[32] = "";
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", de->d_name);
		FILE *fp = fopen(path, "r");
		if (!fp)
			continue;
		if (fgets(comm, sizeof(comm), fp) && strcmp(comm, "mcached-warm\n") == 0)
			policy = sched_getscheduler((pid_t)atoi(de->d_name));
		fclose(fp);
	}
	closedir(d);
	return policy;
}

/* warm.c note 5: a warmer reads the store in the SCHED_IDLE class (a woken
 * committer or client preempts it at once) and is back at its nice value
 * once it is done (it inserts, and waits, as a normal thread). */
static void test_reads_in_idle_class(void **state)
{
	struct fx *f = *state;
	struct rlimit rl;
	if (geteuid() != 0 && (getrlimit(RLIMIT_NICE, &rl) < 0 || rl.rlim_cur < 1))
		skip(); /* no way back from SCHED_IDLE: the warmers never go there */
	make_dir(f, NFILES);
	setenv("MCACHED_WARM_ENTRY_DELAY_US", "2000", 1); /* reads of 0.2 s */
	struct warm *w;
	assert_int_equal(warm_start(f->ns, f->st, 1, 19, true, &w), 0);
	unsetenv("MCACHED_WARM_ENTRY_DELAY_US");
	bool idle = false;
	for (int i = 0; i < 2000 && !idle && !warm_done(w); i++) {
		idle = warmer_policy() == SCHED_IDLE;
		usleep(100);
	}
	assert_true(idle);
	warm_wait(w);
	assert_int_equal(ns_fixture_counts(f).positive, 1 + NFILES);
	assert_int_equal(warmer_policy(), SCHED_OTHER);
	warm_stop(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_prepare_populates_insert_does_not, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_stops_at_low_watermark, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stage_then_link, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stage_partial_use, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stage_survives_shrink, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stage_spins_for_the_lock, setup, teardown),
		cmocka_unit_test_setup_teardown(test_operation_spins_for_a_slice, setup, teardown),
		cmocka_unit_test_setup_teardown(test_operation_spins_for_a_run, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_midway_returns_slots, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_warmers_mutations_evictions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reads_in_idle_class, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
