/* warmbench.c - figures of the warmers (not a test): build a namespace of
 * D directories of N files in an mcached started here, restart it with 1
 * and then 2 warmers, and print, from the same run:
 *   - warm-up rate (entries/s, from the server's warm.* stats) for 1 and 2
 *     warmers with nothing else running, and their ratio;
 *   - the CPU time the warm-up took (the warmer threads, named
 *     mcached-warm, and the whole server), per entry: unlike the rates it
 *     does not count time spent waiting for a CPU on a loaded machine;
 *   - time from exec to the first lookup answered from shared memory;
 *   - mc_sync latency p50/p99 while 2 warmers run (starts 3 and on, whose
 *     rates are printed but not as the warm-up rate; each round an
 *     mc_mkdir, then mc_sync, timed together, and the rounds begun after
 *     the warm-up's end left out) against as many rounds of the same loop
 *     on the idle server right after its warm-up, the mkdir's own p99 in
 *     both, and the committer's blocked time (commits.blocked_us) p99
 *     over the warm-up. --reps R (default 3) such starts, each a warm-up
 *     followed by its idle rounds, so that both sides sample the same
 *     stretches of the machine's load; a line per start, one over the
 *     rounds of all starts pooled, and the median of the starts' p99
 *     ratios, the figure (one start's p99 is its ~1% slowest rounds, a
 *     few tens: one burst of another process's work in either window
 *     moves it, and moves the pooled p99 too; the median sets aside a
 *     start where that happened, on either side);
 *   - a full walk (readdir every directory, lstat every name) after
 *     warm-up against the same tree on a kernel directory (tmpfs) and
 *     against a restart with --warmers 0.
 * Usage: warmbench --mcached PATH [-d DIRS] [-n FILES] [--kdir DIR] [--reps R]
 * (warmbench --help).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_args.h"
#include "mcache.h"

/* How often the end of warm-up is polled (/stats). */
#define WARM_POLL_US 20000

static const char *mcached;
static char dir[256], sock[512], data[512];
static pid_t pid;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "warmbench: %s: %s\n", what, strerror(errno));
	if (pid > 0)
		kill(pid, SIGKILL);
	exit(1);
}

/* Start mcached with --warmers w (and --shm-path shm unless NULL);
 * returns the exec time. */
static double start_at(const char *warmers, const char *shm)
{
	double t0 = now_s();
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		char log[600];
		snprintf(log, sizeof(log), "%s/mcached.log", dir);
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (fd >= 0)
			dup2(fd, 2);
		execl(mcached, mcached, "--socket", sock, "--data", data, "--admin", "none",
		      "--cache-size", "1G", "--warmers", warmers, "--log-level", "warn",
		      "--shm-path", shm ? shm : "none", (char *)NULL);
		_exit(127);
	}
	return t0;
}

static double start(const char *warmers)
{
	return start_at(warmers, NULL);
}

static mc_client *connect_wait(void)
{
	for (int i = 0; i < 20000; i++) {
		mc_client *c = mc_connect(sock);
		if (c)
			return c;
		usleep(500);
	}
	die("connect");
	return NULL;
}

static void stop(void)
{
	kill(pid, SIGTERM);
	int st;
	waitpid(pid, &st, 0);
	pid = 0;
}

static double stat_num(mc_client *c, const char *sec, const char *key, const char *sub)
{
	char *js = mc_server_stats(c);
	if (!js)
		die("stats");
	json_t *root = json_loads(js, 0, NULL);
	free(js);
	json_t *v = json_object_get(json_object_get(root, sec), key);
	if (sub)
		v = json_object_get(v, sub);
	double d = json_is_number(v) ? json_number_value(v) : -1;
	json_decref(root);
	return d;
}

static void build(mc_client *c, unsigned long nd, unsigned long nf, const char *kdir)
{
	mc_batch *b = mc_batch_new(c);
	char p[768];
	for (unsigned long d = 0; d < nd; d++) {
		snprintf(p, sizeof(p), "/d%05lu", d);
		mc_batch_mkdir(b, p, 0755);
		if (kdir) {
			snprintf(p, sizeof(p), "%s/d%05lu", kdir, d);
			if (mkdir(p, 0755) < 0)
				die("mkdir kernel");
		}
		for (unsigned long f = 0; f < nf; f++) {
			snprintf(p, sizeof(p), "/d%05lu/file%06lu", d, f);
			mc_batch_create(b, p, 0644);
			if (kdir) {
				snprintf(p, sizeof(p), "%s/d%05lu/file%06lu", kdir, d, f);
				int fd = open(p, O_CREAT | O_WRONLY, 0644);
				if (fd < 0)
					die("create kernel");
				close(fd);
			}
			if ((f + 1) % 2000 == 0 && mc_batch_run(b) < 0)
				die("batch");
		}
		if (mc_batch_run(b) < 0)
			die("batch");
	}
	mc_batch_free(b);
	if (mc_sync(c) < 0)
		die("sync");
}

static uint64_t walk_mc(mc_client *c, const char *path)
{
	uint64_t n = 0;
	MC_DIR *d = mc_opendir(c, path);
	if (!d)
		die("mc_opendir");
	struct dirent *e;
	char child[512];
	struct stat st;
	while ((e = mc_readdir(d))) {
		snprintf(child, sizeof(child), "%s/%s", strcmp(path, "/") ? path : "", e->d_name);
		if (mc_lstat(c, child, &st) < 0)
			die("mc_lstat");
		n++;
		if (S_ISDIR(st.st_mode))
			n += walk_mc(c, child);
	}
	mc_closedir(d);
	return n;
}

static uint64_t walk_k(const char *path)
{
	uint64_t n = 0;
	DIR *d = opendir(path);
	if (!d)
		die("opendir");
	struct dirent *e;
	char child[1024];
	struct stat st;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(child, sizeof(child), "%s/%s", path, e->d_name);
		if (lstat(child, &st) < 0)
			die("lstat");
		n++;
		if (S_ISDIR(st.st_mode))
			n += walk_k(child);
	}
	closedir(d);
	return n;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct(const double *v, size_t n, double p);

/* One round of the sync loop: when it began, its mkdir, mkdir + mc_sync
 * (seconds). */
struct sample {
	double t0, mkdir_s, total_s;
};

/* mkdir + mc_sync until *stop or max rounds, into v. */
static size_t sync_loop(mc_client *c, const char *tag, struct sample *v, size_t max,
                        atomic_bool *stopf)
{
	size_t n = 0;
	char p[128];
	while (n < max && !(stopf && atomic_load(stopf))) {
		snprintf(p, sizeof(p), "/%s%06zu", tag, n);
		double t0 = now_s();
		if (mc_mkdir(c, p, 0755) < 0)
			die("sync loop");
		double t1 = now_s();
		if (mc_sync(c) < 0)
			die("sync loop");
		v[n++] = (struct sample){ t0, t1 - t0, now_s() - t0 };
	}
	return n;
}

/* What is printed of v[0..n) (seconds): the totals' p50 and p99, the
 * mkdirs' p99. */
struct sample_pcts {
	double p50, p99, mkdir_p99;
};

static struct sample_pcts sample_pcts(const struct sample *v, size_t n)
{
	double *a = malloc((n ? n : 1) * sizeof(*a)), *b = malloc((n ? n : 1) * sizeof(*b));
	if (!a || !b)
		die("malloc");
	for (size_t i = 0; i < n; i++) {
		a[i] = v[i].total_s;
		b[i] = v[i].mkdir_s;
	}
	qsort(a, n, sizeof(*a), cmp_d);
	qsort(b, n, sizeof(*b), cmp_d);
	struct sample_pcts r = { pct(a, n, 0.5), pct(a, n, 0.99), pct(b, n, 0.99) };
	free(a);
	free(b);
	return r;
}

#define SYNC_MAX 100000

struct syncer {
	mc_client *c;
	char tag[16];
	struct sample v[SYNC_MAX];
	size_t n;
	atomic_bool stop;
};

static void *syncer_main(void *arg)
{
	struct syncer *s = arg;
	s->n = sync_loop(s->c, s->tag, s->v, SYNC_MAX, &s->stop);
	return NULL;
}

/* The rounds of every start, pooled (--reps). */
struct pool {
	struct sample *v;
	size_t n, cap;
};

static void pool_add(struct pool *p, const struct sample *v, size_t n)
{
	if (p->n + n > p->cap) {
		size_t cap = (p->n + n) * 2;
		struct sample *nv = realloc(p->v, cap * sizeof(*nv));
		if (!nv)
			die("realloc");
		p->v = nv;
		p->cap = cap;
	}
	memcpy(p->v + p->n, v, n * sizeof(*v));
	p->n += n;
}

/* Prints the line of one start (or of the pool); returns its p99 ratio. */
static double print_sync(const char *what, const struct sample *w, size_t nw,
                         const struct sample *i, size_t ni)
{
	struct sample_pcts pw = sample_pcts(w, nw), pi = sample_pcts(i, ni);
	printf("mc_sync during warm-up%s: n=%zu p50 %.3f ms p99 %.3f ms; idle after: n=%zu "
	       "p50 %.3f ms p99 %.3f ms; p99 ratio %.2f\n",
	       what, nw, pw.p50 * 1e3, pw.p99 * 1e3, ni, pi.p50 * 1e3, pi.p99 * 1e3,
	       pw.p99 / pi.p99);
	printf("  of which the mkdir before it: p99 %.3f ms during warm-up, %.3f ms idle\n",
	       pw.mkdir_p99 * 1e3, pi.mkdir_p99 * 1e3);
	return pw.p99 / pi.p99;
}

/* CPU seconds (user + system) of the server's threads named warm, or of
 * all of them when warm is NULL. */
static double cpu_s(const char *warm)
{
	char path[400], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		die("opendir /proc");
	double ticks = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/stat", (int)pid, e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		bool ok = fgets(buf, sizeof(buf), f) != NULL;
		fclose(f);
		char *open = strchr(buf, '('), *close = strrchr(buf, ')');
		if (!ok || !open || !close)
			continue;
		*close = '\0';
		if (warm && strcmp(open + 1, warm) != 0)
			continue;
		/* utime and stime: fields 14 and 15; field 3 follows ") ". */
		unsigned long ut = 0, st = 0;
		if (sscanf(close + 2, "%*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %lu %lu", &ut,
		           &st) == 2)
			ticks += (double)(ut + st);
	}
	closedir(d);
	return ticks / (double)sysconf(_SC_CLK_TCK);
}

static double pct(const double *v, size_t n, double p)
{
	return n ? v[(size_t)((double)(n - 1) * p)] : 0;
}

static void usage(FILE *f)
{
	fputs(
"NAME\n"
"    warmbench - warm-up, walk and warm-restart figures of mcached\n"
"\n"
"SYNOPSIS\n"
"    warmbench --mcached PATH [-d DIRS] [-n FILES] [--kdir DIR] [--reps R]\n"
"\n"
"DESCRIPTION\n"
"    Builds a namespace of DIRS directories of FILES files each (and the\n"
"    same tree in a kernel directory) in a server PATH started here on a\n"
"    temporary socket and data directory under /tmp, then restarts it and\n"
"    prints, from the same run:\n"
"\n"
"    - the warm-up rate (entries/s, from the server's warm.* statistics)\n"
"      with 1 and with 2 warmers, nothing else running, their ratio, and\n"
"      the CPU time per entry of the warmer threads and of the server;\n"
"    - the time from exec to the first lookup answered from shared memory;\n"
"    - mc_sync latency (an mc_mkdir and an mc_sync per round) p50 and p99\n"
"      while 2 warmers run, against as many rounds on the idle server right\n"
"      after its warm-up, for each of R starts, pooled, and the median of\n"
"      the starts' p99 ratios; and the committer's blocked time p99;\n"
"    - a full walk (readdir every directory, lstat every name) after the\n"
"      warm-up, against the kernel directory and against a restart with\n"
"      --warmers 0;\n"
"    - a warm restart (--shm-path under /dev/shm, the segment re-attached\n"
"      after a clean stop) against a cold start.\n"
"\n"
"    It is a benchmark, not a test: it never fails on a timing. It exits 1\n"
"    when something it needs fails (the server does not start, a call\n"
"    fails), 2 on bad usage.\n"
"\n"
"OPTIONS\n"
"    --mcached PATH\n"
"        The mcached binary to run (required).\n"
"    -d DIRS\n"
"        Directories under the root (default 1000).\n"
"    -n FILES\n"
"        Files per directory (default 1000): 1,001,000 entries by default.\n"
"        -d 1 -n 1000000 is one flat directory of a million names.\n"
"    --kdir DIR\n"
"        Where the kernel's copy of the tree goes (default /dev/shm).\n"
"    --reps R\n"
"        Warm-ups with mc_sync rounds (default 3).\n"
"    -h, --help\n"
"        Print this help and exit.\n"
"\n"
"EXAMPLE\n"
"    warmbench --mcached build-rel/server/mcached -d 1 -n 1000000 --reps 1\n",
	      f);
}

int main(int argc, char **argv)
{
	unsigned long nd = 1000, nf = 1000, reps = 3;
	const char *kdir_base = "/dev/shm";
	static const struct option lo[] = {
		{ "mcached", required_argument, NULL, 'm' },
		{ "kdir", required_argument, NULL, 'k' },
		{ "reps", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int o;
	while ((o = getopt_long(argc, argv, "d:n:h", lo, NULL)) != -1) {
		if (o == 'm')
			mcached = optarg;
		else if (o == 'k')
			kdir_base = optarg;
		else if (o == 'r')
			reps = bench_count_arg("warmbench", "--reps", optarg, 1000);
		else if (o == 'd')
			nd = bench_count_arg("warmbench", "-d", optarg, 100000000);
		else if (o == 'n')
			nf = bench_count_arg("warmbench", "-n", optarg, 100000000);
		else if (o == 'h') {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "Try 'warmbench --help'.\n");
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "warmbench: unexpected argument '%s'\nTry 'warmbench --help'.\n",
		        argv[optind]);
		return 2;
	}
	if (!mcached) {
		fprintf(stderr, "warmbench: --mcached PATH is required\nTry 'warmbench --help'.\n");
		return 2;
	}
	snprintf(dir, sizeof(dir), "/tmp/warmbench.XXXXXX");
	if (!mkdtemp(dir))
		die("mkdtemp");
	snprintf(sock, sizeof(sock), "%s/s", dir);
	snprintf(data, sizeof(data), "%s/data", dir);
	char kdir[512];
	snprintf(kdir, sizeof(kdir), "%s/warmbench.%d", kdir_base, (int)getpid());
	if (mkdir(kdir, 0755) < 0)
		die("kdir");

	start("0");
	mc_client *c = connect_wait();
	double t = now_s();
	build(c, nd, nf, kdir);
	uint64_t total = nd * nf + nd;
	printf("# built %llu entries in %.2f s (mcache and %s)\n", (unsigned long long)total,
	       now_s() - t, kdir);
	mc_disconnect(c);
	stop();

	/* Runs 1 and 2 time the warm-up alone with 1 and 2 warmers; runs 3
	 * and on warm with 2 again while a client calls mc_sync in a loop,
	 * for the committer's latency (its commits and fsyncs take CPU from
	 * the warmers, so their rate is not the warm-up rate), each followed
	 * by as many rounds on the idle server. */
	double rate[3] = { 0 };
	struct pool pool_w = { 0 }, pool_i = { 0 };
	double *ratios = calloc(reps, sizeof(*ratios));
	if (!ratios)
		die("calloc");
	static struct sample idle[SYNC_MAX];
	int last = 2 + (int)reps;
	for (int run = 1; run <= last; run++) {
		int w = run == 1 ? 1 : 2;
		bool syncing = run >= 3;
		char ws[4];
		snprintf(ws, sizeof(ws), "%d", w);
		double t0 = start(ws);
		c = connect_wait();
		/* The first lookup answered from shared memory. */
		struct stat st;
		double first = 0;
		for (;;) {
			if (mc_stat(c, "/d00000/file000000", &st) == 0 &&
			    stat_num(c, "readpath", "hits", NULL) > 0) {
				first = now_s() - t0;
				break;
			}
		}
		struct syncer *s = NULL;
		pthread_t th;
		if (syncing) {
			s = calloc(1, sizeof(*s));
			if (!s)
				die("calloc");
			s->c = connect_wait();
			snprintf(s->tag, sizeof(s->tag), "w%d_", run);
			pthread_create(&th, NULL, syncer_main, s);
		}
		/* Every WARM_POLL_US: a /stats each time is a JSON document
		 * built by the server and parsed here, ~1 ms of CPU, which at
		 * a 2 ms poll took a core's half from what is measured. */
		while (stat_num(c, "warm", "done", NULL) != 1)
			usleep(WARM_POLL_US);
		if (s) {
			atomic_store(&s->stop, true);
			pthread_join(th, NULL);
		}
		double entries = stat_num(c, "warm", "entries", NULL);
		double us = stat_num(c, "warm", "elapsed_us", NULL);
		double r = entries / (us / 1e6);
		const char *with = syncing ? " with mc_sync in a loop" : "";
		if (!syncing)
			rate[w] = r;
		double cw = cpu_s("mcached-warm"), call = cpu_s(NULL);
		printf("warmers %d%s: CPU %.3f s in the warmer threads (%.0f ns/entry), %.3f s in the "
		       "server (%.0f ns/entry)\n", w, with, cw, cw * 1e9 / entries, call,
		       call * 1e9 / entries);
		printf("warmers %d%s: %.0f entries in %.3f s: %.0f entries/s (per thread busy: "
		       "%.0f/s), %.0f yields; first shm hit %.3f s after exec\n", w, with, entries,
		       us / 1e6, r, stat_num(c, "warm", "rate_per_thread", NULL),
		       stat_num(c, "warm", "yields", NULL), first);
		if (syncing) {
			double blocked99 = stat_num(c, "commits", "blocked_us", "p99");
			double blockedmax = stat_num(c, "commits", "blocked_us", "max");
			/* Only rounds begun during the warm-up: it ended at most
			 * elapsed_us after exec (it starts a little later), and
			 * the poll sees it up to WARM_POLL_US after. */
			size_t nw = 0;
			for (size_t i = 0; i < s->n; i++)
				if (s->v[i].t0 < t0 + us / 1e6)
					s->v[nw++] = s->v[i];
			char itag[16];
			snprintf(itag, sizeof(itag), "i%d_", run);
			size_t ni = sync_loop(s->c, itag, idle, nw > 50 ? nw : 50, NULL);
			char what[48];
			snprintf(what, sizeof(what), " (start %d of %lu)", run - 2, reps);
			ratios[run - 3] = print_sync(what, s->v, nw, idle, ni);
			pool_add(&pool_w, s->v, nw);
			pool_add(&pool_i, idle, ni);
			double cnt = stat_num(c, "commits", "count", NULL);
			printf("namespace blocked by the committer during warm-up: p99 %.0f us, max %.0f us "
			       "(%.0f commits; swap %.0f us, publish %.0f us in all)\n", blocked99, blockedmax,
			       cnt, stat_num(c, "commits", "phase_us_total", "swap"),
			       stat_num(c, "commits", "phase_us_total", "publish"));
			mc_disconnect(s->c);
			free(s);
		}
		if (run == last) {
			print_sync(" (all starts pooled)", pool_w.v, pool_w.n, pool_i.v, pool_i.n);
			qsort(ratios, reps, sizeof(*ratios), cmp_d);
			printf("mc_sync p99 ratio, median of the %lu starts: %.2f (lowest %.2f, highest "
			       "%.2f)\n", reps, reps % 2 ? ratios[reps / 2]
			                             : (ratios[reps / 2 - 1] + ratios[reps / 2]) / 2,
			       ratios[0], ratios[reps - 1]);
			/* Full walk: warmed cache against the kernel directory. */
			t = now_s();
			uint64_t n1 = walk_mc(c, "/");
			double tm = now_s() - t;
			t = now_s();
			uint64_t n2 = walk_k(kdir);
			double tk = now_s() - t;
			printf("full walk after warm-up: mcache %llu names %.3f s, kernel %llu names %.3f s: "
			       "%.2fx kernel\n", (unsigned long long)n1, tm, (unsigned long long)n2, tk,
			       tk / tm);
		}
		mc_disconnect(c);
		stop();
	}
	free(pool_w.v);
	free(pool_i.v);
	free(ratios);
	printf("2 warmers / 1 warmer: %.2fx\n", rate[2] / rate[1]);

	/* Cold reference: no warmers, the walk goes through the server. */
	double t0 = start("0");
	c = connect_wait();
	struct stat st;
	while (mc_stat(c, "/d00000/file000000", &st) != 0)
		;
	double first = now_s() - t0;
	t = now_s();
	uint64_t n1 = walk_mc(c, "/");
	printf("cold (--warmers 0): first lookup %.3f s after exec; full walk %llu names %.3f s\n",
	       first, (unsigned long long)n1, now_s() - t);
	mc_disconnect(c);
	stop();

	/* Warm restart: a segment kept by a clean stop, against a cold start
	 * with 2 warmers; times from exec. */
	char seg[256];
	snprintf(seg, sizeof(seg), "/dev/shm/warmbench.%d.seg", (int)getpid());
	for (int round = 0; round < 3; round++) {
		const char *shm = round == 2 ? NULL : seg;
		t0 = start_at("2", shm);
		c = connect_wait();
		double conn = now_s() - t0, hit = 0;
		for (;;) {
			if (mc_stat(c, "/d00000/file000000", &st) == 0 &&
			    stat_num(c, "readpath", "hits", NULL) > 0) {
				hit = now_s() - t0;
				break;
			}
		}
		while (stat_num(c, "warm", "done", NULL) != 1)
			usleep(1000);
		double full = now_s() - t0;
		double att = stat_num(c, "warm", "reattached", NULL);
		if (round > 0)
			printf("%s: connected %.3f s, first lookup from shm %.3f s, whole namespace "
			       "cached %.3f s after exec (%.0f entries cached)\n",
			       att == 1 ? "warm restart (--shm-path, re-attached)"
			                : "cold start (2 warmers)",
			       conn, hit, full, stat_num(c, "dentries", "positive", NULL));
		mc_disconnect(c);
		stop();
	}
	unlink(seg);
	char segst[300];
	snprintf(segst, sizeof(segst), "%s.state", seg);
	unlink(segst);
	char cmd[1200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", dir, kdir);
	return system(cmd) == 0 ? 0 : 1;
}
