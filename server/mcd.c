/* mcd.c - the server as a whole: gathering one statistics snapshot from
 * every module (what /stats, /metrics and OP_STATS show). */
#include "mcd.h"

#include <string.h>
#include <time.h>

#include "admin.h"
#include "area.h"
#include "clock.h"
#include "commit.h"
#include "extent_ns.h"
#include "mc_config.h"
#include "ns.h"
#include "rpc.h"
#include "store.h"
#include "warm.h"

static void copy_u64(_Atomic uint64_t *dst, const _Atomic uint64_t *src)
{
	atomic_store_explicit(dst, atomic_load_explicit(src, memory_order_relaxed),
	                      memory_order_relaxed);
}

static void commit_stats_copy(struct commit_stats *d, const struct commit_stats *s)
{
	memset(d, 0, sizeof(*d));
	copy_u64(&d->count, &s->count);
	copy_u64(&d->records, &s->records);
	copy_u64(&d->failures, &s->failures);
	copy_u64(&d->sync_waits, &s->sync_waits);
	copy_u64(&d->sync_failures, &s->sync_failures);
	hist_merge(&d->batch_records, &s->batch_records);
	hist_merge(&d->latency_us, &s->latency_us);
	hist_merge(&d->blocked_us, &s->blocked_us);
	copy_u64(&d->swap_us, &s->swap_us);
	copy_u64(&d->log_us, &s->log_us);
	copy_u64(&d->apply_us, &s->apply_us);
	copy_u64(&d->sync_us, &s->sync_us);
	copy_u64(&d->publish_us, &s->publish_us);
	copy_u64(&d->last_swap_us, &s->last_swap_us);
	copy_u64(&d->last_log_us, &s->last_log_us);
	copy_u64(&d->last_apply_us, &s->last_apply_us);
	copy_u64(&d->last_sync_us, &s->last_sync_us);
	copy_u64(&d->last_publish_us, &s->last_publish_us);
	hist_merge(&d->swap_hist_us, &s->swap_hist_us);
	hist_merge(&d->log_hist_us, &s->log_hist_us);
	hist_merge(&d->apply_hist_us, &s->apply_hist_us);
	hist_merge(&d->sync_hist_us, &s->sync_hist_us);
	hist_merge(&d->publish_hist_us, &s->publish_hist_us);
	hist_merge(&d->wake_hist_us, &s->wake_hist_us);
	hist_merge(&d->lag_us, &s->lag_us);
	copy_u64(&d->turns, &s->turns);
	hist_merge(&d->settle_us, &s->settle_us);
	copy_u64(&d->idle_applies, &s->idle_applies);
	hist_merge(&d->idle_apply_us, &s->idle_apply_us);
	copy_u64(&d->idle_trims, &s->idle_trims);
}

static void add_client(void *arg, int32_t pid, const struct area_totals *t)
{
	struct stats_snapshot *out = arg;
	if (out->nclients_rp == STATS_CLIENTS_MAX)
		return;
	out->clients_rp[out->nclients_rp].pid = pid;
	out->clients_rp[out->nclients_rp].rp =
		(struct stats_readpath){ t->hits, t->misses, t->retries, t->fallbacks, t->rpcs };
	out->nclients_rp++;
}

void mcd_fill_stats(void *arg, struct stats_snapshot *out)
{
	struct mcd *m = arg;
	memset(out, 0, sizeof(*out));
	out->uptime_s = (mono_ns() - m->start_ns) / 1000000000ull;
	out->start_time_s = m->start_time_s;
	out->version = MC_VERSION;

	struct ns_counts nc;
	ns_get_counts(m->ns, &nc);
	ns_extent_stats(m->ns, &out->extents);
	out->dentries_positive = nc.positive;
	out->dentries_negative = nc.negative;
	out->dentries_dirty = nc.dentries_dirty;
	out->dirs_complete = nc.dirs_complete;
	out->inodes_cached = nc.inodes;
	out->inodes_dirty = nc.inodes_dirty;
	out->subtree_prunes = nc.prunes;
	out->pruned_entries = nc.pruned;
	out->shm_bytes_total = nc.shm_total;
	out->shm_bytes_used = nc.shm_used;
	out->shm_alloc_failures = nc.alloc_failures;
	out->shm_pages_free = nc.pages_free;
	out->shm_pages_returned = nc.pages_returned;
	out->journal_records = nc.journal_records;
	out->journal_backlog_records = nc.backlog_records;
	out->journal_backlog_bytes = nc.backlog_bytes;
	out->journal_full_waits = nc.full_waits;
	out->journal_full_refusals = nc.full_refusals;
	out->journal_full_wait_us = nc.full_wait_us;
	out->committed_seq = nc.committed_seq;
	/* The cache's bound. */
	out->cache = (struct stats_cache){
		.high_bytes = nc.high_bytes, .low_bytes = nc.low_bytes,
		.runs = nc.shrink.runs, .scanned = nc.shrink.scanned,
		.evicted = nc.shrink.evicted, .rotated = nc.shrink.rotated,
		.direct = nc.shrink.direct, .forced_commits = nc.shrink.forced_commits,
		.enospc = nc.shrink.enospc, .negative_evicted = nc.shrink.neg_evicted,
		.reloads = nc.shrink.reloads, .rmtree_entries = nc.shrink.rmtree_entries,
		.bytes_dentries = nc.bytes_dentries, .bytes_inodes = nc.bytes_inodes,
		.bytes_dirs = nc.bytes_dirs, .bytes_names = nc.bytes_names,
		.bytes_meta = nc.bytes_meta,
	};

	warm_get_stats(m->warm, &out->warm);
	out->warm.reattached = m->reattached;
	if (m->commit) {
		commit_stats_copy(&out->commits, commit_get_stats(m->commit));
		out->commit_lag_us = commit_lag(m->commit);
	}
	struct store_info si;
	if (m->store && store_info(m->store, &si) == 0) {
		out->store_map_bytes = si.map_size;
		out->store_used_bytes = si.used_bytes;
		out->store_log_entries = si.log_entries;
		out->store_log_bytes = si.log_bytes;
		out->store_log_trimmed = si.log_trimmed;
	}
	if (m->rpc) {
		rpc_get_stats(m->rpc, &out->rpc);
		out->clients = rpc_clients(m->rpc);
	}
	struct admin *ad = atomic_load_explicit(&m->admin, memory_order_acquire);
	if (ad)
		out->admin_accept_pauses = admin_accept_pauses(ad);
	if (m->area) {
		struct area_totals t;
		area_totals(m->area, &t);
		out->readpath = (struct stats_readpath){ t.hits, t.misses, t.retries, t.fallbacks, t.rpcs };
		area_each(m->area, add_client, out);
	}
}
