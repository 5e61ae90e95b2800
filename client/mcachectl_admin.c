/* mcachectl_admin.c - mcachectl stats [--watch [INTERVAL] [--count N]],
 * clients and slowlog [N]: the server's figures, its connected clients and
 * its slow-operation log, as tables for people or as JSON. */
#include "mcachectl_admin.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mcachectl.h"
#include "mcachectl_fmt.h"
#include "mcachectl_log.h"

/* ---- stats ------------------------------------------------------------- */

/* The figures one line of stats --watch is made of. */
struct watch_sample {
	double t;                   /* CLOCK_MONOTONIC, seconds */
	double requests, ops, errors, commits, records, hits, misses;
	double cache_used, clients;
};

static volatile sig_atomic_t watch_stop;

static void watch_on_signal(int sig)
{
	(void)sig;
	watch_stop = 1;
}

/* A number at a dotted path of the stats document, 0 when absent. */
static double jnum(json_t *doc, const char *path)
{
	char key[64];
	json_t *v = doc;
	for (const char *p = path; v && *p;) {
		size_t n = strcspn(p, ".");
		snprintf(key, sizeof(key), "%.*s", (int)n, p);
		v = json_object_get(v, key);
		p += n + (p[n] == '.');
	}
	return v && json_is_number(v) ? json_number_value(v) : 0;
}

/* The sum of the numbers in the object at path (per-op counters). */
static double jsum(json_t *doc, const char *path)
{
	json_t *o = json_object_get(json_object_get(doc, "rpc"), path);
	const char *k;
	json_t *v;
	double s = 0;
	json_object_foreach(o, k, v)
		if (json_is_number(v))
			s += json_number_value(v);
	return s;
}

/* Fetch and parse the server's statistics: 0, or EXIT_FAIL after saying why. */
static int watch_sample(mc_client *c, struct watch_sample *out)
{
	struct timespec ts;
	char *text = mc_server_stats(c);
	if (!text)
		return fail("stats");
	json_error_t jerr;
	json_t *doc = json_loads(text, 0, &jerr);
	free(text);
	if (!doc) {
		fprintf(stderr, "%s: stats: the server's statistics are not JSON: %s\n", prog,
		        jerr.text);
		return EXIT_FAIL;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	*out = (struct watch_sample){
		.t = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9,
		.requests = jnum(doc, "rpc.requests"),
		.ops = jsum(doc, "ops"),
		.errors = jsum(doc, "errors"),
		.commits = jnum(doc, "commits.count"),
		.records = jnum(doc, "commits.records"),
		.hits = jnum(doc, "readpath.hits"),
		.misses = jnum(doc, "readpath.misses"),
		.cache_used = jnum(doc, "shm.bytes_used"),
		.clients = jnum(doc, "clients"),
	};
	json_decref(doc);
	return 0;
}

/* Sleep for seconds unless a signal asks to stop first. */
static void watch_sleep(double seconds)
{
	struct timespec ts = { .tv_sec = (time_t)seconds,
	                       .tv_nsec = (long)((seconds - (double)(time_t)seconds) * 1e9) };
	while (!watch_stop && nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void watch_print(const struct watch_sample *a, const struct watch_sample *b)
{
	double dt = b->t - a->t > 0 ? b->t - a->t : 1;
	char when[16];
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	strftime(when, sizeof(when), "%H:%M:%S", &tm);
#define RATE(f) ((b->f - a->f) / dt)
	if (json_doc == NULL) {
		printf("%-8s %10.1f %10.1f %8.1f %9.1f %10.1f %10.1f %10.1f %12.0f %7.0f\n", when,
		       RATE(requests), RATE(ops), RATE(errors), RATE(commits), RATE(records),
		       RATE(hits), RATE(misses), b->cache_used, b->clients);
	} else {
		/* One object per line (JSON lines), as it happens. */
		json_t *o = json_pack("{s:s,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}",
		                      "time", when, "interval_seconds", dt,
		                      "requests_per_second", RATE(requests),
		                      "ops_per_second", RATE(ops),
		                      "errors_per_second", RATE(errors),
		                      "commits_per_second", RATE(commits),
		                      "records_per_second", RATE(records),
		                      "hits_per_second", RATE(hits),
		                      "misses_per_second", RATE(misses),
		                      "cache_used_bytes", b->cache_used,
		                      "connections", b->clients);
		char *s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
		if (s)
			puts(s);
		free(s);
		json_decref(o);
	}
#undef RATE
	fflush(stdout);
}

/* stats --watch: a line of rates per interval until SIGINT or count lines. */
static int stats_watch(double interval, long count)
{
	struct watch_sample prev, cur;
	struct sigaction sa = { .sa_handler = watch_on_signal };
	mc_client *c = conn();
	int rc;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if ((rc = watch_sample(c, &prev)) != 0)
		return rc;
	if (json_doc == NULL)
		printf("%-8s %10s %10s %8s %9s %10s %10s %10s %12s %7s\n", "time", "requests/s",
		       "ops/s", "errors/s", "commits/s", "records/s", "hits/s", "misses/s",
		       "cache_bytes", "conns");
	for (long n = 0; count == 0 || n < count; n++) {
		watch_sleep(interval);
		if (watch_stop)
			break;
		if ((rc = watch_sample(c, &cur)) != 0)
			return rc;
		watch_print(&prev, &cur);
		prev = cur;
	}
	return 0;
}

/* A positive decimal number of seconds (at most a day): 0, or -1. */
static int parse_interval(const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0.01 && v <= 86400))
		return -1;
	*out = v;
	return 0;
}

int cmd_stats(int argc, char **argv)
{
	bool watch = false;
	double interval = 1;
	long count = 0;

	if (argc == 2 && strcmp(argv[1], "--commits") == 0)
		return (errno = -commits_print(conn())) ? fail("stats") : 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--watch") == 0 || strcmp(argv[i], "-w") == 0) {
			watch = true;
			if (i + 1 < argc && argv[i + 1][0] != '-') {
				if (parse_interval(argv[++i], &interval) < 0) {
					usage_error("stats: invalid interval '%s' (seconds, 0.01 to 86400)",
					            argv[i]);
					return EXIT_USAGE;
				}
			}
		} else if (strcmp(argv[i], "--count") == 0 || strcmp(argv[i], "-n") == 0) {
			char *end;
			if (i + 1 == argc) {
				usage_error("stats: option '%s' requires an argument", argv[i]);
				return EXIT_USAGE;
			}
			errno = 0;
			count = strtol(argv[++i], &end, 10);
			if (errno || end == argv[i] || *end || count < 1) {
				usage_error("stats: invalid count '%s'", argv[i]);
				return EXIT_USAGE;
			}
		} else {
			usage_error("stats: unexpected argument '%s'", argv[i]);
			return EXIT_USAGE;
		}
	}
	if (count && !watch) {
		usage_error("stats: --count goes with --watch");
		return EXIT_USAGE;
	}
	if (watch)
		return stats_watch(interval, count);

	char *s = mc_server_stats(conn());
	if (!s)
		return fail("stats");
	size_t n = strlen(s);
	fputs(s, stdout);
	if (n == 0 || s[n - 1] != '\n')
		putchar('\n');
	free(s);
	return 0;
}

/* ---- clients and slowlog ------------------------------------------------ */

/* The server's JSON array from get, parsed: NULL after saying why. */
static json_t *server_array(char *(*get)(mc_client *, unsigned), unsigned n, const char *what)
{
	char *text = get(conn(), n);
	if (!text) {
		fail(what);
		return NULL;
	}
	json_error_t jerr;
	json_t *arr = json_loads(text, 0, &jerr);
	free(text);
	if (!json_is_array(arr)) {
		fprintf(stderr, "%s: %s: the server's answer is not a JSON array\n", prog, what);
		json_decref(arr);
		return NULL;
	}
	return arr;
}

static char *get_clients(mc_client *c, unsigned n)
{
	(void)n;
	return mc_server_clients(c);
}

/* "45s", "12m05s", "3h07m", "2d04h". */
static void format_age(double s, char *buf, size_t size)
{
	unsigned long t = s > 0 ? (unsigned long)s : 0;
	if (t < 60)
		snprintf(buf, size, "%lus", t);
	else if (t < 3600)
		snprintf(buf, size, "%lum%02lus", t / 60, t % 60);
	else if (t < 86400)
		snprintf(buf, size, "%luh%02lum", t / 3600, t % 3600 / 60);
	else
		snprintf(buf, size, "%lud%02luh", t / 86400, t % 86400 / 3600);
}

/* Append every element of arr to the --json document. */
static int json_take(json_t *arr)
{
	int rc = json_array_extend(json_doc, arr) == 0 ? 0 : EXIT_FAIL;
	json_decref(arr);
	if (rc)
		fprintf(stderr, "%s: --json: %s\n", prog, strerror(ENOMEM));
	return rc;
}

/* A listing command's output: the server's array of what (server_array()),
 * taken by the --json document, or printed as head() and then row() for
 * each element. An exit status. */
static int server_list(char *(*get)(mc_client *, unsigned), unsigned n, const char *what,
                       void (*head)(void), void (*row)(json_t *o))
{
	json_list = true;
	json_t *arr = server_array(get, n, what);
	if (!arr)
		return EXIT_FAIL;
	if (json_doc)
		return json_take(arr);
	size_t i;
	json_t *o;
	head();
	json_array_foreach(arr, i, o)
		row(o);
	json_decref(arr);
	return 0;
}

static void clients_head(void)
{
	printf("%-8s %-10s %-10s %10s %9s  %s\n", "PID", "USER", "GROUP", "REQUESTS", "AGE",
	       "CONNECTED");
}

static void clients_row(json_t *o)
{
	char ub[24], gb[24], age[32], when[64];
	double since = json_number_value(json_object_get(o, "connected"));
	struct timespec ts = { .tv_sec = (time_t)since };
	format_time(&ts, when, sizeof(when), false);
	format_age(json_number_value(json_object_get(o, "age_seconds")), age, sizeof(age));
	printf("%-8lld %-10s %-10s %10lld %9s  %s\n",
	       (long long)json_integer_value(json_object_get(o, "pid")),
	       id_name((unsigned long)json_integer_value(json_object_get(o, "uid")), true, ub),
	       id_name((unsigned long)json_integer_value(json_object_get(o, "gid")), false, gb),
	       (long long)json_integer_value(json_object_get(o, "requests")), age, when);
}

int cmd_clients(int argc, char **argv)
{
	if (argc > 1) {
		usage_error("clients: unexpected argument '%s'", argv[1]);
		return EXIT_USAGE;
	}
	return server_list(get_clients, 0, "clients", clients_head, clients_row);
}

static void slowlog_head(void)
{
	printf("%-6s %-19s %12s %-10s %-8s %s\n", "ID", "TIME", "DURATION_MS", "OP", "PID", "PATH");
}

static void slowlog_row(json_t *o)
{
	char when[64];
	double t = json_number_value(json_object_get(o, "time"));
	struct timespec ts = { .tv_sec = (time_t)t };
	struct tm tm;
	localtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	printf("%-6lld %-19s %12.3f %-10s %-8lld %s%s\n",
	       (long long)json_integer_value(json_object_get(o, "id")), when,
	       json_number_value(json_object_get(o, "duration_seconds")) * 1e3,
	       json_string_value(json_object_get(o, "op")),
	       (long long)json_integer_value(json_object_get(o, "pid")),
	       json_string_value(json_object_get(o, "path")),
	       json_is_true(json_object_get(o, "path_truncated")) ? "..." : "");
}

int cmd_slowlog(int argc, char **argv)
{
	unsigned long n = 10;
	if (argc > 2) {
		usage_error("slowlog: unexpected argument '%s'", argv[2]);
		return EXIT_USAGE;
	}
	if (argc == 2) {
		char *end;
		errno = 0;
		n = strtoul(argv[1], &end, 10);
		if (errno || end == argv[1] || *end || argv[1][0] == '-' || n > 100000) {
			usage_error("slowlog: invalid number of entries '%s' (0 to 100000)", argv[1]);
			return EXIT_USAGE;
		}
	}
	return server_list(mc_server_slowlog, (unsigned)n, "slowlog", slowlog_head, slowlog_row);
}
