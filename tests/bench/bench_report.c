/* bench_report.c - the results: per-phase medians over the runs, printed as a table and as JSON. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, unsigned n)
{
	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	if (n % 2)
		return v[n / 2];
	return (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void fmt_rate(char *out, size_t size, double r, bool have)
{
	if (!have)
		snprintf(out, size, "-");
	else if (r <= 0)
		snprintf(out, size, "error");
	else
		snprintf(out, size, "%.0f", r);
}

/* Whether the row's baseline is raw LMDB rather than the kernel. */
static bool row_lmdb(const struct row *w)
{
	return w->ph == PH_DURABLE || w->ph == PH_LMDB;
}

/* Index of the step (ph, tk), or -1. */
static int step_find(enum phase ph, enum tkind tk)
{
	unsigned i;

	for (i = 0; i < nsteps; i++)
		if (steps[i].ph == ph && steps[i].tk == tk)
			return (int)i;
	return -1;
}

void rows_make(struct result (*res)[MAX_STEPS], unsigned reps, struct row *rows)
{
	double v[MAX_REPEAT];
	unsigned p, r;

	for (p = 0; p < O.norder; p++) {
		struct row *w = &rows[p];
		int idx[2], j;
		double *dst[2];

		memset(w, 0, sizeof(*w));
		w->ph = O.order[p];
		if (w->ph == PH_LMDB) {
			w->mc_step = -1;
			w->base_step = step_find(PH_LMDB, T_LMDB);
		} else if (w->ph == PH_DURABLE) {
			w->mc_step = step_find(PH_DURABLE, T_MC);
			w->base_step = step_find(PH_LMDB, T_LMDB);
		} else {
			w->mc_step = step_find(w->ph, T_MC);
			w->base_step = step_find(w->ph, T_KERNEL);
		}
		idx[0] = w->mc_step;
		idx[1] = w->base_step;
		dst[0] = &w->mc_rate;
		dst[1] = &w->base_rate;
		for (j = 0; j < 2; j++) {
			bool all = true;
			if (idx[j] < 0)
				continue;
			for (r = 0; r < reps; r++) {
				const struct result *x = &res[r][idx[j]];
				v[r] = x->rate;
				all = all && x->valid;
				/* the lmdb step also backs durable: count its errors once */
				if (!(w->ph == PH_DURABLE && j == 1))
					w->errors += x->errors;
				if (x->ops > w->ops)
					w->ops = x->ops;
			}
			*dst[j] = all ? median(v, reps) : 0;
		}
	}
}

void print_table(FILE *f, const struct row *rows, unsigned reps,
                 const struct memfig *mem, unsigned nmem)
{
	char a[32], b[32], c[32];
	double bytes[MAX_REPEAT], pos[MAX_REPEAT], ino[MAX_REPEAT];
	unsigned p, r, n = 0;

	fprintf(f, "mcbench: %u client(s), %lu dir(s) x %lu files each, name length %u, %s, "
	        "median of %u run(s)\n", O.clients, O.dirs, O.files, O.name_len,
	        O.batch ? "batched" : "serial calls", reps);
	if (O.batch)
		fprintf(f, "mcache: %lu ops per round trip for mkdir/create/stat/unlink/rmdir; "
		        "kernel: one system call per op\n", O.batch);
	fprintf(f, "kernel directory: %s\n\n", kroot);
	fprintf(f, "%-8s %10s %14s %14s %8s %8s\n", "phase", "ops", "mcache ops/s",
	        "kernel ops/s", "ratio", "errors");
	for (p = 0; p < O.norder; p++) {
		const struct row *w = &rows[p];
		bool have_mc = w->mc_step >= 0, have_b = w->base_step >= 0;

		fmt_rate(a, sizeof(a), w->mc_rate, have_mc);
		fmt_rate(b, sizeof(b), w->base_rate, have_b);
		if (have_mc && have_b && w->mc_rate > 0 && w->base_rate > 0)
			snprintf(c, sizeof(c), "%.2f", w->mc_rate / w->base_rate);
		else
			snprintf(c, sizeof(c), "-");
		fprintf(f, "%-8s %10" PRIu64 " %14s %14s %8s %8" PRIu64 "%s\n",
		        phase_names[w->ph], w->ops, a, b, c, w->errors,
		        row_lmdb(w) ? "  (baseline: raw LMDB)" : "");
	}
	for (r = 0; r < nmem; r++) {
		if (!mem[r].valid)
			continue;
		bytes[n] = mem[r].d_bytes / (double)mem[r].created;
		pos[n] = mem[r].d_pos;
		ino[n] = mem[r].d_inodes;
		n++;
	}
	if (n) {
		double mb = median(bytes, n), mp = median(pos, n), mi = median(ino, n);
		fprintf(f, "\nmemory: %.1f bytes of shared memory per created entry "
		        "(name length %u; median of %u run(s)); per run: "
		        "+%.0f dentries.positive, +%.0f inodes.cached for %" PRIu64 " files\n",
		        mb, O.name_len, n, mp, mi, mem[0].created);
	} else if (need_server() && (O.phase_on[PH_CREATE] || O.phase_on[PH_DURABLE])) {
		fprintf(f, "\nmemory: not measured (server stats unavailable or the create phase failed)\n");
	}
}

void print_json(FILE *f, struct result (*res)[MAX_STEPS], unsigned reps,
                const struct row *rows, const struct memfig *mem)
{
	unsigned p, r, j;

	fprintf(f, "{\"clients\":%u,\"dirs\":%lu,\"files\":%lu,\"name_len\":%u,\"batch\":%lu,"
	        "\"repeat\":%u,\"count\":%lu,\"kdir\":\"%s\",\"phases\":[",
	        O.clients, O.dirs, O.files, O.name_len, O.batch, reps, O.count, kroot);
	for (p = 0; p < O.norder; p++) {
		const struct row *w = &rows[p];
		int idx[2] = { w->mc_step, w->base_step };
		const char *keys[2] = { "mcache", row_lmdb(w) ? "lmdb" : "kernel" };

		fprintf(f, "%s{\"phase\":\"%s\",\"ops\":%" PRIu64 ",\"errors\":%" PRIu64
		        ",\"baseline\":\"%s\"", p ? "," : "", phase_names[w->ph], w->ops,
		        w->errors, keys[1]);
		for (j = 0; j < 2; j++) {
			if (idx[j] < 0)
				continue;
			fprintf(f, ",\"%s_ops_s\":", keys[j]);
			if ((j ? w->base_rate : w->mc_rate) > 0)
				fprintf(f, "%.1f", j ? w->base_rate : w->mc_rate);
			else
				fprintf(f, "null");
			fprintf(f, ",\"%s_runs\":[", keys[j]);
			for (r = 0; r < reps; r++) {
				const struct result *x = &res[r][idx[j]];
				fprintf(f, "%s{\"ops\":%" PRIu64 ",\"seconds\":%.6f,\"errors\":%" PRIu64 "}",
				        r ? "," : "", x->ops, x->secs, x->errors);
			}
			fprintf(f, "]");
		}
		if (w->mc_rate > 0 && w->base_rate > 0)
			fprintf(f, ",\"ratio\":%.4f", w->mc_rate / w->base_rate);
		else
			fprintf(f, ",\"ratio\":null");
		fprintf(f, "}");
	}
	fprintf(f, "],\"memory\":[");
	for (r = 0, j = 0; r < reps; r++) {
		if (!mem[r].valid)
			continue;
		fprintf(f, "%s{\"created\":%" PRIu64 ",\"shm_bytes_used_delta\":%.0f,"
		        "\"dentries_positive_delta\":%.0f,\"inodes_cached_delta\":%.0f,"
		        "\"bytes_per_entry\":%.2f}", j++ ? "," : "", mem[r].created,
		        mem[r].d_bytes, mem[r].d_pos, mem[r].d_inodes,
		        mem[r].d_bytes / (double)mem[r].created);
	}
	fprintf(f, "]}\n");
}

void print_scaling(FILE *f, const struct row *rows, const struct row *rows2, unsigned n1,
                   unsigned n2)
{
	fprintf(f, "\nscaling: rates with %u clients over rates with %u (medians)\n", n2, n1);
	fprintf(f, "%-8s %14s %14s\n", "phase", "mcache", "baseline");
	for (unsigned p = 0; p < O.norder; p++) {
		char a[32] = "-", b[32] = "-";

		if (rows[p].mc_rate > 0 && rows2[p].mc_rate > 0)
			snprintf(a, sizeof(a), "%.2f", rows2[p].mc_rate / rows[p].mc_rate);
		if (rows[p].base_rate > 0 && rows2[p].base_rate > 0)
			snprintf(b, sizeof(b), "%.2f", rows2[p].base_rate / rows[p].base_rate);
		fprintf(f, "%-8s %14s %14s\n", phase_names[rows[p].ph], a, b);
	}
}
