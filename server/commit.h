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

/* Start the committer for ns over store, committing every interval_ms (and
 * at once when someone waits). -ENOMEM, or the pthread error. */
int commit_start(struct ns *ns, struct store *st, unsigned interval_ms, struct commit **out);
/* Commit what is pending, stop the thread, free. */
void commit_stop(struct commit *c);

/* Called once batch seq is durable (or, with err < 0, when it can never be:
 * the store failed). Runs on the committer thread, or inline from
 * commit_wait_async when seq is already durable; it must not block. */
typedef void (*commit_done_fn)(void *arg, int err);

/* Ask for fn(arg) once every batch up to seq is durable, and commit soon.
 * 0, or -ENOMEM (fn will not be called). */
int commit_wait_async(struct commit *c, uint64_t seq, commit_done_fn fn, void *arg);
/* Commit soon, without waiting (used after each mutation when the commit
 * interval is 0). */
void commit_kick(struct commit *c);
/* Block until batch seq is durable. 0 or the commit error. */
int commit_wait(struct commit *c, uint64_t seq);

const struct commit_stats *commit_get_stats(const struct commit *c);

#endif
