/* stats.c - log-linear histograms, per-thread counter merging, and the JSON
 * and Prometheus renderings of a statistics snapshot. */
#include "stats.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>

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
	unsigned i = hist_index(v);
	atomic_store_explicit(&h->b[i], atomic_load_explicit(&h->b[i], RLX) + 1, RLX);
	atomic_store_explicit(&h->sum, atomic_load_explicit(&h->sum, RLX) + v, RLX);
	if (v > atomic_load_explicit(&h->max, RLX))
		atomic_store_explicit(&h->max, v, RLX);
	atomic_store_explicit(&h->count, atomic_load_explicit(&h->count, RLX) + 1, RLX);
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

/* A unique name for any code: the op name, or "op<N>" for unnamed codes
 * (so that rendered keys and label sets never repeat). */
static const char *op_label(unsigned code, char buf[16])
{
	const char *n = stats_op_name(code);
	if (strcmp(n, "unknown") != 0)
		return n;
	snprintf(buf, 16, "op%u", code);
	return buf;
}

/* ---- output helpers ------------------------------------------------------ */

/* An evbuffer writer that remembers the first failure. */
struct out {
	struct evbuffer *buf;
	int err;
};

static void out_printf(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out_printf(struct out *o, const char *fmt, ...)
{
	if (o->err)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = evbuffer_add_vprintf(o->buf, fmt, ap);
	va_end(ap);
	if (n < 0)
		o->err = -ENOMEM;
}

static void out_add(struct out *o, const void *p, size_t n)
{
	if (!o->err && evbuffer_add(o->buf, p, n) != 0)
		o->err = -ENOMEM;
}

/* Length of a valid UTF-8 sequence at s (at most n bytes), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t len;
	unsigned min;
	if (c < 0x80)
		return 1;
	else if ((c & 0xe0) == 0xc0) { len = 2; min = 0x80; c &= 0x1f; }
	else if ((c & 0xf0) == 0xe0) { len = 3; min = 0x800; c &= 0x0f; }
	else if ((c & 0xf8) == 0xf0) { len = 4; min = 0x10000; c &= 0x07; }
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	return len;
}

/* A JSON string literal; invalid UTF-8 becomes U+FFFD. */
static void json_str(struct out *o, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t n = strlen((const char *)p);
	out_add(o, "\"", 1);
	for (size_t i = 0; i < n;) {
		unsigned char c = p[i];
		if (c == '"' || c == '\\') {
			char e[2] = { '\\', (char)c };
			out_add(o, e, 2);
			i++;
		} else if (c < 0x20 || c == 0x7f) {
			out_printf(o, "\\u%04x", c);
			i++;
		} else {
			size_t l = utf8_len(p + i, n - i);
			if (l == 0) {
				out_add(o, "\\ufffd", 6);
				i++;
			} else {
				out_add(o, p + i, l);
				i += l;
			}
		}
	}
	out_add(o, "\"", 1);
}

/* JSON object writer: tracks whether a comma is due, per nesting level. */
struct json {
	struct out o;
	unsigned depth;
	bool need_comma[16];
};

static void json_key(struct json *j, const char *key)
{
	if (j->need_comma[j->depth])
		out_add(&j->o, ",", 1);
	j->need_comma[j->depth] = true;
	json_str(&j->o, key);
	out_add(&j->o, ":", 1);
}

static void json_open(struct json *j, const char *key)
{
	if (key)
		json_key(j, key);
	out_add(&j->o, "{", 1);
	if (j->depth + 1 < sizeof(j->need_comma) / sizeof(j->need_comma[0]))
		j->depth++;
	j->need_comma[j->depth] = false;
}

static void json_close(struct json *j)
{
	out_add(&j->o, "}", 1);
	if (j->depth > 0)
		j->depth--;
}

static void json_u64(struct json *j, const char *key, uint64_t v)
{
	json_key(j, key);
	out_printf(&j->o, "%llu", (unsigned long long)v);
}

static void json_string(struct json *j, const char *key, const char *v)
{
	json_key(j, key);
	json_str(&j->o, v);
}

static uint64_t ld(const _Atomic uint64_t *p)
{
	return atomic_load_explicit(p, RLX);
}

static void json_hist(struct json *j, const char *key, const struct hist *h)
{
	json_open(j, key);
	json_u64(j, "p50", hist_quantile(h, 0.5));
	json_u64(j, "p99", hist_quantile(h, 0.99));
	json_u64(j, "max", ld(&h->max));
	json_u64(j, "count", ld(&h->count));
	json_u64(j, "sum", ld(&h->sum));
	json_close(j);
}

static const char *const phase_names[5] = { "swap", "log", "apply", "sync", "publish" };

static void phases(const struct commit_stats *c, uint64_t total[5], uint64_t last[5])
{
	total[0] = ld(&c->swap_us);
	total[1] = ld(&c->log_us);
	total[2] = ld(&c->apply_us);
	total[3] = ld(&c->sync_us);
	total[4] = ld(&c->publish_us);
	last[0] = ld(&c->last_swap_us);
	last[1] = ld(&c->last_log_us);
	last[2] = ld(&c->last_apply_us);
	last[3] = ld(&c->last_sync_us);
	last[4] = ld(&c->last_publish_us);
}

static void json_readpath(struct json *j, const struct stats_readpath *r)
{
	json_u64(j, "hits", r->hits);
	json_u64(j, "misses", r->misses);
	json_u64(j, "retries", r->retries);
	json_u64(j, "fallbacks", r->fallbacks);
	json_u64(j, "rpcs", r->rpcs);
}

/* ---- the cache's bound: one table for JSON and Prometheus ---------------- */

static const struct cache_metric {
	const char *key;        /* JSON key under "cache" */
	const char *prom;       /* Prometheus name */
	const char *type;
	const char *help;
	size_t off;             /* in struct stats_cache */
} cache_metrics[] = {
#define CM(k, t, h) { #k, "mcache_cache_" #k, t, h, offsetof(struct stats_cache, k) }
	CM(high_bytes, "gauge", "Shrinker high watermark: above it, clean entries are evicted."),
	CM(low_bytes, "gauge", "Shrinker low watermark: eviction stops there."),
	CM(runs, "counter", "Background shrinker runs."),
	CM(scanned, "counter", "Dentry slots the CLOCK hand passed."),
	CM(evicted, "counter", "Cached entries evicted."),
	CM(rotated, "counter", "Second chances: referenced entries kept one more round."),
	CM(direct, "counter", "Direct reclaims by operations that found the segment full."),
	CM(forced_commits, "counter", "Commits forced because only dirty entries were left."),
	CM(enospc, "counter", "Operations answered ENOSPC for want of cache space."),
	CM(negative_evicted, "counter", "Negative entries evicted (shrinker and caps)."),
	CM(reloads, "counter", "Entries loaded from the store on a miss."),
	CM(bytes_dentries, "gauge", "Segment bytes in dentry slots."),
	CM(bytes_inodes, "gauge", "Segment bytes in inode slots."),
	CM(bytes_dirs, "gauge", "Segment bytes in directory state slots."),
	CM(bytes_names, "gauge", "Segment bytes in long names and symlink targets."),
	CM(bytes_meta, "gauge", "Segment bytes in the header, page table and hash buckets."),
#undef CM
};

static uint64_t cache_value(const struct stats_cache *c, const struct cache_metric *m)
{
	uint64_t v;
	memcpy(&v, (const char *)c + m->off, sizeof(v));
	return v;
}

static void json_cache(struct json *j, const struct stats_cache *c)
{
	json_open(j, "cache");
	for (size_t i = 0; i < sizeof(cache_metrics) / sizeof(cache_metrics[0]); i++)
		json_u64(j, cache_metrics[i].key, cache_value(c, &cache_metrics[i]));
	json_close(j);
}

static void prom_u64(struct out *o, const char *name, const char *type, const char *help,
                     uint64_t v);

static void prom_cache(struct out *o, const struct stats_cache *c)
{
	for (size_t i = 0; i < sizeof(cache_metrics) / sizeof(cache_metrics[0]); i++) {
		const struct cache_metric *m = &cache_metrics[i];
		char name[96];
		snprintf(name, sizeof(name), "%s%s", m->prom,
		         strcmp(m->type, "counter") == 0 ? "_total" : "");
		prom_u64(o, name, m->type, m->help, cache_value(c, m));
	}
}

/* ---- the extent cache: one table drives both renderings ---------------- */

static const struct extent_metric {
	const char *key;        /* JSON, under "extents" */
	const char *prom;
	const char *type;
	const char *help;
	size_t off;             /* in struct stats_extents */
} extent_metrics[] = {
#define EM(k, t, h) { #k, "mcache_extents_" #k, t, h, offsetof(struct stats_extents, k) }
	EM(trees, "gauge", "Inodes with an extent-state tree."),
	EM(states, "gauge", "Extent-state records."),
	EM(mapped, "gauge", "Extent-map records of the maps loaded."),
	EM(splits, "counter", "Extent-state records split at a range edge."),
	EM(merges, "counter", "Extent-state records merged into an equal neighbour."),
	EM(evictions, "counter", "Extent trees freed whole."),
	EM(evicted_states, "counter", "Extent-state records freed with their trees."),
	EM(bytes, "gauge", "Segment bytes held by extent trees."),
#undef EM
};

static uint64_t extent_value(const struct stats_extents *e, const struct extent_metric *m)
{
	uint64_t v;
	memcpy(&v, (const char *)e + m->off, sizeof(v));
	return v;
}

static void json_extents(struct json *j, const struct stats_extents *e)
{
	json_open(j, "extents");
	for (size_t i = 0; i < sizeof(extent_metrics) / sizeof(extent_metrics[0]); i++)
		json_u64(j, extent_metrics[i].key, extent_value(e, &extent_metrics[i]));
	json_hist(j, "evict_ns", &e->evict_ns);
	json_close(j);
}

static void prom_summary(struct out *o, const char *name, const char *help, const struct hist *h);

static void prom_extents(struct out *o, const struct stats_extents *e)
{
	for (size_t i = 0; i < sizeof(extent_metrics) / sizeof(extent_metrics[0]); i++) {
		const struct extent_metric *m = &extent_metrics[i];
		char name[96];
		snprintf(name, sizeof(name), "%s%s", m->prom,
		         strcmp(m->type, "counter") == 0 ? "_total" : "");
		prom_u64(o, name, m->type, m->help, extent_value(e, m));
	}
	prom_summary(o, "mcache_extents_evict_ns", "Time to free one extent tree, nanoseconds.",
	             &e->evict_ns);
}

int stats_render_json(const struct stats_snapshot *s, struct evbuffer *out)
{
	struct json j = { .o = { .buf = out, .err = 0 } };
	uint64_t total[5], last[5];

	json_open(&j, NULL);
	json_u64(&j, "uptime_s", s->uptime_s);
	json_string(&j, "version", s->version);

	json_open(&j, "dentries");
	json_u64(&j, "positive", s->dentries_positive);
	json_u64(&j, "negative", s->dentries_negative);
	json_u64(&j, "dirty", s->dentries_dirty);
	json_u64(&j, "complete_dirs", s->dirs_complete);
	json_close(&j);

	json_open(&j, "inodes");
	json_u64(&j, "cached", s->inodes_cached);
	json_u64(&j, "dirty", s->inodes_dirty);
	json_close(&j);

	json_open(&j, "prune");
	json_u64(&j, "subtrees", s->subtree_prunes);
	json_u64(&j, "entries", s->pruned_entries);
	json_close(&j);

	json_open(&j, "shm");
	json_u64(&j, "bytes_total", s->shm_bytes_total);
	json_u64(&j, "bytes_used", s->shm_bytes_used);
	json_u64(&j, "alloc_failures", s->shm_alloc_failures);
	json_close(&j);
	json_cache(&j, &s->cache);
	json_extents(&j, &s->extents);

	const struct commit_stats *c = &s->commits;
	json_open(&j, "commits");
	json_u64(&j, "count", ld(&c->count));
	json_u64(&j, "records", ld(&c->records));
	json_u64(&j, "failures", ld(&c->failures));
	json_u64(&j, "sync_waits", ld(&c->sync_waits));
	json_u64(&j, "sync_failures", ld(&c->sync_failures));
	json_hist(&j, "batch_records", &c->batch_records);
	json_hist(&j, "latency_us", &c->latency_us);
	json_hist(&j, "blocked_us", &c->blocked_us);
	phases(c, total, last);
	json_open(&j, "phase_us_total");
	for (unsigned i = 0; i < 5; i++)
		json_u64(&j, phase_names[i], total[i]);
	json_close(&j);
	json_open(&j, "last_phase_us");
	for (unsigned i = 0; i < 5; i++)
		json_u64(&j, phase_names[i], last[i]);
	json_close(&j);
	json_close(&j);

	json_open(&j, "journal");
	json_u64(&j, "records", s->journal_records);
	json_u64(&j, "committed_seq", s->committed_seq);
	json_u64(&j, "backlog_records", s->journal_backlog_records);
	json_u64(&j, "backlog_bytes", s->journal_backlog_bytes);
	json_u64(&j, "full_waits", s->journal_full_waits);
	json_u64(&j, "full_refusals", s->journal_full_refusals);
	json_close(&j);

	json_open(&j, "store");
	json_u64(&j, "map_bytes", s->store_map_bytes);
	json_u64(&j, "used_bytes", s->store_used_bytes);
	json_close(&j);

	const struct rpc_stats *r = &s->rpc;
	json_open(&j, "rpc");
	json_u64(&j, "requests", ld(&r->requests));
	json_u64(&j, "bad_frames", ld(&r->bad_frames));
	json_u64(&j, "connections", ld(&r->connections));
	json_u64(&j, "output_bytes", ld(&r->output_bytes));
	json_open(&j, "limits");
	for (unsigned i = 0; i < STATS_LIMITS; i++)
		json_u64(&j, stats_limit_name(i), ld(&r->limits[i]));
	json_close(&j);
	char nb[16];
	json_open(&j, "ops");
	for (unsigned i = 0; i < STATS_OPS; i++)
		if (ld(&r->ops[i]) > 0)
			json_u64(&j, op_label(i, nb), ld(&r->ops[i]));
	json_close(&j);
	json_open(&j, "errors");
	for (unsigned i = 0; i < STATS_OPS; i++)
		if (ld(&r->errors[i]) > 0)
			json_u64(&j, op_label(i, nb), ld(&r->errors[i]));
	json_close(&j);
	json_open(&j, "latency_us");
	for (unsigned i = 0; i < STATS_OPS; i++)
		if (ld(&r->ops[i]) > 0)
			json_hist(&j, op_label(i, nb), &r->op_us[i]);
	json_close(&j);
	json_close(&j);

	json_u64(&j, "clients", s->clients);
	json_open(&j, "admin");
	json_u64(&j, "accept_pauses", s->admin_accept_pauses);
	json_close(&j);

	json_open(&j, "readpath");
	json_readpath(&j, &s->readpath);
	json_open(&j, "clients");
	for (unsigned i = 0; i < s->nclients_rp; i++) {
		char pid[16];
		snprintf(pid, sizeof(pid), "%d", (int)s->clients_rp[i].pid);
		json_open(&j, pid);
		json_readpath(&j, &s->clients_rp[i].rp);
		json_close(&j);
	}
	json_close(&j);
	json_close(&j);
	json_close(&j);
	out_add(&j.o, "\n", 1);
	return j.o.err;
}

/* ---- Prometheus text format 0.0.4 ---------------------------------------- */

static void prom_head(struct out *o, const char *name, const char *type, const char *help)
{
	out_printf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void prom_u64(struct out *o, const char *name, const char *type, const char *help,
                     uint64_t v)
{
	prom_head(o, name, type, help);
	out_printf(o, "%s %llu\n", name, (unsigned long long)v);
}

/* A label value with \, " and newline escaped. */
static void prom_label_value(struct out *o, const char *s)
{
	out_add(o, "\"", 1);
	for (const char *p = s ? s : ""; *p; p++) {
		if (*p == '\\')
			out_add(o, "\\\\", 2);
		else if (*p == '"')
			out_add(o, "\\\"", 2);
		else if (*p == '\n')
			out_add(o, "\\n", 2);
		else
			out_add(o, p, 1);
	}
	out_add(o, "\"", 1);
}

/* The samples of one summary: name{<labels>quantile="q"}, _sum, _count.
 * labels is "" or `key="value",` (with its trailing comma). */
static void prom_summary_samples(struct out *o, const char *name, const char *labels,
                                 const struct hist *h)
{
	static const struct { const char *s; double q; } qs[] = {
		{ "0.5", 0.5 }, { "0.9", 0.9 }, { "0.99", 0.99 }, { "1", 1.0 },
	};
	for (unsigned i = 0; i < sizeof(qs) / sizeof(qs[0]); i++)
		out_printf(o, "%s{%squantile=\"%s\"} %llu\n", name, labels, qs[i].s,
		           (unsigned long long)hist_quantile(h, qs[i].q));
	size_t ll = strlen(labels);
	if (ll > 0) { /* drop the trailing comma */
		out_printf(o, "%s_sum{%.*s} %llu\n", name, (int)(ll - 1), labels,
		           (unsigned long long)ld(&h->sum));
		out_printf(o, "%s_count{%.*s} %llu\n", name, (int)(ll - 1), labels,
		           (unsigned long long)ld(&h->count));
	} else {
		out_printf(o, "%s_sum %llu\n", name, (unsigned long long)ld(&h->sum));
		out_printf(o, "%s_count %llu\n", name, (unsigned long long)ld(&h->count));
	}
}

static void prom_summary(struct out *o, const char *name, const char *help, const struct hist *h)
{
	prom_head(o, name, "summary", help);
	prom_summary_samples(o, name, "", h);
}

int stats_render_prometheus(const struct stats_snapshot *s, struct evbuffer *buf)
{
	struct out o = { .buf = buf, .err = 0 };
	struct out *op = &o;
	uint64_t total[5], last[5];

	prom_u64(op, "mcache_uptime_seconds", "gauge", "Seconds since the server started.",
	         s->uptime_s);
	prom_head(op, "mcache_build_info", "gauge", "Server version (always 1).");
	out_printf(op, "mcache_build_info{version=");
	prom_label_value(op, s->version);
	out_printf(op, "} 1\n");

	prom_head(op, "mcache_dentries", "gauge", "Cached directory entries by state.");
	out_printf(op, "mcache_dentries{state=\"positive\"} %llu\n",
	           (unsigned long long)s->dentries_positive);
	out_printf(op, "mcache_dentries{state=\"negative\"} %llu\n",
	           (unsigned long long)s->dentries_negative);
	out_printf(op, "mcache_dentries{state=\"dirty\"} %llu\n",
	           (unsigned long long)s->dentries_dirty);
	prom_u64(op, "mcache_complete_dirs", "gauge",
	         "Directories whose children are all cached.", s->dirs_complete);
	prom_head(op, "mcache_inodes", "gauge", "Cached inodes by state.");
	out_printf(op, "mcache_inodes{state=\"cached\"} %llu\n", (unsigned long long)s->inodes_cached);
	out_printf(op, "mcache_inodes{state=\"dirty\"} %llu\n", (unsigned long long)s->inodes_dirty);
	prom_u64(op, "mcache_subtree_prunes_total", "counter",
	         "Removed directories whose cached children were pruned.", s->subtree_prunes);
	prom_u64(op, "mcache_pruned_entries_total", "counter",
	         "Cached entries freed by subtree pruning.", s->pruned_entries);

	prom_head(op, "mcache_shm_bytes", "gauge", "Shared-memory segment size and use.");
	out_printf(op, "mcache_shm_bytes{kind=\"total\"} %llu\n",
	           (unsigned long long)s->shm_bytes_total);
	out_printf(op, "mcache_shm_bytes{kind=\"used\"} %llu\n",
	           (unsigned long long)s->shm_bytes_used);
	prom_u64(op, "mcache_shm_alloc_failures_total", "counter",
	         "Segment allocations that failed.", s->shm_alloc_failures);
	prom_cache(op, &s->cache);
	prom_extents(op, &s->extents);

	const struct commit_stats *c = &s->commits;
	prom_u64(op, "mcache_commits_total", "counter", "Group commits completed.", ld(&c->count));
	prom_u64(op, "mcache_commit_records_total", "counter", "Journal records committed.",
	         ld(&c->records));
	prom_u64(op, "mcache_commit_failures_total", "counter", "Group commits that failed.",
	         ld(&c->failures));
	prom_u64(op, "mcache_commit_sync_waits_total", "counter", "Sync waiters served.",
	         ld(&c->sync_waits));
	prom_u64(op, "mcache_commit_sync_failures_total", "counter",
	         "Sync waiters answered with a commit error.", ld(&c->sync_failures));
	prom_summary(op, "mcache_commit_batch_records", "Journal records per group commit.",
	             &c->batch_records);
	prom_summary(op, "mcache_commit_latency_us",
	             "Group commit time from journal swap to publish, microseconds.",
	             &c->latency_us);
	prom_summary(op, "mcache_commit_blocked_us",
	             "Time writers waited on the journal swap, microseconds.", &c->blocked_us);
	phases(c, total, last);
	prom_head(op, "mcache_commit_phase_us_total", "counter",
	          "Time spent in each commit phase, microseconds.");
	for (unsigned i = 0; i < 5; i++)
		out_printf(op, "mcache_commit_phase_us_total{phase=\"%s\"} %llu\n", phase_names[i],
		           (unsigned long long)total[i]);
	prom_head(op, "mcache_commit_last_phase_us", "gauge",
	          "Phase times of the last commit, microseconds.");
	for (unsigned i = 0; i < 5; i++)
		out_printf(op, "mcache_commit_last_phase_us{phase=\"%s\"} %llu\n", phase_names[i],
		           (unsigned long long)last[i]);

	prom_u64(op, "mcache_journal_records", "gauge", "Records in the running journal batch.",
	         s->journal_records);
	prom_u64(op, "mcache_journal_backlog_records", "gauge",
	         "Uncommitted journal records (running and committing batches).",
	         s->journal_backlog_records);
	prom_u64(op, "mcache_journal_backlog_bytes", "gauge",
	         "Uncommitted journal bytes (running and committing batches).",
	         s->journal_backlog_bytes);
	prom_u64(op, "mcache_journal_full_waits_total", "counter",
	         "Mutations that waited for the full journal to drain.", s->journal_full_waits);
	prom_u64(op, "mcache_journal_full_refusals_total", "counter",
	         "Mutations refused with ENOSPC: the journal stayed full.",
	         s->journal_full_refusals);
	prom_u64(op, "mcache_committed_seq", "gauge", "Last committed journal sequence.",
	         s->committed_seq);
	prom_head(op, "mcache_store_bytes", "gauge", "LMDB map size and use.");
	out_printf(op, "mcache_store_bytes{kind=\"map\"} %llu\n",
	           (unsigned long long)s->store_map_bytes);
	out_printf(op, "mcache_store_bytes{kind=\"used\"} %llu\n",
	           (unsigned long long)s->store_used_bytes);

	const struct rpc_stats *r = &s->rpc;
	prom_u64(op, "mcache_rpc_requests_total", "counter", "Request frames carrying ops.",
	         ld(&r->requests));
	prom_u64(op, "mcache_rpc_bad_frames_total", "counter", "Malformed or oversized frames.",
	         ld(&r->bad_frames));
	prom_u64(op, "mcache_rpc_connections_total", "counter", "Client connections accepted.",
	         ld(&r->connections));
	prom_u64(op, "mcache_rpc_output_bytes", "gauge", "Unsent reply bytes, all connections.",
	         ld(&r->output_bytes));
	prom_head(op, "mcache_rpc_limit_events_total", "counter",
	          "Times a limit protected the server, by event.");
	for (unsigned i = 0; i < STATS_LIMITS; i++)
		out_printf(op, "mcache_rpc_limit_events_total{event=\"%s\"} %llu\n",
		           stats_limit_name(i), (unsigned long long)ld(&r->limits[i]));
	prom_u64(op, "mcache_admin_accept_pauses_total", "counter",
	         "Admin listener paused: out of descriptors.", s->admin_accept_pauses);
	/* Every named op (but "none"), so that rate() sees counters from zero;
	 * unnamed codes only when they count something. */
	char nb[16];
	prom_head(op, "mcache_rpc_ops_total", "counter", "RPC operations served, by op.");
	for (unsigned i = 0; i < STATS_OPS; i++)
		if ((i > 0 && strcmp(stats_op_name(i), "unknown") != 0) || ld(&r->ops[i]) > 0)
			out_printf(op, "mcache_rpc_ops_total{op=\"%s\"} %llu\n", op_label(i, nb),
			           (unsigned long long)ld(&r->ops[i]));
	prom_head(op, "mcache_rpc_errors_total", "counter",
	          "RPC operations answered with an error, by op.");
	for (unsigned i = 0; i < STATS_OPS; i++)
		if ((i > 0 && strcmp(stats_op_name(i), "unknown") != 0) || ld(&r->errors[i]) > 0)
			out_printf(op, "mcache_rpc_errors_total{op=\"%s\"} %llu\n", op_label(i, nb),
			           (unsigned long long)ld(&r->errors[i]));
	prom_head(op, "mcache_rpc_latency_us", "summary", "RPC service time by op, microseconds.");
	for (unsigned i = 0; i < STATS_OPS; i++) {
		if (ld(&r->ops[i]) == 0)
			continue;
		char labels[64];
		snprintf(labels, sizeof(labels), "op=\"%s\",", op_label(i, nb));
		prom_summary_samples(op, "mcache_rpc_latency_us", labels, &r->op_us[i]);
	}

	prom_u64(op, "mcache_clients", "gauge", "Client connections open now.", s->clients);
	prom_head(op, "mcache_readpath_total", "counter",
	          "Client lookups by outcome: answered from shared memory (hit), sent to the "
	          "server (miss, fallback), restarted (retry).");
	const struct stats_readpath *rp = &s->readpath;
	const char *kinds[] = { "hit", "miss", "retry", "fallback" };
	const uint64_t vals[] = { rp->hits, rp->misses, rp->retries, rp->fallbacks };
	for (unsigned i = 0; i < 4; i++)
		out_printf(op, "mcache_readpath_total{outcome=\"%s\"} %llu\n", kinds[i],
		           (unsigned long long)vals[i]);
	return o.err;
}
