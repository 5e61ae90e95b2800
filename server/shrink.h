/* shrink.h - the cache's bound: watermarks on segment use, a CLOCK (second
 * chance) shrinker over clean leaf dentries, direct reclaim for an
 * operation that found the segment full, and the forced commit that turns
 * dirty entries into evictable ones. */
#ifndef MC_SHRINK_H
#define MC_SHRINK_H

#include <stdbool.h>
#include <stdint.h>

struct ns;

/* Default watermarks, in percent of the segment. */
#define SHRINK_HIGH_PCT 90u
#define SHRINK_LOW_PCT  80u

struct shrink_stats {
	uint64_t runs;           /* background runs (use was above the high mark) */
	uint64_t scanned;        /* dentry slots the CLOCK hand passed */
	uint64_t evicted;        /* dentries evicted (with their inode when it had no other name) */
	uint64_t rotated;        /* second chances: referenced bit taken, entry kept */
	uint64_t direct;         /* direct reclaims: an operation found the segment full */
	uint64_t forced_commits; /* commits forced because what was left was dirty */
	uint64_t enospc;         /* operations answered ENOSPC for want of cache space */
	uint64_t neg_evicted;    /* negative dentries evicted (shrinker and caps) */
	uint64_t reloads;        /* entries loaded from the store on a miss */
	uint64_t rmtree_entries; /* entries removed by rmtree (ns_rmtree) */
	uint64_t rmtree_visits;  /* store names and listed entries it looked at for them */
};

/* Start the background shrinker of ns: it wakes when an operation leaves
 * use above the high mark (and every 100 ms), and evicts down to the low
 * mark in batches, dropping the namespace lock between them. 0, -EALREADY,
 * or the pthread error. */
int shrink_start(struct ns *ns);
/* Stop it and wait for it (no-op when not running). */
void shrink_stop(struct ns *ns);

/* Evict with the lock taken here until use is at most target bytes or
 * max_scan slots were passed; returns the number evicted. For tests and
 * tools: the operations reclaim by themselves. */
uint64_t shrink_now(struct ns *ns, uint64_t target, uint64_t max_scan);

#endif
