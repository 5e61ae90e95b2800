/* commit.h - the group committer: one thread that swaps the running journal
 * batch for an empty one, writes the full one to the store in one LMDB
 * transaction, publishes it (entries become clean, committed_seq advances)
 * and wakes those waiting for durability. */
#ifndef MC_COMMIT_H
#define MC_COMMIT_H

#include <stdint.h>

#include "stats.h"

struct commit;
struct ns;
struct store;

/* Start the committer for ns over store: it commits interval_ms after the
 * first change not yet committed (ns_set_arm), so at most once per
 * interval under sustained load and never while nothing changes, and at
 * once when someone waits or ns finds its journal half way to its bound
 * (ns_set_kick). -ENOMEM, or the pthread error. */
int commit_start(struct ns *ns, struct store *st, unsigned interval_ms, struct commit **out);
/* Begin a bounded shutdown: keep committing (and retrying a failing store)
 * for at most timeout_ms from now. Once the deadline has passed and an
 * attempt failed, every waiter is answered with the store's error at once,
 * and so is every later commit_wait_async for a batch not yet durable. */
void commit_shutdown(struct commit *c, unsigned timeout_ms);
/* Commit what is pending (one attempt when the store fails, or retries up
 * to the commit_shutdown deadline), stop the thread, answer the waiters
 * left with the store's error (-EIO if none was seen), free. What could
 * not be committed stays in the namespace's journal (ns_journal_backlog). */
void commit_stop(struct commit *c);

/* Called once batch seq is durable (err 0), or with err < 0 when a commit
 * attempt failed before it was: the store's error (-ENOSPC, -EIO, ...); the
 * batch stays in the journal and the committer keeps retrying. Runs on the
 * committer thread, or inline from commit_wait_async when the answer is
 * already known; it must not block. */
typedef void (*commit_done_fn)(void *arg, int err);

/* Ask for fn(arg) once every batch up to seq is durable, and commit soon.
 * 0, or -ENOMEM (fn will not be called). */
int commit_wait_async(struct commit *c, uint64_t seq, commit_done_fn fn, void *arg);
/* Commit soon, without waiting (used after each mutation when the commit
 * interval is 0). */
void commit_kick(struct commit *c);
/* Block until batch seq is durable: 0, or the store's error after an
 * attempt failed (see commit_done_fn), or -ENOMEM. */
int commit_wait(struct commit *c, uint64_t seq);

const struct commit_stats *commit_get_stats(const struct commit *c);
/* Age in microseconds of the oldest change not yet taken by a commit; 0
 * when there is none. */
uint64_t commit_lag(struct commit *c);

#endif
