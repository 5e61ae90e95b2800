/* stats_json.c - the /stats document: the table of metrics (stats.c) as
 * nested JSON objects built with jansson, per-op figures, and the clients'
 * read-path figures as an array. */
#include "stats.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <jansson.h>

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

/* A JSON string of s (NULL: ""), each invalid UTF-8 byte as U+FFFD:
 * jansson refuses invalid UTF-8 outright. NULL when out of memory. */
static json_t *json_text(const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t n = strlen((const char *)p);
	char *buf = malloc(n * 3 + 1);
	if (buf == NULL)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < n;) {
		size_t l = utf8_len(p + i, n - i);
		if (l == 0) {
			memcpy(buf + k, "\xef\xbf\xbd", 3);
			k += 3;
			i++;
		} else {
			memcpy(buf + k, p + i, l);
			k += l;
			i += l;
		}
	}
	buf[k] = '\0';
	json_t *j = json_string(buf);
	free(buf);
	return j;
}

/* A JSON integer; values past INT64_MAX (never reached by a counter) are
 * clamped, as jansson's integers are signed. */
static json_t *json_u64(uint64_t v)
{
	return json_integer(v > INT64_MAX ? INT64_MAX : (json_int_t)v);
}

/* Set key in obj, taking v (NULL: out of memory). 0 or -ENOMEM. */
static int set(json_t *obj, const char *key, json_t *v)
{
	if (v == NULL || json_object_set_new(obj, key, v) != 0)
		return -ENOMEM;
	return 0;
}

/* The object at the dotted path's directory under root, created as needed;
 * *leaf is set to the last component (in buf). NULL when out of memory or
 * when a component names a non-object. */
static json_t *json_dir(json_t *root, const char *path, char *buf, size_t n, const char **leaf)
{
	if (strlen(path) >= n)
		return NULL;
	strcpy(buf, path);
	json_t *obj = root;
	char *p = buf, *dot;
	while ((dot = strchr(p, '.')) != NULL) {
		*dot = '\0';
		json_t *sub = json_object_get(obj, p);
		if (sub == NULL) {
			sub = json_object();
			if (set(obj, p, sub) < 0)
				return NULL;
		}
		if (!json_is_object(sub))
			return NULL;
		obj = sub;
		p = dot + 1;
	}
	*leaf = p;
	return obj;
}

static json_t *json_hist(const struct hist *h)
{
	json_t *o = json_object();
	if (o == NULL)
		return NULL;
	if (set(o, "p50", json_u64(hist_quantile(h, 0.5))) < 0 ||
	    set(o, "p99", json_u64(hist_quantile(h, 0.99))) < 0 ||
	    set(o, "max", json_u64(atomic_load_explicit(&h->max, memory_order_relaxed))) < 0 ||
	    set(o, "count", json_u64(atomic_load_explicit(&h->count, memory_order_relaxed))) < 0 ||
	    set(o, "sum", json_u64(atomic_load_explicit(&h->sum, memory_order_relaxed))) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* rpc.ops, rpc.errors, rpc.latency_us: the ops that ran, by op label. */
static int json_ops(json_t *root, const struct rpc_stats *r)
{
	char buf[64], nb[16];
	const char *leaf;
	json_t *rpc = json_dir(root, "rpc.x", buf, sizeof(buf), &leaf);
	json_t *ops = json_object(), *errs = json_object(), *lat = json_object();
	int rc = -ENOMEM;
	if (rpc == NULL || ops == NULL || errs == NULL || lat == NULL)
		goto fail;
	for (unsigned i = 0; i < STATS_OPS; i++) {
		uint64_t n = atomic_load_explicit(&r->ops[i], memory_order_relaxed);
		uint64_t e = atomic_load_explicit(&r->errors[i], memory_order_relaxed);
		const char *name = stats_op_label(i, nb);
		if (n > 0 && (set(ops, name, json_u64(n)) < 0 ||
		              set(lat, name, json_hist(&r->op_us[i])) < 0))
			goto fail;
		if (e > 0 && set(errs, name, json_u64(e)) < 0)
			goto fail;
	}
	rc = set(rpc, "ops", ops);
	ops = NULL;
	if (rc == 0)
		rc = set(rpc, "errors", errs);
	errs = NULL;
	if (rc == 0)
		rc = set(rpc, "latency_us", lat);
	lat = NULL;
fail:
	json_decref(ops);
	json_decref(errs);
	json_decref(lat);
	return rc;
}

/* readpath.clients: one object per client, {"pid": N, "hits": ...}. */
static int json_clients(json_t *root, const struct stats_snapshot *s)
{
	char buf[64];
	const char *leaf;
	json_t *rp = json_dir(root, "readpath.clients", buf, sizeof(buf), &leaf);
	json_t *arr = json_array();
	if (rp == NULL || arr == NULL || set(rp, leaf, arr) < 0)
		return -ENOMEM;
	for (unsigned i = 0; i < s->nclients_rp && i < STATS_CLIENTS_MAX; i++) {
		const struct stats_readpath *r = &s->clients_rp[i].rp;
		json_t *c = json_pack("{s:i,s:I,s:I,s:I,s:I,s:I}", "pid", (int)s->clients_rp[i].pid,
		                      "hits", (json_int_t)r->hits, "misses", (json_int_t)r->misses,
		                      "retries", (json_int_t)r->retries,
		                      "fallbacks", (json_int_t)r->fallbacks, "rpcs", (json_int_t)r->rpcs);
		if (c == NULL || json_array_append_new(arr, c) != 0)
			return -ENOMEM;
	}
	return 0;
}

/* warm.per_thread: one object per warmer thread, {"entries": N, "rate": N}
 * (entries per second of its busy time). */
static int json_warm_threads(json_t *root, const struct stats_snapshot *s)
{
	char buf[64];
	const char *leaf;
	json_t *w = json_dir(root, "warm.per_thread", buf, sizeof(buf), &leaf);
	json_t *arr = json_array();
	if (w == NULL || arr == NULL || set(w, leaf, arr) < 0)
		return -ENOMEM;
	for (uint64_t i = 0; i < s->warm.threads && i < STATS_WARMERS_MAX; i++) {
		json_t *t = json_pack("{s:I,s:I}", "entries", (json_int_t)s->warm.per_thread[i].entries,
		                      "rate", (json_int_t)s->warm.per_thread[i].rate);
		if (t == NULL || json_array_append_new(arr, t) != 0)
			return -ENOMEM;
	}
	return 0;
}

static int json_build(json_t *root, const struct stats_snapshot *s)
{
	char buf[128];
	const char *leaf;
	int rc;
	if ((rc = set(root, "schema_version", json_integer(STATS_SCHEMA_VERSION))) < 0 ||
	    (rc = set(root, "version", json_text(s->version))) < 0)
		return rc;
	for (size_t i = 0; i < stats_nmetrics; i++) {
		const struct stats_metric *m = &stats_metrics[i];
		json_t *dir = json_dir(root, m->json, buf, sizeof(buf), &leaf);
		if (dir == NULL)
			return -ENOMEM;
		json_t *v = m->type == STATS_HIST ? json_hist(stats_metric_hist(s, m))
		                                   : json_u64(stats_metric_u64(s, m));
		if ((rc = set(dir, leaf, v)) < 0)
			return rc;
	}
	if ((rc = json_ops(root, &s->rpc)) < 0)
		return rc;
	if ((rc = json_warm_threads(root, s)) < 0)
		return rc;
	return json_clients(root, s);
}

int stats_render_json(const struct stats_snapshot *s, struct evbuffer *out)
{
	json_t *root = json_object();
	char *text = NULL;
	int rc = -ENOMEM;
	if (root == NULL)
		goto done;
	if ((rc = json_build(root, s)) < 0)
		goto done;
	rc = -ENOMEM;
	text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (text == NULL)
		goto done;
	if (evbuffer_add(out, text, strlen(text)) != 0 || evbuffer_add(out, "\n", 1) != 0)
		goto done;
	rc = 0;
done:
	free(text);
	json_decref(root);
	return rc;
}
