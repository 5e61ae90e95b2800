/* stats.c - log-linear histograms, per-thread counter merging, op names, and
 * the table of metrics that the JSON (stats_json.c) and Prometheus
 * (stats_prom.c) renderings walk, and the compact dump that /clients and
 * /slowlog share. */
#include "stats.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "mcache.pb-c.h"

/*
 * Histogram layout (HIST_BUCKETS = 16 + 60 * 8 = 496):
 *   index v          for v < 16 (exact);
 *   16 + (e - 4) * 8 + s  for 2^e <= v < 2^(e+1), e = 4..63, where s is the
 *                    three bits below the leading one (8 sub-buckets).
 * A bucket at exponent e is 2^(e-3) wide, so its upper bound is within 12.5%
 * of any value in it. The top bucket (e = 63, s = 7) ends at UINT64_MAX.
 */
_Static_assert(HIST_BUCKETS == 16 + (64 - 4) * 8, "HIST_BUCKETS must cover 64-bit values");

#define RLX memory_order_relaxed

static unsigned hist_index(uint64_t v)
{
	if (v < 16)
		return (unsigned)v;
	unsigned e = 63u - (unsigned)__builtin_clzll(v);
	unsigned s = (unsigned)(v >> (e - 3)) & 7u;
	return 16u + (e - 4u) * 8u + s;
}

/* Largest value that falls in bucket i. */
static uint64_t hist_bucket_upper(unsigned i)
{
	if (i < 16)
		return i;
	unsigned e = 4u + (i - 16u) / 8u;
	unsigned s = (i - 16u) % 8u;
	uint64_t lower = (uint64_t)(8u + s) << (e - 3);
	return lower + (((uint64_t)1 << (e - 3)) - 1);
}

void hist_add(struct hist *h, uint64_t v)
{
	/* One writer: plain load + store is enough and avoids a locked op. */
	stat_add_one_writer(&h->b[hist_index(v)], 1);
	stat_add_one_writer(&h->sum, v);
	if (v > atomic_load_explicit(&h->max, RLX))
		atomic_store_explicit(&h->max, v, RLX);
	stat_add_one_writer(&h->count, 1);
}

static void add_u64(_Atomic uint64_t *dst, const _Atomic uint64_t *src)
{
	atomic_store_explicit(dst, atomic_load_explicit(dst, RLX) + atomic_load_explicit(src, RLX),
	                      RLX);
}

void hist_merge(struct hist *dst, const struct hist *src)
{
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		add_u64(&dst->b[i], &src->b[i]);
	add_u64(&dst->count, &src->count);
	add_u64(&dst->sum, &src->sum);
	uint64_t m = atomic_load_explicit(&src->max, RLX);
	if (m > atomic_load_explicit(&dst->max, RLX))
		atomic_store_explicit(&dst->max, m, RLX);
}

uint64_t hist_quantile(const struct hist *h, double q)
{
	/* Count from the buckets themselves: a concurrent writer may have
	 * bumped a bucket but not yet `count`. */
	uint64_t total = 0;
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		total += atomic_load_explicit(&h->b[i], RLX);
	if (total == 0)
		return 0;
	if (!(q > 0.0)) /* also NaN */
		q = 0.0;
	if (q > 1.0)
		q = 1.0;
	double r = q * (double)total; /* rank = ceil(r), in 1..total */
	uint64_t rank = r >= (double)total ? total : (uint64_t)r;
	if ((double)rank < r)
		rank++;
	if (rank < 1)
		rank = 1;
	uint64_t max = atomic_load_explicit(&h->max, RLX);
	uint64_t seen = 0;
	for (unsigned i = 0; i < HIST_BUCKETS; i++) {
		seen += atomic_load_explicit(&h->b[i], RLX);
		if (seen >= rank) {
			uint64_t up = hist_bucket_upper(i);
			return up < max ? up : max;
		}
	}
	return max; /* not reached */
}

uint64_t hist_count_le(const struct hist *h, uint64_t v)
{
	uint64_t n = 0;
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		if (hist_bucket_upper(i) <= v)
			n += atomic_load_explicit(&h->b[i], RLX);
	return n;
}

void rpc_stats_merge(struct rpc_stats *dst, const struct rpc_stats *src)
{
	add_u64(&dst->requests, &src->requests);
	for (unsigned i = 0; i < STATS_OPS; i++) {
		add_u64(&dst->ops[i], &src->ops[i]);
		add_u64(&dst->errors[i], &src->errors[i]);
		hist_merge(&dst->op_us[i], &src->op_us[i]);
	}
	add_u64(&dst->bad_frames, &src->bad_frames);
	add_u64(&dst->connections, &src->connections);
	for (unsigned i = 0; i < STATS_LIMITS; i++)
		add_u64(&dst->limits[i], &src->limits[i]);
	add_u64(&dst->output_bytes, &src->output_bytes);
	add_u64(&dst->replies_queued, &src->replies_queued);
	add_u64(&dst->replies_direct, &src->replies_direct);
	add_u64(&dst->busy_polls, &src->busy_polls);
	add_u64(&dst->busy_poll_misses, &src->busy_poll_misses);
	add_u64(&dst->busy_poll_us, &src->busy_poll_us);
}

const char *stats_limit_name(unsigned id)
{
	static const char *const names[STATS_LIMITS] = {
		[STATS_LIMIT_ACCEPT_PAUSES] = "accept_pauses",
		[STATS_LIMIT_REFUSED] = "refused",
		[STATS_LIMIT_TOO_MANY_OPS] = "too_many_ops",
		[STATS_LIMIT_REPLY_FULL] = "reply_full",
		[STATS_LIMIT_HELLO_TIMEOUTS] = "hello_timeouts",
		[STATS_LIMIT_FRAME_TIMEOUTS] = "frame_timeouts",
		[STATS_LIMIT_PREHELLO_EVICTED] = "prehello_evicted",
		[STATS_LIMIT_OUTPUT_DISCONNECTS] = "output_disconnects",
	};
	return id < STATS_LIMITS ? names[id] : "unknown";
}

/* ---- op names ------------------------------------------------------------ */

static char op_names[STATS_OPS][32];
static pthread_once_t op_names_once = PTHREAD_ONCE_INIT;

static void op_names_init(void)
{
	const ProtobufCEnumDescriptor *d = &mcache__op_code__descriptor;
	for (unsigned i = 0; i < d->n_values; i++) {
		const ProtobufCEnumValue *v = &d->values[i];
		if (v->value < 0 || v->value >= STATS_OPS || v->name == NULL)
			continue;
		const char *n = v->name;
		if (strncmp(n, "OP_", 3) == 0)
			n += 3;
		char *o = op_names[v->value];
		size_t k = 0;
		for (; n[k] != '\0' && k < sizeof(op_names[0]) - 1; k++) {
			char c = n[k];
			o[k] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
		}
		o[k] = '\0';
	}
}

const char *stats_op_name(unsigned code)
{
	pthread_once(&op_names_once, op_names_init);
	if (code >= STATS_OPS || op_names[code][0] == '\0')
		return "unknown";
	return op_names[code];
}

const char *stats_op_label(unsigned code, char buf[16])
{
	const char *n = stats_op_name(code);
	if (strcmp(n, "unknown") != 0)
		return n;
	snprintf(buf, 16, "op%u", code);
	return buf;
}

/* ---- the table of metrics ------------------------------------------------ */

#define OFF(field) offsetof(struct stats_snapshot, field)
#define COUNTER(json, prom, label, field, help) \
	{ json, prom, label, STATS_COUNTER, STATS_UNIT_NONE, help, OFF(field) }
#define GAUGE(json, prom, label, field, help) \
	{ json, prom, label, STATS_GAUGE, STATS_UNIT_NONE, help, OFF(field) }
/* Microsecond counters and gauges, in seconds in /metrics. */
#define COUNTER_US(json, prom, label, field, help) \
	{ json, prom, label, STATS_COUNTER, STATS_UNIT_US, help, OFF(field) }
#define GAUGE_US(json, prom, label, field, help) \
	{ json, prom, label, STATS_GAUGE, STATS_UNIT_US, help, OFF(field) }
#define HIST(json, prom, unit, field, help) \
	{ json, prom, NULL, STATS_HIST, unit, help, OFF(field) }
/* The cache's bound (server/shrink.h): one row per counter or gauge. */
#define CACHE_COUNTER(k, help) COUNTER("cache." #k, "mcache_cache_" #k "_total", NULL, cache.k, help)
#define CACHE_GAUGE(k, help) GAUGE("cache." #k, "mcache_cache_" #k, NULL, cache.k, help)
/* The extent cache (server/extent.h). */
#define EXT_COUNTER(k, help) COUNTER("extents." #k, "mcache_extents_" #k "_total", NULL, extents.k, help)
#define EXT_GAUGE(k, help) GAUGE("extents." #k, "mcache_extents_" #k, NULL, extents.k, help)
#define LIMIT(id, name) \
	COUNTER("rpc.limits." name, "mcache_rpc_limit_events_total", "event=\"" name "\"", \
	        rpc.limits[id], "Times a limit protected the server, by event.")
#define PHASE(name, field) \
	COUNTER_US("commits.phase_us_total." name, "mcache_commit_phase_seconds_total", \
	           "phase=\"" name "\"", commits.field, "Time spent in each commit phase.")
#define LAST_PHASE(name, field) \
	GAUGE_US("commits.last_phase_us." name, "mcache_commit_last_phase_seconds", \
	         "phase=\"" name "\"", commits.field, "Phase times of the last commit.")

const struct stats_metric stats_metrics[] = {
	GAUGE("uptime_s", NULL, NULL, uptime_s, "Seconds since the server started."),
	GAUGE("start_time_s", "mcache_start_time_seconds", NULL, start_time_s,
	      "Start time of the server since the Unix epoch, in seconds."),

	GAUGE("dentries.positive", "mcache_dentries", "state=\"positive\"", dentries_positive,
	      "Cached directory entries: positive (a name) or negative (known absent)."),
	GAUGE("dentries.negative", "mcache_dentries", "state=\"negative\"", dentries_negative,
	      "Cached directory entries: positive (a name) or negative (known absent)."),
	GAUGE("dentries.dirty", "mcache_dentries_dirty", NULL, dentries_dirty,
	      "Cached directory entries not yet committed."),
	GAUGE("dentries.complete_dirs", "mcache_complete_dirs", NULL, dirs_complete,
	      "Directories whose children are all cached."),
	GAUGE("inodes.cached", "mcache_inodes", NULL, inodes_cached, "Cached inodes."),
	GAUGE("inodes.dirty", "mcache_inodes_dirty", NULL, inodes_dirty,
	      "Cached inodes not yet committed."),
	COUNTER("prune.subtrees", "mcache_subtree_prunes_total", NULL, subtree_prunes,
	        "Removed directories whose cached children were pruned."),
	COUNTER("prune.entries", "mcache_pruned_entries_total", NULL, pruned_entries,
	        "Cached entries freed by subtree pruning."),

	GAUGE("shm.bytes_total", "mcache_shm_size_bytes", NULL, shm_bytes_total,
	      "Size of the shared-memory segment."),
	GAUGE("shm.bytes_used", "mcache_shm_used_bytes", NULL, shm_bytes_used,
	      "Bytes of the shared-memory segment in use."),
	COUNTER("shm.alloc_failures", "mcache_shm_alloc_failures_total", NULL, shm_alloc_failures,
	        "Segment allocations that failed."),
	GAUGE("shm.pages_free", "mcache_shm_free_pages", NULL, shm_pages_free,
	      "Pages of the segment that no slot type holds."),
	COUNTER("shm.pages_returned", "mcache_shm_pages_returned_total", NULL, shm_pages_returned,
	        "Pages whose slots were all freed, given back for any slot type."),

	CACHE_GAUGE(high_bytes, "Shrinker high watermark: above it, clean entries are evicted."),
	CACHE_GAUGE(low_bytes, "Shrinker low watermark: eviction stops there."),
	CACHE_COUNTER(runs, "Background shrinker runs."),
	CACHE_COUNTER(scanned, "Dentry slots the CLOCK hand passed."),
	CACHE_COUNTER(evicted, "Cached entries evicted."),
	CACHE_COUNTER(rotated, "Second chances: referenced entries kept one more round."),
	CACHE_COUNTER(direct, "Direct reclaims by operations that found the segment full."),
	CACHE_COUNTER(forced_commits, "Commits forced because only dirty entries were left."),
	CACHE_COUNTER(enospc, "Operations answered ENOSPC for want of cache space."),
	CACHE_COUNTER(negative_evicted, "Negative entries evicted (shrinker and caps)."),
	CACHE_COUNTER(reloads, "Entries loaded from the store on a miss."),
	CACHE_COUNTER(rmtree_entries, "Entries removed by recursive deletes (mc_rmtree)."),
	CACHE_GAUGE(bytes_dentries, "Segment bytes in dentry slots."),
	CACHE_GAUGE(bytes_inodes, "Segment bytes in inode slots."),
	CACHE_GAUGE(bytes_dirs, "Segment bytes in directory state slots."),
	CACHE_GAUGE(bytes_names, "Segment bytes in long names and symlink targets."),
	CACHE_GAUGE(bytes_meta, "Segment bytes in the header, page table and hash buckets."),

	EXT_GAUGE(trees, "Inodes with an extent-state tree."),
	EXT_GAUGE(states, "Extent-state records."),
	EXT_GAUGE(mapped, "Extent-map records of the maps loaded."),
	EXT_COUNTER(splits, "Extent-state records split at a range edge."),
	EXT_COUNTER(merges, "Extent-state records merged into an equal neighbour."),
	EXT_COUNTER(evictions, "Extent trees freed whole."),
	EXT_COUNTER(evicted_states, "Extent-state records freed with their trees."),
	GAUGE("extents.bytes", "mcache_extents_bytes", NULL, extents.bytes,
	      "Segment bytes held by extent trees."),
	/* Nanoseconds: /stats only (a tree goes in about a microsecond). */
	HIST("extents.evict_ns", NULL, STATS_UNIT_NONE, extents.evict_ns,
	     "Time to free one extent tree, nanoseconds."),
	EXT_COUNTER(shrunk, "Extent trees of idle files freed by the shrinker."),

	COUNTER("commits.count", "mcache_commits_total", NULL, commits.count,
	        "Group commits completed."),
	COUNTER("commits.records", "mcache_commit_records_total", NULL, commits.records,
	        "Journal records committed."),
	COUNTER("commits.failures", "mcache_commit_failures_total", NULL, commits.failures,
	        "Group commits that failed."),
	COUNTER("commits.sync_waits", "mcache_commit_sync_waits_total", NULL, commits.sync_waits,
	        "Sync waiters served."),
	COUNTER("commits.sync_failures", "mcache_commit_sync_failures_total", NULL,
	        commits.sync_failures, "Sync waiters answered with a commit error."),
	HIST("commits.batch_records", "mcache_commit_batch_records", STATS_UNIT_NONE,
	     commits.batch_records, "Journal records per group commit."),
	HIST("commits.latency_us", "mcache_commit_duration_seconds", STATS_UNIT_US,
	     commits.latency_us, "Group commit time from journal swap to publish."),
	HIST("commits.blocked_us", "mcache_commit_blocked_seconds", STATS_UNIT_US,
	     commits.blocked_us, "Time writers waited on the journal swap."),
	PHASE("swap", swap_us),
	PHASE("log", log_us),
	PHASE("apply", apply_us),
	PHASE("sync", sync_us),
	PHASE("publish", publish_us),
	LAST_PHASE("swap", last_swap_us),
	LAST_PHASE("log", last_log_us),
	LAST_PHASE("apply", last_apply_us),
	LAST_PHASE("sync", last_sync_us),
	LAST_PHASE("publish", last_publish_us),
	HIST("commits.phase_us.swap", "mcache_commit_swap_seconds", STATS_UNIT_US,
	     commits.swap_hist_us, "Commit phase: swapping the journal batch (writers excluded)."),
	HIST("commits.phase_us.log", "mcache_commit_log_append_seconds", STATS_UNIT_US,
	     commits.log_hist_us, "Commit phase: appending the batch to the commit log."),
	HIST("commits.phase_us.apply", "mcache_commit_apply_seconds", STATS_UNIT_US,
	     commits.apply_hist_us, "Commit phase: applying the batch to the tables."),
	HIST("commits.phase_us.sync", "mcache_commit_lmdb_commit_seconds", STATS_UNIT_US,
	     commits.sync_hist_us, "Commit phase: the LMDB commit (write and fsync)."),
	HIST("commits.phase_us.publish", "mcache_commit_publish_seconds", STATS_UNIT_US,
	     commits.publish_hist_us, "Commit phase: publishing (entries clean, sequence advanced)."),
	HIST("commits.phase_us.wake", "mcache_commit_wake_seconds", STATS_UNIT_US,
	     commits.wake_hist_us, "Commit phase: answering the waiters made durable."),
	HIST("commits.phase_us.settle", "mcache_commit_settle_seconds", STATS_UNIT_US,
	     commits.settle_us, "Before a commit a waiter asked for: waiting for other clients' "
	     "mutations in progress."),
	HIST("commits.lag_us", "mcache_commit_lag_seconds", STATS_UNIT_US, commits.lag_us,
	     "Time from a batch's first change to its publish."),
	COUNTER("commits.idle_applies", "mcache_commit_idle_applies_total", NULL,
	        commits.idle_applies, "Table applies that commits someone waited for put off, "
	        "run once the committer was idle."),
	HIST("commits.idle_apply_us", "mcache_commit_idle_apply_seconds", STATS_UNIT_US,
	     commits.idle_apply_us, "Time of the table applies run while the committer was idle."),
	COUNTER("commits.idle_trims", "mcache_commit_idle_trims_total", NULL, commits.idle_trims,
	        "Commit log batches dropped for their age while no commit ran."),
	COUNTER("commits.turns", "mcache_commit_turns_total", NULL, commits.turns,
	        "Times the committer woke to commit (never while the journal is empty)."),
	GAUGE_US("commits.current_lag_us", "mcache_commit_current_lag_seconds", NULL,
	         commit_lag_us, "Age of the oldest change not yet committed (0: none)."),

	GAUGE("journal.records", "mcache_journal_records", NULL, journal_records,
	      "Records in the running journal batch."),
	GAUGE("journal.committed_seq", "mcache_committed_seq", NULL, committed_seq,
	      "Last committed journal sequence."),
	GAUGE("journal.backlog_records", "mcache_journal_backlog_records", NULL,
	      journal_backlog_records, "Uncommitted journal records (running and committing batches)."),
	GAUGE("journal.backlog_bytes", "mcache_journal_backlog_bytes", NULL, journal_backlog_bytes,
	      "Uncommitted journal bytes (running and committing batches)."),
	COUNTER("journal.full_waits", "mcache_journal_full_waits_total", NULL, journal_full_waits,
	        "Mutations that waited for the full journal to drain."),
	COUNTER("journal.full_refusals", "mcache_journal_full_refusals_total", NULL,
	        journal_full_refusals, "Mutations refused with ENOSPC: the journal stayed full."),
	COUNTER_US("journal.full_wait_us", "mcache_journal_full_wait_seconds_total", NULL,
	           journal_full_wait_us, "Time mutations waited for room in the full journal."),

	GAUGE("store.map_bytes", "mcache_store_map_size_bytes", NULL, store_map_bytes,
	      "Size of the LMDB map."),
	GAUGE("store.used_bytes", "mcache_store_used_bytes", NULL, store_used_bytes,
	      "Bytes of the LMDB map in use."),
	GAUGE("store.log_entries", "mcache_store_log_batches", NULL, store_log_entries,
	      "Committed batches kept in the commit log."),
	GAUGE("store.log_bytes", "mcache_store_log_bytes", NULL, store_log_bytes,
	      "Record bytes of the batches kept in the commit log."),
	COUNTER("store.log_trimmed", "mcache_store_log_trimmed_total", NULL, store_log_trimmed,
	        "Batches dropped from the commit log by retention."),

	COUNTER("rpc.requests", "mcache_rpc_requests_total", NULL, rpc.requests,
	        "Request frames carrying ops."),
	COUNTER("rpc.bad_frames", "mcache_rpc_bad_frames_total", NULL, rpc.bad_frames,
	        "Malformed or oversized frames."),
	COUNTER("rpc.connections", "mcache_rpc_connections_total", NULL, rpc.connections,
	        "Client connections accepted."),
	GAUGE("rpc.output_bytes", "mcache_rpc_output_bytes", NULL, rpc.output_bytes,
	      "Unsent reply bytes, all connections."),
	COUNTER("rpc.replies_queued", "mcache_rpc_replies_queued_total", NULL,
	        rpc.replies_queued,
	        "Replies the client's socket did not take whole when they were made: "
	        "the rest waited in the connection's output queue."),
	COUNTER("rpc.replies_direct", "mcache_rpc_replies_direct_total", NULL,
	        rpc.replies_direct,
	        "Replies held for a commit (mc_sync, mc_fsync, --sync) or for watchers that "
	        "the thread ending the wait wrote to the socket itself, without waking "
	        "the connection's worker first."),
	COUNTER("rpc.busy_polls", "mcache_rpc_busy_polls_total", NULL, rpc.busy_polls,
	        "Times a worker polling for the next request after one (--busy-poll-us) "
	        "met it without sleeping."),
	COUNTER("rpc.busy_poll_misses", "mcache_rpc_busy_poll_misses_total", NULL,
	        rpc.busy_poll_misses,
	        "Times a worker's poll for the next request ended with none, and it slept."),
	COUNTER_US("rpc.busy_poll_us", "mcache_rpc_busy_poll_seconds_total", NULL,
	        rpc.busy_poll_us,
	        "Time the workers spent polling for requests, in all: the CPU "
	        "--busy-poll-us costs, less what the threads it yielded to used."),
	LIMIT(STATS_LIMIT_ACCEPT_PAUSES, "accept_pauses"),
	LIMIT(STATS_LIMIT_REFUSED, "refused"),
	LIMIT(STATS_LIMIT_TOO_MANY_OPS, "too_many_ops"),
	LIMIT(STATS_LIMIT_REPLY_FULL, "reply_full"),
	LIMIT(STATS_LIMIT_HELLO_TIMEOUTS, "hello_timeouts"),
	LIMIT(STATS_LIMIT_FRAME_TIMEOUTS, "frame_timeouts"),
	LIMIT(STATS_LIMIT_PREHELLO_EVICTED, "prehello_evicted"),
	LIMIT(STATS_LIMIT_OUTPUT_DISCONNECTS, "output_disconnects"),

	GAUGE("clients", "mcache_clients", NULL, clients, "Client connections open now."),
	COUNTER("admin.accept_pauses", "mcache_admin_accept_pauses_total", NULL,
	        admin_accept_pauses, "Admin listener paused: out of descriptors."),

	COUNTER("readpath.hits", "mcache_readpath_lookups_total", "outcome=\"hit\"", readpath.hits,
	        "Client lookups by outcome: answered from shared memory (hit), not cached "
	        "(miss) or past the walk's bounds (fallback), both sent to the server."),
	COUNTER("readpath.misses", "mcache_readpath_lookups_total", "outcome=\"miss\"",
	        readpath.misses,
	        "Client lookups by outcome: answered from shared memory (hit), not cached "
	        "(miss) or past the walk's bounds (fallback), both sent to the server."),
	COUNTER("readpath.fallbacks", "mcache_readpath_lookups_total", "outcome=\"fallback\"",
	        readpath.fallbacks,
	        "Client lookups by outcome: answered from shared memory (hit), not cached "
	        "(miss) or past the walk's bounds (fallback), both sent to the server."),
	COUNTER("readpath.retries", "mcache_readpath_retries_total", NULL, readpath.retries,
	        "Client lookups restarted because the entry changed under them."),
	COUNTER("readpath.rpcs", "mcache_readpath_requests_total", NULL, readpath.rpcs,
	        "Requests the clients sent to the server."),

	GAUGE("warm.threads", "mcache_warm_threads", NULL, warm.threads, "Warmer threads."),
	COUNTER("warm.entries", "mcache_warm_entries_total", NULL, warm.entries,
	        "Entries the warmers inserted from the store."),
	COUNTER("warm.bytes", "mcache_warm_bytes_total", NULL, warm.bytes,
	        "Segment bytes taken by warmed entries."),
	COUNTER("warm.yields", "mcache_warm_yields_total", NULL, warm.yields,
	        "Times a warmer let go of its snapshot for a waiting committer."),
	COUNTER("warm.dirs_done", "mcache_warm_dirs_done_total", NULL, warm.dirs_done,
	        "Directories the warmers read to their end."),
	COUNTER("warm.dirs_queued", "mcache_warm_dirs_queued_total", NULL, warm.dirs_queued,
	        "Directories queued for the warmers."),
	COUNTER("warm.readahead", "mcache_warm_readahead_total", NULL, warm.readahead,
	        "Directories queued for read-ahead by a miss."),
	COUNTER("warm.splits", "mcache_warm_splits_total", NULL, warm.splits,
	        "Times a directory's names were cut in two ranges between warmers."),
	COUNTER("warm.promoted", "mcache_warm_promoted_total", NULL, warm.promoted,
	        "Times a miss moved its directory's waiting warm-up item to the queue's head."),
	COUNTER("warm.lookups", "mcache_warm_lookups_total", NULL, warm.lookups,
	        "Names the warmers looked up in the cache before inserting them."),
	GAUGE("warm.done", "mcache_warm_done", NULL, warm.done,
	      "1 once the start-up warm-up is over."),
	GAUGE_US("warm.elapsed_us", "mcache_warm_elapsed_seconds", NULL, warm.elapsed_us,
	         "Time the start-up warm-up took, or has taken so far."),
	GAUGE("warm.rate", "mcache_warm_entries_per_second", NULL, warm.rate,
	      "Entries warmed per second of the start-up warm-up."),
	GAUGE("warm.rate_per_thread", "mcache_warm_thread_entries_per_second", NULL,
	      warm.rate_per_thread, "Entries warmed per second of a warmer's busy time, averaged."),
	GAUGE("warm.reattached", "mcache_warm_reattached", NULL, warm.reattached,
	      "1 when the segment was re-attached from a clean stop (--shm-path)."),
};
const size_t stats_nmetrics = sizeof(stats_metrics) / sizeof(stats_metrics[0]);

uint64_t stats_metric_u64(const struct stats_snapshot *s, const struct stats_metric *m)
{
	uint64_t v;
	assert(m->type != STATS_HIST);
	/* _Atomic uint64_t fields of a private copy read like plain ones. */
	memcpy(&v, (const char *)s + m->off, sizeof(v));
	return v;
}

const struct hist *stats_metric_hist(const struct stats_snapshot *s, const struct stats_metric *m)
{
	assert(m->type == STATS_HIST);
	return (const struct hist *)(const void *)((const char *)s + m->off);
}

int stats_json_dump(struct json_t *v, char **out, size_t *len)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (!s)
		return -ENOMEM;
	*out = s;
	*len = strlen(s);
	return 0;
}
