/* test-config.c - defaults, every option, sizes, range errors, the config
 * file (comments, overrides, line-numbered errors), --help and --version. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "log.h"
#include "mc_config.h"

#define MAXARG 64

/* One parse: argv from a NULL-terminated list, output and errors captured. */
struct run {
	struct mcd_config c;
	int rc;
	char *out;
	char *err;
};

static void run_v(struct run *r, const char *const *args)
{
	char *argv[MAXARG];
	int argc = 0;
	argv[argc++] = strdup("mcached");
	for (; *args; args++) {
		assert_true(argc < MAXARG - 1);
		argv[argc++] = strdup(*args);
	}
	argv[argc] = NULL;
	size_t on = 0, en = 0;
	FILE *out = open_memstream(&r->out, &on);
	FILE *err = open_memstream(&r->err, &en);
	assert_non_null(out);
	assert_non_null(err);
	config_defaults(&r->c);
	r->rc = config_parse(&r->c, argc, argv, out, err);
	fclose(out);
	fclose(err);
	for (int i = 0; i < argc; i++)
		free(argv[i]);
}

#define RUN(r, ...) run_v((r), (const char *const[]){ __VA_ARGS__, NULL })

static void run_done(struct run *r)
{
	config_free(&r->c);
	free(r->out);
	free(r->err);
}

static char *write_file(const char *text)
{
	char tmpl[] = "/tmp/test-config-XXXXXX";
	int fd = mkstemp(tmpl);
	assert_true(fd >= 0);
	size_t n = strlen(text);
	assert_int_equal(write(fd, text, n), (ssize_t)n);
	close(fd);
	return strdup(tmpl);
}

/* ---- cases --------------------------------------------------------------- */

static void t_defaults(void **state)
{
	struct run r;
	unsetenv("MCACHE_SOCKET");
	run_v(&r, (const char *const[]){ NULL });
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.err, "");
	assert_string_equal(r.c.socket_path, MC_DEFAULT_SOCKET);
	assert_string_equal(r.c.data_dir, "./var/data");
	char *admin;
	assert_true(asprintf(&admin, "unix:%.*s/admin.sock",
	                     (int)(strrchr(MC_DEFAULT_SOCKET, '/') - MC_DEFAULT_SOCKET),
	                     MC_DEFAULT_SOCKET) > 0);
	assert_string_equal(r.c.admin_addr, admin);
	free(admin);
	assert_false(r.c.admin_remote);
	assert_int_equal(r.c.cache_size, 256u << 20);
	assert_int_equal(r.c.workers, 2);
	assert_int_equal(r.c.commit_interval_ms, 5);
	assert_false(r.c.sync);
	assert_int_equal(r.c.max_conns, 1024);
	assert_int_equal(r.c.idle_timeout_s, 0);
	assert_int_equal(r.c.max_frame, 16u << 20);
	assert_int_equal(r.c.map_size, 256u << 20);
	assert_int_equal(r.c.log_retention, 0);
	assert_int_equal(r.c.log_retention_bytes, 64ull << 20);
	assert_int_equal(r.c.log_retention_age_s, 86400);
	assert_int_equal(r.c.log_level, LOG_LVL_INFO);
	assert_int_equal(r.c.root_mode, 0755);
	assert_int_equal(r.c.journal_max_records, 1000000);
	assert_int_equal(r.c.journal_max_bytes, 256u << 20);
	assert_int_equal(r.c.journal_wait_ms, 1000);
	assert_int_equal(r.c.shutdown_timeout_s, 10);
	assert_int_equal(r.c.max_ops, 4096);
	assert_int_equal(r.c.max_reply, 4u << 20);
	assert_int_equal(r.c.hello_timeout_s, 10);
	assert_int_equal(r.c.frame_timeout_s, 30);
	assert_int_equal(r.c.max_prehello, 64);
	assert_int_equal(r.c.conn_output_max, 4u << 20);
	assert_int_equal(r.c.output_max, 256u << 20);
	run_done(&r);
}

static void t_every_option(void **state)
{
	struct run r;
	RUN(&r, "--socket", "/tmp/mc/s.sock", "--data=/tmp/mc/data", "--admin", "127.0.0.1:0",
	    "--admin-allow-remote", "--cache-size", "1G", "--workers", "8",
	    "--commit-interval-ms", "0", "--sync", "--max-connections", "10", "--idle-timeout", "30",
	    "--max-frame", "64K", "--store-map-size", "2G", "--log-retention", "5",
	    "--log-level", "debug", "--root-mode", "0700", "--journal-max-records", "500",
	    "--journal-max-bytes", "1M", "--journal-wait-ms", "0", "--shutdown-timeout", "2",
	    "--max-ops", "100", "--max-reply", "1M",
	    "--hello-timeout", "2", "--frame-timeout", "3", "--max-prehello", "5",
	    "--conn-output-max", "1M", "--output-max", "2G");
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.err, "");
	assert_string_equal(r.c.socket_path, "/tmp/mc/s.sock");
	assert_string_equal(r.c.data_dir, "/tmp/mc/data");
	assert_string_equal(r.c.admin_addr, "127.0.0.1:0");
	assert_true(r.c.admin_remote);
	assert_int_equal(r.c.cache_size, 1ull << 30);
	assert_int_equal(r.c.workers, 8);
	assert_int_equal(r.c.commit_interval_ms, 0);
	assert_true(r.c.sync);
	assert_int_equal(r.c.max_conns, 10);
	assert_int_equal(r.c.idle_timeout_s, 30);
	assert_int_equal(r.c.max_frame, 64u << 10);
	assert_int_equal(r.c.map_size, 2ull << 30);
	assert_int_equal(r.c.log_retention, 5);
	assert_int_equal(r.c.log_level, LOG_LVL_DEBUG);
	assert_int_equal(r.c.root_mode, 0700);
	assert_int_equal(r.c.journal_max_records, 500);
	assert_int_equal(r.c.journal_max_bytes, 1u << 20);
	assert_int_equal(r.c.journal_wait_ms, 0);
	assert_int_equal(r.c.shutdown_timeout_s, 2);
	assert_int_equal(r.c.max_ops, 100);
	assert_int_equal(r.c.max_reply, 1u << 20);
	assert_int_equal(r.c.hello_timeout_s, 2);
	assert_int_equal(r.c.frame_timeout_s, 3);
	assert_int_equal(r.c.max_prehello, 5);
	assert_int_equal(r.c.conn_output_max, 1u << 20);
	assert_int_equal(r.c.output_max, 2ull << 30);
	run_done(&r);

	RUN(&r, "-s", "x.sock", "-d", "d");
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.c.socket_path, "x.sock");
	assert_string_equal(r.c.data_dir, "d");
	run_done(&r);
}

/* The server's default socket is the clients': $MCACHE_SOCKET when set and
 * not empty, else the built-in default; the config file and --socket win. */
static void t_socket_env(void **state)
{
	struct run r;
	setenv("MCACHE_SOCKET", "/tmp/env-dir/env.sock", 1);
	run_v(&r, (const char *const[]){ NULL });
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.c.socket_path, "/tmp/env-dir/env.sock");
	assert_string_equal(r.c.admin_addr, "unix:/tmp/env-dir/admin.sock");
	run_done(&r);
	RUN(&r, "--socket", "/a/b.sock");
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.c.socket_path, "/a/b.sock");
	run_done(&r);
	setenv("MCACHE_SOCKET", "", 1);
	run_v(&r, (const char *const[]){ NULL });
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.c.socket_path, MC_DEFAULT_SOCKET);
	run_done(&r);
	unsetenv("MCACHE_SOCKET");
}

static void t_admin_default(void **state)
{
	static const struct { const char *sock, *admin; } cases[] = {
		{ "/run/mcache/mcached.sock", "unix:/run/mcache/admin.sock" },
		{ "rel/dir/m.sock", "unix:rel/dir/admin.sock" },
		{ "m.sock", "unix:./admin.sock" },
		{ "/m.sock", "unix:/admin.sock" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct run r;
		RUN(&r, "--socket", cases[i].sock);
		assert_int_equal(r.rc, 0);
		assert_string_equal(r.c.admin_addr, cases[i].admin);
		run_done(&r);
	}
	struct run r;
	RUN(&r, "--admin", "none", "--socket", "/a/b.sock");
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.c.admin_addr, "none");
	run_done(&r);
	RUN(&r, "--admin", "[::1]:9100");
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.c.admin_addr, "[::1]:9100");
	run_done(&r);
}

static void t_sizes(void **state)
{
	static const struct { const char *s; int rc; uint64_t v; } cases[] = {
		{ "0", 0, 0 },
		{ "4096", 0, 4096 },
		{ "64K", 0, 64ull << 10 },
		{ "64k", 0, 64ull << 10 },
		{ "256M", 0, 256ull << 20 },
		{ "2G", 0, 2ull << 30 },
		{ "1T", 0, 1ull << 40 },
		{ "18446744073709551615", 0, UINT64_MAX },
		{ "18446744073709551616", -ERANGE, 0 },
		{ "16777216T", -ERANGE, 0 },
		{ "16777215T", 0, 16777215ull << 40 },
		{ "", -EINVAL, 0 },
		{ "K", -EINVAL, 0 },
		{ "12X", -EINVAL, 0 },
		{ "-1", -EINVAL, 0 },
		{ " 1", -EINVAL, 0 },
		{ "1 ", -EINVAL, 0 },
		{ "1KK", -EINVAL, 0 },
		{ "1.5G", -EINVAL, 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 12345;
		int rc = config_parse_size(cases[i].s, &v);
		if (rc != cases[i].rc)
			fail_msg("'%s': rc %d, want %d", cases[i].s, rc, cases[i].rc);
		assert_int_equal(v, rc == 0 ? cases[i].v : 12345); /* untouched on error */
	}
}

static void t_bounds_accepted(void **state)
{
	static const char *const ok[][2] = {
		{ "--workers", "1" }, { "--workers", "64" },
		{ "--cache-size", "1M" }, { "--cache-size", "64G" },
		{ "--commit-interval-ms", "0" }, { "--commit-interval-ms", "60000" },
		{ "--max-frame", "4K" }, { "--max-frame", "256M" }, { "--max-frame", "4096" },
		{ "--root-mode", "0" }, { "--root-mode", "7777" },
		{ "--log-level", "error" }, { "--log-level", "warn" },
		{ "--idle-timeout", "0" }, { "--max-connections", "1" },
		{ "--journal-max-records", "1" }, { "--journal-max-records", "1000000000" },
		{ "--journal-max-bytes", "64K" }, { "--journal-max-bytes", "64G" },
		{ "--journal-wait-ms", "0" }, { "--journal-wait-ms", "60000" },
		{ "--shutdown-timeout", "0" }, { "--shutdown-timeout", "3600" },
		{ "--max-ops", "1" }, { "--max-ops", "1048576" },
		{ "--max-reply", "64K" }, { "--max-reply", "16M" },
		{ "--hello-timeout", "1" }, { "--hello-timeout", "3600" },
		{ "--frame-timeout", "1" }, { "--frame-timeout", "3600" },
		{ "--max-prehello", "1" }, { "--max-prehello", "1048576" },
		{ "--conn-output-max", "64K" }, { "--conn-output-max", "1G" },
		{ "--output-max", "1M" }, { "--output-max", "64G" },
		{ "--cache-high", "100" }, { "--cache-low", "1" }, { "--negative-max", "0" },
		{ "--negative-dir-max", "1" },
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct run r;
		RUN(&r, ok[i][0], ok[i][1]);
		if (r.rc != 0)
			fail_msg("%s %s refused: %s", ok[i][0], ok[i][1], r.err);
		run_done(&r);
	}
}

static void t_bad_values(void **state)
{
	static const char *const bad[][2] = {
		{ "--cache-size", "12X" }, { "--cache-size", "512K" }, { "--cache-size", "65G" },
		{ "--workers", "0" }, { "--workers", "65" }, { "--workers", "abc" },
		{ "--workers", "-1" }, { "--workers", "99999999999999999999999" },
		{ "--commit-interval-ms", "60001" }, { "--max-frame", "1K" },
		{ "--max-frame", "512M" }, { "--store-map-size", "0" }, { "--log-retention", "-1" },
		{ "--log-level", "loud" }, { "--root-mode", "9" }, { "--root-mode", "17777" },
		{ "--root-mode", "" }, { "--admin", "foo" }, { "--admin", "unix:" },
		{ "--admin", "host:99999" }, { "--max-connections", "0" },
		{ "--idle-timeout", "1h" }, { "--socket", "" }, { "--data", "" },
		{ "--journal-max-records", "0" }, { "--journal-max-records", "1000000001" },
		{ "--journal-max-bytes", "32K" }, { "--journal-max-bytes", "65G" },
		{ "--journal-max-bytes", "lots" }, { "--journal-wait-ms", "60001" },
		{ "--shutdown-timeout", "3601" }, { "--shutdown-timeout", "10s" },
		{ "--max-ops", "0" }, { "--max-ops", "1048577" }, { "--max-reply", "32K" },
		{ "--max-reply", "17M" }, { "--hello-timeout", "0" },
		{ "--hello-timeout", "3601" }, { "--frame-timeout", "0" },
		{ "--frame-timeout", "3601" }, { "--max-prehello", "0" },
		{ "--conn-output-max", "32K" }, { "--conn-output-max", "2G" },
		{ "--output-max", "512K" }, { "--output-max", "65G" },
		{ "--cache-high", "0" }, { "--cache-high", "101" }, { "--cache-low", "0" },
		{ "--negative-dir-max", "0" }, { "--negative-max", "many" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct run r;
		RUN(&r, bad[i][0], bad[i][1]);
		if (r.rc != -EINVAL)
			fail_msg("%s '%s': rc %d", bad[i][0], bad[i][1], r.rc);
		char want[128];
		snprintf(want, sizeof(want), "mcached: %s: ", bad[i][0]);
		if (strncmp(r.err, want, strlen(want)) != 0)
			fail_msg("message does not name the option: %s", r.err);
		snprintf(want, sizeof(want), "'%s'", bad[i][1]);
		if (bad[i][1][0] != '\0' && strstr(r.err, want) == NULL)
			fail_msg("message does not name the value: %s", r.err);
		/* One line. */
		assert_non_null(strchr(r.err, '\n'));
		assert_int_equal(strchr(r.err, '\n')[1], '\0');
		assert_string_equal(r.out, "");
		run_done(&r);
	}
	struct run r;
	RUN(&r, "--cache-size", "12X");
	assert_string_equal(r.err, "mcached: --cache-size: '12X' is not a size "
	                           "(use a number with K, M, G or T)\n");
	run_done(&r);
	RUN(&r, "--workers", "65");
	assert_string_equal(r.err, "mcached: --workers: '65' is out of range (1..64)\n");
	run_done(&r);
}

static void t_bad_usage(void **state)
{
	struct run r;
	RUN(&r, "--frobnicate");
	assert_int_equal(r.rc, -EINVAL);
	assert_non_null(strstr(r.err, "--frobnicate"));
	run_done(&r);
	RUN(&r, "-x");
	assert_int_equal(r.rc, -EINVAL);
	assert_non_null(strstr(r.err, "-x"));
	run_done(&r);
	RUN(&r, "--workers");
	assert_int_equal(r.rc, -EINVAL);
	assert_string_equal(r.err, "mcached: --workers: missing value\n");
	run_done(&r);
	RUN(&r, "-s");
	assert_int_equal(r.rc, -EINVAL);
	assert_string_equal(r.err, "mcached: -s: missing value\n");
	run_done(&r);
	RUN(&r, "--workers", "3", "stray");
	assert_int_equal(r.rc, -EINVAL);
	assert_non_null(strstr(r.err, "'stray'"));
	run_done(&r);
	RUN(&r, "--sync=maybe");
	assert_int_equal(r.rc, -EINVAL);
	assert_string_equal(r.err, "mcached: --sync: 'maybe' is not a boolean (use true or false)\n");
	run_done(&r);
}

/* Switches take a boolean on the command line as they do in the file. */
static void t_bool_flags(void **state)
{
	static const struct { const char *arg; bool sync; } cases[] = {
		{ "--sync", true }, { "--sync=true", true }, { "--sync=false", false },
		{ "--sync=no", false }, { "--sync=on", true }, { "--sync=0", false },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct run r;
		RUN(&r, cases[i].arg);
		if (r.rc != 0)
			fail_msg("%s: %s", cases[i].arg, r.err);
		assert_int_equal(r.c.sync, cases[i].sync);
		run_done(&r);
	}
	struct run r;
	RUN(&r, "--admin-allow-remote=false");
	assert_int_equal(r.rc, 0);
	assert_false(r.c.admin_remote);
	run_done(&r);
	RUN(&r, "--admin-allow-remote=yes");
	assert_int_equal(r.rc, 0);
	assert_true(r.c.admin_remote);
	run_done(&r);
	/* A later flag wins over an earlier one and over the file. */
	char *path = write_file("sync = true\n");
	RUN(&r, "-c", path, "--sync=false");
	assert_int_equal(r.rc, 0);
	assert_false(r.c.sync);
	run_done(&r);
	unlink(path);
	free(path);
}

static void t_file_overrides(void **state)
{
	char *path = write_file(
		"# mcached test config\n"
		"\n"
		"   socket = /tmp/mcf/m.sock   # trailing comment\n"
		"cache-size = 1G\n"
		"workers=4\n"
		"sync\n"
		"log_level = \"warn\"\n"
		"data = \"/tmp/with # hash\"\n"
		"\t# indented comment\n"
		"max-frame = 1M\r\n"
		"admin-allow-remote = no\n"
		"journal_max_records = 5000\n"
		"shutdown-timeout = 30\n");
	struct run r;
	RUN(&r, "--workers", "8", "--config", path);
	if (r.rc != 0)
		fail_msg("rc %d: %s", r.rc, r.err);
	assert_int_equal(r.c.workers, 8);                 /* command line wins */
	assert_int_equal(r.c.cache_size, 1ull << 30);     /* from the file */
	assert_true(r.c.sync);
	assert_int_equal(r.c.log_level, LOG_LVL_WARN);
	assert_string_equal(r.c.socket_path, "/tmp/mcf/m.sock");
	assert_string_equal(r.c.data_dir, "/tmp/with # hash");
	assert_int_equal(r.c.max_frame, 1u << 20);
	assert_false(r.c.admin_remote);
	assert_int_equal(r.c.journal_max_records, 5000);
	assert_int_equal(r.c.shutdown_timeout_s, 30);
	/* The default admin address follows the file's socket. */
	assert_string_equal(r.c.admin_addr, "unix:/tmp/mcf/admin.sock");
	run_done(&r);

	RUN(&r, "-c", path, "--socket", "/x/y.sock", "--cache-size=2G");
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.c.socket_path, "/x/y.sock");
	assert_string_equal(r.c.admin_addr, "unix:/x/admin.sock");
	assert_int_equal(r.c.cache_size, 2ull << 30);
	assert_int_equal(r.c.workers, 4);
	run_done(&r);
	unlink(path);
	free(path);

	/* An admin address from the file stays, whatever the socket. */
	path = write_file("admin = none\n");
	RUN(&r, "--config", path, "-s", "/q/r.sock");
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.c.admin_addr, "none");
	run_done(&r);
	unlink(path);
	free(path);
}

static void t_file_errors(void **state)
{
	static const struct { const char *text; const char *msg; } cases[] = {
		{ "workers = 2\n\nfoo = 1\n", ":3: unknown setting 'foo'\n" },
		{ "# c\ncache-size = 12X\n",
		  ":2: cache-size: '12X' is not a size (use a number with K, M, G or T)\n" },
		{ "workers\n", ":1: expected 'workers = value'\n" },
		{ "config = /etc/other\n", ":1: unknown setting 'config'\n" },
		{ "help\n", ":1: unknown setting 'help'\n" },
		{ "sync = perhaps\n", ":1: sync: 'perhaps' is not a boolean (use true or false)\n" },
		{ "workers = 100\n", ":1: workers: '100' is out of range (1..64)\n" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *path = write_file(cases[i].text);
		struct run r;
		RUN(&r, "--config", path);
		assert_int_equal(r.rc, -EINVAL);
		char want[512];
		snprintf(want, sizeof(want), "mcached: %s%s", path, cases[i].msg);
		assert_string_equal(r.err, want);
		run_done(&r);
		unlink(path);
		free(path);
	}
	struct run r;
	RUN(&r, "--config", "/nonexistent/mcache.conf");
	assert_int_equal(r.rc, -EINVAL);
	assert_string_equal(r.err, "mcached: /nonexistent/mcache.conf: No such file or directory\n");
	run_done(&r);
}

/* The watermarks: defaults, set, and a low mark above the high one refused
 * in one line naming both. */
static void t_cache_watermarks(void **state)
{
	(void)state;
	struct run r;
	RUN(&r, "--cache-size", "1M");
	assert_int_equal(r.rc, 0);
	assert_int_equal(r.c.cache_high_pct, 90);
	assert_int_equal(r.c.cache_low_pct, 80);
	assert_int_equal(r.c.neg_dir_max, 256);
	run_done(&r);
	RUN(&r, "--cache-high", "70", "--cache-low", "70", "--negative-max", "5");
	assert_int_equal(r.rc, 0);
	assert_int_equal(r.c.cache_high_pct, 70);
	assert_int_equal(r.c.cache_low_pct, 70);
	assert_int_equal(r.c.neg_max, 5);
	run_done(&r);
	RUN(&r, "--cache-high", "50", "--cache-low", "60");
	assert_int_equal(r.rc, -EINVAL);
	assert_string_equal(r.err, "mcached: --cache-low: 60 is above --cache-high (50)\n");
	run_done(&r);
}

static void t_help(void **state)
{
	static const char *const names[] = {
		"--socket", "--data", "--admin", "--admin-allow-remote", "--cache-size", "--workers",
		"--commit-interval-ms", "--sync", "--max-connections", "--idle-timeout",
		"--max-frame", "--store-map-size", "--log-retention", "--log-level", "--root-mode",
		"--journal-max-records", "--journal-max-bytes", "--journal-wait-ms",
		"--shutdown-timeout", "status 3", "Default: 1000000",
		"--max-ops", "--max-reply", "--hello-timeout", "--frame-timeout", "--max-prehello",
		"--conn-output-max", "--output-max", "--config", "--help", "--version", "-s,", "-d,", "-c,", "-h,", "-V,",
		"--shutdown-timeout", "status 3", "--cache-high", "--cache-low", "--negative-max",
		"--negative-dir-max", "Default: 1000000", "--config", "--help", "--version", "-s,", "-d,", "-c,", "-h,", "-V,",
		"NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "CONFIGURATION FILE", "SIGNALS",
		"SIGTERM", "SIGINT", "FILES", "EXIT STATUS", "ENVIRONMENT", "MCACHE_SOCKET", "Default: 256M", "Default: 1024",
	};
	struct run r;
	RUN(&r, "--help");
	assert_int_equal(r.rc, 1);
	assert_string_equal(r.err, "");
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strstr(r.out, names[i]) == NULL)
			fail_msg("--help does not mention %s", names[i]);
	run_done(&r);
	/* -h wins over bad values and a missing config file. */
	RUN(&r, "--workers", "0", "-c", "/nonexistent", "-h");
	assert_int_equal(r.rc, 1);
	assert_non_null(strstr(r.out, "SYNOPSIS"));
	run_done(&r);
}

static void t_version(void **state)
{
	struct run r;
	RUN(&r, "--version");
	assert_int_equal(r.rc, 1);
	assert_string_equal(r.out, "mcached " MC_VERSION "\n");
	run_done(&r);
	RUN(&r, "-V");
	assert_int_equal(r.rc, 1);
	assert_string_equal(r.out, "mcached " MC_VERSION "\n");
	run_done(&r);
}

/* SIGHUP: the log level is taken from the file anew; other changes wait for
 * a restart and are named; a broken file changes nothing. */
static void t_reload(void **state)
{
	char *path = write_file("log-level = info\nworkers = 2\n");
	char *argv[] = { "mcached", "-c", path, "--idle-timeout", "5", NULL };
	struct run r;
	RUN(&r, "-c", path, "--idle-timeout", "5");
	assert_int_equal(r.rc, 0);
	assert_int_equal(r.c.log_level, LOG_LVL_INFO);

	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("log-level = debug\nworkers = 4\nidle-timeout = 9\n"
	      "slowlog-threshold-ms = 250\nslowlog-max-len = 7\n", f);
	fclose(f);
	char *err = NULL;
	size_t en = 0;
	FILE *e = open_memstream(&err, &en);
	assert_int_equal(config_reload(&r.c, 5, argv, e), 0);
	fclose(e);
	assert_int_equal(r.c.log_level, LOG_LVL_DEBUG);
	assert_int_equal(r.c.slowlog_ms, 250);     /* the slow log's settings now */
	assert_int_equal(r.c.slowlog_len, 7);
	assert_int_equal(r.c.workers, 2);          /* at the next start */
	assert_int_equal(r.c.idle_timeout_s, 5);   /* the command line still wins */
	assert_string_equal(err, "mcached: --workers changed; it takes effect at the next start\n");
	free(err);

	f = fopen(path, "w");
	assert_non_null(f);
	fputs("log-level = loud\n", f);
	fclose(f);
	e = open_memstream(&err, &en);
	assert_int_equal(config_reload(&r.c, 5, argv, e), -EINVAL);
	fclose(e);
	assert_non_null(strstr(err, "'loud' is not a log level"));
	assert_int_equal(r.c.log_level, LOG_LVL_DEBUG);
	free(err);
	run_done(&r);
	unlink(path);
	free(path);
}

/* ---- the option list against deploy/mcached.conf.example and the README -- */

/* The long option names --help lists, but config, help and version. */
static size_t help_options(char names[][32], size_t max)
{
	struct run r;
	RUN(&r, "--help");
	assert_int_equal(r.rc, 1);
	size_t n = 0;
	char *save = NULL;
	for (char *line = strtok_r(r.out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "    -", 5) != 0)
			continue;
		for (char *p = strstr(line, "--"); p; p = strstr(p + 2, "--")) {
			char name[32];
			if (sscanf(p + 2, "%31[a-z-]", name) != 1 || !strcmp(name, "config") ||
			    !strcmp(name, "help") || !strcmp(name, "version"))
				continue;
			assert_true(n < max);
			snprintf(names[n++], sizeof(names[0]), "%s", name);
		}
	}
	run_done(&r);
	return n;
}

static char *slurp(const char *rel)
{
	const char *root = getenv("MC_SOURCE_ROOT");
	assert_non_null(root);
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	FILE *f = fopen(path, "r");
	if (f == NULL)
		fail_msg("%s: %s", path, strerror(errno));
	char *buf = calloc(1, 1 << 17);
	assert_non_null(buf);
	size_t n = fread(buf, 1, (1 << 17) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

/* The settings of a run equal the defaults (paths that depend on the build
 * or the socket, socket and admin, aside). */
static void assert_defaults(struct run *r, const char *what)
{
	struct run d;
	run_v(&d, (const char *const[]){ NULL });
	assert_int_equal(d.rc, 0);
	if (r->rc != 0)
		fail_msg("%s: %s", what, r->err);
	if (strcmp(r->c.data_dir, d.c.data_dir) != 0)
		fail_msg("%s: data is %s, the default %s", what, r->c.data_dir, d.c.data_dir);
	struct mcd_config a = r->c, b = d.c;
	a.socket_path = b.socket_path = NULL;
	a.data_dir = b.data_dir = NULL;
	a.admin_addr = b.admin_addr = NULL;
	if (memcmp(&a, &b, sizeof(a)) != 0)
		fail_msg("%s: not the defaults", what);
	run_done(&d);
}

/* Every option is in the example file, whose values are the defaults. */
static void t_example_file(void **state)
{
	char names[64][32];
	size_t n = help_options(names, 64);
	assert_true(n >= 30);
	char *ex = slurp("deploy/mcached.conf.example");
	for (size_t i = 0; i < n; i++) {
		char want[48];
		snprintf(want, sizeof(want), "\n# %s = ", names[i]);
		if (strstr(ex, want) == NULL)
			fail_msg("deploy/mcached.conf.example does not list %s", names[i]);
	}
	/* Uncommented, the example's settings are the defaults. */
	char *file = calloc(1, strlen(ex) + 1);
	assert_non_null(file);
	size_t k = 0, settings = 0;
	for (const char *line = ex; *line; ) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		char name[32];
		int eq = 0;
		if (sscanf(line, "# %31[a-z-] =%n", name, &eq) == 1 && eq > 0 && (size_t)eq <= len) {
			memcpy(file + k, line + 2, len - 2);
			k += len - 2;
			file[k++] = '\n';
			settings++;
		}
		line += len + (end ? 1 : 0);
	}
	assert_int_equal(settings, n);
	char *path = write_file(file);
	struct run r;
	RUN(&r, "-c", path);
	assert_defaults(&r, "deploy/mcached.conf.example");
	run_done(&r);
	unlink(path);
	free(path);
	free(file);
	free(ex);
}

/* The README's option table names real options, with their defaults. */
static void t_readme_table(void **state)
{
	char names[64][32];
	size_t n = help_options(names, 64), rows = 0;
	char *md = slurp("README.md");
	char *save = NULL;
	for (char *line = strtok_r(md, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "| `--", 5) != 0)
			continue;
		rows++;
		char *cell2 = strchr(line + 1, '|');
		assert_non_null(cell2);
		*cell2++ = '\0';
		char *cell3 = strchr(cell2, '|');
		assert_non_null(cell3);
		*cell3 = '\0';
		char opts[2][32], vals[4][64];
		size_t no = 0, nv = 0;
		for (char *p = strstr(line, "`--"); p && no < 2; p = strstr(p + 3, "`--")) {
			assert_int_equal(sscanf(p + 3, "%31[a-z-]", opts[no]), 1);
			bool known = false;
			for (size_t i = 0; i < n; i++)
				known = known || strcmp(names[i], opts[no]) == 0;
			if (!known)
				fail_msg("README names an option mcached does not have: --%s", opts[no]);
			no++;
		}
		for (char *p = strchr(cell2, '`'); p && nv < 4; p = strchr(p + 1, '`')) {
			char *q = strchr(p + 1, '`');
			assert_non_null(q);
			snprintf(vals[nv++], sizeof(vals[0]), "%.*s", (int)(q - p - 1), p + 1);
			p = q;
		}
		/* Only plain values, one per option ($MCACHE_SOCKET, <socket dir>
		 * and words like "off" say more than a value). */
		bool plain = nv == no;
		for (size_t i = 0; i < nv && plain; i++)
			plain = strpbrk(vals[i], "$<") == NULL;
		if (!plain)
			continue;
		for (size_t i = 0; i < no; i++) {
			char arg[128];
			snprintf(arg, sizeof(arg), "--%s=%s", opts[i], vals[i]);
			struct run r;
			RUN(&r, arg);
			assert_defaults(&r, arg);
			run_done(&r);
		}
	}
	assert_true(rows >= 10);
	free(md);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_defaults),
		cmocka_unit_test(t_every_option),
		cmocka_unit_test(t_socket_env),
		cmocka_unit_test(t_admin_default),
		cmocka_unit_test(t_sizes),
		cmocka_unit_test(t_bounds_accepted),
		cmocka_unit_test(t_bad_values),
		cmocka_unit_test(t_bad_usage),
		cmocka_unit_test(t_bool_flags),
		cmocka_unit_test(t_file_overrides),
		cmocka_unit_test(t_file_errors),
		cmocka_unit_test(t_cache_watermarks),
		cmocka_unit_test(t_help),
		cmocka_unit_test(t_reload),
		cmocka_unit_test(t_example_file),
		cmocka_unit_test(t_readme_table),
		cmocka_unit_test(t_version),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
