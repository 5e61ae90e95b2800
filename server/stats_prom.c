/* stats_prom.c - the /metrics page: the table of metrics (stats.c) in the
 * Prometheus text format 0.0.4, in base units (seconds, bytes), histograms
 * as cumulative _bucket{le=...} series with _sum and _count. */
#include "stats.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>

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

static void prom_head(struct out *o, const char *name, const char *type, const char *help)
{
	out_printf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value with \, " and newline escaped. */
static void prom_label_value(struct out *o, const char *s)
{
	out_printf(o, "\"");
	for (const char *p = s ? s : ""; *p; p++) {
		if (*p == '\\')
			out_printf(o, "\\\\");
		else if (*p == '"')
			out_printf(o, "\\\"");
		else if (*p == '\n')
			out_printf(o, "\\n");
		else
			out_printf(o, "%c", *p);
	}
	out_printf(o, "\"");
}

/* A value in the row's base unit: microseconds become exact decimal seconds. */
static void prom_value(struct out *o, enum stats_unit unit, uint64_t v)
{
	if (unit == STATS_UNIT_US)
		out_printf(o, "%llu.%06llu\n", (unsigned long long)(v / 1000000),
		           (unsigned long long)(v % 1000000));
	else
		out_printf(o, "%llu\n", (unsigned long long)v);
}

/* Bucket bounds: le as printed, and in the histogram's own unit. */
struct bound {
	const char *le;
	uint64_t raw;
};

static const struct bound us_bounds[] = {
	{ "1e-05", 10 }, { "2.5e-05", 25 }, { "5e-05", 50 }, { "0.0001", 100 },
	{ "0.00025", 250 }, { "0.0005", 500 }, { "0.001", 1000 }, { "0.0025", 2500 },
	{ "0.005", 5000 }, { "0.01", 10000 }, { "0.025", 25000 }, { "0.05", 50000 },
	{ "0.1", 100000 }, { "0.25", 250000 }, { "0.5", 500000 }, { "1", 1000000 },
	{ "2.5", 2500000 }, { "5", 5000000 }, { "10", 10000000 },
};
static const struct bound count_bounds[] = {
	{ "1", 1 }, { "2", 2 }, { "5", 5 }, { "10", 10 }, { "20", 20 }, { "50", 50 },
	{ "100", 100 }, { "200", 200 }, { "500", 500 }, { "1000", 1000 }, { "2000", 2000 },
	{ "5000", 5000 }, { "10000", 10000 }, { "100000", 100000 },
};

/* The samples of one histogram. labels is "" or `key="value",` (with its
 * trailing comma). _count is the +Inf bucket, read from the same buckets. */
static void prom_hist_samples(struct out *o, const char *name, const char *labels,
                              enum stats_unit unit, const struct hist *h)
{
	const struct bound *b = unit == STATS_UNIT_US ? us_bounds : count_bounds;
	size_t nb = unit == STATS_UNIT_US ? sizeof(us_bounds) / sizeof(us_bounds[0])
	                                  : sizeof(count_bounds) / sizeof(count_bounds[0]);
	for (size_t i = 0; i < nb; i++)
		out_printf(o, "%s_bucket{%sle=\"%s\"} %llu\n", name, labels, b[i].le,
		           (unsigned long long)hist_count_le(h, b[i].raw));
	uint64_t count = hist_count_le(h, UINT64_MAX);
	out_printf(o, "%s_bucket{%sle=\"+Inf\"} %llu\n", name, labels, (unsigned long long)count);
	size_t ll = strlen(labels);
	const char *open = ll ? "{" : "", *close = ll ? "}" : "";
	int len = ll ? (int)(ll - 1) : 0; /* without the trailing comma */
	out_printf(o, "%s_sum%s%.*s%s ", name, open, len, labels, close);
	prom_value(o, unit, atomic_load_explicit(&h->sum, memory_order_relaxed));
	out_printf(o, "%s_count%s%.*s%s %llu\n", name, open, len, labels, close,
	           (unsigned long long)count);
}

static const char *type_name(enum stats_type t)
{
	return t == STATS_COUNTER ? "counter" : t == STATS_GAUGE ? "gauge" : "histogram";
}

/* The table's rows; HELP and TYPE once per family (its rows are adjacent). */
static void prom_table(struct out *o, const struct stats_snapshot *s)
{
	const char *family = NULL;
	for (size_t i = 0; i < stats_nmetrics; i++) {
		const struct stats_metric *m = &stats_metrics[i];
		if (m->prom == NULL)
			continue;
		if (family == NULL || strcmp(family, m->prom) != 0)
			prom_head(o, m->prom, type_name(m->type), m->help);
		family = m->prom;
		if (m->type == STATS_HIST) {
			prom_hist_samples(o, m->prom, "", m->unit, stats_metric_hist(s, m));
			continue;
		}
		if (m->label)
			out_printf(o, "%s{%s} ", m->prom, m->label);
		else
			out_printf(o, "%s ", m->prom);
		prom_value(o, m->unit, stats_metric_u64(s, m));
	}
}

/* Per-op counters and service times. Every named op (but "none") has its
 * counters, so that rate() sees them from zero; unnamed codes only when
 * they count something; durations only for ops that ran. */
static void prom_ops(struct out *o, const struct rpc_stats *r)
{
	char nb[16];
	prom_head(o, "mcache_rpc_ops_total", "counter", "RPC operations served, by op.");
	for (unsigned i = 0; i < STATS_OPS; i++) {
		uint64_t n = atomic_load_explicit(&r->ops[i], memory_order_relaxed);
		if ((i > 0 && strcmp(stats_op_name(i), "unknown") != 0) || n > 0)
			out_printf(o, "mcache_rpc_ops_total{op=\"%s\"} %llu\n", stats_op_label(i, nb),
			           (unsigned long long)n);
	}
	prom_head(o, "mcache_rpc_errors_total", "counter",
	          "RPC operations answered with an error, by op.");
	for (unsigned i = 0; i < STATS_OPS; i++) {
		uint64_t n = atomic_load_explicit(&r->errors[i], memory_order_relaxed);
		if ((i > 0 && strcmp(stats_op_name(i), "unknown") != 0) || n > 0)
			out_printf(o, "mcache_rpc_errors_total{op=\"%s\"} %llu\n", stats_op_label(i, nb),
			           (unsigned long long)n);
	}
	prom_head(o, "mcache_rpc_duration_seconds", "histogram", "RPC service time by op.");
	for (unsigned i = 0; i < STATS_OPS; i++) {
		if (atomic_load_explicit(&r->ops[i], memory_order_relaxed) == 0)
			continue;
		char labels[64];
		snprintf(labels, sizeof(labels), "op=\"%s\",", stats_op_label(i, nb));
		prom_hist_samples(o, "mcache_rpc_duration_seconds", labels, STATS_UNIT_US,
		                  &r->op_us[i]);
	}
}

int stats_render_prometheus(const struct stats_snapshot *s, struct evbuffer *buf)
{
	struct out o = { .buf = buf, .err = 0 };
	prom_head(&o, "mcache_build_info", "gauge", "Server version (always 1).");
	out_printf(&o, "mcache_build_info{version=");
	prom_label_value(&o, s->version);
	out_printf(&o, "} 1\n");
	prom_table(&o, s);
	prom_ops(&o, &s->rpc);
	return o.err;
}
