/* test-stats.c - histogram accuracy against a sorted oracle, merging, op
 * names, and the well-formedness of the JSON and Prometheus renderings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <event2/buffer.h>

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

/* ---- a recursive-descent JSON checker ------------------------------------ */

struct jp {
	const char *p;
	int depth;
};

static void jws(struct jp *j)
{
	while (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')
		j->p++;
}

static int jvalue(struct jp *j);

static int jstring(struct jp *j)
{
	if (*j->p != '"')
		return -1;
	j->p++;
	while (*j->p != '"') {
		unsigned char c = (unsigned char)*j->p;
		if (c == '\0' || c < 0x20)
			return -1;
		if (c == '\\') {
			j->p++;
			if (*j->p == 'u') {
				for (int i = 1; i <= 4; i++)
					if (!strchr("0123456789abcdefABCDEF", j->p[i]) || j->p[i] == '\0')
						return -1;
				j->p += 5;
				continue;
			}
			if (!strchr("\"\\/bfnrt", *j->p) || *j->p == '\0')
				return -1;
		}
		j->p++;
	}
	j->p++;
	return 0;
}

static int jnumber(struct jp *j)
{
	const char *s = j->p;
	if (*j->p == '-')
		j->p++;
	if (*j->p == '0')
		j->p++;
	else if (*j->p >= '1' && *j->p <= '9')
		while (*j->p >= '0' && *j->p <= '9')
			j->p++;
	else
		return -1;
	if (*j->p == '.') {
		j->p++;
		if (!(*j->p >= '0' && *j->p <= '9'))
			return -1;
		while (*j->p >= '0' && *j->p <= '9')
			j->p++;
	}
	if (*j->p == 'e' || *j->p == 'E') {
		j->p++;
		if (*j->p == '+' || *j->p == '-')
			j->p++;
		if (!(*j->p >= '0' && *j->p <= '9'))
			return -1;
		while (*j->p >= '0' && *j->p <= '9')
			j->p++;
	}
	return j->p > s ? 0 : -1;
}

static int jcontainer(struct jp *j, char open, char close)
{
	if (++j->depth > 64)
		return -1;
	j->p++; /* open */
	(void)open;
	jws(j);
	if (*j->p == close) {
		j->p++;
		j->depth--;
		return 0;
	}
	for (;;) {
		jws(j);
		if (close == '}') {
			if (jstring(j) < 0)
				return -1;
			jws(j);
			if (*j->p++ != ':')
				return -1;
			jws(j);
		}
		if (jvalue(j) < 0)
			return -1;
		jws(j);
		if (*j->p == ',') {
			j->p++;
			continue;
		}
		if (*j->p == close) {
			j->p++;
			j->depth--;
			return 0;
		}
		return -1;
	}
}

static int jvalue(struct jp *j)
{
	jws(j);
	switch (*j->p) {
	case '{': return jcontainer(j, '{', '}');
	case '[': return jcontainer(j, '[', ']');
	case '"': return jstring(j);
	case 't': return strncmp(j->p, "true", 4) == 0 ? (j->p += 4, 0) : -1;
	case 'f': return strncmp(j->p, "false", 5) == 0 ? (j->p += 5, 0) : -1;
	case 'n': return strncmp(j->p, "null", 4) == 0 ? (j->p += 4, 0) : -1;
	default: return jnumber(j);
	}
}

static int json_valid(const char *s)
{
	struct jp j = { .p = s, .depth = 0 };
	jws(&j);
	if (*j.p != '{')
		return -1;
	if (jvalue(&j) < 0)
		return -1;
	jws(&j);
	return *j.p == '\0' ? 0 : -1;
}

/* Also ask python, when it is there, to load it (and check for duplicate
 * keys, which the C checker does not). 1 = ok, 0 = bad, -1 = no python. */
static int json_python(const char *s)
{
	if (system("python3 -c '' >/dev/null 2>&1") != 0)
		return -1;
	FILE *p = popen("python3 -c 'import json,sys\n"
	                "def hook(pairs):\n"
	                "    keys=[k for k,_ in pairs]\n"
	                "    assert len(keys)==len(set(keys)), keys\n"
	                "    return dict(pairs)\n"
	                "json.load(sys.stdin, object_pairs_hook=hook)' >/dev/null 2>&1", "w");
	if (p == NULL)
		return -1;
	fputs(s, p);
	int st = pclose(p);
	return st == 0 ? 1 : 0;
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
	assert_string_equal(stats_op_name(STATS_OPS - 1), "unknown");
	assert_string_equal(stats_op_name(1000), "unknown");
	/* Cached: the same pointer every time. */
	assert_ptr_equal(stats_op_name(5), stats_op_name(5));
}

static struct stats_snapshot *snapshot_sample(void)
{
	struct stats_snapshot *s = calloc(1, sizeof(*s));
	assert_non_null(s);
	s->uptime_s = 42;
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
	atomic_store(&s->rpc.ops[40], 2);         /* an unnamed code */
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
	char *j = render(stats_render_json, s);
	if (json_valid(j) < 0)
		fail_msg("invalid JSON: %s", j);
	int py = json_python(j);
	assert_int_not_equal(py, 0);
	static const char *const want[] = {
		"\"uptime_s\":42",
		"\"dentries\":{\"positive\":7,\"negative\":3,\"dirty\":2,\"complete_dirs\":1}",
		"\"inodes\":{\"cached\":9,\"dirty\":0}",
		"\"prune\":{\"subtrees\":0,\"entries\":0}",
		"\"shm\":{\"bytes_total\":1048576,\"bytes_used\":4096,\"alloc_failures\":0}",
		"\"commits\":{\"count\":3,\"records\":30,\"failures\":0,\"sync_waits\":0",
		"\"latency_us\":{\"p50\":102,\"p99\":102,\"max\":102",
		"\"batch_records\":{\"p50\":10,\"p99\":10,\"max\":10",
		"\"blocked_us\":{\"p50\":0",
		"\"phase_us_total\":{\"swap\":11,\"log\":0,\"apply\":0,\"sync\":0,\"publish\":0}",
		"\"last_phase_us\":{\"swap\":0,\"log\":0,\"apply\":0,\"sync\":77,\"publish\":0}",
		"\"journal\":{\"records\":4,\"committed_seq\":123,\"backlog_records\":6,"
		"\"backlog_bytes\":300,\"full_waits\":2,\"full_refusals\":1}",
		"\"store\":{\"map_bytes\":0,\"used_bytes\":0}",
		"\"rpc\":{\"requests\":5,\"bad_frames\":0,\"connections\":0",
		"\"ops\":{\"mkdir\":3,\"op40\":2}",
		"\"errors\":{\"mkdir\":1}",
		"\"latency_us\":{\"mkdir\":{\"p50\":43,\"p99\":60,\"max\":60",
		"\"clients\":2",
		"\"version\":\"0.1.0 \\\"odd\\\"\\u000a\\\\ \\ufffd\"",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (strstr(j, want[i]) == NULL)
			fail_msg("missing %s in %s", want[i], j);
	/* Ops with no count are left out. */
	assert_null(strstr(j, "\"stat\":"));
	free(j);

	/* An all-zero snapshot (NULL version) is valid too. */
	struct stats_snapshot *z = calloc(1, sizeof(*z));
	assert_non_null(z);
	j = render(stats_render_json, z);
	if (json_valid(j) < 0)
		fail_msg("invalid JSON: %s", j);
	assert_int_not_equal(json_python(j), 0);
	assert_non_null(strstr(j, "\"ops\":{}"));
	assert_non_null(strstr(j, "\"version\":\"\""));
	free(j);
	free(z);
	free(s);
}

/* The checker itself must reject broken documents, or the test above proves
 * nothing. */
static void t_json_checker(void **state)
{
	assert_int_equal(json_valid("{\"a\":{\"b\":[1,2.5,-3e4,true,null]},\"c\":\"x\\u00e9\"}"), 0);
	assert_int_equal(json_valid("{\"a\":1,}"), -1);
	assert_int_equal(json_valid("{\"a\":01}"), -1);
	assert_int_equal(json_valid("{\"a\":\"x\ny\"}"), -1);
	assert_int_equal(json_valid("{\"a\" 1}"), -1);
	assert_int_equal(json_valid("{\"a\":1}}"), -1);
	assert_int_equal(json_valid("{\"a\":\"\\x\"}"), -1);
}

/* Split a sample line into metric family name (the name before '{' or ' ',
 * with _sum/_count stripped for summaries) — checks the line's shape. */
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
	return *p == '\0' ? 0 : -1;
}

static void t_prometheus(void **state)
{
	struct stats_snapshot *s = snapshot_sample();
	char *text = render(stats_render_prometheus, s);
	assert_true(strlen(text) > 0 && text[strlen(text) - 1] == '\n');

	char typed[128][128];
	unsigned ntyped = 0;
	char seen[512][128];
	unsigned nseen = 0;
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[128], series[128], type[32];
		if (strncmp(line, "# HELP ", 7) == 0) {
			assert_true(sscanf(line + 7, "%127s", name) == 1);
			assert_true(strncmp(name, "mcache_", 7) == 0);
			continue;
		}
		if (strncmp(line, "# TYPE ", 7) == 0) {
			assert_int_equal(sscanf(line + 7, "%127s %31s", name, type), 2);
			assert_true(strcmp(type, "counter") == 0 || strcmp(type, "gauge") == 0 ||
			            strcmp(type, "summary") == 0);
			for (unsigned i = 0; i < ntyped; i++)
				if (strcmp(typed[i], name) == 0)
					fail_msg("TYPE twice for %s", name);
			assert_true(ntyped < 128);
			snprintf(typed[ntyped++], sizeof(typed[0]), "%s", name);
			continue;
		}
		if (prom_sample_ok(line, name, sizeof(name), series, sizeof(series)) < 0)
			fail_msg("malformed line: %s", line);
		assert_true(strncmp(name, "mcache_", 7) == 0);
		/* The sample's family must have been typed already. */
		bool found = false;
		for (unsigned i = 0; i < ntyped && !found; i++) {
			size_t tl = strlen(typed[i]);
			found = strcmp(name, typed[i]) == 0 ||
			        (strncmp(name, typed[i], tl) == 0 &&
			         (strcmp(name + tl, "_sum") == 0 || strcmp(name + tl, "_count") == 0));
		}
		if (!found)
			fail_msg("sample before its TYPE: %s", line);
		for (unsigned i = 0; i < nseen; i++)
			if (strcmp(seen[i], series) == 0)
				fail_msg("duplicate series %s", series);
		assert_true(nseen < 512);
		snprintf(seen[nseen++], sizeof(seen[0]), "%s", series);
	}
	free(text);

	text = render(stats_render_prometheus, s);
	static const char *const want[] = {
		"\nmcache_uptime_seconds 42\n",
		"\nmcache_dentries{state=\"positive\"} 7\n",
		"\nmcache_dentries{state=\"negative\"} 3\n",
		"\nmcache_commits_total 3\n",
		"\n# TYPE mcache_commit_latency_us summary\n",
		"\nmcache_commit_latency_us{quantile=\"0.5\"} 102\n",
		"\nmcache_commit_latency_us_sum 303\n",
		"\nmcache_commit_latency_us_count 3\n",
		"\nmcache_rpc_ops_total{op=\"mkdir\"} 3\n",
		"\nmcache_rpc_ops_total{op=\"stat\"} 0\n",
		"\nmcache_rpc_ops_total{op=\"op40\"} 2\n",
		"\nmcache_rpc_errors_total{op=\"mkdir\"} 1\n",
		"\nmcache_rpc_latency_us{op=\"mkdir\",quantile=\"0.99\"} 60\n",
		"\nmcache_rpc_latency_us_count{op=\"mkdir\"} 3\n",
		"\nmcache_shm_bytes{kind=\"used\"} 4096\n",
		"\nmcache_commit_phase_us_total{phase=\"swap\"} 11\n",
		"\nmcache_clients 2\n",
		"mcache_build_info{version=\"0.1.0 \\\"odd\\\"\\n\\\\ \xff\"} 1\n",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (strstr(text, want[i]) == NULL)
			fail_msg("missing %s", want[i]);
	/* No latency summary for ops that never ran. */
	assert_null(strstr(text, "mcache_rpc_latency_us{op=\"stat\""));
	free(text);
	free(s);
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
		cmocka_unit_test(t_json_checker),
		cmocka_unit_test(t_json_valid),
		cmocka_unit_test(t_prometheus),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
