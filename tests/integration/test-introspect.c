/* test-introspect.c - the server's introspection against a real mcached:
 * mc_server_clients (connected clients: pid, uid, requests, age),
 * mc_server_slowlog (threshold, length, order, truncation, SIGHUP), and
 * mcachectl clients, slowlog and stats --watch on top of them. */
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "harness.h"
#include "mcache.h"

static struct mc_server srv;

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* A server with the extra arguments, for one test. */
static void start(const char *const *args)
{
	memset(&srv, 0, sizeof(srv));
	assert_int_equal(server_start(&srv, args), 0);
}

static int teardown(void **state)
{
	(void)state;
	return server_finish(&srv);
}

/* Parse text (freed here) as a JSON array. */
static json_t *array_of(char *text)
{
	assert_non_null(text);
	json_error_t jerr;
	json_t *a = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	if (!a)
		fail_msg("not JSON (%s): %s", jerr.text, text);
	free(text);
	assert_true(json_is_array(a));
	return a;
}

static json_int_t ival(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_integer(v))
		fail_msg("no integer \"%s\"", key);
	return json_integer_value(v);
}

static const char *sval(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_string(v))
		fail_msg("no string \"%s\"", key);
	return json_string_value(v);
}

/* ---- clients ------------------------------------------------------------ */

static void test_clients(void **state)
{
	(void)state;
	start(NULL);
	mc_client *a = harness_client(&srv);
	mc_client *b = harness_client(&srv);
	char p[32];

	for (int i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "/b%d", i);
		assert_int_equal(mc_mkdir(b, p, 0755), 0);
	}
	json_t *l = array_of(mc_server_clients(a));
	assert_int_equal(json_array_size(l), 2);
	double now = (double)time(NULL);
	for (size_t i = 0; i < 2; i++) {
		json_t *o = json_array_get(l, i);
		assert_int_equal(ival(o, "pid"), getpid());
		assert_int_equal(ival(o, "uid"), getuid());
		assert_int_equal(ival(o, "gid"), getgid());
		double since = json_number_value(json_object_get(o, "connected"));
		double age = json_number_value(json_object_get(o, "age_seconds"));
		assert_true(since > now - 60 && since < now + 2);
		assert_true(age >= 0 && age < 60);
	}
	/* Oldest first: a, counting this request, then b with its mkdirs. */
	json_int_t ra = ival(json_array_get(l, 0), "requests");
	json_int_t rb = ival(json_array_get(l, 1), "requests");
	assert_true(ra >= 1);
	assert_true(rb >= 3);
	json_decref(l);

	/* Two more requests from b, one from a: counted exactly. */
	assert_int_equal(mc_mkdir(b, "/b3", 0755), 0);
	assert_int_equal(mc_mkdir(b, "/b4", 0755), 0);
	l = array_of(mc_server_clients(a));
	assert_int_equal(ival(json_array_get(l, 0), "requests"), ra + 1);
	assert_int_equal(ival(json_array_get(l, 1), "requests"), rb + 2);
	json_decref(l);

	/* A closed connection leaves the list (the server sees EOF soon). */
	mc_disconnect(b);
	size_t n = 0;
	for (int i = 0; i < 200; i++) {
		l = array_of(mc_server_clients(a));
		n = json_array_size(l);
		json_decref(l);
		if (n == 1)
			break;
		sleep_ms(10);
	}
	assert_int_equal(n, 1);
	mc_disconnect(a);
}

/* ---- slowlog ------------------------------------------------------------ */

static void test_slowlog_every_op(void **state)
{
	(void)state;
	const char *args[] = { "--slowlog-threshold-ms", "0", "--slowlog-max-len", "4", NULL };
	start(args);
	mc_client *c = harness_client(&srv);
	char p[32];

	for (int i = 1; i <= 6; i++) {
		snprintf(p, sizeof(p), "/s%d", i);
		assert_int_equal(mc_mkdir(c, p, 0755), 0);
	}
	/* Threshold 0 logs every op; the log keeps the newest 4, newest first. */
	json_t *l = array_of(mc_server_slowlog(c, 0));
	assert_int_equal(json_array_size(l), 4);
	json_int_t id0 = ival(json_array_get(l, 0), "id");
	for (size_t i = 0; i < 4; i++) {
		json_t *o = json_array_get(l, i);
		snprintf(p, sizeof(p), "/s%zu", 6 - i);
		assert_string_equal(sval(o, "op"), "mkdir");
		assert_string_equal(sval(o, "path"), p);
		assert_int_equal(ival(o, "id"), id0 - (json_int_t)i);
		assert_int_equal(ival(o, "pid"), getpid());
		assert_int_equal(ival(o, "uid"), getuid());
		assert_true(json_is_false(json_object_get(o, "path_truncated")));
		double d = json_number_value(json_object_get(o, "duration_seconds"));
		assert_true(d >= 0 && d < 10);
		double t = json_number_value(json_object_get(o, "time"));
		assert_true(t > (double)time(NULL) - 60 && t < (double)time(NULL) + 2);
	}
	json_decref(l);

	/* N limits the answer; the previous slowlog call is now the newest. */
	l = array_of(mc_server_slowlog(c, 2));
	assert_int_equal(json_array_size(l), 2);
	assert_string_equal(sval(json_array_get(l, 0), "op"), "slowlog");
	assert_int_equal(ival(json_array_get(l, 0), "id"), id0 + 1);
	assert_string_equal(sval(json_array_get(l, 1), "path"), "/s6");
	json_decref(l);

	/* A long path is cut at 128 bytes and marked. */
	char longp[220];
	memset(longp, 'x', sizeof(longp) - 1);
	longp[0] = '/';
	longp[sizeof(longp) - 1] = '\0';
	assert_int_equal(mc_mkdir(c, longp, 0755), 0);
	l = array_of(mc_server_slowlog(c, 1));
	json_t *o = json_array_get(l, 0);
	assert_int_equal(strlen(sval(o, "path")), 128);
	assert_memory_equal(sval(o, "path"), longp, 128);
	assert_true(json_is_true(json_object_get(o, "path_truncated")));
	json_decref(l);
	mc_disconnect(c);
}

static bool log_has(const char *needle, unsigned wait_ms)
{
	for (unsigned t = 0;; t += 20) {
		FILE *f = fopen(srv.log, "r");
		char line[1024];
		bool found = false;
		while (f && !found && fgets(line, sizeof(line), f))
			found = strstr(line, needle) != NULL;
		if (f)
			fclose(f);
		if (found || t >= wait_ms)
			return found;
		sleep_ms(20);
	}
}

static void test_slowlog_threshold_and_sighup(void **state)
{
	(void)state;
	char conf[] = "/tmp/mcache-slowlog-XXXXXX";
	int fd = mkstemp(conf);
	assert_true(fd >= 0);
	const char *c1 = "slowlog-threshold-ms = 600000\n";
	assert_int_equal(write(fd, c1, strlen(c1)), (ssize_t)strlen(c1));
	close(fd);
	const char *args[] = { "-c", conf, NULL };
	start(args);
	mc_client *c = harness_client(&srv);

	/* Nothing takes ten minutes: the log stays empty. */
	assert_int_equal(mc_mkdir(c, "/fast", 0755), 0);
	json_t *l = array_of(mc_server_slowlog(c, 0));
	assert_int_equal(json_array_size(l), 0);
	json_decref(l);

	/* SIGHUP takes a new threshold (0: everything) and length. */
	FILE *f = fopen(conf, "w");
	assert_non_null(f);
	fputs("slowlog-threshold-ms = 0\nslowlog-max-len = 3\n", f);
	fclose(f);
	assert_int_equal(kill(srv.pid, SIGHUP), 0);
	if (!log_has("slow log 0 ms, 3 entries", 5000))
		fail_msg("no reload in the log (%s)", srv.log);
	assert_int_equal(mc_mkdir(c, "/after", 0755), 0);
	l = array_of(mc_server_slowlog(c, 0));
	assert_true(json_array_size(l) >= 1);
	assert_string_equal(sval(json_array_get(l, 0), "path"), "/after");
	json_decref(l);
	mc_disconnect(c);
	unlink(conf);
}

/* ---- mcachectl ---------------------------------------------------------- */

/* mcachectl ARGS against the server (harness_ctl). */
#define ctl(out, size, ...) harness_ctl(&srv, out, size, __VA_ARGS__)

static unsigned count_lines(const char *s)
{
	unsigned n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void test_mcachectl(void **state)
{
	(void)state;
	const char *args[] = { "--slowlog-threshold-ms", "0", NULL };
	start(args);
	mc_client *c = harness_client(&srv);
	assert_int_equal(mc_mkdir(c, "/ctl", 0755), 0);
	static char out[65536];

	/* clients: a header, this test's connection and mcachectl's own. */
	assert_int_equal(ctl(out, sizeof(out), "clients"), 0);
	assert_int_equal(count_lines(out), 3);
	assert_true(strncmp(out, "PID ", 4) == 0);
	char mine[32];
	snprintf(mine, sizeof(mine), "\n%-8d ", (int)getpid());
	assert_non_null(strstr(out, mine));

	assert_int_equal(ctl(out, sizeof(out), "--json clients"), 0);
	json_t *l = array_of(strdup(out));
	assert_int_equal(json_array_size(l), 2);
	assert_int_equal(ival(json_array_get(l, 0), "pid"), getpid());
	json_decref(l);

	/* slowlog N: a header and N entries; the mkdir among them. */
	assert_int_equal(mc_mkdir(c, "/ctl/slow", 0755), 0);
	assert_int_equal(ctl(out, sizeof(out), "slowlog 1"), 0);
	assert_int_equal(count_lines(out), 2);
	assert_non_null(strstr(out, " mkdir "));
	assert_non_null(strstr(out, "/ctl/slow\n"));
	assert_int_equal(ctl(out, sizeof(out), "--json slowlog 3"), 0);
	l = array_of(strdup(out));
	assert_int_equal(json_array_size(l), 3);
	json_decref(l);

	/* Usage errors: exit 2 before connecting. */
	assert_int_equal(ctl(out, sizeof(out), "slowlog ten"), 2);
	assert_non_null(strstr(out, "invalid number of entries 'ten'"));
	assert_int_equal(ctl(out, sizeof(out), "slowlog 1 2"), 2);
	assert_int_equal(ctl(out, sizeof(out), "clients x"), 2);
	assert_int_equal(ctl(out, sizeof(out), "stats --watch 0"), 2);
	assert_int_equal(ctl(out, sizeof(out), "stats --count 2"), 2);
	assert_int_equal(ctl(out, sizeof(out), "stats --watch 1 --count -1"), 2);

	/* stats --watch: a header, then one line of ten columns per interval. */
	assert_int_equal(ctl(out, sizeof(out), "stats --watch 0.1 --count 2"), 0);
	assert_int_equal(count_lines(out), 3);
	assert_true(strncmp(out, "time ", 5) == 0);
	char *line2 = strchr(out, '\n') + 1;
	*strchr(line2, '\n') = '\0';
	unsigned cols = 0;
	for (char *t = strtok(line2, " "); t && cols < 11; t = strtok(NULL, " "))
		cols++;
	assert_int_equal(cols, 10);

	/* --json: a JSON object a line; each interval saw the watcher's own
	 * stats request and the cache's used bytes. */
	assert_int_equal(ctl(out, sizeof(out), "--json stats -w 0.1 -n 3"), 0);
	assert_int_equal(count_lines(out), 3);
	char *save = NULL;
	for (char *ln = strtok_r(out, "\n", &save); ln; ln = strtok_r(NULL, "\n", &save)) {
		json_error_t jerr;
		json_t *o = json_loads(ln, 0, &jerr);
		assert_non_null(o);
		assert_true(json_number_value(json_object_get(o, "requests_per_second")) > 0);
		assert_true(json_number_value(json_object_get(o, "cache_used_bytes")) > 0);
		assert_true(json_number_value(json_object_get(o, "connections")) >= 2);
		json_decref(o);
	}
	mc_disconnect(c);
}

static void test_watch_stops_on_sigint(void **state)
{
	(void)state;
	start(NULL);
	char outp[600];
	snprintf(outp, sizeof(outp), "%s/watch.out", srv.dir);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || dup2(fd, 1) < 0)
			_exit(126);
		execl(getenv("MCACHECTL"), "mcachectl", "-s", srv.socket, "stats", "--watch", "0.05",
		      (char *)NULL);
		_exit(127);
	}
	/* Interrupt it once it prints (a loaded machine may take a while). */
	static char buf[65536];
	size_t n = 0;
	for (int i = 0; i < 1000; i++) {
		FILE *f = fopen(outp, "r");
		n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
		buf[n] = '\0';
		if (f)
			fclose(f);
		if (count_lines(buf) >= 3)
			break;
		sleep_ms(10);
	}
	assert_int_equal(kill(pid, SIGINT), 0);
	int st = 0;
	pid_t w = 0;
	for (int i = 0; i < 200 && w == 0; i++) {
		w = waitpid(pid, &st, WNOHANG);
		if (w == 0)
			sleep_ms(10);
	}
	if (w == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		fail_msg("stats --watch still running 2 s after SIGINT");
	}
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	FILE *f = fopen(outp, "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	assert_true(count_lines(buf) >= 3);  /* the header and lines so far */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_clients, teardown),
		cmocka_unit_test_teardown(test_slowlog_every_op, teardown),
		cmocka_unit_test_teardown(test_slowlog_threshold_and_sighup, teardown),
		cmocka_unit_test_teardown(test_mcachectl, teardown),
		cmocka_unit_test_teardown(test_watch_stops_on_sigint, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
