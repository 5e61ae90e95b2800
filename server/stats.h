/* stats.h - counters, latency histograms, the snapshot that /stats,
 * /metrics and `mcachectl stats` render, and the table of metrics that
 * drives both renderings (stats_json.c, stats_prom.c).
 *
 * Hot-path counters are per thread (one writer, relaxed atomics) and are
 * merged when a snapshot is taken, so recording costs no shared cache line.
 */
#ifndef MC_STATS_H
#define MC_STATS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct evbuffer;

/* Log-linear histogram of non-negative values (microseconds, or counts):
 * values below 16 exact, then 8 sub-buckets per power of two; relative error
 * under 12.5%. One writer, any number of readers. */
#define HIST_BUCKETS 496
struct hist {
	_Atomic uint64_t b[HIST_BUCKETS];
	_Atomic uint64_t count;
	_Atomic uint64_t sum;
	_Atomic uint64_t max;
};

void hist_add(struct hist *h, uint64_t v);
/* *v += x for a counter with one writer (readers load it relaxed): a plain
 * load and store, no locked add. */
static inline void stat_add_one_writer(_Atomic uint64_t *v, uint64_t x)
{
	atomic_store_explicit(v, atomic_load_explicit(v, memory_order_relaxed) + x,
	                      memory_order_relaxed);
}
/* dst += src (dst is private to the caller). */
void hist_merge(struct hist *dst, const struct hist *src);
/* The value at quantile q (0..1): an upper bound of its bucket, capped at max.
 * 0 for an empty histogram. */
uint64_t hist_quantile(const struct hist *h, double q);
/* Observations whose bucket lies wholly at or below v (a Prometheus
 * cumulative bucket, rounded toward the larger bound by at most 12.5%);
 * UINT64_MAX gives the count of all observations. */
uint64_t hist_count_le(const struct hist *h, uint64_t v);

/* Operation codes as in proto/mcache.proto (OP_* values). */
#define STATS_OPS 64

/* Events where a limit protected the server (rendered under rpc.limits and
 * as mcache_rpc_limit_events_total{event=...}); names in stats_limit_name. */
enum stats_limit {
	STATS_LIMIT_ACCEPT_PAUSES,     /* RPC listener paused: out of descriptors */
	STATS_LIMIT_REFUSED,           /* over --max-connections, closed at once */
	STATS_LIMIT_TOO_MANY_OPS,      /* requests refused whole: over --max-ops */
	STATS_LIMIT_REPLY_FULL,        /* replies that reached the size limit: later ops not run */
	STATS_LIMIT_HELLO_TIMEOUTS,    /* closed: no Hello within --hello-timeout */
	STATS_LIMIT_FRAME_TIMEOUTS,    /* closed: a frame not completed within --frame-timeout */
	STATS_LIMIT_PREHELLO_EVICTED,  /* closed before Hello to make room for a newer one */
	STATS_LIMIT_OUTPUT_DISCONNECTS,/* closed: not reading replies while over --output-max */
	STATS_LIMITS
};

/* Per RPC worker thread; summed into the snapshot. */
struct rpc_stats {
	_Atomic uint64_t requests;         /* frames carrying ops */
	_Atomic uint64_t ops[STATS_OPS];
	_Atomic uint64_t errors[STATS_OPS];/* ops answered with an errno */
	struct hist op_us[STATS_OPS];      /* per-op service time */
	_Atomic uint64_t bad_frames;       /* malformed or oversized frames */
	_Atomic uint64_t connections;      /* accepted in total */
	_Atomic uint64_t limits[STATS_LIMITS];
	_Atomic uint64_t output_bytes;     /* gauge: unsent reply bytes, all connections */
	_Atomic uint64_t replies_queued;   /* replies the socket did not take at once */
	_Atomic uint64_t replies_direct;   /* held replies the wait's end sent itself */
	_Atomic uint64_t busy_polls;       /* workers' polls that met a request (rpc.c note 6) */
	_Atomic uint64_t busy_poll_misses; /* ... that did not, and slept after */
	_Atomic uint64_t busy_poll_us;     /* time the workers spent polling */
};

void rpc_stats_merge(struct rpc_stats *dst, const struct rpc_stats *src);

struct commit_stats {
	_Atomic uint64_t count;            /* batches committed */
	_Atomic uint64_t records;          /* journal records committed */
	_Atomic uint64_t failures;
	struct hist batch_records;         /* records per batch */
	struct hist latency_us;            /* swap to publish */
	struct hist blocked_us;            /* time writers waited on the journal swap */
	/* Phase totals in microseconds (each commit's breakdown). */
	_Atomic uint64_t swap_us, log_us, apply_us, sync_us, publish_us;
	/* Phases of the last commit. */
	_Atomic uint64_t last_swap_us, last_log_us, last_apply_us, last_sync_us, last_publish_us;
	_Atomic uint64_t sync_waits;       /* mc_sync / --sync waiters served */
	_Atomic uint64_t sync_failures;    /* waiters answered with a commit error */
	/* Per-phase histograms of each commit (microseconds). */
	struct hist swap_hist_us, log_hist_us, apply_hist_us, sync_hist_us;
	struct hist publish_hist_us, wake_hist_us;
	struct hist lag_us;                /* first change of a batch to its publish */
	_Atomic uint64_t turns;            /* times the committer woke to commit */
	struct hist settle_us;             /* waiting for a growing journal to settle */
	_Atomic uint64_t idle_applies;     /* applies put off by waited-for commits, run idle */
	struct hist idle_apply_us;         /* ... their time */
	_Atomic uint64_t idle_trims;       /* log batches aged out while no commit ran */
};

/* Client read-path figures (shared-memory lookups), from the client area. */
struct stats_readpath {
	uint64_t hits;        /* answered from shared memory */
	uint64_t misses;      /* not cached: sent to the server */
	uint64_t retries;     /* reads restarted because a seq moved */
	uint64_t fallbacks;   /* bounds hit: sent to the server */
	uint64_t rpcs;        /* requests sent */
};
#define STATS_CLIENTS_MAX 64

/* The cache's bound (server/shrink.h): the shrinker, negatives, and where
 * the segment's bytes go. */
struct stats_cache {
	uint64_t high_bytes, low_bytes;   /* watermarks */
	uint64_t runs, scanned, evicted, rotated, direct, forced_commits, enospc;
	uint64_t negative_evicted, reloads;
	uint64_t rmtree_entries;
	uint64_t bytes_dentries, bytes_inodes, bytes_dirs, bytes_names, bytes_meta;
};

/* The extent cache (server/extent.h). */
struct stats_extents {
	uint64_t trees;           /* inodes with an extent-state tree */
	uint64_t states;          /* state records in them */
	uint64_t mapped;          /* extent-map records of the maps loaded */
	uint64_t splits, merges;  /* records split at range edges, merged into neighbours */
	uint64_t evictions;       /* trees freed whole (eviction, unlink, truncate to 0) */
	uint64_t evicted_states;  /* records those held */
	uint64_t bytes;           /* segment bytes held by extent trees */
	struct hist evict_ns;     /* time to free one tree, nanoseconds */
	uint64_t shrunk;          /* idle files' trees the shrinker freed */
};

/* The warmers (server/warm.h); --warmers is at most this. */
#define STATS_WARMERS_MAX 64
/* The warmers (server/warm.h). */
struct stats_warm {
	uint64_t threads;         /* warmer threads (--warmers) */
	uint64_t entries;         /* entries inserted from the store */
	uint64_t bytes;           /* segment bytes they took */
	uint64_t yields;          /* times a warmer let go for the committer */
	uint64_t dirs_done;       /* directories read to their end */
	uint64_t dirs_queued;     /* directories queued (warm-up and read-ahead) */
	uint64_t readahead;       /* directories queued by a miss */
	uint64_t splits;          /* times a directory's names were cut between two warmers */
	uint64_t promoted;        /* times a miss moved its directory's queued item to the head */
	uint64_t lookups;         /* names looked up in the cache before an insert */
	uint64_t done;            /* 1 once the start-up warm-up is over */
	uint64_t elapsed_us;      /* start-up warm-up: time so far, or in all */
	uint64_t rate;            /* entries per second over that time */
	uint64_t rate_per_thread; /* entries per second of one thread's busy time, averaged */
	struct {
		uint64_t entries;     /* entries this thread inserted */
		uint64_t rate;        /* ... per second of its busy time */
	} per_thread[STATS_WARMERS_MAX]; /* the first `threads` */
	uint64_t reattached;      /* 1: the segment was kept from a clean stop (restart.h) */
};

/* Everything the endpoints show, gathered at one instant. */
struct stats_snapshot {
	uint64_t uptime_s;
	uint64_t start_time_s;            /* Unix time the server started */
	const char *version;
	/* dentry cache */
	uint64_t dentries_positive;
	uint64_t dentries_negative;
	uint64_t dentries_dirty;
	uint64_t dirs_complete;
	uint64_t inodes_cached;
	uint64_t inodes_dirty;
	uint64_t subtree_prunes;          /* directories whose cached children were pruned */
	uint64_t pruned_entries;
	/* shared memory */
	uint64_t shm_bytes_total;
	uint64_t shm_bytes_used;
	uint64_t shm_alloc_failures;
	uint64_t shm_pages_free;          /* pages no slab holds */
	uint64_t shm_pages_returned;      /* pages slabs gave back, ever */
	struct stats_cache cache;
	/* commit log */
	struct commit_stats commits;      /* a private copy */
	uint64_t journal_records;         /* records in the running batch */
	uint64_t journal_backlog_records; /* uncommitted: running + committing batch */
	uint64_t journal_backlog_bytes;
	uint64_t journal_full_waits;      /* mutations that waited for room */
	uint64_t journal_full_refusals;   /* ... and were refused (-ENOSPC) */
	uint64_t journal_full_wait_us;    /* time mutations waited for room */
	uint64_t commit_lag_us;           /* age of the oldest uncommitted change; 0: none */
	uint64_t store_log_entries;       /* batches kept in the commit log */
	uint64_t store_log_bytes;         /* their record bytes */
	uint64_t store_log_trimmed;       /* batches dropped by retention */
	uint64_t committed_seq;
	uint64_t store_map_bytes;
	uint64_t store_used_bytes;
	/* rpc */
	struct rpc_stats rpc;             /* merged over workers */
	uint64_t clients;                 /* connections open now */
	uint64_t admin_accept_pauses;     /* admin listener paused: out of descriptors */
	/* client read path: totals, and the first STATS_CLIENTS_MAX clients */
	struct stats_readpath readpath;
	unsigned nclients_rp;
	struct {
		int32_t pid;
		struct stats_readpath rp;
	} clients_rp[STATS_CLIENTS_MAX];
	/* extent cache */
	struct stats_extents extents;
	/* warmers */
	struct stats_warm warm;
};

/* Version of the /stats document's layout: raised when a key changes meaning
 * or goes away (new keys do not raise it). */
#define STATS_SCHEMA_VERSION 1

/* One metric of the snapshot, rendered by both endpoints. Adding a metric
 * is one row in stats_metrics (stats.c). Invariants:
 *   1. json paths are unique; prom names with their label are unique.
 *   2. Rows of one Prometheus family (same prom, distinct label values that
 *      do not overlap) are adjacent and share type, unit and help.
 *   3. prom names carry their base unit (_seconds, _bytes), counters _total. */
enum stats_type {
	STATS_COUNTER,
	STATS_GAUGE,
	STATS_HIST,        /* off is a struct hist */
};
enum stats_unit {
	STATS_UNIT_NONE,   /* a count, or bytes */
	STATS_UNIT_US,     /* microseconds in /stats, seconds in /metrics */
};
struct stats_metric {
	const char *json;      /* dotted path in /stats ("commits.count") */
	const char *prom;      /* family in /metrics, or NULL for /stats only */
	const char *label;     /* `name="value"` within the family, or NULL */
	enum stats_type type;
	enum stats_unit unit;
	const char *help;
	size_t off;            /* of a uint64_t or struct hist in stats_snapshot */
};
extern const struct stats_metric stats_metrics[];
extern const size_t stats_nmetrics;

/* The uint64_t of row m in s (counters and gauges). */
uint64_t stats_metric_u64(const struct stats_snapshot *s, const struct stats_metric *m);
/* The histogram of row m in s (STATS_HIST rows). */
const struct hist *stats_metric_hist(const struct stats_snapshot *s, const struct stats_metric *m);

/* Render as JSON (GET /stats, stats_json.c) or Prometheus text format
 * (GET /metrics, stats_prom.c). 0, or -ENOMEM. */
int stats_render_json(const struct stats_snapshot *s, struct evbuffer *out);
int stats_render_prometheus(const struct stats_snapshot *s, struct evbuffer *out);

/* Lower-case op name for OP_* code ("mkdir", "stat"...), "unknown" if none. */
const char *stats_op_name(unsigned code);
/* Name of an enum stats_limit value ("hello_timeouts"...). */
const char *stats_limit_name(unsigned id);
/* A unique label for any op code: its name, or "op<N>" for unnamed codes,
 * so that rendered keys and label sets never repeat. buf has 16 bytes. */
const char *stats_op_label(unsigned code, char buf[16]);

struct json_t;
/* v as compact JSON in key order (GET /clients, /slowlog): *out is a
 * NUL-terminated string the caller frees, *len its length. v is not
 * released. 0, or -ENOMEM. */
int stats_json_dump(struct json_t *v, char **out, size_t *len);

#endif
