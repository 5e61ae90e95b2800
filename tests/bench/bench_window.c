/* bench_window.c - rates over time during the unlink and rmtree phases:
 * each client counts its completed ops per 10-ms slot of CLOCK_MONOTONIC
 * (the same clock in every process) and leaves the counts in a file; the
 * parent sums every client's counts and prints the rate of every whole
 * 100-ms and 1-s window (min, median, max, and min/median: how steady the
 * rate is while the shrinker runs). A sampler thread in the parent reads
 * the server's segment use, negative entries and rmtree count every 100 ms
 * for the whole run: per phase, the cache's range and (mc_rmtree being one
 * call) the rmtree rate from the server's count; at the end, the range
 * over the run. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#define WIN_SLOT_NS 10000000ll   /* 10 ms */
#define WIN_SLOTS 60000u         /* 10 minutes */
#define SAMPLE_MAX 6000u         /* 10 minutes of 100-ms samples */

static void win_path(char *out, size_t size, unsigned step, unsigned client)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(out, size, "%s/mcbench.%d.win.%u.%u", tmp && *tmp ? tmp : "/tmp", (int)run_id,
	         step, client);
}

void win_begin(struct win *w)
{
	w->v = calloc(WIN_SLOTS, sizeof(*w->v));
	w->base = now_ns() / WIN_SLOT_NS;
	w->n = 0;
}

void win_tick(struct win *w, uint64_t ops)
{
	if (!w->v)
		return;
	int64_t slot = now_ns() / WIN_SLOT_NS - w->base;
	if (slot < 0 || slot >= (int64_t)WIN_SLOTS)
		return;
	w->v[slot] += (uint32_t)ops;
	if ((uint32_t)slot >= w->n)
		w->n = (uint32_t)slot + 1;
}

void win_end(struct win *w, unsigned step, unsigned client)
{
	char path[PATH_MAX];
	if (!w->v)
		return;
	win_path(path, sizeof(path), step, client);
	FILE *f = fopen(path, "wb");
	if (f) {
		if (fwrite(&w->base, sizeof(w->base), 1, f) != 1 ||
		    fwrite(&w->n, sizeof(w->n), 1, f) != 1 ||
		    fwrite(w->v, sizeof(*w->v), w->n, f) != w->n)
			fprintf(stderr, "mcbench: client %u: writing %s failed\n", client, path);
		fclose(f);
	}
	free(w->v);
	w->v = NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Rates of the whole windows of `slots` slots in sum[first..last]. */
static void print_windows(FILE *f, const char *label, const uint64_t *sum, int64_t first,
                          int64_t last, unsigned slots)
{
	int64_t nw = (last - first + 1) / slots;
	if (nw < 1) {
		fprintf(f, "#   %s: %-6s windows: none whole\n", label, slots == 10 ? "100-ms" : "1-s");
		return;
	}
	double *r = malloc((size_t)nw * sizeof(*r));
	if (!r)
		return;
	for (int64_t k = 0; k < nw; k++) {
		uint64_t ops = 0;
		for (unsigned j = 0; j < slots; j++)
			ops += sum[first + k * slots + j];
		r[k] = (double)ops * 1e9 / ((double)slots * (double)WIN_SLOT_NS);
	}
	qsort(r, (size_t)nw, sizeof(*r), cmp_double);
	double med = r[nw / 2];
	fprintf(f, "#   %s: %-6s windows: %" PRId64 ", min %.0f, median %.0f, max %.0f /s, "
	        "min/median %.2f\n", label, slots == 10 ? "100-ms" : "1-s", nw, r[0], med,
	        r[nw - 1], med > 0 ? r[0] / med : 0);
	free(r);
}

void win_report(FILE *f, unsigned step, unsigned nclients, const char *label)
{
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	struct { int64_t base; uint32_t n; uint32_t *v; } *c = calloc(nclients, sizeof(*c));
	if (!c)
		return;
	for (unsigned k = 0; k < nclients; k++) {
		char path[PATH_MAX];
		win_path(path, sizeof(path), step, k);
		FILE *in = fopen(path, "rb");
		if (!in)
			continue;
		if (fread(&c[k].base, sizeof(c[k].base), 1, in) == 1 &&
		    fread(&c[k].n, sizeof(c[k].n), 1, in) == 1 && c[k].n <= WIN_SLOTS &&
		    (c[k].v = malloc((c[k].n + 1) * sizeof(*c[k].v))) != NULL &&
		    fread(c[k].v, sizeof(*c[k].v), c[k].n, in) == c[k].n) {
			if (c[k].base < lo)
				lo = c[k].base;
			if (c[k].base + c[k].n > hi)
				hi = c[k].base + c[k].n;
		} else {
			c[k].n = 0;
		}
		fclose(in);
		unlink(path);
	}
	uint64_t *sum = hi > lo ? calloc((size_t)(hi - lo), sizeof(*sum)) : NULL;
	if (sum) {
		for (unsigned k = 0; k < nclients; k++)
			for (uint32_t j = 0; j < c[k].n; j++)
				sum[c[k].base - lo + j] += c[k].v[j];
		int64_t first = 0, last = hi - lo - 1;
		while (first < last && sum[first] == 0)
			first++;
		while (last > first && sum[last] == 0)
			last--;
		print_windows(f, label, sum, first, last, 10);
		print_windows(f, label, sum, first, last, 100);
		free(sum);
	}
	for (unsigned k = 0; k < nclients; k++)
		free(c[k].v);
	free(c);
}

/* ---- the sampler --------------------------------------------------------- */

struct sampler {
	mc_client *c;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;
	unsigned n;
	double bytes[SAMPLE_MAX], neg[SAMPLE_MAX], rmtree[SAMPLE_MAX];
	int64_t t[SAMPLE_MAX];       /* CLOCK_MONOTONIC ns of each sample */
};

static void *sampler_main(void *arg)
{
	struct sampler *s = arg;
	pthread_mutex_lock(&s->mu);
	while (!s->stop && s->n < SAMPLE_MAX) {
		pthread_mutex_unlock(&s->mu);
		char *doc = mc_server_stats(s->c);
		int64_t t = now_ns();
		double b, ng, rt = 0;
		bool ok = doc && stats_lookup(doc, "shm.bytes_used", &b) == 0 &&
		          stats_lookup(doc, "dentries.negative", &ng) == 0;
		/* a server without the counter gives no rmtree rates */
		if (ok && stats_lookup(doc, "cache.rmtree_entries", &rt) < 0)
			rt = -1;
		free(doc);
		pthread_mutex_lock(&s->mu);
		if (ok) {
			s->bytes[s->n] = b;
			s->neg[s->n] = ng;
			s->rmtree[s->n] = rt;
			s->t[s->n] = t;
			s->n++;
		}
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		if (!s->stop)
			pthread_cond_timedwait(&s->cv, &s->mu, &ts);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

struct sampler *sampler_start(mc_client *c)
{
	if (!c)
		return NULL;
	struct sampler *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->c = c;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	if (pthread_create(&s->th, NULL, sampler_main, s) != 0) {
		free(s);
		return NULL;
	}
	return s;
}

unsigned sampler_mark(struct sampler *s)
{
	if (!s)
		return 0;
	pthread_mutex_lock(&s->mu);
	unsigned n = s->n;
	pthread_mutex_unlock(&s->mu);
	return n;
}

/* Rates of the server's rmtree counter between samples about `span` ns
 * apart (consecutive ones for 100 ms, ten apart for 1 s), over the samples
 * from the first that saw it move to the last. */
static void rmtree_windows(FILE *f, const struct sampler *s, unsigned from, unsigned to,
                           unsigned step, const char *name)
{
	while (from + 1 < to && s->rmtree[from + 1] == s->rmtree[from])
		from++;
	while (to > from + 1 && s->rmtree[to - 1] == s->rmtree[to - 2])
		to--;
	unsigned nw = to > from ? (to - 1 - from) / step : 0;
	if (nw < 1) {
		fprintf(f, "#   rate (server): %-6s windows: none whole\n", name);
		return;
	}
	double *r = malloc(nw * sizeof(*r));
	if (!r)
		return;
	for (unsigned k = 0; k < nw; k++) {
		unsigned a = from + k * step, b = a + step;
		r[k] = (s->rmtree[b] - s->rmtree[a]) * 1e9 / (double)(s->t[b] - s->t[a]);
	}
	qsort(r, nw, sizeof(*r), cmp_double);
	double med = r[nw / 2];
	fprintf(f, "#   rate (server): %-6s windows: %u, min %.0f, median %.0f, max %.0f /s, "
	        "min/median %.2f\n", name, nw, r[0], med, r[nw - 1], med > 0 ? r[0] / med : 0);
	free(r);
}

void sampler_report(struct sampler *s, FILE *f, const char *label, unsigned from, bool rmtree)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	unsigned to = s->n;
	pthread_mutex_unlock(&s->mu);
	/* the sample just before the phase too: it bounds the first window */
	if (from > 0)
		from--;
	if (to <= from)
		return;
	double bmin = s->bytes[from], bmax = s->bytes[from], nmax = s->neg[from];
	for (unsigned i = from + 1; i < to; i++) {
		if (s->bytes[i] < bmin)
			bmin = s->bytes[i];
		if (s->bytes[i] > bmax)
			bmax = s->bytes[i];
		if (s->neg[i] > nmax)
			nmax = s->neg[i];
	}
	fprintf(f, "#   %s: %u samples: cache bytes min %.0f max %.0f last %.0f; "
	        "negatives max %.0f last %.0f\n", label, to - from, bmin, bmax,
	        s->bytes[to - 1], nmax, s->neg[to - 1]);
	if (rmtree && s->rmtree[from] >= 0) {
		rmtree_windows(f, s, from, to, 1, "100-ms");
		rmtree_windows(f, s, from, to, 10, "1-s");
	}
}

void sampler_stop(struct sampler *s, FILE *f, const char *label)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = true;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->th, NULL);
	if (label)
		sampler_report(s, f, label, 0, false);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

double cache_negatives(mc_client *c)
{
	double v = -1;
	char *doc = c ? mc_server_stats(c) : NULL;
	if (doc && stats_lookup(doc, "dentries.negative", &v) < 0)
		v = -1;
	free(doc);
	return v;
}
