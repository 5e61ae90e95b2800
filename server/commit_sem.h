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
 */
#ifndef MC_COMMIT_SEM_H
#define MC_COMMIT_SEM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

struct commit_sem {
	pthread_rwlock_t rw;
	_Atomic unsigned committer_waiting;   /* writers waiting or holding */
};

static inline void commit_sem_init(struct commit_sem *cs)
{
	pthread_rwlockattr_t a;
	pthread_rwlockattr_init(&a);
	pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&cs->rw, &a);
	pthread_rwlockattr_destroy(&a);
	atomic_init(&cs->committer_waiting, 0);
}

static inline void commit_sem_destroy(struct commit_sem *cs)
{
	pthread_rwlock_destroy(&cs->rw);
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
