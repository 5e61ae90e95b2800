/* test-stats.c - histogram accuracy against a sorted oracle, merging, op
 * names, the table of metrics, /stats read back with jansson, and /metrics
 * checked line by line and, when installed, by promtool. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/buffer.h>
#include <jansson.h>

#include "stats.h"

/* ---- helpers ------------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static struct hist *hist_new(void)
{
	struct hist *h = calloc(1, sizeof(*h));
	assert_non_null(h);
	return h;
}

/* The rank the histogram uses: ceil(q * n), at least 1. */
static uint64_t oracle(const uint64_t *sorted, size_t n, double q)
{
	size_t rank = (size_t)(q * (double)n);
	if ((double)rank < q * (double)n)
		rank++;
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return sorted[rank - 1];
}

static char *render(int (*fn)(const struct stats_snapshot *, struct evbuffer *),
                    const struct stats_snapshot *s)
{
	struct evbuffer *b = evbuffer_new();
	assert_non_null(b);
	assert_int_equal(fn(s, b), 0);
	size_t n = evbuffer_get_length(b);
	char *out = malloc(n + 1);
	assert_non_null(out);
	evbuffer_remove(b, out, n);
	out[n] = '\0';
	evbuffer_free(b);
	return out;
}

/* ---- reading the renderings --------------------------------------------- */

/* The /stats document, parsed by jansson; duplicate keys are an error. */
static json_t *parse(const char *text)
{
	json_error_t e;
	json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &e);
	if (j == NULL)
		fail_msg("invalid JSON (%s at %d): %s", e.text, e.position, text);
	return j;
}

/* The value at a dotted path ("commits.count"); fails the test if absent. */
static json_t *jget(json_t *root, const char *path)
{
	char buf[128];
	snprintf(buf, sizeof(buf), "%s", path);
	json_t *v = root;
	for (char *save = NULL, *k = strtok_r(buf, ".", &save); k; k = strtok_r(NULL, ".", &save)) {
		v = json_object_get(v, k);
		if (v == NULL)
			fail_msg("no %s in /stats", path);
	}
	return v;
}

static long long jint(json_t *root, const char *path)
{
	json_t *v = jget(root, path);
	if (!json_is_integer(v))
		fail_msg("%s is not an integer", path);
	return json_integer_value(v);
}

/* ---- cases --------------------------------------------------------------- */

static void t_hist_empty(void **state)
{
	struct hist *h = hist_new();
	assert_int_equal(hist_quantile(h, 0.5), 0);
	assert_int_equal(hist_quantile(h, 1.0), 0);
	free(h);
}

/* Each value alone in its bucket: the reported bound is >= the value and
 * within 12.5%; values below 16 are exact. */
static void t_hist_buckets(void **state)
{
	static const uint64_t vals[] = {
		0, 1, 2, 15, 16, 17, 18, 31, 32, 33, 100, 1000, 4095, 4096, 65537,
		1ull << 40, (1ull << 40) + 12345, 1ull << 63, UINT64_MAX - 1, UINT64_MAX,
	};
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		struct hist *h = hist_new();
		hist_add(h, vals[i]);
		hist_add(h, UINT64_MAX); /* so that the cap at max does not hide the bound */
		uint64_t q = hist_quantile(h, 0.5);
		assert_true(q >= vals[i]);
		if (vals[i] < 16)
			assert_int_equal(q, vals[i]);
		else
			assert_true(q - vals[i] <= vals[i] / 8);
		/* The cap: alone, the value is its own maximum. */
		struct hist *g = hist_new();
		hist_add(g, vals[i]);
		assert_int_equal(hist_quantile(g, 1.0), vals[i]);
		assert_int_equal(hist_quantile(g, 0.0), vals[i]);
		free(g);
		free(h);
	}
}

static void t_hist_oracle(void **state)
{
	enum { N = 20000 };
	static const double qs[] = { 0.0, 0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1.0 };
	uint64_t *v = malloc(N * sizeof(*v));
	assert_non_null(v);
	for (int round = 0; round < 4; round++) {
		struct hist *h = hist_new();
		uint64_t sum = 0, max = 0;
		for (size_t i = 0; i < N; i++) {
			/* log-uniform over 0..2^(8+12*round) */
			unsigned bits = (unsigned)(rng() % (8 + 12 * (unsigned)round + 1));
			v[i] = bits == 0 ? 0 : rng() >> (64 - bits);
			hist_add(h, v[i]);
			sum += v[i];
			if (v[i] > max)
				max = v[i];
		}
		qsort(v, N, sizeof(*v), cmp_u64);
		assert_int_equal(atomic_load(&h->count), N);
		assert_int_equal(atomic_load(&h->sum), sum);
		assert_int_equal(atomic_load(&h->max), max);
		for (size_t k = 0; k < sizeof(qs) / sizeof(qs[0]); k++) {
			uint64_t want = oracle(v, N, qs[k]);
			uint64_t got = hist_quantile(h, qs[k]);
			if (got < want || (double)(got - want) > 0.125 * (double)want) {
				fail_msg("round %d q=%g: oracle %llu, histogram %llu", round, qs[k],
				         (unsigned long long)want, (unsigned long long)got);
			}
		}
		free(h);
	}
	free(v);
}

static void t_hist_merge(void **state)
{
	struct hist *a = hist_new(), *b = hist_new(), *all = hist_new(), *dst = hist_new();
	for (int i = 0; i < 5000; i++) {
		uint64_t x = rng() >> (rng() % 64);
		hist_add(i % 3 ? a : b, x);
		hist_add(all, x);
	}
	hist_merge(dst, a);
	hist_merge(dst, b);
	assert_memory_equal(dst, all, sizeof(*all));
	assert_int_equal(hist_quantile(dst, 0.9), hist_quantile(all, 0.9));
	/* Merging an empty histogram changes nothing. */
	struct hist *empty = hist_new();
	hist_merge(dst, empty);
	assert_memory_equal(dst, all, sizeof(*all));
	free(a), free(b), free(all), free(dst), free(empty);
}

static void t_rpc_merge(void **state)
{
	struct rpc_stats *x = calloc(1, sizeof(*x)), *y = calloc(1, sizeof(*y));
	struct rpc_stats *sum = calloc(1, sizeof(*sum));
	assert_non_null(x), assert_non_null(y), assert_non_null(sum);
	atomic_store(&x->requests, 10);
	atomic_store(&y->requests, 5);
	atomic_store(&x->ops[5], 7);
	atomic_store(&y->ops[5], 1);
	atomic_store(&y->errors[9], 2);
	atomic_store(&x->bad_frames, 1);
	atomic_store(&y->connections, 4);
	hist_add(&x->op_us[5], 100);
	hist_add(&y->op_us[5], 3000);
	rpc_stats_merge(sum, x);
	rpc_stats_merge(sum, y);
	assert_int_equal(atomic_load(&sum->requests), 15);
	assert_int_equal(atomic_load(&sum->ops[5]), 8);
	assert_int_equal(atomic_load(&sum->errors[9]), 2);
	assert_int_equal(atomic_load(&sum->bad_frames), 1);
	assert_int_equal(atomic_load(&sum->connections), 4);
	assert_int_equal(atomic_load(&sum->op_us[5].count), 2);
	assert_int_equal(atomic_load(&sum->op_us[5].max), 3000);
	free(x), free(y), free(sum);
}

static void t_op_names(void **state)
{
	assert_string_equal(stats_op_name(0), "none");
	assert_string_equal(stats_op_name(1), "lookup");
	assert_string_equal(stats_op_name(5), "mkdir");
	assert_string_equal(stats_op_name(10), "rename");
	assert_string_equal(stats_op_name(22), "rmtree");
	assert_string_equal(stats_op_name(24), "stats");
	assert_string_equal(stats_op_name(31), "extent_punch");
	assert_string_equal(stats_op_name(40), "clients");
	assert_string_equal(stats_op_name(41), "slowlog");
	assert_string_equal(stats_op_name(47), "unknown");
	assert_string_equal(stats_op_name(1000), "unknown");
	/* Cached: the same pointer every time. */
	assert_ptr_equal(stats_op_name(5), stats_op_name(5));
}

static struct stats_snapshot *snapshot_sample(void)
{
	struct stats_snapshot *s = calloc(1, sizeof(*s));
	assert_non_null(s);
	s->uptime_s = 42;
	s->start_time_s = 1700000000;
	s->version = "0.1.0 \"odd\"\n\\ \xff";
	s->dentries_positive = 7;
	s->dentries_negative = 3;
	s->dentries_dirty = 2;
	s->dirs_complete = 1;
	s->inodes_cached = 9;
	s->shm_bytes_total = 1 << 20;
	s->shm_bytes_used = 4096;
	atomic_store(&s->commits.count, 3);
	atomic_store(&s->commits.records, 30);
	atomic_store(&s->commits.swap_us, 11);
	atomic_store(&s->commits.last_sync_us, 77);
	for (int i = 0; i < 3; i++) {
		hist_add(&s->commits.latency_us, 100 + (uint64_t)i);
		hist_add(&s->commits.batch_records, 10);
	}
	atomic_store(&s->rpc.requests, 5);
	atomic_store(&s->rpc.ops[5], 3);          /* mkdir */
	atomic_store(&s->rpc.errors[5], 1);
	atomic_store(&s->rpc.ops[47], 2);         /* an unnamed code */
	hist_add(&s->rpc.op_us[5], 20);
	hist_add(&s->rpc.op_us[5], 40);
	hist_add(&s->rpc.op_us[5], 60);
	s->journal_records = 4;
	s->journal_backlog_records = 6;
	s->journal_backlog_bytes = 300;
	s->journal_full_waits = 2;
	s->journal_full_refusals = 1;
	s->committed_seq = 123;
	s->clients = 2;
	return s;
}

static void t_json_valid(void **state)
{
	struct stats_snapshot *s = snapshot_sample();
	char *text = render(stats_render_json, s);
	json_t *j = parse(text);
	static const struct { const char *path; long long v; } want[] = {
		{ "schema_version", STATS_SCHEMA_VERSION },
		{ "uptime_s", 42 }, { "start_time_s", 1700000000 },
		{ "dentries.positive", 7 }, { "dentries.negative", 3 }, { "dentries.dirty", 2 },
		{ "dentries.complete_dirs", 1 }, { "inodes.cached", 9 }, { "inodes.dirty", 0 },
		{ "prune.subtrees", 0 }, { "prune.entries", 0 },
		{ "shm.bytes_total", 1048576 }, { "shm.bytes_used", 4096 }, { "shm.alloc_failures", 0 },
		{ "commits.count", 3 }, { "commits.records", 30 }, { "commits.sync_waits", 0 },
		{ "commits.latency_us.p50", 102 }, { "commits.latency_us.max", 102 },
		{ "commits.latency_us.count", 3 }, { "commits.latency_us.sum", 303 },
		{ "commits.batch_records.p50", 10 }, { "commits.blocked_us.p50", 0 },
		{ "commits.phase_us_total.swap", 11 }, { "commits.phase_us_total.publish", 0 },
		{ "commits.last_phase_us.sync", 77 },
		{ "journal.records", 4 }, { "journal.committed_seq", 123 },
		{ "journal.backlog_records", 6 }, { "journal.backlog_bytes", 300 },
		{ "journal.full_waits", 2 }, { "journal.full_refusals", 1 },
		{ "store.map_bytes", 0 }, { "store.used_bytes", 0 },
		{ "rpc.requests", 5 }, { "rpc.bad_frames", 0 }, { "rpc.connections", 0 },
		{ "rpc.ops.mkdir", 3 }, { "rpc.ops.op47", 2 }, { "rpc.errors.mkdir", 1 },
		{ "rpc.latency_us.mkdir.p50", 43 }, { "rpc.latency_us.mkdir.p99", 60 },
		{ "rpc.latency_us.mkdir.max", 60 }, { "rpc.limits.refused", 0 },
		{ "clients", 2 }, { "readpath.hits", 0 },
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (jint(j, want[i].path) != want[i].v)
			fail_msg("%s is %lld, not %lld", want[i].path, jint(j, want[i].path), want[i].v);
	assert_string_equal(json_string_value(jget(j, "version")), "0.1.0 \"odd\"\n\\ \xef\xbf\xbd");
	/* Ops with no count are left out. */
	assert_null(json_object_get(jget(j, "rpc.ops"), "stat"));
	assert_int_equal(json_object_size(jget(j, "rpc.errors")), 1);
	json_decref(j);
	free(text);

	/* An all-zero snapshot (NULL version) is valid too. */
	struct stats_snapshot *z = calloc(1, sizeof(*z));
	assert_non_null(z);
	text = render(stats_render_json, z);
	j = parse(text);
	assert_int_equal(json_object_size(jget(j, "rpc.ops")), 0);
	assert_string_equal(json_string_value(jget(j, "version")), "");
	assert_true(json_is_array(jget(j, "readpath.clients")));
	assert_int_equal(json_array_size(jget(j, "readpath.clients")), 0);
	json_decref(j);
	free(text);
	free(z);
	free(s);
}

/* Two clients of one process (a client per thread) are two elements of the
 * clients array, each with its pid: not one key repeated. */
static void t_json_clients(void **state)
{
	struct stats_snapshot *s = calloc(1, sizeof(*s));
	assert_non_null(s);
	s->nclients_rp = 3;
	s->clients_rp[0].pid = 100;
	s->clients_rp[0].rp.hits = 5;
	s->clients_rp[1].pid = 100;
	s->clients_rp[1].rp.hits = 6;
	s->clients_rp[2].pid = 200;
	s->clients_rp[2].rp.rpcs = 9;
	char *text = render(stats_render_json, s);
	json_t *j = parse(text);
	json_t *a = jget(j, "readpath.clients");
	assert_true(json_is_array(a));
	assert_int_equal(json_array_size(a), 3);
	assert_int_equal(jint(json_array_get(a, 0), "pid"), 100);
	assert_int_equal(jint(json_array_get(a, 0), "hits"), 5);
	assert_int_equal(jint(json_array_get(a, 1), "pid"), 100);
	assert_int_equal(jint(json_array_get(a, 1), "hits"), 6);
	assert_int_equal(jint(json_array_get(a, 2), "pid"), 200);
	assert_int_equal(jint(json_array_get(a, 2), "rpcs"), 9);
	json_decref(j);
	free(text);
	free(s);
}

/* An abbreviated time unit (_us, _ms) as a word of a metric name. */
static bool abbreviated(const char *name)
{
	static const char *const units[] = { "_us", "_ms" };
	size_t n = strlen(name);
	for (size_t i = 0; i < 2; i++) {
		char mid[8];
		snprintf(mid, sizeof(mid), "%s_", units[i]);
		if (strstr(name, mid) || (n > 3 && strcmp(name + n - 3, units[i]) == 0))
			return true;
	}
	return false;
}

/* The table's invariants (stats.h): unique JSON paths, unique series,
 * adjacent families, base units, counters named _total. */
static void t_table(void **state)
{
	for (size_t i = 0; i < stats_nmetrics; i++) {
		const struct stats_metric *m = &stats_metrics[i];
		assert_non_null(m->json);
		assert_non_null(m->help);
		for (size_t k = 0; k < i; k++) {
			const struct stats_metric *o = &stats_metrics[k];
			if (strcmp(m->json, o->json) == 0)
				fail_msg("JSON path %s twice", m->json);
			if (m->prom && o->prom && strcmp(m->prom, o->prom) == 0) {
				if (m->label == NULL || o->label == NULL || strcmp(m->label, o->label) == 0)
					fail_msg("series %s{%s} twice", m->prom, m->label ? m->label : "");
				if (strcmp(stats_metrics[i - 1].prom ? stats_metrics[i - 1].prom : "",
				           m->prom) != 0)
					fail_msg("family %s is not adjacent", m->prom);
				assert_int_equal(m->type, o->type);
				assert_int_equal(m->unit, o->unit);
				assert_string_equal(m->help, o->help);
			}
		}
		if (m->prom == NULL)
			continue;
		size_t n = strlen(m->prom);
		bool total = n > 6 && strcmp(m->prom + n - 6, "_total") == 0;
		if ((m->type == STATS_COUNTER) != total)
			fail_msg("%s: counters, and only counters, end in _total", m->prom);
		if (abbreviated(m->prom) || strstr(m->prom, "uptime"))
			fail_msg("%s: not in base units", m->prom);
		if (m->unit == STATS_UNIT_US && !strstr(m->prom, "_seconds"))
			fail_msg("%s: microseconds are rendered in seconds", m->prom);
	}
}

/* Split a sample line into metric name and series (name and labels), and
 * check its shape; the value is a decimal number. */
static int prom_sample_ok(const char *line, char *name, size_t n, char *series, size_t sn)
{
	const char *p = line;
	size_t k = 0;
	if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' || *p == ':'))
		return -1;
	while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
	       *p == '_' || *p == ':') {
		if (k + 1 < n)
			name[k++] = *p;
		p++;
	}
	name[k] = '\0';
	if (*p == '{') {
		p++;
		while (*p != '}') {
			if (!((*p >= 'a' && *p <= 'z') || *p == '_'))
				return -1;
			while ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')
				p++;
			if (*p++ != '=' || *p++ != '"')
				return -1;
			while (*p != '"') {
				if (*p == '\0' || *p == '\n')
					return -1;
				if (*p == '\\') {
					p++;
					if (*p != '\\' && *p != '"' && *p != 'n')
						return -1;
				}
				p++;
			}
			p++;
			if (*p == ',')
				p++;
			else if (*p != '}')
				return -1;
		}
		p++;
	}
	size_t sl = (size_t)(p - line);
	if (sl >= sn)
		return -1;
	memcpy(series, line, sl);
	series[sl] = '\0';
	if (*p++ != ' ')
		return -1;
	if (*p < '0' || *p > '9')
		return -1;
	while (*p >= '0' && *p <= '9')
		p++;
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return -1;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	return *p == '\0' ? 0 : -1;
}

static bool has_suffix(const char *name, const char *family, const char *suffix)
{
	size_t fl = strlen(family);
	return strncmp(name, family, fl) == 0 && strcmp(name + fl, suffix) == 0;
}

static void t_prometheus(void **state)
{
	struct stats_snapshot *s = snapshot_sample();
	char *text = render(stats_render_prometheus, s);
	assert_true(strlen(text) > 0 && text[strlen(text) - 1] == '\n');

	char typed[160][96], types[160][16];
	unsigned ntyped = 0;
	char seen[768][128];
	unsigned nseen = 0;
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[96], series[128], type[16];
		if (strncmp(line, "# HELP ", 7) == 0) {
			assert_true(sscanf(line + 7, "%95s", name) == 1);
			assert_true(strncmp(name, "mcache_", 7) == 0);
			continue;
		}
		if (strncmp(line, "# TYPE ", 7) == 0) {
			assert_int_equal(sscanf(line + 7, "%95s %15s", name, type), 2);
			assert_true(strcmp(type, "counter") == 0 || strcmp(type, "gauge") == 0 ||
			            strcmp(type, "histogram") == 0);
			for (unsigned i = 0; i < ntyped; i++)
				if (strcmp(typed[i], name) == 0)
					fail_msg("TYPE twice for %s", name);
			if (abbreviated(name) || strstr(name, "uptime"))
				fail_msg("%s: not in base units", name);
			assert_true(ntyped < 160);
			snprintf(typed[ntyped], sizeof(typed[0]), "%s", name);
			snprintf(types[ntyped++], sizeof(types[0]), "%s", type);
			continue;
		}
		if (prom_sample_ok(line, name, sizeof(name), series, sizeof(series)) < 0)
			fail_msg("malformed line: %s", line);
		assert_true(strncmp(name, "mcache_", 7) == 0);
		assert_null(strstr(line, "quantile="));
		/* The sample's family must have been typed already; histograms
		 * have only _bucket, _sum and _count samples. */
		bool found = false;
		for (unsigned i = 0; i < ntyped && !found; i++) {
			if (strcmp(types[i], "histogram") == 0)
				found = has_suffix(name, typed[i], "_bucket") ||
				        has_suffix(name, typed[i], "_sum") ||
				        has_suffix(name, typed[i], "_count");
			else
				found = strcmp(name, typed[i]) == 0;
		}
		if (!found)
			fail_msg("sample before its TYPE: %s", line);
		for (unsigned i = 0; i < nseen; i++)
			if (strcmp(seen[i], series) == 0)
				fail_msg("duplicate series %s", series);
		assert_true(nseen < 768);
		snprintf(seen[nseen++], sizeof(seen[0]), "%s", series);
	}
	free(text);

	text = render(stats_render_prometheus, s);
	static const char *const want[] = {
		"\nmcache_start_time_seconds 1700000000\n",
		"\nmcache_dentries{state=\"positive\"} 7\n",
		"\nmcache_dentries{state=\"negative\"} 3\n",
		"\nmcache_dentries_dirty 2\n",
		"\nmcache_inodes 9\n",
		"\nmcache_commits_total 3\n",
		"\n# TYPE mcache_commit_duration_seconds histogram\n",
		"\nmcache_commit_duration_seconds_bucket{le=\"5e-05\"} 0\n",
		"\nmcache_commit_duration_seconds_bucket{le=\"0.0001\"} 0\n",
		"\nmcache_commit_duration_seconds_bucket{le=\"0.00025\"} 3\n",
		"\nmcache_commit_duration_seconds_bucket{le=\"+Inf\"} 3\n",
		"\nmcache_commit_duration_seconds_sum 0.000303\n",
		"\nmcache_commit_duration_seconds_count 3\n",
		"\nmcache_commit_batch_records_bucket{le=\"10\"} 3\n",
		"\nmcache_commit_batch_records_bucket{le=\"5\"} 0\n",
		"\nmcache_rpc_ops_total{op=\"mkdir\"} 3\n",
		"\nmcache_rpc_ops_total{op=\"stat\"} 0\n",
		"\nmcache_rpc_ops_total{op=\"op47\"} 2\n",
		"\nmcache_rpc_errors_total{op=\"mkdir\"} 1\n",
		"\nmcache_rpc_duration_seconds_bucket{op=\"mkdir\",le=\"2.5e-05\"} 1\n",
		"\nmcache_rpc_duration_seconds_bucket{op=\"mkdir\",le=\"0.0001\"} 3\n",
		"\nmcache_rpc_duration_seconds_sum{op=\"mkdir\"} 0.000120\n",
		"\nmcache_rpc_duration_seconds_count{op=\"mkdir\"} 3\n",
		"\nmcache_shm_used_bytes 4096\n",
		"\nmcache_shm_size_bytes 1048576\n",
		"\nmcache_commit_phase_seconds_total{phase=\"swap\"} 0.000011\n",
		"\nmcache_commit_last_phase_seconds{phase=\"sync\"} 0.000077\n",
		"\nmcache_clients 2\n",
		"mcache_build_info{version=\"0.1.0 \\\"odd\\\"\\n\\\\ \xff\"} 1\n",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (strstr(text, want[i]) == NULL)
			fail_msg("missing %s", want[i]);
	/* No durations for ops that never ran; no state that overlaps another. */
	assert_null(strstr(text, "mcache_rpc_duration_seconds_bucket{op=\"stat\""));
	assert_null(strstr(text, "state=\"dirty\""));
	assert_null(strstr(text, "uptime"));
	free(text);
	free(s);
}

/* promtool, when installed, accepts the page (its lint included). */
static void t_promtool(void **state)
{
	if (system("command -v promtool >/dev/null 2>&1") != 0) {
		print_message("# skipped: promtool not installed (Debian: prometheus)\n");
		return;
	}
	struct stats_snapshot *s = snapshot_sample();
	s->version = "0.1.0";
	char *text = render(stats_render_prometheus, s);
	char path[] = "/tmp/test-stats-metrics-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "promtool check metrics < %s", path);
	int rc = system(cmd);
	unlink(path);
	free(text);
	free(s);
	if (rc != 0)
		fail_msg("promtool check metrics: status %d", rc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_hist_empty),
		cmocka_unit_test(t_hist_buckets),
		cmocka_unit_test(t_hist_oracle),
		cmocka_unit_test(t_hist_merge),
		cmocka_unit_test(t_rpc_merge),
		cmocka_unit_test(t_op_names),
		cmocka_unit_test(t_json_valid),
		cmocka_unit_test(t_json_clients),
		cmocka_unit_test(t_table),
		cmocka_unit_test(t_prometheus),
		cmocka_unit_test(t_promtool),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
