/* store_ovladd.c - the overlay adder: a thread that adds a batch's changes
 * to the overlay while the commit that writes the batch waits for its
 * fsync.
 *
 * A commit that leaves the tables alone (store_log.c note 5) writes the
 * batch to the log and, once mdb_txn_commit returned, adds its changes
 * to the overlay (a few hundred instructions a record, some 100 us for a
 * commit of 800 records) before the committer may publish and answer the
 * waiters. mdb_txn_commit is mostly two fdatasyncs, during which the
 * committer's CPU has nothing to do; so the add is handed to this thread
 * just before, and the committer only collects the result after.
 *
 * Invariants:
 *  1. The overlay may show a batch's changes before the batch is durable,
 *     never after it failed. Early is no news: the namespace cache shows
 *     clients every change of the batch already (a changed entry stays
 *     dirty, hence pinned, until the publish; a name rmtree removed
 *     without loading it lies below a directory the batch removed), so
 *     no read of the store (a miss, a warmer's insert -- ns_warm.c note 2
 *     --, fsck's comparison of what is clean) finds in the overlay a
 *     state the cache does not show. A commit that
 *     fails after the add marks the overlay broken (store_log.c note 5:
 *     reads then apply from the log, which lacks the batch, and the apply
 *     empties the overlay); the batch is retried whole.
 *  2. One job at a time, posted and collected by the committer within one
 *     commit, commit_lock held; the batch it names outlives it. A job the
 *     thread has not taken when the committer collects it is withdrawn:
 *     the committer adds the batch itself once the commit is through, as
 *     before (store_committed), and the commit never waits for the thread
 *     to wake up.
 *  3. The add takes `ovl_lock` for writing, as store_committed does; the
 *     thread holds nothing else, and no holder of `ovl_lock` waits for
 *     the commit (readers let it go before they apply: store_read.c), so
 *     the committer's wait for a taken job ends. The committer itself
 *     takes `ovl_lock` only once it let `resize` go (store_log.c note 4):
 *     after a failed commit, store_ovladd_failed.
 *  4. The thread is started by the first commit that posts (never for a
 *     read-only store) and stopped by store_close; without it (it could
 *     not be started) the committer adds in place, as before. */
#include <pthread.h>
#include <stdbool.h>

#include "store_impl.h"

enum { OA_IDLE, OA_POSTED, OA_TAKEN, OA_DONE };

/* A failed add is the committer's to mark (store_committed, or
 * store_ovladd_failed when the commit failed too). */
static int ovladd_run(struct store *s, const struct journal_batch *b)
{
	pthread_rwlock_wrlock(&s->ovl_lock);
	int err = ovl_add_batch(&s->ovl, b->buf, b->len);
	pthread_rwlock_unlock(&s->ovl_lock);
	return err;
}

static void ovladd_sync_destroy(struct store_ovladd *oa)
{
	pthread_cond_destroy(&oa->done_cv);
	pthread_cond_destroy(&oa->cv);
	pthread_mutex_destroy(&oa->mu);
}

static void *ovladd_main(void *arg)
{
	struct store *s = arg;
	struct store_ovladd *oa = &s->oa;
	pthread_setname_np(pthread_self(), "mcached-ovl");
	pthread_mutex_lock(&oa->mu);
	for (;;) {
		while (!oa->stop && oa->state != OA_POSTED)
			pthread_cond_wait(&oa->cv, &oa->mu);
		if (oa->stop)
			break;
		oa->state = OA_TAKEN;
		const struct journal_batch *b = oa->b;
		pthread_mutex_unlock(&oa->mu);
		int err = ovladd_run(s, b);
		pthread_mutex_lock(&oa->mu);
		oa->err = err;
		oa->state = OA_DONE;
		pthread_cond_broadcast(&oa->done_cv);
	}
	pthread_mutex_unlock(&oa->mu);
	return NULL;
}

bool store_ovladd_post(struct store *s, const struct journal_batch *b)
{
	struct store_ovladd *oa = &s->oa;
	if (!oa->started && !oa->failed) {
		pthread_mutex_init(&oa->mu, NULL);
		pthread_cond_init(&oa->cv, NULL);
		pthread_cond_init(&oa->done_cv, NULL);
		oa->started = pthread_create(&oa->th, NULL, ovladd_main, s) == 0;
		oa->failed = !oa->started;
		if (oa->failed)
			ovladd_sync_destroy(oa);
	}
	if (!oa->started)
		return false;
	pthread_mutex_lock(&oa->mu);
	oa->b = b;
	oa->state = OA_POSTED;
	pthread_cond_signal(&oa->cv);
	pthread_mutex_unlock(&oa->mu);
	return true;
}

int store_ovladd_collect(struct store *s, bool *added)
{
	struct store_ovladd *oa = &s->oa;
	pthread_mutex_lock(&oa->mu);
	bool taken = oa->state != OA_POSTED;   /* else withdrawn (note 2) */
	while (oa->state == OA_TAKEN)
		pthread_cond_wait(&oa->done_cv, &oa->mu);
	int err = taken ? oa->err : 0;
	oa->state = OA_IDLE;
	oa->b = NULL;
	pthread_mutex_unlock(&oa->mu);
	*added = taken;
	return err;
}

void store_ovladd_failed(struct store *s)
{
	pthread_rwlock_wrlock(&s->ovl_lock);
	s->ovl_broken = true;
	pthread_rwlock_unlock(&s->ovl_lock);
}

void store_ovladd_wait(struct store *s)
{
	struct store_ovladd *oa = &s->oa;
	pthread_mutex_lock(&oa->mu);
	while (oa->state == OA_POSTED || oa->state == OA_TAKEN)
		pthread_cond_wait(&oa->done_cv, &oa->mu);
	pthread_mutex_unlock(&oa->mu);
}

void store_ovladd_stop(struct store *s)
{
	struct store_ovladd *oa = &s->oa;
	if (!oa->started)
		return;
	pthread_mutex_lock(&oa->mu);
	oa->stop = true;
	pthread_cond_signal(&oa->cv);
	pthread_mutex_unlock(&oa->mu);
	pthread_join(oa->th, NULL);
	ovladd_sync_destroy(oa);
	oa->started = false;
}
