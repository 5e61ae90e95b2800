/* commit_sem.h - the commit semaphore: readers are the warmers inserting a
 * batch read from an LMDB snapshot (warm.c) and misses read outside the
 * namespace lock (ns_miss.c); the writer is the committer publishing a
 * commit (ns_publish: entries become clean, committed_seq advances). A
 * warmer usually reads its batch without the semaphore and takes it only
 * to insert, after checking that committed_seq did not move (warm.c note
 * 1). A pthread rwlock cannot tell its readers that a writer waits, so the
 * writer raises `committer_waiting` before it blocks, and readers poll it
 * between entries and let go at once when it is set.
 *
 * Invariants:
 *  1. A reader that holds the semaphore sees no publish: every entry made
 *     clean (and so evictable) was made clean before the reader took it.
 *  2. The lock prefers the writer: once the committer waits, new readers
 *     block, so readers that keep coming back cannot starve it.
 *  3. Order: commit_sem before the namespace lock, never the reverse (the
 *     publish takes the semaphore, then the namespace lock).
 *  4. `aside` counts the commits someone waits for, from the waiter's
 *     arrival to its answer (commit.c invariant 6). While it is raised the
 *     warmers step aside: they let go of the semaphore and the namespace
 *     lock and sleep (commit_sem_step_aside), so the committer, the thread
 *     that answers the waiter and the waiting client find a CPU that no
 *     warmer occupies and no lock that a warmer holds. aside_mu is a leaf:
 *     nothing is taken while it is held. A sleeper is woken when aside
 *     falls to 0, or gives up after its bound.
 */
#ifndef MC_COMMIT_SEM_H
#define MC_COMMIT_SEM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

struct commit_sem {
	pthread_rwlock_t rw;
	_Atomic unsigned committer_waiting;   /* writers waiting or holding */
	_Atomic unsigned aside;               /* waited-for commits under way (4) */
	pthread_mutex_t aside_mu;
	pthread_cond_t aside_cv;              /* aside fell to 0 */
};

static inline void commit_sem_init(struct commit_sem *cs)
{
	pthread_rwlockattr_t a;
	pthread_rwlockattr_init(&a);
	pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&cs->rw, &a);
	pthread_rwlockattr_destroy(&a);
	atomic_init(&cs->committer_waiting, 0);
	atomic_init(&cs->aside, 0);
	pthread_mutex_init(&cs->aside_mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&cs->aside_cv, &ca);
	pthread_condattr_destroy(&ca);
}

static inline void commit_sem_destroy(struct commit_sem *cs)
{
	pthread_rwlock_destroy(&cs->rw);
	pthread_cond_destroy(&cs->aside_cv);
	pthread_mutex_destroy(&cs->aside_mu);
}

static inline void commit_sem_read_lock(struct commit_sem *cs)
{
	pthread_rwlock_rdlock(&cs->rw);
}

static inline void commit_sem_read_unlock(struct commit_sem *cs)
{
	pthread_rwlock_unlock(&cs->rw);
}

/* Readers poll this between entries: true means let go now. */
static inline bool commit_sem_contended(struct commit_sem *cs)
{
	return atomic_load_explicit(&cs->committer_waiting, memory_order_relaxed) != 0;
}

/* A commit someone waits for is under way (note 4): the warmers step aside
 * until commit_sem_aside_end. */
static inline void commit_sem_aside_begin(struct commit_sem *cs)
{
	atomic_fetch_add_explicit(&cs->aside, 1, memory_order_relaxed);
}

static inline void commit_sem_aside_end(struct commit_sem *cs)
{
	if (atomic_fetch_sub_explicit(&cs->aside, 1, memory_order_relaxed) == 1) {
		pthread_mutex_lock(&cs->aside_mu);
		pthread_cond_broadcast(&cs->aside_cv);
		pthread_mutex_unlock(&cs->aside_mu);
	}
}

/* Warmers poll this between entries: true means stop and step aside. */
static inline bool commit_sem_aside_wanted(struct commit_sem *cs)
{
	return atomic_load_explicit(&cs->aside, memory_order_relaxed) != 0;
}

/* Sleep, holding nothing, while a waited-for commit is under way, at most
 * max_us. false when it gave up with the commit still under way. */
static inline bool commit_sem_step_aside(struct commit_sem *cs, unsigned max_us)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_nsec += (long)max_us * 1000L;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	pthread_mutex_lock(&cs->aside_mu);
	int rc = 0;
	while (rc == 0 && commit_sem_aside_wanted(cs))
		rc = pthread_cond_timedwait(&cs->aside_cv, &cs->aside_mu, &ts);
	bool done = !commit_sem_aside_wanted(cs);
	pthread_mutex_unlock(&cs->aside_mu);
	return done;
}

static inline void commit_sem_write_lock(struct commit_sem *cs)
{
	atomic_fetch_add_explicit(&cs->committer_waiting, 1, memory_order_relaxed);
	pthread_rwlock_wrlock(&cs->rw);
}

static inline void commit_sem_write_unlock(struct commit_sem *cs)
{
	atomic_fetch_sub_explicit(&cs->committer_waiting, 1, memory_order_relaxed);
	pthread_rwlock_unlock(&cs->rw);
}

#endif
