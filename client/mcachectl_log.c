/* mcachectl_log.c - `mcachectl log` (mc_log_read, polled for --follow) and
 * `mcachectl stats --commits` (the commit fields of mc_server_stats). */
#include "mcachectl_log.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define LOG_POLL_MS 200

/* Print a JSON string of bytes (each code point up to U+00FF one byte). */
static void put_bytes(const char *utf8)
{
	const unsigned char *p = (const unsigned char *)utf8;
	while (*p) {
		unsigned c = *p++;
		if ((c & 0xe0) == 0xc0 && (*p & 0xc0) == 0x80)
			c = (c & 0x1f) << 6 | (*p++ & 0x3f);
		if (c > 0x20 && c < 0x7f && c != '\\')
			putchar((int)c);
		else
			printf("\\x%02x", c & 0xff);
	}
}

static const char *type_name(json_int_t t)
{
	switch (t) {
	case 1: return "fifo";
	case 2: return "chr";
	case 4: return "dir";
	case 6: return "blk";
	case 8: return "reg";
	case 10: return "lnk";
	case 12: return "sock";
	default: return "unknown";
	}
}

/* One JSON line as text (mcachectl_log.h); -EPROTO if it is not a record. */
static int print_text(const char *line)
{
	json_error_t jerr;
	json_t *o = json_loads(line, 0, &jerr);
	json_t *seq = json_object_get(o, "seq"), *rec = json_object_get(o, "rec");
	json_t *t = json_object_get(o, "time_ns"), *op = json_object_get(o, "op");
	if (!json_is_integer(seq) || !json_is_integer(rec) || !json_is_integer(t) ||
	    !json_is_string(op)) {
		json_decref(o);
		return -EPROTO;
	}
	printf("%" JSON_INTEGER_FORMAT ".%" JSON_INTEGER_FORMAT " ", json_integer_value(seq),
	       json_integer_value(rec));
	json_int_t ns = json_integer_value(t);
	time_t sec = (time_t)(ns / 1000000000);
	struct tm tm;
	if (ns > 0 && gmtime_r(&sec, &tm)) {
		char when[32];
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
		printf("%s.%03dZ", when, (int)(ns / 1000000 % 1000));
	} else {
		putchar('-');
	}
	printf(" %s", json_string_value(op));
	const char *key;
	json_t *v;
	json_object_foreach(o, key, v) {
		if (!strcmp(key, "seq") || !strcmp(key, "rec") || !strcmp(key, "time_ns") ||
		    !strcmp(key, "op"))
			continue;
		printf(" %s=", key);
		if (json_is_string(v))
			put_bytes(json_string_value(v));
		else if (!strcmp(key, "mode"))
			printf("0%llo", (unsigned long long)json_integer_value(v));
		else if (!strcmp(key, "type"))
			fputs(type_name(json_integer_value(v)), stdout);
		else if (json_is_integer(v))
			printf("%" JSON_INTEGER_FORMAT, json_integer_value(v));
	}
	putchar('\n');
	json_decref(o);
	return 0;
}

/* Print the lines of one reply. 0 or -EPROTO. */
static int print_lines(char *text, bool json)
{
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (json)
			puts(line);
		else if (print_text(line) < 0)
			return -EPROTO;
	}
	return 0;
}

static int log_usage(const char *prog, const char *msg)
{
	fprintf(stderr, "%s: log: %s\nUsage: %s log [--follow] [--since SEQ] [--json]\n", prog, msg,
	        prog);
	return 2;
}

int log_main(mc_client *c, int argc, char **argv, bool json, const char *prog)
{
	static const struct option opts[] = {
		{ "follow", no_argument, NULL, 'f' },
		{ "since", required_argument, NULL, 'S' },
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	struct mc_log_pos pos = { 0, 0 };
	bool follow = false, told = false;
	int opt;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "+f", opts, NULL)) != -1) {
		char *end;
		switch (opt) {
		case 'f':
			follow = true;
			break;
		case 'j':
			json = true;
			break;
		case 'S':
			errno = 0;
			pos.seq = strtoull(optarg, &end, 10);
			if (errno || end == optarg || *end || optarg[0] == '-')
				return log_usage(prog, "--since takes a batch number");
			break;
		default:
			return log_usage(prog, "unknown option or missing argument");
		}
	}
	if (optind < argc)
		return log_usage(prog, "unexpected argument");
	for (;;) {
		uint64_t asked = pos.seq, first = 0;
		int eof = 0;
		char *text = mc_log_read(c, &pos, 0, &first, &eof);
		if (!text) {
			fprintf(stderr, "%s: log: %s\n", prog, strerror(errno));
			return 1;
		}
		if (!told && asked && first > asked) {
			fprintf(stderr, "%s: log: batches %" PRIu64 " to %" PRIu64
			        " were dropped by retention\n", prog, asked, first - 1);
		}
		told = true;
		int rc = print_lines(text, json);
		free(text);
		if (rc < 0) {
			fprintf(stderr, "%s: log: the server sent a record that is not one\n", prog);
			return 1;
		}
		if (fflush(stdout) != 0 || ferror(stdout))
			return 1;
		if (eof && !follow)
			return 0;
		if (eof)
			nanosleep(&(struct timespec){ 0, LOG_POLL_MS * 1000000L }, NULL);
	}
}

static json_int_t get_int(json_t *doc, const char *path)
{
	char buf[128];
	snprintf(buf, sizeof(buf), "%s", path);
	json_t *o = doc;
	for (char *save = NULL, *k = strtok_r(buf, ".", &save); k && o; k = strtok_r(NULL, ".", &save))
		o = json_object_get(o, k);
	return json_is_integer(o) ? json_integer_value(o) : -1;
}

static void hist_row(json_t *doc, const char *label, const char *path)
{
	char p[128];
	static const char *const cols[] = { "count", "p50", "p99", "max", "sum" };
	printf("%-14s", label);
	for (unsigned i = 0; i < 5; i++) {
		snprintf(p, sizeof(p), "%s.%s", path, cols[i]);
		printf(" %12" JSON_INTEGER_FORMAT, get_int(doc, p));
	}
	putchar('\n');
}

int commits_print(mc_client *c)
{
	char *s = mc_server_stats(c);
	if (!s)
		return -errno;
	json_error_t jerr;
	json_t *doc = json_loads(s, 0, &jerr);
	free(s);
	if (!doc || get_int(doc, "commits.count") < 0 ||
	    get_int(doc, "commits.phase_us.swap.count") < 0) {
		json_decref(doc);
		return -EPROTO;
	}
	printf("commits %" JSON_INTEGER_FORMAT "  records %" JSON_INTEGER_FORMAT
	       "  failures %" JSON_INTEGER_FORMAT "  turns %" JSON_INTEGER_FORMAT "\n",
	       get_int(doc, "commits.count"), get_int(doc, "commits.records"),
	       get_int(doc, "commits.failures"), get_int(doc, "commits.turns"));
	printf("%-14s %12s %12s %12s %12s %12s\n", "PHASE (us)", "COUNT", "P50", "P99", "MAX",
	       "TOTAL");
	static const char *const phases[][2] = {
		{ "settle", "commits.phase_us.settle" }, { "swap", "commits.phase_us.swap" }, { "log append", "commits.phase_us.log" },
		{ "table apply", "commits.phase_us.apply" },
		{ "lmdb commit", "commits.phase_us.sync" },
		{ "publish", "commits.phase_us.publish" }, { "wake", "commits.phase_us.wake" },
		{ "whole commit", "commits.latency_us" }, { "blocked", "commits.blocked_us" },
		{ "lag", "commits.lag_us" },
	};
	for (size_t i = 0; i < sizeof(phases) / sizeof(phases[0]); i++)
		hist_row(doc, phases[i][0], phases[i][1]);
	hist_row(doc, "batch records", "commits.batch_records");
	printf("journal: %" JSON_INTEGER_FORMAT " records, %" JSON_INTEGER_FORMAT
	       " bytes uncommitted; oldest change %" JSON_INTEGER_FORMAT " us; full waits %"
	       JSON_INTEGER_FORMAT " (%" JSON_INTEGER_FORMAT " us), refusals %" JSON_INTEGER_FORMAT
	       "\n",
	       get_int(doc, "journal.backlog_records"), get_int(doc, "journal.backlog_bytes"),
	       get_int(doc, "commits.current_lag_us"), get_int(doc, "journal.full_waits"),
	       get_int(doc, "journal.full_wait_us"), get_int(doc, "journal.full_refusals"));
	printf("log: %" JSON_INTEGER_FORMAT " batches, %" JSON_INTEGER_FORMAT " bytes, %"
	       JSON_INTEGER_FORMAT " trimmed\n", get_int(doc, "store.log_entries"),
	       get_int(doc, "store.log_bytes"), get_int(doc, "store.log_trimmed"));
	json_decref(doc);
	return 0;
}
