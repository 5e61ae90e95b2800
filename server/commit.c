/* commit.c - the group committer.
 *
 * One thread. It sleeps until the running batch receives its first change
 * (ns_set_arm: an idle server never wakes), then runs one commit when the
 * interval has passed since that change, or at once when someone waits for
 * durability or the journal is half way to its bound (a kick):
 *
 *     swap (ns_swap, O(1), excludes writers)
 *       -> write (store_commit: log append + table updates + fsync, no lock)
 *       -> publish (ns_publish: entries clean, committed_seq advances)
 *       -> wake (waiters whose batch is now durable)
 *       -> room (store_prealloc: zeros past the end of the file, when
 *          little is left, so the next commits do not grow it)
 *
 * Under sustained load every batch is armed right after the previous swap,
 * so commits run once per interval, each carrying what came in meanwhile;
 * waiters that arrive while a commit runs share the next one.
 *
 * A commit a waiter asked for first lets mutations already in progress
 * finish, and the clients answered together last time ask again
 * (commit_settle: at most COMMIT_SETTLE_MAX_US), so that concurrent
 * clients that each mutate, then wait, share commits instead of taking
 * turns; not for a lone client, which is all the last commit answered
 * and whose journal has not grown since it asked (invariant 8).
 *
 * A commit someone waits for leaves the table apply to later
 * (store_commit_waited, store_log.c note 8), and most of the room ahead
 * (store_prealloc.c note 4); once no waiter and no change has come for
 * COMMIT_APPLY_IDLE_MS, the committer does both (commit_idle_work,
 * invariant 7).
 *
 * The thread ("mcached-commit") asks the scheduler for a short time slice
 * (commit_slice): what it runs between two sleeps is short (a swap, a
 * log append, the overlay, a publish, the answers), and every waiter
 * waits for it. On a kernel whose fair scheduler takes a slice per thread
 * (EEVDF, Linux 6.12 and later) its deadlines then come before those of
 * the clients and workers it wakes, so it is not preempted by the first
 * client it answers before it has answered the others, and it runs soon
 * when its fsync returns. It gets no more CPU than before; where the
 * kernel ignores the request nothing changes.
 *
 * A failed write:
 *
 *     write fails -> fail_waiters(store error) -> back off (the interval,
 *       doubling, at most 1 s; a kick -- a new waiter, a full journal --
 *       retries sooner, but never within COMMIT_RETRY_GAP_MS of the last
 *       failure: commit_wait_turn) -> write again ...
 *     commit_shutdown: deadline -> past it, the last attempt failed:
 *       `expired`, every waiter (and any later one) answered at once
 *
 * Invariants:
 *  1. Batches are committed in sequence order; at most one is between swap
 *     and publish.
 *  2. A batch whose write failed stays `pending` and is retried before any
 *     new swap: the journal is never dropped and never reordered.
 *  3. `durable` only grows; a waiter for seq <= durable is answered at once
 *     with 0. A waiter for a later batch is answered 0 once its batch is
 *     durable, or with the store's error after the next write that fails
 *     (its batch cannot be durable before the failed one): nobody waits
 *     longer than one commit attempt while the store fails.
 *  4. Every waiter is answered exactly once; commit_stop answers those left.
 *  5. At most one commit starts per turn: a turn ends at a kick, at
 *     `armed_us` + the interval, or (failing) at the back-off; `armed` is
 *     cleared before the swap, so a change after the swap arms the next
 *     turn and none is left behind.
 *  6. `aside` is set, and the commit semaphore's aside count raised
 *     (commit_sem.h note 4), from the arrival of a waiter not answered at
 *     once until no waiter is left: the warmers sleep meanwhile, so the
 *     commits someone waits for do not queue for a CPU or a lock behind
 *     them. Set and cleared under `mu`; commit_stop clears it.
 *  7. A commit is written with store_commit_waited when a waiter waits as
 *     it starts, else with store_commit; after the former the room ahead
 *     is written only below STORE_ROOM_MIN (store_prealloc.c note 4). An
 *     apply or room so put off is done when the committer has had nothing
 *     to do (no kick, no change armed, no waiter, no failure) for
 *     COMMIT_APPLY_IDLE_MS, between two turns (commit_idle_work): never
 *     inside a turn, so it never delays a commit under way, only (bounded
 *     by one apply and one room) a waiter that comes while it runs. The
 *     same goes for the trim of a log whose oldest batch came of age while
 *     no commit ran (commit_age_wait: the committer sleeps until the store
 *     says it is due, store_log_trim_due_ns, and never wakes for it when
 *     no batch will age). Once idle work failed, not again before a
 *     commit succeeds (`idle_failed`).
 *  8. `waited_recs` is the journal's record count as the latest waiter
 *     arrived (taken before `mu`: the namespace lock is never taken
 *     under it); `nwaiting` is the length of `waiters`; `expect` is the
 *     number of waiters the last commit that answered any answered plus
 *     those it left waiting: the clients that wait in turn with each
 *     other, who are likely to ask again (1 at start: nobody else asked
 *     yet). A settle ends (commit_settle_done) once `nwaiting` reached
 *     `expect` and the journal either holds no more records than
 *     waited_recs or did not grow over one poll; else at
 *     COMMIT_SETTLE_MAX_US. It waits on `cv`, which an arrival signals,
 *     so the last of the expected waiters ends it at once; it polls the
 *     journal (every COMMIT_SETTLE_POLL_US) only once they are all
 *     there, and another client's mutations keep it going. A
 *     turn whose settle is done as it starts takes no poll (its
 *     settle_us sample is 0): one client that mutates and waits in
 *     turn (expect 1) never sleeps for it, and neither do clients all
 *     back before the turn starts. Clients that take turns (one waits
 *     while another mutates, or one asks while the other's commit runs)
 *     settle: such a commit answers one and leaves one, so the next
 *     expects two, and their batches share commits from then on.
 */
#include "commit.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "commit_sem.h"
#include "log.h"
#include "ns.h"
#include "store.h"
#include "thread_sched.h"

/* Least time between two failed attempts, however often we are kicked. */
#define COMMIT_RETRY_GAP_MS 10u
/* Before a commit a waiter asked for, while other mutations are still
 * coming in, look this often (and at most this long) for the journal to
 * settle, so that concurrent clients share the commit (commit_settle). */
#define COMMIT_SETTLE_POLL_US 20u
#define COMMIT_SETTLE_MAX_US 1000u
/* The quiet time after which an apply put off by waited-for commits runs
 * (invariant 7). */
#define COMMIT_APPLY_IDLE_MS 20u
/* The committer's time slice (commit_slice): the shortest the kernel
 * takes. */
#define COMMIT_SLICE_NS THREAD_SLICE_MIN_NS

struct waiter {
	uint64_t seq;
	commit_done_fn fn;
	void *arg;
	struct waiter *next;
};

struct commit {
	struct ns *ns;
	struct store *st;
	struct commit_sem *sem;         /* the namespace's: its aside count (6) */
	unsigned interval_ms;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;
	bool kick;
	bool waited;                    /* a waiter arrived since the last turn */
	uint64_t waited_recs;           /* journal records as the latest did (8) */
	unsigned nwaiting;              /* waiters listed (8) */
	unsigned expect;                /* waiters the next settle waits for (8) */
	bool idle_failed;               /* idle work failed, no commit since (7) */
	bool aside;                     /* the warmers step aside (invariant 6) */
	bool armed;                     /* the running batch holds a change ... */
	uint64_t armed_us;              /* ... since then (mono_us) */
	uint64_t deadline_us;           /* commit_shutdown (mono_us); 0: none */
	bool expired;                   /* past the deadline with the store failing */
	int last_err;                   /* of the last failed write; 0 after a success */
	uint64_t durable;
	struct journal_batch *pending;  /* swapped, write failed: retry first */
	struct waiter *waiters;
	struct commit_stats stats;
};

static void stat_set(_Atomic uint64_t *v, uint64_t x) { atomic_store_explicit(v, x, memory_order_relaxed); }
static void stat_add(_Atomic uint64_t *v, uint64_t x) { atomic_fetch_add_explicit(v, x, memory_order_relaxed); }

/* No waiter left (mu held): let the warmers run again (invariant 6). */
static void aside_end_if_idle(struct commit *c)
{
	if (c->aside && !c->waiters) {
		c->aside = false;
		commit_sem_aside_end(c->sem);
	}
}

/* Answer the waiters whose batch is durable. */
static void wake(struct commit *c)
{
	struct waiter *ready = NULL;
	unsigned n = 0;
	pthread_mutex_lock(&c->mu);
	struct waiter **pp = &c->waiters;
	while (*pp) {
		struct waiter *w = *pp;
		if (w->seq <= c->durable) {
			*pp = w->next;
			w->next = ready;
			ready = w;
			n++;
		} else {
			pp = &w->next;
		}
	}
	c->nwaiting -= n;
	if (n)
		c->expect = n + c->nwaiting; /* (8) */
	pthread_mutex_unlock(&c->mu);
	while (ready) {
		struct waiter *w = ready;
		ready = w->next;
		stat_add(&c->stats.sync_waits, 1);
		w->fn(w->arg, 0);
		free(w);
	}
}

/* Answer every waiter left with err: the store failed, so none of their
 * batches can be durable before a later attempt (invariant 3). */
static void fail_waiters(struct commit *c, int err)
{
	pthread_mutex_lock(&c->mu);
	struct waiter *w = c->waiters;
	c->waiters = NULL;
	c->nwaiting = 0;
	pthread_mutex_unlock(&c->mu);
	while (w) {
		struct waiter *n = w->next;
		stat_add(&c->stats.sync_failures, 1);
		w->fn(w->arg, err);
		free(w);
		w = n;
	}
}

/* One commit of the changes made since since_us (0: unknown). Returns 0,
 * 1 when nothing was pending, or the store error. */
static int commit_once(struct commit *c, uint64_t since_us, bool waited)
{
	uint64_t t0 = mono_us();
	struct journal_batch *b = c->pending;
	if (!b)
		b = ns_swap(c->ns);
	uint64_t t1 = mono_us();
	if (!b)
		return 1;
	struct store_commit_times tm = { 0 };
	int rc = waited ? store_commit_waited(c->st, b, &tm) : store_commit(c->st, b, &tm);
	uint64_t t2 = mono_us();
	if (rc < 0) {
		c->pending = b;
		uint64_t n = atomic_fetch_add_explicit(&c->stats.failures, 1,
		                                       memory_order_relaxed) + 1;
		/* The 1st, 2nd, 4th, 8th... failure: the log does not flood. */
		if ((n & (n - 1)) == 0)
			log_error("commit of batch %llu (%u records) failed: %s; will retry "
			          "(%llu failures so far)", (unsigned long long)b->seq, b->nrecs,
			          rc == -ENOSPC ? "no space left in the store" : strerror(-rc),
			          (unsigned long long)n);
		pthread_mutex_lock(&c->mu);
		c->last_err = rc;
		pthread_mutex_unlock(&c->mu);
		return rc;
	}
	if (c->pending)
		log_info("commit of batch %llu succeeded after failures", (unsigned long long)b->seq);
	c->pending = NULL;
	uint64_t seq = b->seq;
	uint32_t nrecs = b->nrecs;
	ns_publish(c->ns, b);
	uint64_t t3 = mono_us();

	pthread_mutex_lock(&c->mu);
	c->durable = seq;
	c->last_err = 0;
	pthread_mutex_unlock(&c->mu);

	struct commit_stats *s = &c->stats;
	uint64_t swap = t1 - t0, publish = t3 - t2;
	uint64_t logu = tm.log_ns / 1000, apply = tm.apply_ns / 1000, sync = tm.sync_ns / 1000;
	stat_add(&s->count, 1);
	stat_add(&s->records, nrecs);
	hist_add(&s->batch_records, nrecs);
	hist_add(&s->latency_us, t3 - t0);
	hist_add(&s->blocked_us, swap + publish);
	stat_add(&s->swap_us, swap);
	stat_add(&s->log_us, logu);
	stat_add(&s->apply_us, apply);
	stat_add(&s->sync_us, sync);
	stat_add(&s->publish_us, publish);
	stat_set(&s->last_swap_us, swap);
	stat_set(&s->last_log_us, logu);
	stat_set(&s->last_apply_us, apply);
	stat_set(&s->last_sync_us, sync);
	stat_set(&s->last_publish_us, publish);
	hist_add(&s->swap_hist_us, swap);
	hist_add(&s->log_hist_us, logu);
	hist_add(&s->apply_hist_us, apply);
	hist_add(&s->sync_hist_us, sync);
	hist_add(&s->publish_hist_us, publish);
	if (since_us && since_us <= t3)
		hist_add(&s->lag_us, t3 - since_us);
	uint64_t w0 = mono_us();
	wake(c);
	hist_add(&s->wake_hist_us, mono_us() - w0);
	/* Room for the next commits inside the file, once the waiters of
	 * this one are answered (store_prealloc.c note 1); while clients
	 * wait for each commit, only what they cannot do without (note 4;
	 * the rest once idle, invariant 7). */
	if (store_prealloc(c->st, waited ? STORE_ROOM_MIN : STORE_ROOM_LOW) < 0)
		log_debug("commit: no room written ahead in the store");
	log_debug("commit %llu: %u records in %llu us (swap %llu, log %llu, apply %llu, sync %llu, publish %llu)",
	          (unsigned long long)seq, nrecs, (unsigned long long)(t3 - t0),
	          (unsigned long long)swap, (unsigned long long)logu, (unsigned long long)apply,
	          (unsigned long long)sync, (unsigned long long)publish);
	return 0;
}

/* How long to sleep: the interval, doubled per failure up to 1 s, never
 * past the shutdown deadline. */
static unsigned commit_sleep_ms(const struct commit *c, unsigned failures)
{
	unsigned ms = c->interval_ms ? c->interval_ms : 1;
	if (failures)
		ms = failures > 10 ? 1000 : ms * (1u << failures);
	if (ms > 1000 && failures)
		ms = 1000;
	if (c->deadline_us && !c->expired) {
		uint64_t now = mono_us();
		uint64_t left = c->deadline_us > now ? (c->deadline_us - now + 999) / 1000 : 0;
		if (left < ms)
			ms = (unsigned)left;
	}
	return ms;
}

/* Sleep on c->cv (held) for ms; false once the time is up. */
static bool commit_sleep(struct commit *c, unsigned ms)
{
	struct timespec ts;
	if (ms == 0)
		return false;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	ts.tv_sec += ms / 1000 + ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	return pthread_cond_timedwait(&c->cv, &c->mu, &ts) != ETIMEDOUT;
}

/* Sleep on c->cv (held) until mono_us() reaches due_us, or a signal. */
static void commit_sleep_until(struct commit *c, uint64_t due_us)
{
	uint64_t now = mono_us();
	if (due_us <= now)
		return;
	uint64_t us = due_us - now;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(us / 1000000);
	ts.tv_nsec += (long)(us % 1000000) * 1000L;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	pthread_cond_timedwait(&c->cv, &c->mu, &ts);
}

/* Nothing to commit and nobody asking (c->mu held): no kick, no change
 * armed, no waiter (invariant 7). */
static bool commit_quiet(const struct commit *c)
{
	return !c->kick && !c->armed && !c->waiters;
}

/* What waited-for commits put off (invariant 7), c->mu held and let go
 * meanwhile: the apply, then the room. After a failure (a full map, a
 * full file system) it is not tried again until a commit succeeded: the
 * commits find the store's state and report it. */
static void commit_idle_work(struct commit *c)
{
	pthread_mutex_unlock(&c->mu);
	uint64_t a0 = mono_us();
	int rc = store_apply_owed_run(c->st);
	if (rc < 0)
		log_debug("commit: the apply put off failed: %s", strerror(-rc));
	if (rc == 1) {
		stat_add(&c->stats.idle_applies, 1);
		hist_add(&c->stats.idle_apply_us, mono_us() - a0);
	}
	int room = rc < 0 ? 0 : store_prealloc(c->st, STORE_ROOM_LOW);
	if (room < 0)
		log_debug("commit: no room written ahead in the store");
	pthread_mutex_lock(&c->mu);
	if (rc < 0 || room < 0)
		c->idle_failed = true; /* not again until a commit succeeded */
}

/* Nothing to do (c->mu held): when the log's oldest batch will pass
 * its age bound (a commit would trim it, but none comes), sleep until the
 * store says to trim, and trim if still idle (c->mu let go meanwhile,
 * invariant 7). false: no batch will age (sleep without a timeout). */
static bool commit_age_wait(struct commit *c)
{
	if (c->idle_failed)
		return false;
	pthread_mutex_unlock(&c->mu);
	uint64_t due = store_log_trim_due_ns(c->st);
	pthread_mutex_lock(&c->mu);
	if (!commit_quiet(c) || c->stop)
		return true;            /* it came while mu was let go: look again */
	if (!due)
		return false;           /* mu held since the look: no wakeup lost */
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	uint64_t wake = mono_us() + (due > now ? (due - now) / 1000u : 0);
	while (commit_quiet(c) && !c->stop && mono_us() < wake)
		commit_sleep_until(c, wake);
	if (!commit_quiet(c) || c->stop)
		return true;
	pthread_mutex_unlock(&c->mu);
	int rc = store_trim_aged(c->st);
	if (rc > 0)
		stat_add(&c->stats.idle_trims, (uint64_t)rc);
	else if (rc < 0)
		log_warn("commit: trimming the commit log failed: %s", strerror(-rc));
	pthread_mutex_lock(&c->mu);
	if (rc < 0)
		c->idle_failed = true; /* not again until a commit succeeded */
	return true;
}

/* Wait (c->mu held) until it is time for the next attempt (invariant 5):
 * a kick; the interval since the running batch's first change; while
 * failing, the back-off (and never past the shutdown deadline) -- but never
 * sooner than COMMIT_RETRY_GAP_MS after the last failed attempt, so
 * waiters and mutations cannot turn retries into a busy loop. With nothing
 * to commit it sleeps without a timeout, but for an apply put off
 * (invariant 7): after COMMIT_APPLY_IDLE_MS of that, it runs the apply
 * (c->mu let go meanwhile) and waits again; and but for a batch of the
 * log that will come of age (commit_age_wait). Once stopping, at once unless
 * failing. */
static void commit_wait_turn(struct commit *c, unsigned failures, uint64_t failed_us)
{
	for (;;) {
		if (c->stop && !failures)
			return;
		if (!failures && commit_quiet(c) && !c->idle_failed &&
		    (store_apply_owed(c->st) || store_room_owed(c->st))) {
			if (commit_sleep(c, COMMIT_APPLY_IDLE_MS))
				continue;       /* signalled: look again */
			if (commit_quiet(c) && !c->stop)
				commit_idle_work(c);
			continue;
		}
		if (c->kick && !c->stop) {
			uint64_t since = (mono_us() - failed_us) / 1000;
			if (!failures || since >= COMMIT_RETRY_GAP_MS ||
			    !commit_sleep(c, COMMIT_RETRY_GAP_MS - (unsigned)since))
				return;
		} else if (failures || c->stop) {
			if (!commit_sleep(c, commit_sleep_ms(c, failures)))
				return;
		} else if (c->armed) {
			uint64_t due = c->armed_us + (uint64_t)c->interval_ms * 1000;
			if (mono_us() >= due)
				return;
			commit_sleep_until(c, due);
		} else if (!commit_age_wait(c)) {
			pthread_cond_wait(&c->cv, &c->mu);
		}
	}
}

/* Is the settle over (invariant 8; c->mu held)? recs is the journal's
 * record count now, last its count a poll before (UINT64_MAX: no poll
 * yet). */
static bool commit_settle_done(const struct commit *c, uint64_t recs, uint64_t last)
{
	return c->nwaiting >= c->expect && (recs <= c->waited_recs || recs == last);
}

/* A waiter asked for a commit (c->mu held, let go while the journal is
 * read): while the clients answered together last time are not all back,
 * or the journal still grows (another client is in the middle of its
 * mutations, and will likely wait for them next), give them up to
 * COMMIT_SETTLE_MAX_US, so that one commit serves them all instead of
 * several in a row. Returns the time it took (0: done at once, no poll). */
static uint64_t commit_settle(struct commit *c)
{
	uint64_t s0 = mono_us(), end = s0 + COMMIT_SETTLE_MAX_US, last = UINT64_MAX;
	for (;;) {
		pthread_mutex_unlock(&c->mu);
		uint64_t recs = ns_journal_records(c->ns);
		pthread_mutex_lock(&c->mu);
		if (commit_settle_done(c, recs, last))
			break;
		uint64_t now = mono_us();
		if (now >= end || c->stop)
			break;
		last = recs;
		/* An arrival signals cv: the last one expected ends it now.
		 * Until then the journal's growth decides nothing, and is not
		 * polled. */
		commit_sleep_until(c, c->nwaiting < c->expect ? end : now + COMMIT_SETTLE_POLL_US);
	}
	return last == UINT64_MAX ? 0 : mono_us() - s0;
}

/* Ask for a slice of COMMIT_SLICE_NS at the server's nice value (see the
 * top). Best effort. */
static void commit_slice(void)
{
	int err = thread_slice_set(COMMIT_SLICE_NS);
	if (err)
		log_debug("commit: no slice of its own: %s", strerror(-err));
}

static void *commit_main(void *arg)
{
	struct commit *c = arg;
	unsigned failures = 0;
	uint64_t failed_us = 0;
	/* commit_settle's short sleeps: 1 us of slack, not the default 50. */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	commit_slice();
	pthread_mutex_lock(&c->mu);
	for (;;) {
		commit_wait_turn(c, failures, failed_us);
		bool settle = c->waited && !c->stop && !failures && !c->pending;
		c->waited = false;
		if (settle)
			hist_add(&c->stats.settle_us, commit_settle(c)); /* invariant 8 */
		stat_add(&c->stats.turns, 1);
		c->kick = false;
		uint64_t since = c->armed ? c->armed_us : 0;
		c->armed = false;
		bool stopping = c->stop;
		bool waited = c->waiters != NULL;
		uint64_t deadline = c->deadline_us;
		pthread_mutex_unlock(&c->mu);

		int rc = commit_once(c, since, waited);
		wake(c);
		bool expired = false;
		if (rc < 0) {
			failures++;
			failed_us = mono_us();
			expired = deadline && mono_us() >= deadline;
			if (expired) {
				pthread_mutex_lock(&c->mu);
				c->expired = true;
				pthread_mutex_unlock(&c->mu);
			}
			fail_waiters(c, rc);
		} else {
			failures = 0;
			if (rc == 0) {
				pthread_mutex_lock(&c->mu);
				c->idle_failed = false;
				pthread_mutex_unlock(&c->mu);
			}
		}
		/* A change the arm did not announce (none is known) still gets
		 * its turn: with records left, the next turn counts from now. */
		bool left = rc >= 0 && ns_journal_records(c->ns) > 0;

		pthread_mutex_lock(&c->mu);
		aside_end_if_idle(c);
		if (left && !c->armed) {
			c->armed = true;
			c->armed_us = mono_us();
		}
		if (stopping && (rc == 1 || expired))
			break;
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

static void commit_kick_cb(void *arg)
{
	commit_kick(arg);
}

/* The running batch received its first change (ns lock held). */
static void commit_arm_cb(void *arg)
{
	struct commit *c = arg;
	pthread_mutex_lock(&c->mu);
	if (!c->armed) {
		c->armed = true;
		c->armed_us = mono_us();
		pthread_cond_signal(&c->cv);
	}
	pthread_mutex_unlock(&c->mu);
}

int commit_start(struct ns *ns, struct store *st, unsigned interval_ms, struct commit **out)
{
	struct commit *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->ns = ns;
	c->st = st;
	c->sem = ns_commit_sem(ns);
	c->interval_ms = interval_ms;
	c->expect = 1; /* invariant 8: nobody else asked yet */
	struct store_meta meta;
	int rc = store_get_meta(st, &meta);
	if (rc < 0) {
		free(c);
		return rc;
	}
	c->durable = meta.last_seq;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	rc = pthread_create(&c->thread, NULL, commit_main, c);
	if (rc == 0)
		pthread_setname_np(c->thread, "mcached-commit");
	if (rc != 0) {
		pthread_cond_destroy(&c->cv);
		pthread_mutex_destroy(&c->mu);
		free(c);
		return -rc;
	}
	ns_set_kick(ns, commit_kick_cb, c);
	ns_set_arm(ns, commit_arm_cb, c);
	*out = c;
	return 0;
}

void commit_shutdown(struct commit *c, unsigned timeout_ms)
{
	pthread_mutex_lock(&c->mu);
	/* At least 1 us: 0 means "no deadline". */
	c->deadline_us = mono_us() + (uint64_t)timeout_ms * 1000 + 1;
	c->kick = true;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

void commit_stop(struct commit *c)
{
	if (!c)
		return;
	ns_set_kick(c->ns, NULL, NULL);
	ns_set_arm(c->ns, NULL, NULL);
	pthread_mutex_lock(&c->mu);
	if (!c->deadline_us)
		c->deadline_us = mono_us() + 1;
	c->stop = true;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
	pthread_join(c->thread, NULL);
	/* Whoever still waits will never see durability. */
	fail_waiters(c, c->last_err ? c->last_err : -EIO);
	pthread_mutex_lock(&c->mu);
	aside_end_if_idle(c);
	pthread_mutex_unlock(&c->mu);
	if (c->pending)
		log_error("batch %llu was never committed", (unsigned long long)c->pending->seq);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

int commit_wait_async(struct commit *c, uint64_t seq, commit_done_fn fn, void *arg)
{
	uint64_t recs = ns_journal_records(c->ns); /* invariant 8: before mu */
	pthread_mutex_lock(&c->mu);
	if (seq <= c->durable || c->expired) {
		int err = seq <= c->durable ? 0 : c->last_err ? c->last_err : -EIO;
		pthread_mutex_unlock(&c->mu);
		if (err)
			stat_add(&c->stats.sync_failures, 1);
		fn(arg, err);
		return 0;
	}
	struct waiter *w = malloc(sizeof(*w));
	if (!w) {
		pthread_mutex_unlock(&c->mu);
		return -ENOMEM;
	}
	*w = (struct waiter){ seq, fn, arg, c->waiters };
	c->waiters = w;
	c->nwaiting++;
	if (!c->aside) {
		c->aside = true;
		commit_sem_aside_begin(c->sem);
	}
	c->kick = true;
	c->waited_recs = recs;
	c->waited = true;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
	return 0;
}

void commit_kick(struct commit *c)
{
	pthread_mutex_lock(&c->mu);
	c->kick = true;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

struct sync_wait {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
	int err;
};

static void sync_done(void *arg, int err)
{
	struct sync_wait *sw = arg;
	pthread_mutex_lock(&sw->mu);
	sw->done = true;
	sw->err = err;
	pthread_cond_signal(&sw->cv);
	pthread_mutex_unlock(&sw->mu);
}

int commit_wait(struct commit *c, uint64_t seq)
{
	struct sync_wait sw = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, 0 };
	int rc = commit_wait_async(c, seq, sync_done, &sw);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&sw.mu);
	while (!sw.done)
		pthread_cond_wait(&sw.cv, &sw.mu);
	pthread_mutex_unlock(&sw.mu);
	return sw.err;
}

const struct commit_stats *commit_get_stats(const struct commit *c)
{
	return &c->stats;
}

uint64_t commit_lag(struct commit *c)
{
	pthread_mutex_lock(&c->mu);
	uint64_t now = mono_us();
	uint64_t lag = c->armed && now > c->armed_us ? now - c->armed_us : 0;
	pthread_mutex_unlock(&c->mu);
	return lag;
}
