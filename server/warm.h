/* warm.h - the warmers: threads that load the namespace from LMDB into
 * the cache at start, in parallel and upper levels first, while the server
 * serves; afterwards they read ahead the directories where lookups miss.
 * They run at low priority, yield to the committer (commit_sem.h) and
 * never make the cache older than it is (ns_warm.c). */
#ifndef MC_WARM_H
#define MC_WARM_H

#include <stdbool.h>

#include "stats.h"

struct ns;
struct store;
struct warm;

/* Start n warmer threads over ns and its store (n 0: none; *out is NULL
 * then and every function below accepts NULL), at nice value nice (a
 * failure to lower their priority is logged, not fatal). With warm_up they begin at
 * once from the root (without, they only read ahead: the cache was kept
 * from a clean stop), and stop loading when segment use reaches the shrinker's low
 * watermark. -ENOMEM, -EAGAIN (LMDB's reader table is full), or the
 * pthread error; nothing is left running on failure. */
int warm_start(struct ns *ns, struct store *st, unsigned n, int nice, bool warm_up,
               struct warm **out);
/* For tests: when the environment variable MCACHED_WARM_ENTRY_DELAY_US is
 * set, each entry read from the store takes that much longer (a slow
 * store), so that races with warm-up can be provoked. */
/* Stop the threads (between two steps) and free. */
void warm_stop(struct warm *w);
/* Wait until the start-up warm-up is over (for tests and tools). */
void warm_wait(struct warm *w);
void warm_get_stats(struct warm *w, struct stats_warm *out);
/* Whether the start-up warm-up is over (false for NULL). */
bool warm_done(struct warm *w);

#endif
