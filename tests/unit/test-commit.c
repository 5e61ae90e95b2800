/* test-commit.c - unit tests of the group committer (server/commit.c) over
 * a real namespace and LMDB store: durability, waiters, stop, concurrent
 * writers, a store that fails with a full map or injected errors (waiters
 * answered, a bounded shutdown), the journal bound that makes mutations
 * wait, then fail, while commits fail, and the commit rate that holds its
 * interval, and the committer's own time slice. What a commit someone
 * waits for does differently is test-commit_wait.c's. */
#include "commit_fixture.h"

#include <sched.h>
#include <sys/syscall.h>

static void test_changes_become_durable(void **state)
{
	struct fx *f = *state;
	start(f, 5);
	const struct commit_stats *cs = commit_get_stats(f->c);
	assert_int_equal(commit_wait(f->c, 0), 0);
	struct store_meta m0;
	assert_int_equal(store_get_meta(f->st, &m0), 0);

	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/d"), 0755, NULL), 0);
	for (int i = 0; i < 50; i++) {
		char p[64];
		snprintf(p, sizeof(p), "/d/f%d", i);
		mkfile(f, p);
	}
	uint64_t seq = ns_pending_seq(f->ns);
	assert_true(seq > m0.last_seq);
	assert_int_equal(commit_wait(f->c, seq), 0);
	/* Durable means in the store now. */
	struct store_meta m1;
	assert_int_equal(store_get_meta(f->st, &m1), 0);
	assert_true(m1.last_seq >= seq);
	uint64_t ino;
	uint8_t dt;
	assert_int_equal(store_get_dentry(f->st, 1, "d", 1, &ino, &dt), 0);
	assert_int_equal(dt, DT_DIR);
	struct ns_counts c;
	ns_get_counts(f->ns, &c);
	assert_true(c.committed_seq >= seq);
	assert_int_equal(c.dentries_dirty, 0);
	assert_int_equal(c.inodes_dirty, 0);
	assert_int_equal(ns_pending_seq(f->ns), 0);

	uint64_t count = load(&cs->count);
	assert_true(count >= 1);
	assert_true(load(&cs->records) >= 101); /* 50 x (inode + dentry) + ... */
	assert_int_equal(load(&cs->failures), 0);
	assert_int_equal(load(&cs->batch_records.count), count);
	assert_int_equal(load(&cs->latency_us.count), count);
	uint64_t phases = load(&cs->swap_us) + load(&cs->log_us) + load(&cs->apply_us) +
	                  load(&cs->sync_us) + load(&cs->publish_us);
	assert_true(phases > 0);
	assert_true(load(&cs->latency_us.sum) > 0);
	assert_true(load(&cs->sync_waits) >= 1);

	/* More changes, more commits; the counters only grow. */
	mkfile(f, "/d/more");
	uint64_t seq2 = ns_pending_seq(f->ns);
	assert_true(seq2 > seq);
	assert_int_equal(commit_wait(f->c, seq2), 0);
	assert_true(load(&cs->count) > count);
	assert_int_equal(store_get_dentry(f->st, ino, "more", 4, &ino, &dt), 0);
}

/* Without anyone waiting, the interval alone commits. */
static void test_interval_commits(void **state)
{
	struct fx *f = *state;
	start(f, 5);
	mkfile(f, "/x");
	uint64_t seq = ns_pending_seq(f->ns);
	struct ns_counts c;
	for (int i = 0; i < 400; i++) {
		ns_get_counts(f->ns, &c);
		if (c.committed_seq >= seq)
			break;
		sleep_ms(5);
	}
	assert_true(c.committed_seq >= seq);
	assert_int_equal(atomic_load(&f->shm->hdr->committed_seq), c.committed_seq);
}

struct cb {
	pthread_mutex_t mu;
	int calls;
	int err;
	pthread_t thread;
};

static void done_cb(void *arg, int err)
{
	struct cb *cb = arg;
	pthread_mutex_lock(&cb->mu);
	cb->calls++;
	cb->err = err;
	cb->thread = pthread_self();
	pthread_mutex_unlock(&cb->mu);
}

static int cb_calls(struct cb *cb)
{
	pthread_mutex_lock(&cb->mu);
	int n = cb->calls;
	pthread_mutex_unlock(&cb->mu);
	return n;
}

static void test_wait_async(void **state)
{
	struct fx *f = *state;
	start(f, 1000); /* long: only waiters make it commit soon */
	/* Already durable: called inline, on this thread. */
	struct cb a = { PTHREAD_MUTEX_INITIALIZER, 0, 1, 0 };
	assert_int_equal(commit_wait_async(f->c, 0, done_cb, &a), 0);
	assert_int_equal(a.calls, 1);
	assert_int_equal(a.err, 0);
	assert_true(pthread_equal(a.thread, pthread_self()));

	mkfile(f, "/a");
	uint64_t seq = ns_pending_seq(f->ns);
	assert_int_equal(commit_wait(f->c, seq), 0);
	struct cb b = { PTHREAD_MUTEX_INITIALIZER, 0, 1, 0 };
	assert_int_equal(commit_wait_async(f->c, seq, done_cb, &b), 0);
	assert_int_equal(b.calls, 1);
	assert_true(pthread_equal(b.thread, pthread_self()));

	/* Pending: called later, from the committer, well before the interval. */
	mkfile(f, "/b");
	uint64_t seq2 = ns_pending_seq(f->ns);
	struct cb c = { PTHREAD_MUTEX_INITIALIZER, 0, 1, 0 };
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(commit_wait_async(f->c, seq2, done_cb, &c), 0);
	for (int i = 0; i < 2000 && cb_calls(&c) == 0; i++)
		sleep_ms(1);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_int_equal(cb_calls(&c), 1);
	assert_int_equal(c.err, 0);
	assert_false(pthread_equal(c.thread, pthread_self()));
	double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	assert_true(ms < 900);
	struct store_meta m;
	assert_int_equal(store_get_meta(f->st, &m), 0);
	assert_true(m.last_seq >= seq2);
	/* Never called twice. */
	sleep_ms(20);
	assert_int_equal(cb_calls(&c), 1);
}

/* commit_stop commits what is pending. */
static void test_stop_commits_pending(void **state)
{
	struct fx *f = *state;
	start(f, 60000);
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/keep"), 0755, NULL), 0);
	mkfile(f, "/keep/file");
	assert_int_equal(ns_symlink(f->ns, &root_cred, P("/keep/file"), P("/ln")), 0);
	uint64_t seq = ns_pending_seq(f->ns);
	assert_true(seq > 0);
	struct store_meta m;
	assert_int_equal(store_get_meta(f->st, &m), 0);
	assert_true(m.last_seq < seq);
	commit_stop(f->c);
	f->c = NULL;
	assert_int_equal(ns_pending_seq(f->ns), 0);
	assert_int_equal(store_get_meta(f->st, &m), 0);
	assert_true(m.last_seq >= seq);

	/* A fresh cache over a reopened store sees all of it. */
	close_ns(f);
	store_close(f->st);
	f->st = NULL;
	assert_int_equal(open_all(f), 0);
	assert_int_equal(stat_err(f, "/keep/file"), 0);
	ns_attr a;
	assert_int_equal(ns_stat(f->ns, &root_cred, P("/ln"), true, &a), 0);
	assert_true(S_ISREG(a.mode));
	/* A stop with nothing pending is quick and harmless. */
	start(f, 60000);
	commit_stop(f->c);
	f->c = NULL;
}

struct writer {
	struct fx *f;
	int id;
	int n;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	for (int i = 0; i < w->n; i++) {
		char p[64];
		snprintf(p, sizeof(p), "/w%d/f%d", w->id, i);
		if (ns_open(w->f->ns, &root_cred, P(p), O_CREAT | O_EXCL | O_WRONLY, 0644, false,
		            NULL) != 0)
			return (void *)1;
		if (i % 50 == 0 && commit_wait(w->f->c, ns_pending_seq(w->f->ns)) != 0)
			return (void *)2;
	}
	return NULL;
}

/* Writers keep going while batches commit; everything ends up durable and
 * in order. */
static void test_concurrent_writers(void **state)
{
	struct fx *f = *state;
	start(f, 2);
	enum { NW = 3, N = 400 };
	pthread_t th[NW];
	struct writer w[NW];
	for (int i = 0; i < NW; i++) {
		char p[32];
		snprintf(p, sizeof(p), "/w%d", i);
		assert_int_equal(ns_mkdir(f->ns, &root_cred, P(p), 0755, NULL), 0);
		w[i] = (struct writer){ f, i, N };
		assert_int_equal(pthread_create(&th[i], NULL, writer_main, &w[i]), 0);
	}
	for (int i = 0; i < NW; i++) {
		void *r;
		pthread_join(th[i], &r);
		assert_null(r);
	}
	assert_int_equal(commit_wait(f->c, ns_pending_seq(f->ns)), 0);
	const struct commit_stats *cs = commit_get_stats(f->c);
	assert_true(load(&cs->count) > 1);
	commit_stop(f->c);
	f->c = NULL;
	close_ns(f);
	assert_int_equal(open_all(f), 0);
	for (int i = 0; i < NW; i++) {
		char p[32];
		snprintf(p, sizeof(p), "/w%d", i);
		ns_attr a;
		assert_int_equal(ns_stat(f->ns, &root_cred, P(p), true, &a), 0);
		assert_int_equal(a.size, N);
	}
}

/* The store's map cannot grow: commits fail with -ENOSPC. The committer
 * keeps the batch (counted failures), the namespace keeps answering, and
 * commit_stop returns, telling waiters the batch will never be durable. */
static void test_store_full(void **state)
{
	struct fx *f = *state;
	start(f, 5);
	const struct commit_stats *cs = commit_get_stats(f->c);
	char name[300];
	int n = 0;
	for (; n < 20000 && load(&cs->failures) == 0; n++) {
		snprintf(name, sizeof(name), "/%0200d", n);
		mkfile(f, name);
		if (n % 100 == 99)
			sleep_ms(2);
	}
	assert_true(load(&cs->failures) > 0);
	/* The namespace still answers, with everything acknowledged. */
	for (int i = 0; i < n; i += 97) {
		snprintf(name, sizeof(name), "/%0200d", i);
		assert_int_equal(stat_err(f, name), 0);
	}
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/after-failure"), 0755, NULL), 0);
	assert_int_equal(stat_err(f, "/after-failure"), 0);
	/* What failed stays dirty (pinned) and not published. */
	struct ns_counts c;
	ns_get_counts(f->ns, &c);
	assert_true(c.dentries_dirty > 0);
	uint64_t pending = ns_pending_seq(f->ns);
	assert_true(pending > c.committed_seq);
	struct store_meta m;
	assert_int_equal(store_get_meta(f->st, &m), 0);
	assert_int_equal(m.last_seq, c.committed_seq);
	/* It keeps failing and keeps counting. */
	uint64_t fails = load(&cs->failures);
	for (int i = 0; i < 300 && load(&cs->failures) == fails; i++)
		sleep_ms(5);
	assert_true(load(&cs->failures) > fails);
	/* A waiter is not told success, and not left waiting either: the
	 * next attempt fails and answers it with the store's error (the
	 * committer backs off up to 1 s, but a waiter makes it retry). */
	struct cb w = { PTHREAD_MUTEX_INITIALIZER, 0, 1, 0 };
	assert_int_equal(commit_wait_async(f->c, pending, done_cb, &w), 0);
	for (int i = 0; i < 500 && cb_calls(&w) == 0; i++)
		sleep_ms(1);
	assert_int_equal(cb_calls(&w), 1);
	assert_int_equal(w.err, -ENOSPC);
	assert_true(load(&cs->sync_failures) >= 1);
	/* Still pending, still retried; what failed is still visible. */
	assert_int_equal(stat_err(f, "/after-failure"), 0);
	commit_stop(f->c);
	f->c = NULL;
	assert_int_equal(cb_calls(&w), 1);
	/* The store is intact: its last batch is readable after a reopen. */
	close_ns(f);
	store_close(f->st);
	f->st = NULL;
	assert_int_equal(open_all(f), 0);
	assert_int_equal(store_get_meta(f->st, &m), 0);
	assert_int_equal(m.last_seq, c.committed_seq);
	assert_int_equal(stat_err(f, "/after-failure"), -ENOENT);
}

/* Injected failures: commit_wait answers with the store's errno after one
 * attempt, not after the interval and not never; the change stays applied;
 * once the store works again the same batch commits and survives a
 * reopen. */
static void test_wait_fails_then_recovers(void **state)
{
	struct fx *f = *state;
	start(f, 60000); /* only waiters make it commit */
	const struct commit_stats *cs = commit_get_stats(f->c);
	store_fail_commits(f->st, UINT_MAX, -EIO);
	mkfile(f, "/kept");
	uint64_t seq = ns_pending_seq(f->ns);
	for (int round = 0; round < 3; round++) {
		struct timespec t0;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		assert_int_equal(commit_wait(f->c, seq), -EIO);
		assert_true(ms_since(&t0) < 500);
	}
	assert_true(load(&cs->failures) >= 3);
	assert_int_equal(load(&cs->sync_failures), 3);
	assert_int_equal(stat_err(f, "/kept"), 0);
	/* Another errno comes through as it is. */
	store_fail_commits(f->st, 1, -ENOSPC);
	assert_int_equal(commit_wait(f->c, seq), -ENOSPC);
	/* Recovered: the retried batch commits. */
	assert_int_equal(commit_wait(f->c, seq), 0);
	struct store_meta m;
	assert_int_equal(store_get_meta(f->st, &m), 0);
	assert_true(m.last_seq >= seq);
	commit_stop(f->c);
	f->c = NULL;
	close_ns(f);
	assert_int_equal(open_all(f), 0);
	assert_int_equal(stat_err(f, "/kept"), 0);
}

/* commit_shutdown bounds the last commits: with the store failing, a
 * waiter is answered, commit_stop returns by the deadline, later waiters
 * are answered at once, and the backlog says what stayed uncommitted. */
static void test_shutdown_deadline(void **state)
{
	struct fx *f = *state;
	start(f, 5);
	store_fail_commits(f->st, UINT_MAX, -EIO);
	mkfile(f, "/a");
	mkfile(f, "/b");
	uint64_t seq = ns_pending_seq(f->ns);
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	commit_shutdown(f->c, 300);
	/* Still retrying before the deadline: a waiter gets the error of an
	 * attempt. */
	assert_int_equal(commit_wait(f->c, seq), -EIO);
	while (ms_since(&t0) < 400)
		sleep_ms(10);
	/* On a loaded machine the attempt due at the deadline may not have
	 * run yet: then a waiter is answered by the next failed attempt,
	 * which sets `expired` before it answers. */
	struct cb late = { PTHREAD_MUTEX_INITIALIZER, 0, 1, 0 };
	assert_int_equal(commit_wait_async(f->c, seq, done_cb, &late), 0);
	for (int i = 0; i < 5000 && cb_calls(&late) == 0; i++)
		sleep_ms(1);
	assert_int_equal(cb_calls(&late), 1);
	assert_int_equal(late.err, -EIO);
	/* Past it: answered inline, no attempt needed. */
	struct cb w = { PTHREAD_MUTEX_INITIALIZER, 0, 1, 0 };
	assert_int_equal(commit_wait_async(f->c, seq, done_cb, &w), 0);
	assert_int_equal(w.calls, 1);
	assert_int_equal(w.err, -EIO);
	assert_true(pthread_equal(w.thread, pthread_self()));
	commit_stop(f->c);
	f->c = NULL;
	assert_true(ms_since(&t0) < 1500);
	struct ns_backlog bl;
	ns_journal_backlog(f->ns, &bl);
	assert_true(bl.records >= 4);      /* two inodes, two names, the root */
	assert_true(bl.bytes > 0);
	assert_int_equal(bl.batches, 1);

	/* What stayed uncommitted is not in the store. */
	store_fail_commits(f->st, 0, 0);
	close_ns(f);
	assert_int_equal(open_all(f), 0);
	assert_int_equal(stat_err(f, "/b"), -ENOENT);
	/* A shutdown with a working store commits everything in time. */
	start(f, 60000);
	mkfile(f, "/c");
	commit_shutdown(f->c, 1000);
	commit_stop(f->c);
	f->c = NULL;
	ns_journal_backlog(f->ns, &bl);
	assert_int_equal(bl.records, 0);
	assert_int_equal(bl.batches, 0);
	close_ns(f);
	assert_int_equal(open_all(f), 0);
	assert_int_equal(stat_err(f, "/c"), 0);
}

/* A journal bound of 60 records; mutations wait 100 ms for room. */
static int setup_bounded(void **state)
{
	int rc = setup(state);
	struct fx *f = *state;
	if (rc < 0)
		return rc;
	close_ns(f);
	f->no = (struct ns_opts){ .journal_max_records = 60, .journal_wait_ms = 100 };
	return open_all(f);
}

/* A journal bound of 8 KiB of records (about 90 creates), none by count. */
#define BYTE_BOUND 8192u
static int setup_bounded_bytes(void **state)
{
	int rc = setup(state);
	struct fx *f = *state;
	if (rc < 0)
		return rc;
	close_ns(f);
	f->no = (struct ns_opts){ .journal_max_bytes = BYTE_BOUND, .journal_wait_ms = 100 };
	return open_all(f);
}

/* The bound in bytes holds as the one in records does: past it a
 * mutation waits, then fails, the journal's bytes stop within a record or
 * two of it, and everything acknowledged commits once the store
 * recovers. */
static void test_journal_byte_bound(void **state)
{
	struct fx *f = *state;
	start(f, 5);
	store_fail_commits(f->st, UINT_MAX, -ENOSPC);
	char p[64];
	int n = 0, rc = 0;
	for (; n < 1000; n++) {
		snprintf(p, sizeof(p), "/f%d", n);
		rc = ns_open(f->ns, &root_cred, P(p), O_CREAT | O_EXCL | O_WRONLY, 0644, false, NULL);
		if (rc != 0)
			break;
	}
	assert_int_equal(rc, -ENOSPC);
	assert_true(n > 5 && n < 200);
	assert_int_equal(stat_err(f, p), -ENOENT);
	struct ns_counts c;
	ns_get_counts(f->ns, &c);
	print_message("# %d creates, then %llu journal bytes: refused\n", n,
	              (unsigned long long)c.backlog_bytes);
	assert_true(c.backlog_bytes >= BYTE_BOUND && c.backlog_bytes < BYTE_BOUND + 1024);
	assert_int_equal(c.full_refusals, 1);
	assert_int_equal(c.full_waits, 1);
	store_fail_commits(f->st, 0, 0);
	assert_int_equal(commit_wait(f->c, ns_pending_seq(f->ns)), 0);
	ns_get_counts(f->ns, &c);
	assert_int_equal(c.backlog_bytes, 0);
	for (int i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "/f%d", i);
		assert_int_equal(stat_err(f, p), 0);
	}
}

/* While commits fail, the journal stops at its bound: past it a mutation
 * waits, then fails with -ENOSPC and changes nothing; reads go on. When
 * the store recovers, everything acknowledged commits and mutations are
 * accepted again. */
static void test_journal_bound(void **state)
{
	struct fx *f = *state;
	start(f, 5);
	store_fail_commits(f->st, UINT_MAX, -ENOSPC);
	char p[64];
	int n = 0, rc = 0;
	struct timespec t1;
	for (; n < 1000; n++) {
		snprintf(p, sizeof(p), "/f%d", n);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		rc = ns_open(f->ns, &root_cred, P(p), O_CREAT | O_EXCL | O_WRONLY, 0644, false, NULL);
		if (rc != 0)
			break;
	}
	assert_int_equal(rc, -ENOSPC);
	assert_true(ms_since(&t1) >= 90);           /* it waited journal_wait_ms first */
	assert_true(n >= 20 && n < 60);
	assert_int_equal(stat_err(f, p), -ENOENT);  /* the refused create left nothing */
	struct ns_counts c;
	ns_get_counts(f->ns, &c);
	assert_true(c.backlog_records >= 60 && c.backlog_records < 60 + 3);
	assert_int_equal(c.full_refusals, 1);
	assert_int_equal(c.full_waits, 1);
	/* The time it waited is counted (journal_wait_ms is 100 here). */
	assert_true(c.full_wait_us >= 90000 && c.full_wait_us < 5000000);
	/* Every kind of mutation is refused the same way -- now at once: a
	 * wait already timed out and nothing was committed since. */
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/d"), 0755, NULL), -ENOSPC);
	assert_true(ms_since(&t0) < 50);
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("/f0")), -ENOSPC);
	assert_int_equal(ns_rename(f->ns, &root_cred, P("/f0"), P("/g")), -ENOSPC);
	assert_int_equal(ns_chmod(f->ns, &root_cred, P("/f0"), 0600), -ENOSPC);
	assert_int_equal(ns_rmtree(f->ns, &root_cred, P("/f1"), 16), -ENOSPC);
	/* Reads, and opens that change nothing, go on. */
	assert_int_equal(stat_err(f, "/f0"), 0);
	assert_int_equal(ns_open(f->ns, &root_cred, P("/f0"), O_RDONLY, 0, false, NULL), 0);
	ns_get_counts(f->ns, &c);
	assert_int_equal(c.full_refusals, 6);
	assert_int_equal(c.full_waits, 1);
	uint64_t backlog = c.backlog_records;

	/* The store recovers: the backlog drains and mutations go through. */
	store_fail_commits(f->st, 0, 0);
	assert_int_equal(commit_wait(f->c, ns_pending_seq(f->ns)), 0);
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/d"), 0755, NULL), 0);
	assert_int_equal(commit_wait(f->c, ns_pending_seq(f->ns)), 0);
	ns_get_counts(f->ns, &c);
	assert_int_equal(c.backlog_records, 0);
	assert_true(backlog > 0);
	commit_stop(f->c);
	f->c = NULL;
	close_ns(f);
	assert_int_equal(open_all(f), 0);
	for (int i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "/f%d", i);
		assert_int_equal(stat_err(f, p), 0);
	}
	assert_int_equal(stat_err(f, "/d"), 0);
}

/* Half way to the bound (in records, or in bytes) a commit starts at
 * once, not at the interval. */
static void bound_kicks(struct fx *f, int files)
{
	start(f, 60000);
	const struct commit_stats *cs = commit_get_stats(f->c);
	for (int i = 0; i < files; i++) {
		char p[64];
		snprintf(p, sizeof(p), "/k%d", i);
		mkfile(f, p);
	}
	for (int i = 0; i < 500 && load(&cs->count) == 0; i++)
		sleep_ms(2);
	assert_true(load(&cs->count) >= 1);
	struct ns_counts c;
	ns_get_counts(f->ns, &c);
	assert_true(c.committed_seq > 0);
	assert_int_equal(c.full_waits, 0);
}

static void test_journal_bound_kicks(void **state)
{
	bound_kicks(*state, 20);  /* 40-odd records of a bound of 60 */
}

static void test_journal_byte_bound_kicks(void **state)
{
	bound_kicks(*state, 60);  /* 5-6 KiB of a bound of 8 KiB */
}

struct churner {
	struct fx *f;
	int id;
	_Atomic bool *stop;
	unsigned ops;
};

/* Create and unlink files until told to stop, pausing now and then as
 * clients would: sustained mutations that keep the journal small. */
static void *churn_main(void *arg)
{
	struct churner *w = arg;
	char p[64];
	for (unsigned i = 0; !atomic_load(w->stop); i++) {
		snprintf(p, sizeof(p), "/c%d/f%u", w->id, i % 64);
		int rc = i % 128 < 64 ? ns_open(w->f->ns, &root_cred, P(p), O_CREAT | O_EXCL | O_WRONLY,
		                                0644, false, NULL)
		                      : ns_unlink(w->f->ns, &root_cred, P(p));
		if (rc != 0)
			return (void *)"churn failed";
		if (++w->ops % 8 == 0)
			nanosleep(&(struct timespec){ 0, 100000 }, NULL);
	}
	return NULL;
}

/* Under sustained mutations from two threads the committer holds its
 * interval: at most one commit per interval (with a generous margin for a
 * loaded machine), each carrying many records; and it stays asleep once
 * the load stops and everything is committed. */
static void test_rate_holds_interval(void **state)
{
	struct fx *f = *state;
	enum { INTERVAL = 50, RUN_MS = 1000 };
	start(f, INTERVAL);
	const struct commit_stats *cs = commit_get_stats(f->c);
	_Atomic bool stop = false;
	pthread_t th[2];
	struct churner w[2];
	for (int i = 0; i < 2; i++) {
		char p[32];
		snprintf(p, sizeof(p), "/c%d", i);
		assert_int_equal(ns_mkdir(f->ns, &root_cred, P(p), 0755, NULL), 0);
	}
	uint64_t c0 = load(&cs->count);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < 2; i++) {
		w[i] = (struct churner){ f, i, &stop, 0 };
		assert_int_equal(pthread_create(&th[i], NULL, churn_main, &w[i]), 0);
	}
	sleep_ms(RUN_MS);
	atomic_store(&stop, true);
	for (int i = 0; i < 2; i++) {
		void *r;
		pthread_join(th[i], &r);
		assert_null(r);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	uint64_t commits = load(&cs->count) - c0;
	double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	double bound = ms / INTERVAL;
	print_message("# %u+%u ops in %.0f ms: %llu commits (interval bound %.1f)\n", w[0].ops,
	              w[1].ops, ms, (unsigned long long)commits, bound);
	assert_true(w[0].ops + w[1].ops > 1000);
	assert_true(commits >= 2);
	assert_true((double)commits <= 2 * bound + 2);

	/* Idle: once the last batch is durable, no turn until the next change. */
	assert_int_equal(commit_wait(f->c, ns_pending_seq(f->ns)), 0);
	sleep_ms(2 * INTERVAL);
	uint64_t turns = load(&cs->turns);
	sleep_ms(6 * INTERVAL);
	assert_int_equal(load(&cs->turns), turns);
	/* A change wakes it again: committed within the interval, untold. */
	mkfile(f, "/late");
	uint64_t seq = ns_pending_seq(f->ns);
	struct ns_counts c;
	for (int i = 0; i < 400; i++) {
		ns_get_counts(f->ns, &c);
		if (c.committed_seq >= seq)
			break;
		sleep_ms(5);
	}
	assert_true(c.committed_seq >= seq);
	assert_true(load(&cs->turns) > turns);
}

/* se.slice (ns) of thread tid from /proc/self/task/TID/sched, or 0 when
 * the kernel does not show one. */
static unsigned long long task_slice(pid_t tid)
{
	char p[64], line[256];
	unsigned long long v = 0;
	snprintf(p, sizeof(p), "/proc/self/task/%d/sched", (int)tid);
	FILE *fp = fopen(p, "r");
	if (!fp)
		return 0;
	while (fgets(line, sizeof(line), fp))
		if (strncmp(line, "se.slice", 8) == 0) {
			char *colon = strchr(line, ':');
			v = colon ? strtoull(colon + 1, NULL, 10) : 0;
		}
	fclose(fp);
	return v;
}

/* The thread named name in this process, or 0. */
static pid_t task_named(const char *name)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	pid_t tid = 0;
	assert_non_null(d);
	while (!tid && (e = readdir(d))) {
		char p[300], comm[64] = "";
		snprintf(p, sizeof(p), "/proc/self/task/%s/comm", e->d_name);
		FILE *fp = fopen(p, "r");
		if (fp && fgets(comm, sizeof(comm), fp) && strncmp(comm, name, strlen(name)) == 0 &&
		    comm[strlen(name)] == '\n')
			tid = (pid_t)atoi(e->d_name);
		if (fp)
			fclose(fp);
	}
	closedir(d);
	return tid;
}

/* The committer runs as "mcached-commit" with a time slice of 100 us
 * (commit.c), where the kernel takes a slice per thread: as this thread
 * finds when it asks for one itself. */
static void test_committer_slice(void **state)
{
	struct fx *f = *state;
	start(f, 5);
	pid_t tid = task_named("mcached-commit");
	assert_true(tid > 0);
	/* sched_attr, version 0 (48 bytes), SCHED_OTHER, runtime 200 us. */
	uint64_t a[6] = { 48, 0, 0, 200000, 0, 0 };
	pid_t me = (pid_t)syscall(SYS_gettid);
	unsigned long long before = task_slice(me);
	bool taken = syscall(SYS_sched_setattr, 0, a, 0) == 0 && task_slice(me) == 200000;
	print_message("# slice: this thread %llu ns, then %llu; the committer's %llu\n", before,
	              task_slice(me), task_slice(tid));
	if (!taken)
		skip();                 /* no slice per thread on this kernel */
	/* The thread asks as it starts running. */
	for (int i = 0; i < 1000 && task_slice(tid) != 100000; i++)
		sleep_ms(1);
	assert_int_equal(task_slice(tid), 100000);
	a[3] = 0;                       /* back to the default */
	syscall(SYS_sched_setattr, 0, a, 0);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_changes_become_durable),
		T(test_interval_commits),
		T(test_wait_async),
		T(test_stop_commits_pending),
		T(test_concurrent_writers),
		cmocka_unit_test_setup_teardown(test_store_full, setup_tiny, teardown),
		T(test_wait_fails_then_recovers),
		T(test_shutdown_deadline),
		cmocka_unit_test_setup_teardown(test_journal_bound, setup_bounded, teardown),
		cmocka_unit_test_setup_teardown(test_journal_bound_kicks, setup_bounded, teardown),
		cmocka_unit_test_setup_teardown(test_journal_byte_bound, setup_bounded_bytes, teardown),
		cmocka_unit_test_setup_teardown(test_journal_byte_bound_kicks, setup_bounded_bytes,
		                                teardown),
		T(test_rate_holds_interval),
		T(test_committer_slice),
	};
	return cmocka_run_group_tests_name("commit", tests, NULL, NULL);
}
