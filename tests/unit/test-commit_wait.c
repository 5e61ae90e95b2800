/* test-commit_wait.c - unit tests of what the group committer
 * (server/commit.c) does when someone waits for a commit, over a real
 * namespace and LMDB store: the settle that lets clients taking turns share
 * a commit (and that a lone client skips), the table apply and the room
 * ahead put off while commits are waited for, the room written ahead once
 * idle, and the warmers' step-aside while a waiter waits. */
#include "commit_fixture.h"

struct spinner {
	struct fx *f;
	_Atomic bool *stop;
};

/* Mutate until told to stop, 0.5 us of busy work between changes (never a
 * sleep): another client in the middle of a long batch. */
static void *spin_main(void *arg)
{
	struct spinner *w = arg;
	char p[64];
	for (unsigned i = 0; !atomic_load(w->stop); i++) {
		snprintf(p, sizeof(p), "/s/f%u", i % 256);
		int rc = i % 512 < 256 ? ns_open(w->f->ns, &root_cred, P(p), O_CREAT | O_EXCL | O_WRONLY,
		                                 0644, false, NULL)
		                       : ns_unlink(w->f->ns, &root_cred, P(p));
		if (rc != 0)
			return (void *)"spin failed";
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do
			clock_gettime(CLOCK_MONOTONIC, &t1);
		while ((t1.tv_sec - t0.tv_sec) * 1000000000L + t1.tv_nsec - t0.tv_nsec < 500);
	}
	return NULL;
}

/* A commit a waiter asks for waits (boundedly) while other mutations are
 * still coming in, so that they share it; a lone waiter does not wait:
 * the journal did not grow since it asked (commit.c invariant 8). */
static void test_waiter_settles(void **state)
{
	struct fx *f = *state;
	start(f, 60000);
	const struct commit_stats *cs = commit_get_stats(f->c);
	/* Alone: no look at all (a look sleeps COMMIT_SETTLE_POLL_US, 20). */
	for (int i = 0; i < 20; i++) {
		mkfile(f, i % 2 ? "/alone1" : "/alone0");
		assert_int_equal(ns_unlink(f->ns, &root_cred, P(i % 2 ? "/alone1" : "/alone0")), 0);
		assert_int_equal(commit_wait(f->c, ns_pending_seq(f->ns)), 0);
	}
	assert_int_equal(load(&cs->settle_us.count), 20);
	assert_int_equal(load(&cs->settle_us.max), 0);
	/* Another writer never pauses: commits asked for wait up to the bound
	 * for it, at least once in 1000 tries (a loaded machine may not run the
	 * writer during a given settle, or a sanitizer's build run it too
	 * slowly to grow the journal every poll; an idle one gets there at
	 * once). */
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/s"), 0755, NULL), 0);
	_Atomic bool stop = false;
	struct spinner w = { f, &stop };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, spin_main, &w), 0);
	int tries = 0;
	for (int i = 0; i < 1000 && (i < 20 || load(&cs->settle_us.max) < 900); i++, tries++) {
		mkfile(f, i % 2 ? "/w1" : "/w0");
		assert_int_equal(ns_unlink(f->ns, &root_cred, P(i % 2 ? "/w1" : "/w0")), 0);
		assert_int_equal(commit_wait(f->c, ns_pending_seq(f->ns)), 0);
	}
	atomic_store(&stop, true);
	void *r;
	pthread_join(th, &r);
	assert_null(r);
	print_message("# settles: %llu, longest %llu us\n",
	              (unsigned long long)load(&cs->settle_us.count),
	              (unsigned long long)load(&cs->settle_us.max));
	assert_true(load(&cs->settle_us.count) >= 20u + (unsigned)tries);
	assert_true(load(&cs->settle_us.max) >= 900);
}

static void count_done(void *arg, int err)
{
	if (err == 0)
		atomic_fetch_add((_Atomic int *)arg, 1);
}

/* Two clients that take turns: one asks while the other's commit runs.
 * The second's turn settles although the journal did not grow after it
 * asked (commit.c invariant 8): the other client, just answered, is
 * about to mutate and ask again. Once a commit answered one waiter alone
 * and left none, the next turns of that client do not settle. */
static void test_turns_settle(void **state)
{
	struct fx *f = *state;
	start(f, 60000);
	const struct commit_stats *cs = commit_get_stats(f->c);
	struct commit_sem *sem = ns_commit_sem(f->ns);
	_Atomic int done = 0;
	/* The first commit is held in its publish (the semaphore's read side
	 * here) while the second client mutates and asks. */
	commit_sem_read_lock(sem);
	mkfile(f, "/a");
	assert_int_equal(commit_wait_async(f->c, ns_pending_seq(f->ns), count_done, &done), 0);
	for (int i = 0; i < 5000 && !commit_sem_contended(sem); i++)
		sleep_ms(1);
	assert_true(commit_sem_contended(sem));
	mkfile(f, "/b");
	assert_int_equal(commit_wait_async(f->c, ns_pending_seq(f->ns), count_done, &done), 0);
	commit_sem_read_unlock(sem);
	for (int i = 0; i < 5000 && atomic_load(&done) < 2; i++)
		sleep_ms(1);
	assert_int_equal(atomic_load(&done), 2);
	/* The first turn: a lone waiter, no settle; the second: a settle
	 * for the first client, who does not come back here: the bound. */
	assert_int_equal(load(&cs->settle_us.count), 2);
	assert_true(load(&cs->settle_us.max) >= 1000);
	assert_int_equal(load(&cs->count), 2);
	assert_int_equal(hist_count_le(&cs->settle_us, 0), 1);
	/* Alone again: the second commit answered one waiter and left none,
	 * so no turn of the lone client settles. */
	for (int i = 0; i < 12; i++) {
		mkfile(f, i % 2 ? "/c1" : "/c0");
		assert_int_equal(ns_unlink(f->ns, &root_cred, P(i % 2 ? "/c1" : "/c0")), 0);
		assert_int_equal(commit_wait(f->c, ns_pending_seq(f->ns)), 0);
	}
	assert_int_equal(load(&cs->settle_us.count), 14);
	assert_int_equal(hist_count_le(&cs->settle_us, 0), 1 + 12);
}

/* Busy-wait us microseconds (no sleep: the committer gets the CPU). */
static void spin_us(unsigned us)
{
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t1);
	while ((t1.tv_sec - t0.tv_sec) * 1000000L + (t1.tv_nsec - t0.tv_nsec) / 1000 < (long)us);
}

/* Two waiters ask for one batch while its commit is held in its publish:
 * one commit answers the two, and the next settle expects two. */
static void answer_two_at_once(struct fx *f, const char *path)
{
	const struct commit_stats *cs = commit_get_stats(f->c);
	struct commit_sem *sem = ns_commit_sem(f->ns);
	uint64_t commits = load(&cs->count);
	_Atomic int done = 0;
	commit_sem_read_lock(sem);
	mkfile(f, path);
	uint64_t seq = ns_pending_seq(f->ns);
	assert_int_equal(commit_wait_async(f->c, seq, count_done, &done), 0);
	for (int i = 0; i < 5000 && !commit_sem_contended(sem); i++)
		sleep_ms(1);
	assert_true(commit_sem_contended(sem));
	assert_int_equal(commit_wait_async(f->c, seq, count_done, &done), 0);
	commit_sem_read_unlock(sem);
	for (int i = 0; i < 5000 && atomic_load(&done) < 2; i++)
		sleep_ms(1);
	assert_int_equal(atomic_load(&done), 2);
	assert_int_equal(load(&cs->count), commits + 1);
}

/* Two clients answered by one commit wait in turn with each other: the
 * next commit one of them asks for waits for the other (commit.c
 * invariant 8) although the journal stands still meanwhile, up to the
 * bound when the other does not come; and the other's arrival ends that
 * settle, so both share the commit. */
static void test_expected_waiter_shares(void **state)
{
	struct fx *f = *state;
	start(f, 60000);
	const struct commit_stats *cs = commit_get_stats(f->c);
	_Atomic int done = 0;
	answer_two_at_once(f, "/a");
	/* One of them mutates and asks, the other never: the journal stands
	 * still, yet the settle lasts its whole bound (1 ms; without the
	 * expectation, one poll of 20 us). A bound from below: a loaded
	 * machine only makes it longer. */
	uint64_t short0 = hist_count_le(&cs->settle_us, 900), n0 = load(&cs->settle_us.count);
	mkfile(f, "/alone");
	assert_int_equal(commit_wait(f->c, ns_pending_seq(f->ns)), 0);
	assert_int_equal(load(&cs->settle_us.count), n0 + 1);
	assert_int_equal(hist_count_le(&cs->settle_us, 900), short0);
	/* Now each round: a commit answers both, then one mutates and asks,
	 * the other mutates and asks 500 us later, and they share the
	 * commit. A loaded machine may delay the second past the bound: the
	 * commit then goes alone, and would teach the next to expect one
	 * waiter, hence the two answered at once that start each round. Once
	 * in 20 rounds at least they share, most rounds on an idle one. */
	int shared = 0;
	for (int i = 0; i < 20; i++) {
		char both[16];
		snprintf(both, sizeof(both), "/both%d", i);
		answer_two_at_once(f, both);
		uint64_t commits = load(&cs->count);
		atomic_store(&done, 0);
		mkfile(f, i % 2 ? "/b1" : "/b0");
		assert_int_equal(commit_wait_async(f->c, ns_pending_seq(f->ns), count_done, &done), 0);
		spin_us(500);
		assert_int_equal(ns_unlink(f->ns, &root_cred, P(i % 2 ? "/b1" : "/b0")), 0);
		assert_int_equal(commit_wait_async(f->c, ns_pending_seq(f->ns), count_done, &done), 0);
		for (int j = 0; j < 5000 && atomic_load(&done) < 2; j++)
			sleep_ms(1);
		assert_int_equal(atomic_load(&done), 2);
		if (load(&cs->count) == commits + 1)
			shared++;
	}
	print_message("# %d of 20 rounds shared; settles %llu, longest %llu us, %llu commits\n", shared,
	              (unsigned long long)load(&cs->settle_us.count),
	              (unsigned long long)load(&cs->settle_us.max),
	              (unsigned long long)load(&cs->count));
	assert_true(shared >= 1);
}

static off_t data_size(struct fx *f)
{
	char p[300];
	struct stat st;
	snprintf(p, sizeof(p), "%s/data.mdb", f->dir);
	assert_int_equal(stat(p, &st), 0);
	return st.st_size;
}

/* After a commit the committer writes room ahead at the end of the file
 * (store_prealloc), so the next commits write inside it and do not grow
 * it; with room enough, store_prealloc writes nothing. */
static void test_room_written_ahead(void **state)
{
	struct fx *f = *state;
	start(f, 60000);
	mkfile(f, "/r");
	assert_int_equal(commit_wait(f->c, ns_pending_seq(f->ns)), 0);
	struct store_info si;
	assert_int_equal(store_info(f->st, &si), 0);
	/* Written after the waiter was answered: give it a moment. */
	for (int i = 0; i < 2000 && (uint64_t)data_size(f) < si.used_bytes + STORE_ROOM_LOW; i++)
		sleep_ms(1);
	assert_true((uint64_t)data_size(f) >= si.used_bytes + STORE_ROOM_LOW);
	/* The size grows while the zeros are written: this waits for the
	 * write (commit_lock), and finds room enough. */
	assert_int_equal(store_prealloc(f->st, STORE_ROOM_LOW), 0);
	off_t size = data_size(f);
	for (int i = 0; i < 20; i++) {
		char p[32];
		snprintf(p, sizeof(p), "/r%d", i);
		mkfile(f, p);
		assert_int_equal(commit_wait(f->c, ns_pending_seq(f->ns)), 0);
	}
	assert_int_equal(store_info(f->st, &si), 0);
	assert_true(si.used_bytes < (uint64_t)size);
	assert_int_equal(data_size(f), size);
	/* The room is invisible to the store: everything is there after a
	 * reopen. */
	commit_stop(f->c);
	f->c = NULL;
	close_ns(f);
	store_close(f->st);
	f->st = NULL;
	assert_int_equal(open_all(f), 0);
	assert_int_equal(stat_err(f, "/r"), 0);
	assert_int_equal(stat_err(f, "/r19"), 0);
}

static int setup_apply2(void **state)
{
	struct store_opts o = { .root_mode = 0755, .apply_batches = 2 };
	return setup_opts(state, &o);
}

/* Commits someone waits for put the table apply off (store_log.c note 8),
 * and once nothing happens for a while the committer runs it on its own
 * (commit.c invariant 7): the tables then hold every batch. */
static void test_waited_apply_put_off(void **state)
{
	struct fx *f = *state;
	start(f, 60000);
	const struct commit_stats *cs = commit_get_stats(f->c);
	for (int i = 0; i < 3; i++) {
		char p[32];
		snprintf(p, sizeof(p), "/a%d", i);
		mkfile(f, p);
		assert_int_equal(commit_wait(f->c, ns_pending_seq(f->ns)), 0);
	}
	/* Three batches, apply due at the second: put off (unless the
	 * committer went idle meanwhile and ran it already). */
	assert_true(store_apply_owed(f->st) || load(&cs->idle_applies) > 0);
	struct store_meta m;
	for (int i = 0; i < 2000 && load(&cs->idle_applies) == 0; i++)
		sleep_ms(1);
	assert_int_equal(load(&cs->idle_applies), 1);
	assert_false(store_apply_owed(f->st));
	assert_int_equal(store_get_meta(f->st, &m), 0);
	/* Every batch applied; but an idle apply that came between the
	 * second commit and the third (a slow machine) leaves the third, one
	 * batch, under the soft bound and owed by nobody. */
	assert_true(m.applied_seq == m.last_seq || m.applied_seq + 1 == m.last_seq);
	assert_int_equal(load(&cs->count), 3);
	/* Nothing owed: the committer sleeps, and no apply runs again. */
	sleep_ms(60);
	assert_int_equal(load(&cs->idle_applies), 1);
}

/* Cut the room past the store's last page to `room` bytes (a test only:
 * it is zeros LMDB never reads); the used bytes. */
static uint64_t room_cut(struct fx *f, uint64_t room)
{
	struct store_info si;
	char p[300];
	assert_int_equal(store_info(f->st, &si), 0);
	snprintf(p, sizeof(p), "%s/data.mdb", f->dir);
	assert_int_equal(truncate(p, (off_t)(si.used_bytes + room)), 0);
	return si.used_bytes;
}

/* Between the commits of clients that wait for each, room is written
 * ahead only below STORE_ROOM_MIN; what is owed below STORE_ROOM_LOW is
 * written once the committer has been idle a while (store_prealloc.c
 * note 4, commit.c invariant 7). */
static void test_room_put_off_while_waited(void **state)
{
	struct fx *f = *state;
	assert_true(store_prealloc(f->st, STORE_ROOM_LOW) >= 0);
	uint64_t used = room_cut(f, 512u << 10);
	assert_int_equal(store_prealloc(f->st, STORE_ROOM_MIN), 0);
	assert_true(store_room_owed(f->st));
	assert_int_equal(data_size(f), (off_t)(used + (512u << 10)));
	assert_int_equal(store_prealloc(f->st, STORE_ROOM_LOW), 1);
	assert_false(store_room_owed(f->st));
	assert_true((uint64_t)data_size(f) >= used + STORE_ROOM_LOW);

	/* Through the committer: a waited-for commit leaves it for later. */
	used = room_cut(f, 512u << 10);
	start(f, 60000);
	mkfile(f, "/p");
	assert_int_equal(commit_wait(f->c, ns_pending_seq(f->ns)), 0);
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < 2000 && (uint64_t)data_size(f) < used + STORE_ROOM_LOW; i++)
		sleep_ms(1);
	double ms = ms_since(&t0);
	assert_true((uint64_t)data_size(f) >= used + STORE_ROOM_LOW);
	print_message("# room written %.1f ms after the waiter was answered\n", ms);
	assert_true(ms >= 15.0);
	assert_false(store_room_owed(f->st));
}

struct aside_cb {
	struct commit_sem *cs;
	_Atomic int calls;
	_Atomic bool aside;         /* the warmers were asked aside when answered */
};

static void aside_done(void *arg, int err)
{
	struct aside_cb *a = arg;
	assert_int_equal(err, 0);
	atomic_store(&a->aside, commit_sem_aside_wanted(a->cs));
	atomic_fetch_add(&a->calls, 1);
}

/* From a waiter's arrival until it is answered the warmers are asked to
 * step aside (commit.c invariant 6), and not once no one waits. */
static void test_waiter_sets_warmers_aside(void **state)
{
	struct fx *f = *state;
	start(f, 60000);
	struct aside_cb a = { ns_commit_sem(f->ns), 0, false };
	assert_false(commit_sem_aside_wanted(a.cs));
	/* A change with no waiter commits without asking. */
	mkfile(f, "/quiet");
	commit_kick(f->c);
	sleep_ms(20);
	assert_false(commit_sem_aside_wanted(a.cs));
	for (int round = 0; round < 3; round++) {
		char p[32];
		snprintf(p, sizeof(p), "/w%d", round);
		mkfile(f, p);
		atomic_store(&a.calls, 0);
		atomic_store(&a.aside, false);
		assert_int_equal(commit_wait_async(f->c, ns_pending_seq(f->ns), aside_done, &a), 0);
		for (int i = 0; i < 2000 && atomic_load(&a.calls) == 0; i++)
			sleep_ms(1);
		assert_int_equal(atomic_load(&a.calls), 1);
		assert_true(atomic_load(&a.aside));
		for (int i = 0; i < 2000 && commit_sem_aside_wanted(a.cs); i++)
			sleep_ms(1);
		assert_false(commit_sem_aside_wanted(a.cs));
	}
	/* Answered at once (durable already): nobody is asked aside. */
	atomic_store(&a.calls, 0);
	assert_int_equal(commit_wait_async(f->c, 1, aside_done, &a), 0);
	assert_int_equal(atomic_load(&a.calls), 1);
	assert_false(atomic_load(&a.aside));
}

struct stepper {
	struct commit_sem *cs;
	unsigned max_us;
	bool done;
	_Atomic bool back;          /* commit_sem_step_aside returned */
};

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void *stepper_main(void *arg)
{
	struct stepper *sp = arg;
	sp->done = commit_sem_step_aside(sp->cs, sp->max_us);
	atomic_store(&sp->back, true);
	return NULL;
}

/* commit_sem_step_aside sleeps while aside is raised: woken when it falls
 * to 0, else back after its bound with false; at once when not raised. */
static void test_step_aside(void **state)
{
	struct fx *f = *state;
	struct commit_sem *cs = ns_commit_sem(f->ns);
	double t0 = now_ms();
	assert_true(commit_sem_step_aside(cs, 5000000));
	assert_true(now_ms() - t0 < 1000);

	commit_sem_aside_begin(cs);
	commit_sem_aside_begin(cs);          /* two commits under way */
	struct stepper sp = { cs, 10000000, false, false };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, stepper_main, &sp), 0);
	sleep_ms(30);
	commit_sem_aside_end(cs);            /* one left: still asleep */
	sleep_ms(30);
	assert_false(atomic_load(&sp.back));
	t0 = now_ms();
	commit_sem_aside_end(cs);
	pthread_join(th, NULL);
	assert_true(sp.done);
	assert_true(now_ms() - t0 < 5000);

	commit_sem_aside_begin(cs);
	t0 = now_ms();
	assert_false(commit_sem_step_aside(cs, 20000));
	double ms = now_ms() - t0;
	assert_true(ms >= 19 && ms < 5000);
	commit_sem_aside_end(cs);
	assert_false(commit_sem_aside_wanted(cs));
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_waited_apply_put_off, setup_apply2, teardown),
		T(test_room_put_off_while_waited),
		T(test_waiter_settles),
		T(test_turns_settle),
		T(test_expected_waiter_shares),
		T(test_room_written_ahead),
		T(test_waiter_sets_warmers_aside),
		T(test_step_aside),
	};
	return cmocka_run_group_tests_name("commit_wait", tests, NULL, NULL);
}
