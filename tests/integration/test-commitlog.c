/* test-commitlog.c - the commit pipeline of a real mcached, through the
 * public API: the commit log read back with mc_log_read is exactly what
 * was done (replayed, it gives the namespace; read in small pieces, the
 * same records); two clients of sustained mutations get at most about one
 * commit per --commit-interval-ms; a tiny --store-map-size grows instead of
 * failing, and what was synced survives a restart; --log-retention-bytes
 * bounds the log; a large batch reads back whole, in pieces and after a
 * crash. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "harness.h"
#include "mcache.h"

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int teardown(void **state)
{
	struct mc_server *s = *state;
	if (s) {
		int rc = server_finish(s);
		free(s);
		return rc;
	}
	return 0;
}

static struct mc_server *start(void **state, const char *const *args)
{
	struct mc_server *s = calloc(1, sizeof(*s));
	assert_non_null(s);
	*state = s;
	assert_int_equal(server_start(s, args), 0);
	return s;
}

/* ---- the log is what was done ----------------------------------------- */

#define MAXN 64
struct replay {
	/* dentries: (parent, name) -> ino, and inodes: ino -> mode, target */
	unsigned nd;
	struct { uint64_t parent, ino; char name[64]; } d[MAXN];
	unsigned ni;
	struct { uint64_t ino; unsigned mode; char target[64]; } i[MAXN];
	char puts[512], dels[512];   /* names put and deleted, in order, space-separated */
	uint64_t last_seq, last_rec, records;
};

static void replay_line(struct replay *r, const char *line)
{
	json_error_t err;
	json_t *o = json_loads(line, 0, &err);
	if (!o)
		fail_msg("not JSON: %s", line);
	const char *op = json_string_value(json_object_get(o, "op"));
	uint64_t seq = (uint64_t)json_integer_value(json_object_get(o, "seq"));
	uint64_t rec = (uint64_t)json_integer_value(json_object_get(o, "rec"));
	assert_non_null(op);
	/* In order, records of a batch numbered from 0 without holes. */
	if (r->records > 0) {
		assert_true(seq > r->last_seq || (seq == r->last_seq && rec == r->last_rec + 1));
		if (seq > r->last_seq)
			assert_int_equal(rec, 0);
	}
	assert_true(json_integer_value(json_object_get(o, "time_ns")) > 0);
	r->last_seq = seq;
	r->last_rec = rec;
	r->records++;
	uint64_t parent = (uint64_t)json_integer_value(json_object_get(o, "parent"));
	uint64_t ino = (uint64_t)json_integer_value(json_object_get(o, "ino"));
	const char *name = json_string_value(json_object_get(o, "name"));
	unsigned k;
	if (!strcmp(op, "dentry_put")) {
		for (k = 0; k < r->nd && !(r->d[k].parent == parent && !strcmp(r->d[k].name, name)); k++)
			;
		if (k == r->nd)
			assert_true(r->nd++ < MAXN);
		r->d[k].parent = parent;
		r->d[k].ino = ino;
		snprintf(r->d[k].name, sizeof(r->d[k].name), "%s", name);
		strcat(strcat(r->puts, name), " ");
	} else if (!strcmp(op, "dentry_del")) {
		for (k = 0; k < r->nd && !(r->d[k].parent == parent && !strcmp(r->d[k].name, name)); k++)
			;
		assert_true(k < r->nd);
		r->d[k] = r->d[--r->nd];
		strcat(strcat(r->dels, name), " ");
	} else if (!strcmp(op, "inode_put")) {
		for (k = 0; k < r->ni && r->i[k].ino != ino; k++)
			;
		if (k == r->ni)
			assert_true(r->ni++ < MAXN);
		r->i[k].ino = ino;
		r->i[k].mode = (unsigned)json_integer_value(json_object_get(o, "mode"));
		const char *t = json_string_value(json_object_get(o, "target"));
		snprintf(r->i[k].target, sizeof(r->i[k].target), "%s", t ? t : "");
	} else if (!strcmp(op, "inode_del")) {
		for (k = 0; k < r->ni && r->i[k].ino != ino; k++)
			;
		if (k < r->ni)
			r->i[k] = r->i[--r->ni];
	} else {
		fail_msg("unexpected record: %s", line);
	}
	json_decref(o);
}

/* Read the whole log with pieces of about max bytes into r. */
static void replay_log(mc_client *c, size_t max, struct replay *r)
{
	struct mc_log_pos pos = { 0, 0 };
	int eof = 0, reads = 0;
	memset(r, 0, sizeof(*r));
	while (!eof) {
		uint64_t first;
		char *text = mc_log_read(c, &pos, max, &first, &eof);
		assert_non_null(text);
		assert_int_equal(first, 1);
		char *save = NULL;
		for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
			replay_line(r, l);
		free(text);
		assert_true(++reads < 1000);
	}
	/* Caught up: the next read returns nothing and stays caught up. */
	int again = 0;
	char *text = mc_log_read(c, &pos, max, NULL, &again);
	assert_non_null(text);
	assert_string_equal(text, "");
	assert_int_equal(again, 1);
	free(text);
}

static uint64_t ino_of(mc_client *c, const char *path)
{
	struct stat st;
	assert_int_equal(mc_lstat(c, path, &st), 0);
	return st.st_ino;
}

static void test_log_is_what_was_done(void **state)
{
	const char *const args[] = { "--commit-interval-ms", "200", NULL };
	struct mc_server *s = start(state, args);
	mc_client *c = harness_client(s);
	assert_int_equal(mc_mkdir(c, "/d", 0755), 0);
	int fd = mc_creat(c, "/d/a", 0640);
	assert_true(fd >= 0);
	assert_int_equal(mc_close(c, fd), 0);
	assert_int_equal(mc_sync(c), 0);             /* a batch boundary */
	assert_int_equal(mc_rename(c, "/d/a", "/d/b"), 0);
	assert_int_equal(mc_symlink(c, "tgt \x01", "/d/l"), 0);
	assert_int_equal(mc_mkdir(c, "/d/gone", 0700), 0);
	assert_int_equal(mc_rmdir(c, "/d/gone"), 0);
	assert_int_equal(mc_chmod(c, "/d", 0700), 0);
	assert_int_equal(mc_sync(c), 0);

	struct replay whole, pieces;
	replay_log(c, 0, &whole);
	replay_log(c, 1, &pieces);                   /* one record a read */
	assert_int_equal(whole.records, pieces.records);
	assert_string_equal(whole.puts, pieces.puts);
	assert_string_equal(whole.dels, pieces.dels);
	assert_true(whole.last_seq >= 2);

	/* Names put and removed: exactly those of the operations above. */
	assert_string_equal(whole.puts, "d a b l gone ");
	assert_string_equal(whole.dels, "a gone ");
	/* Replayed, the log is the namespace. */
	assert_int_equal(whole.nd, 3);
	uint64_t d = ino_of(c, "/d"), b = ino_of(c, "/d/b"), l = ino_of(c, "/d/l");
	bool seen_d = false, seen_b = false, seen_l = false;
	for (unsigned k = 0; k < whole.nd; k++) {
		seen_d |= whole.d[k].parent == 1 && !strcmp(whole.d[k].name, "d") && whole.d[k].ino == d;
		seen_b |= whole.d[k].parent == d && !strcmp(whole.d[k].name, "b") && whole.d[k].ino == b;
		seen_l |= whole.d[k].parent == d && !strcmp(whole.d[k].name, "l") && whole.d[k].ino == l;
	}
	assert_true(seen_d && seen_b && seen_l);
	for (unsigned k = 0; k < whole.ni; k++) {
		if (whole.i[k].ino == d)
			assert_int_equal(whole.i[k].mode, S_IFDIR | 0700);
		if (whole.i[k].ino == b)
			assert_int_equal(whole.i[k].mode, S_IFREG | 0640);
		if (whole.i[k].ino == l)
			assert_string_equal(whole.i[k].target, "tgt \x01");
	}
	mc_disconnect(c);
}

/* ---- the interval holds under sustained load --------------------------- */

static uint64_t write_bytes(pid_t pid)
{
	char p[64], line[256];
	uint64_t v = 0;
	snprintf(p, sizeof(p), "/proc/%d/io", (int)pid);
	FILE *f = fopen(p, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "write_bytes: %lu", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* A client that creates and unlinks files in its own directory for ms
 * milliseconds, a small batch a round trip; exits with 0 and writes its
 * operation count to fd. */
static void churn_child(const struct mc_server *s, int id, long ms, int fd)
{
	mc_client *c = mc_connect(s->socket);
	char dir[32], p[64];
	uint64_t ops = 0;
	if (!c)
		_exit(2);
	snprintf(dir, sizeof(dir), "/c%d", id);
	if (mc_mkdir(c, dir, 0755) < 0)
		_exit(3);
	double end = now_ms() + (double)ms;
	for (unsigned i = 0; now_ms() < end; i++) {
		mc_batch *b = mc_batch_new(c);
		for (int k = 0; k < 8; k++) {
			snprintf(p, sizeof(p), "%s/f%u", dir, (i * 8 + (unsigned)k) % 256);
			if (i % 64 < 32)
				mc_batch_create(b, p, 0644);
			else
				mc_batch_unlink(b, p);
		}
		if (mc_batch_run(b) < 0)
			_exit(4);
		ops += mc_batch_count(b);
		mc_batch_free(b);
	}
	if (write(fd, &ops, sizeof(ops)) != sizeof(ops))
		_exit(5);
	mc_disconnect(c);
	_exit(0);
}

static void test_rate_holds_interval(void **state)
{
	enum { INTERVAL = 100, RUN_MS = 2000 };
	/* Retention past what the run commits: the log's bytes are then the
	 * record bytes committed. */
	const char *const args[] = { "--commit-interval-ms", "100", "--log-retention-bytes", "4G",
		                     NULL };
	struct mc_server *s = start(state, args);
	mc_client *c = harness_client(s);
	int pfd[2];
	assert_int_equal(pipe(pfd), 0);
	uint64_t c0 = harness_stat_u64(c, "commits", "count");
	uint64_t r0 = harness_stat_u64(c, "commits", "records");
	uint64_t b0 = harness_stat_u64(c, "store", "log_bytes");
	uint64_t w0 = write_bytes(s->pid);
	double t0 = now_ms();
	pid_t kids[2];
	for (int i = 0; i < 2; i++) {
		kids[i] = fork();
		assert_true(kids[i] >= 0);
		if (kids[i] == 0)
			churn_child(s, i, RUN_MS, pfd[1]);
	}
	uint64_t ops = 0;
	for (int i = 0; i < 2; i++) {
		int st;
		uint64_t n;
		assert_int_equal(waitpid(kids[i], &st, 0), kids[i]);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		assert_int_equal(read(pfd[0], &n, sizeof(n)), sizeof(n));
		ops += n;
	}
	double ms = now_ms() - t0;
	/* The tables are brought up to date every 32 commits, or once the
	 * committer has been idle a while when a commit was waited for: let
	 * the server go quiet (nothing written for 200 ms), so that their
	 * writes count too. */
	assert_int_equal(mc_sync(c), 0);
	uint64_t quiet = write_bytes(s->pid);
	for (int i = 0, still = 0; i < 100 && still < 4; i++) {
		usleep(50 * 1000);
		uint64_t now = write_bytes(s->pid);
		still = now == quiet ? still + 1 : 0;
		quiet = now;
	}
	uint64_t commits = harness_stat_u64(c, "commits", "count") - c0;
	uint64_t recs = harness_stat_u64(c, "commits", "records") - r0;
	uint64_t written = write_bytes(s->pid) - w0;
	uint64_t rbytes = harness_stat_u64(c, "store", "log_bytes") - b0;
	double bound = ms / INTERVAL;
	print_message("# %llu ops, %llu records (%llu bytes) in %.0f ms: %llu commits (%.1f/s, "
	              "interval bound %.1f/s); %llu bytes written, %.0f per op, %.2fx the "
	              "records\n",
	              (unsigned long long)ops, (unsigned long long)recs,
	              (unsigned long long)rbytes, ms, (unsigned long long)commits,
	              (double)commits * 1e3 / ms, 1e3 / INTERVAL, (unsigned long long)written,
	              ops ? (double)written / (double)ops : 0.0,
	              rbytes ? (double)written / (double)rbytes : 0.0);
	assert_true(ops > 100);
	assert_true(commits >= 2);
	/* At most one commit an interval while the journal stays under its
	 * bound (it does: at most a few 100,000 records an interval here),
	 * with 20% for the timer's slack and one for the run's edges; load
	 * makes commits fewer, not more. */
	assert_true((double)commits <= 1.2 * bound + 1);
	/* What reaches the disk is the records, not pages rewritten at every
	 * operation: at most 4x their bytes (the tables' own copy, LMDB's
	 * pages, the room written ahead), plus what each commit rewrites
	 * whatever its size (the meta page, the trees' paths, the tables'
	 * pages of the churned names; 32 pages allowed). That part matters
	 * only when the run is slow and its commits small (a sanitizer's build
	 * beside other tests: 1.7 MB of records and 8 MB written in 20
	 * commits); writing an operation's pages at every operation, as a
	 * commit an operation would, is 10 KB an operation and fails. */
	assert_true(rbytes > 0);
	assert_true(written <= 4 * rbytes + commits * 32 * 4096);
	close(pfd[0]);
	close(pfd[1]);
	mc_disconnect(c);
}

/* ---- a tiny map grows ------------------------------------------------- */

static void test_tiny_map_grows(void **state)
{
	const char *const args[] = { "--store-map-size", "1M", NULL };
	struct mc_server *s = start(state, args);
	mc_client *c = harness_client(s);
	assert_int_equal(harness_stat_u64(c, "store", "map_bytes"), 1 << 20);
	char p[300], name[200];
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	enum { N = 6000 };
	for (int i = 0; i < N; i += 500) {
		mc_batch *b = mc_batch_new(c);
		for (int k = i; k < i + 500; k++) {
			snprintf(p, sizeof(p), "/%s%d", name, k);
			mc_batch_create(b, p, 0644);
		}
		assert_int_equal(mc_batch_run(b), 0);
		for (size_t k = 0; k < mc_batch_count(b); k++)
			assert_int_equal(mc_batch_error(b, k), 0);
		mc_batch_free(b);
	}
	assert_int_equal(mc_sync(c), 0);
	assert_true(harness_stat_u64(c, "store", "map_bytes") > 1 << 20);
	assert_int_equal(harness_stat_u64(c, "commits", "failures"), 0);
	mc_disconnect(c);
	assert_int_equal(server_stop(s, SIGTERM), 0);
	assert_int_equal(server_start(s, args), 0);
	c = harness_client(s);
	struct stat st;
	for (int k = 0; k < N; k += 997) {
		snprintf(p, sizeof(p), "/%s%d", name, k);
		assert_int_equal(mc_stat(c, p, &st), 0);
	}
	mc_disconnect(c);
}

/* ---- a large batch, stored in many chunks ----------------------------- */

/* The whole log from the start as text, read in pieces of about max. */
static char *log_text(mc_client *c, size_t max)
{
	struct mc_log_pos pos = { 0, 0 };
	size_t len = 0, cap = 4096;
	char *all = calloc(1, cap);
	int eof = 0;
	assert_non_null(all);
	while (!eof) {
		char *text = mc_log_read(c, &pos, max, NULL, &eof);
		assert_non_null(text);
		size_t n = strlen(text);
		while (len + n + 1 > cap)
			cap *= 2;
		all = realloc(all, cap);
		assert_non_null(all);
		memcpy(all + len, text, n + 1);
		len += n;
		free(text);
	}
	return all;
}

/* 3000 creates of long names committed together (a batch of hundreds of
 * KB, stored as many chunks): the log reads back every create once, the
 * same whole or in pieces of 8 KB (a few dozen records: positions inside
 * the batch; each read gathers the batch again, so pieces of one record
 * take minutes under a sanitizer), and the same after a kill -9 and the
 * replay at the next start. */
static void test_big_batch_log(void **state)
{
	const char *const args[] = { "--commit-interval-ms", "500", NULL };
	struct mc_server *s = start(state, args);
	mc_client *c = harness_client(s);
	enum { N = 3000 };
	char p[300], name[120];
	memset(name, 'x', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	mc_batch *b = mc_batch_new(c);
	for (int k = 0; k < N; k++) {
		snprintf(p, sizeof(p), "/%s%05d", name, k);
		mc_batch_create(b, p, 0644);
	}
	assert_int_equal(mc_batch_run(b), 0);
	for (size_t k = 0; k < mc_batch_count(b); k++)
		assert_int_equal(mc_batch_error(b, k), 0);
	mc_batch_free(b);
	assert_int_equal(mc_sync(c), 0);
	uint64_t bytes = harness_stat_u64(c, "store", "log_bytes");
	uint64_t batches = harness_stat_u64(c, "store", "log_entries");
	print_message("# log: %llu bytes in %llu batches\n", (unsigned long long)bytes,
	              (unsigned long long)batches);
	assert_true(bytes > 300000);
	assert_true(bytes / batches > 4 * 65536);        /* batches of several chunks */

	char *whole = log_text(c, 0), *pieces = log_text(c, 8192);
	assert_string_equal(whole, pieces);
	/* One pass over the log: each create's name, counted by its number. */
	char want[200];
	snprintf(want, sizeof(want), "\"op\":\"dentry_put\",\"parent\":1,\"name\":\"%s", name);
	static unsigned seen[N];
	memset(seen, 0, sizeof(seen));
	size_t wl = strlen(want);
	for (const char *at = strstr(whole, want); at; at = strstr(at + wl, want)) {
		char *end;
		long k = strtol(at + wl, &end, 10);
		assert_true(end == at + wl + 5 && *end == '"' && k >= 0 && k < N);
		seen[k]++;
	}
	for (int k = 0; k < N; k++)
		if (seen[k] != 1)
			fail_msg("create %d: %u times in the log", k, seen[k]);
	free(pieces);
	mc_disconnect(c);
	server_stop(s, SIGKILL);                      /* a crash: the status says so */
	assert_int_equal(server_start(s, args), 0);
	c = harness_client(s);
	char *again = log_text(c, 0);
	assert_string_equal(again, whole);
	struct stat st;
	snprintf(p, sizeof(p), "/%s%05d", name, N - 1);
	assert_int_equal(mc_stat(c, p, &st), 0);
	free(again);
	free(whole);
	mc_disconnect(c);
}

/* ---- retention through the option ------------------------------------ */

/* The log read from its start once batches were trimmed: it begins past
 * the first batch. */
static char *log_after_trim(mc_client *c)
{
	struct mc_log_pos pos = { 1, 0 };
	uint64_t first = 0;
	int eof = 0;
	char *text = mc_log_read(c, &pos, 0, &first, &eof);
	assert_non_null(text);
	assert_true(first > 1);
	return text;
}

/* With --log-retention-bytes 64K, create/unlink churn over many commits
 * keeps the log at its bound and data.mdb small; the log starts after the
 * batches dropped, and what it still has reads back. */
static void test_retention_option(void **state)
{
	const char *const args[] = { "--log-retention-bytes", "64K", "--commit-interval-ms", "1",
	                             NULL };
	struct mc_server *s = start(state, args);
	mc_client *c = harness_client(s);
	char p[64];
	for (int round = 0; round < 300; round++) {
		mc_batch *b = mc_batch_new(c);
		for (int k = 0; k < 16; k++) {
			snprintf(p, sizeof(p), "/churn-%02d", k);
			if (round % 2 == 0)
				mc_batch_create(b, p, 0644);
			else
				mc_batch_unlink(b, p);
		}
		assert_int_equal(mc_batch_run(b), 0);
		for (size_t k = 0; k < mc_batch_count(b); k++)
			assert_int_equal(mc_batch_error(b, k), 0);
		mc_batch_free(b);
		assert_int_equal(mc_sync(c), 0);        /* one commit a round */
	}
	uint64_t bytes = harness_stat_u64(c, "store", "log_bytes");
	uint64_t kept = harness_stat_u64(c, "store", "log_entries");
	uint64_t trimmed = harness_stat_u64(c, "store", "log_trimmed");
	print_message("# log: %llu bytes in %llu batches, %llu trimmed\n", (unsigned long long)bytes,
	              (unsigned long long)kept, (unsigned long long)trimmed);
	assert_true(bytes <= (64 << 10) + 8192);
	assert_true(trimmed > 0);
	assert_true(kept + trimmed >= 300);
	char *text = log_after_trim(c);
	assert_true(strstr(text, "\"name\":\"churn-") != NULL);
	free(text);
	char db[600];
	struct stat st;
	snprintf(db, sizeof(db), "%s/data.mdb", s->data);
	assert_int_equal(stat(db, &st), 0);
	assert_true(st.st_size < 4 << 20);
	mc_disconnect(c);
}

/* --log-retention-age on an idle server: no commit runs once the
 * changes stop, and the committer trims the batches that came of age all
 * the same (a 100th of the bound later, 1 s at least), keeping the last;
 * the log still reads back from where it starts. Before the age, nothing
 * is dropped. */
static void test_retention_age_idle(void **state)
{
	const char *const args[] = { "--log-retention-age", "1", NULL };
	struct mc_server *s = start(state, args);
	mc_client *c = harness_client(s);
	char p[64];
	for (int i = 0; i < 5; i++) {
		snprintf(p, sizeof(p), "/aged-%d", i);
		assert_int_equal(mc_mkdir(c, p, 0755), 0);
		assert_int_equal(mc_sync(c), 0);    /* a batch each */
	}
	uint64_t kept = harness_stat_u64(c, "store", "log_entries");
	uint64_t commits = harness_stat_u64(c, "commits", "count");
	assert_true(kept >= 5);
	assert_int_equal(harness_stat_u64(c, "store", "log_trimmed"), 0);
	uint64_t trims = 0;
	for (int i = 0; i < 800 && trims < kept - 1; i++) { /* the age and the slack: 2 s */
		struct timespec ts = { 0, 10 * 1000000L };
		nanosleep(&ts, NULL);
		trims = harness_stat_u64(c, "commits", "idle_trims");
	}
	print_message("# %llu batches, %llu aged out idle\n", (unsigned long long)kept,
	              (unsigned long long)trims);
	assert_int_equal(trims, kept - 1);
	assert_int_equal(harness_stat_u64(c, "store", "log_entries"), 1);
	assert_int_equal(harness_stat_u64(c, "store", "log_trimmed"), kept - 1);
	assert_int_equal(harness_stat_u64(c, "commits", "count"), commits); /* no commit ran */
	char *text = log_after_trim(c);
	assert_true(strstr(text, "aged-4") != NULL);
	assert_null(strstr(text, "aged-3"));
	free(text);
	struct stat st;
	assert_int_equal(mc_stat(c, "/aged-0", &st), 0); /* the namespace keeps them */
	mc_disconnect(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_log_is_what_was_done, teardown),
		cmocka_unit_test_teardown(test_rate_holds_interval, teardown),
		cmocka_unit_test_teardown(test_tiny_map_grows, teardown),
		cmocka_unit_test_teardown(test_retention_option, teardown),
		cmocka_unit_test_teardown(test_retention_age_idle, teardown),
		cmocka_unit_test_teardown(test_big_batch_log, teardown),
	};
	return cmocka_run_group_tests_name("commitlog", tests, NULL, NULL);
}
