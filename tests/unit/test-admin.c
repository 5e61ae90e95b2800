/* test-admin.c - the admin endpoint over unix and TCP sockets: routes, status
 * codes, content types, fresh snapshots, address checks, stopping. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "admin.h"
#include "log.h"
#include "chmod_spy.h"

static atomic_int fill_calls;
static atomic_uint_least64_t fill_value;

static void fill(void *arg, struct stats_snapshot *out)
{
	assert_ptr_equal(arg, &fill_calls);
	atomic_fetch_add(&fill_calls, 1);
	out->uptime_s = atomic_load(&fill_value);
	out->start_time_s = 1700000000 + atomic_load(&fill_value);
	out->version = "test";
	atomic_store(&out->rpc.ops[5], 2);
	out->clients = 1;
}

/* One client pid in the per-process read-path figures. */
#define SECRET_PID 424242

static void fill_pid(void *arg, struct stats_snapshot *out)
{
	fill(arg, out);
	out->nclients_rp = 1;
	out->clients_rp[0].pid = SECRET_PID;
	out->clients_rp[0].rp.hits = 7;
	out->readpath.hits = 7;
}

/* ---- a raw HTTP/1.0 client ----------------------------------------------- */

struct resp {
	int status;
	char ctype[128];
	char *body;
};

static int connect_addr(const char *addr)
{
	int fd;
	if (strncmp(addr, "unix:", 5) == 0) {
		struct sockaddr_un sun = { .sun_family = AF_UNIX };
		snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", addr + 5);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		assert_true(fd >= 0);
		if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0)
			fail_msg("connect %s: %s", addr, strerror(errno));
		return fd;
	}
	const char *colon = strrchr(addr, ':');
	assert_non_null(colon);
	int port = atoi(colon + 1);
	if (addr[0] == '[') {
		struct sockaddr_in6 in6 = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port) };
		char host[64];
		snprintf(host, sizeof(host), "%.*s", (int)(colon - addr - 2), addr + 1);
		assert_int_equal(inet_pton(AF_INET6, host, &in6.sin6_addr), 1);
		fd = socket(AF_INET6, SOCK_STREAM, 0);
		assert_true(fd >= 0);
		if (connect(fd, (struct sockaddr *)&in6, sizeof(in6)) < 0)
			fail_msg("connect %s: %s", addr, strerror(errno));
		return fd;
	}
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	char host[64];
	snprintf(host, sizeof(host), "%.*s", (int)(colon - addr), addr);
	assert_int_equal(inet_pton(AF_INET, host, &in.sin_addr), 1);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	if (connect(fd, (struct sockaddr *)&in, sizeof(in)) < 0)
		fail_msg("connect %s: %s", addr, strerror(errno));
	return fd;
}

static void http(const char *addr, const char *method, const char *path, struct resp *r)
{
	int fd = connect_addr(addr);
	char req[256];
	int n = snprintf(req, sizeof(req), "%s %s HTTP/1.0\r\nHost: test\r\n\r\n", method, path);
	assert_int_equal(write(fd, req, (size_t)n), n);
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	assert_non_null(buf);
	for (;;) {
		if (len + 1024 > cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		ssize_t k = read(fd, buf + len, cap - len - 1);
		assert_true(k >= 0);
		if (k == 0)
			break;
		len += (size_t)k;
	}
	close(fd);
	buf[len] = '\0';
	assert_int_equal(sscanf(buf, "HTTP/1.%*d %d", &r->status), 1);
	r->ctype[0] = '\0';
	const char *ct = strcasestr(buf, "\r\nContent-Type: ");
	if (ct != NULL)
		sscanf(ct + 16, "%127[^\r]", r->ctype);
	char *body = strstr(buf, "\r\n\r\n");
	assert_non_null(body);
	r->body = strdup(body + 4);
	free(buf);
}

/* The integer at a dotted path of a /stats body, parsed with jansson
 * (duplicate keys rejected); -1 when absent. */
static long long stats_int(const char *body, const char *path)
{
	json_error_t e;
	json_t *root = json_loads(body, JSON_REJECT_DUPLICATES, &e);
	if (root == NULL)
		fail_msg("invalid JSON (%s): %s", e.text, body);
	char buf[128];
	snprintf(buf, sizeof(buf), "%s", path);
	json_t *v = root;
	for (char *save = NULL, *k = strtok_r(buf, ".", &save); k && v; k = strtok_r(NULL, ".", &save))
		v = json_object_get(v, k);
	long long n = json_is_integer(v) ? json_integer_value(v) : -1;
	json_decref(root);
	return n;
}

/* The pids of readpath.clients in a /stats body: how many, and the first. */
static size_t stats_client_pids(const char *body, long long *first)
{
	json_t *root = json_loads(body, JSON_REJECT_DUPLICATES, NULL);
	assert_non_null(root);
	json_t *a = json_object_get(json_object_get(root, "readpath"), "clients");
	assert_true(json_is_array(a));
	size_t n = json_array_size(a);
	if (n > 0)
		*first = json_integer_value(json_object_get(json_array_get(a, 0), "pid"));
	json_decref(root);
	return n;
}

/* Fetch all routes and check status, content type, and a fresh fill. */
static void check_routes(const char *addr)
{
	struct resp r;
	int before = atomic_load(&fill_calls);

	atomic_store(&fill_value, 77);
	http(addr, "GET", "/stats", &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.ctype, "application/json");
	assert_int_equal(stats_int(r.body, "uptime_s"), 77);
	assert_int_equal(stats_int(r.body, "rpc.ops.mkdir"), 2);
	free(r.body);
	assert_int_equal(atomic_load(&fill_calls), before + 1);

	/* A fresh snapshot per request. */
	atomic_store(&fill_value, 78);
	http(addr, "GET", "/stats?pretty=1", &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(stats_int(r.body, "uptime_s"), 78);
	free(r.body);
	assert_int_equal(atomic_load(&fill_calls), before + 2);

	http(addr, "GET", "/metrics", &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.ctype, "text/plain; version=0.0.4");
	assert_non_null(strstr(r.body, "\nmcache_start_time_seconds 1700000078\n"));
	assert_non_null(strstr(r.body, "mcache_rpc_ops_total{op=\"mkdir\"} 2\n"));
	free(r.body);
	assert_int_equal(atomic_load(&fill_calls), before + 3);

	http(addr, "GET", "/healthz", &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "ok\n");
	free(r.body);

	http(addr, "GET", "/nope", &r);
	assert_int_equal(r.status, 404);
	free(r.body);
	http(addr, "GET", "/stats/x", &r);
	assert_int_equal(r.status, 404);
	free(r.body);

	http(addr, "POST", "/stats", &r);
	assert_int_equal(r.status, 405);
	free(r.body);
	http(addr, "DELETE", "/metrics", &r);
	assert_int_equal(r.status, 405);
	free(r.body);

	/* Neither errors nor /healthz took a snapshot. */
	assert_int_equal(atomic_load(&fill_calls), before + 3);
}

/* ---- cases --------------------------------------------------------------- */

static char tmpdir[64];

static int setup_dir(void **state)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test-admin-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_dir(void **state)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void t_unix(void **state)
{
	char addr[128], path[100];
	struct admin *a = NULL;
	struct stat st;
	snprintf(path, sizeof(path), "%s/admin.sock", tmpdir);
	snprintf(addr, sizeof(addr), "unix:%s", path);

	assert_int_equal(admin_start(addr, false, fill, &fill_calls, &a), 0);
	assert_non_null(a);
	assert_string_equal(admin_address(a), addr);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0660);
	check_routes(addr);

	/* A second server on a live socket is refused; the first is unharmed. */
	struct admin *b = (struct admin *)0x1;
	assert_int_equal(admin_start(addr, false, fill, &fill_calls, &b), -EADDRINUSE);
	assert_ptr_equal(b, (struct admin *)0x1);
	struct resp r;
	http(addr, "GET", "/healthz", &r);
	assert_int_equal(r.status, 200);
	free(r.body);

	admin_stop(a);
	assert_int_equal(lstat(path, &st), -1);
	assert_int_equal(errno, ENOENT);
}

static void t_unix_stale(void **state)
{
	char addr[128], path[100];
	struct admin *a = NULL;
	snprintf(path, sizeof(path), "%s/stale.sock", tmpdir);
	snprintf(addr, sizeof(addr), "unix:%s", path);

	/* A socket file nobody listens on: removed and replaced. */
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	assert_int_equal(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	close(fd);
	assert_int_equal(admin_start(addr, false, fill, &fill_calls, &a), 0);
	struct resp r;
	http(addr, "GET", "/healthz", &r);
	assert_int_equal(r.status, 200);
	free(r.body);
	admin_stop(a);

	/* A regular file is not ours to remove. */
	snprintf(path, sizeof(path), "%s/regular", tmpdir);
	snprintf(addr, sizeof(addr), "unix:%s", path);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(admin_start(addr, false, fill, &fill_calls, &a), -EADDRINUSE);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));

	/* No such directory. */
	snprintf(addr, sizeof(addr), "unix:%s/missing/admin.sock", tmpdir);
	assert_int_equal(admin_start(addr, false, fill, &fill_calls, &a), -ENOENT);
}

static void t_tcp(void **state)
{
	struct admin *a = NULL;
	assert_int_equal(admin_start("127.0.0.1:0", false, fill, &fill_calls, &a), 0);
	const char *addr = admin_address(a);
	assert_true(strncmp(addr, "127.0.0.1:", 10) == 0);
	assert_true(atoi(addr + 10) > 0);
	check_routes(addr);

	/* The port is taken now. */
	struct admin *b = NULL;
	assert_int_equal(admin_start(addr, false, fill, &fill_calls, &b), -EADDRINUSE);
	admin_stop(a);

	/* localhost resolves to a loopback address. */
	assert_int_equal(admin_start("localhost:0", false, fill, &fill_calls, &a), 0);
	admin_stop(a);
}

static void t_tcp6(void **state)
{
	int fd = socket(AF_INET6, SOCK_STREAM, 0);
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	bool have6 = fd >= 0 && bind(fd, (struct sockaddr *)&in6, sizeof(in6)) == 0;
	if (fd >= 0)
		close(fd);
	if (!have6) {
		print_message("# skipped: no IPv6 loopback here\n");
		return;
	}
	struct admin *a = NULL;
	assert_int_equal(admin_start("[::1]:0", false, fill, &fill_calls, &a), 0);
	const char *addr = admin_address(a);
	assert_true(strncmp(addr, "[::1]:", 6) == 0);
	check_routes(addr);
	admin_stop(a);
}

static void t_remote_refused(void **state)
{
	static const char *const remote[] = {
		"0.0.0.0:0", ":0", "*:0", "10.1.2.3:0", "192.0.2.1:8080", "[::]:0", "[2001:db8::1]:0",
	};
	for (size_t i = 0; i < sizeof(remote) / sizeof(remote[0]); i++) {
		struct admin *a = NULL;
		int rc = admin_start(remote[i], false, fill, &fill_calls, &a);
		if (rc != -EPERM)
			fail_msg("%s: rc %d, want -EPERM", remote[i], rc);
		assert_null(a);
	}
	/* Allowed when asked for. */
	struct admin *a = NULL;
	assert_int_equal(admin_start("0.0.0.0:0", true, fill, &fill_calls, &a), 0);
	assert_true(strncmp(admin_address(a), "0.0.0.0:", 8) == 0);
	char addr[64];
	snprintf(addr, sizeof(addr), "127.0.0.1:%s", strrchr(admin_address(a), ':') + 1);
	struct resp r;
	http(addr, "GET", "/healthz", &r);
	assert_int_equal(r.status, 200);
	free(r.body);
	admin_stop(a);
}

static void t_bad_address(void **state)
{
	static const char *const bad[] = {
		"", "nonsense", "127.0.0.1", "127.0.0.1:", "127.0.0.1:99999", "127.0.0.1:http",
		"::1:80", "[::1]80", "[]:80", "[::1:80", "unix:",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct admin *a = NULL;
		int rc = admin_start(bad[i], false, fill, &fill_calls, &a);
		if (rc != -EINVAL)
			fail_msg("'%s': rc %d, want -EINVAL", bad[i], rc);
		assert_null(a);
	}
}

struct stopper {
	struct admin *a;
};

static void *stop_thread(void *arg)
{
	struct stopper *s = arg;
	admin_stop(s->a);
	return NULL;
}

/* admin_stop from threads other than the admin thread: right after start,
 * and with an idle client connection still open. */
static void t_stop(void **state)
{
	for (int i = 0; i < 20; i++) {
		struct admin *a = NULL;
		assert_int_equal(admin_start("127.0.0.1:0", false, fill, &fill_calls, &a), 0);
		admin_stop(a); /* from the test thread */
	}

	struct admin *a = NULL;
	assert_int_equal(admin_start("127.0.0.1:0", false, fill, &fill_calls, &a), 0);
	int idle = connect_addr(admin_address(a));
	int half = connect_addr(admin_address(a));
	assert_int_equal(write(half, "GET /sta", 8), 8);
	struct stopper s = { .a = a };
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, stop_thread, &s), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	close(idle);
	close(half);
}

/* The socket is created 0660, even under umask 0: never looser. */
static void t_unix_born_0660(void **state)
{
	char addr[128], path[100];
	struct admin *a = NULL;
	struct stat st;
	snprintf(path, sizeof(path), "%s/born.sock", tmpdir);
	snprintf(addr, sizeof(addr), "unix:%s", path);
	chmod_calls = 0;
	mode_t old = umask(0);
	int rc = admin_start(addr, false, fill, &fill_calls, &a);
	umask(old);
	assert_int_equal(rc, 0);
	if (chmod_calls > 0 && (chmod_seen_mode & ~0660) != 0)
		fail_msg("the socket had mode %o before chmod", (unsigned)chmod_seen_mode);
	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0660);
	admin_stop(a);
}

/* Per-process figures (pids) on the unix socket only: every local user
 * reaches a TCP address. */
static void t_tcp_hides_pids(void **state)
{
	char addr[128], pid[16];
	struct admin *a = NULL;
	struct resp r;
	long long first = 0;
	snprintf(pid, sizeof(pid), "%d", SECRET_PID);
	snprintf(addr, sizeof(addr), "unix:%s/pids.sock", tmpdir);
	assert_int_equal(admin_start(addr, false, fill_pid, &fill_calls, &a), 0);
	http(addr, "GET", "/stats", &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(stats_client_pids(r.body, &first), 1);
	assert_int_equal(first, SECRET_PID);
	free(r.body);
	admin_stop(a);

	assert_int_equal(admin_start("127.0.0.1:0", false, fill_pid, &fill_calls, &a), 0);
	http(admin_address(a), "GET", "/stats", &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(stats_client_pids(r.body, &first), 0);
	assert_null(strstr(r.body, pid));
	assert_int_equal(stats_int(r.body, "readpath.hits"), 7);   /* the totals stay */
	free(r.body);
	http(admin_address(a), "GET", "/metrics", &r);
	assert_null(strstr(r.body, pid));
	free(r.body);
	admin_stop(a);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	log_set_level(LOG_LVL_WARN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_unix),
		cmocka_unit_test(t_unix_stale),
		cmocka_unit_test(t_tcp),
		cmocka_unit_test(t_tcp6),
		cmocka_unit_test(t_remote_refused),
		cmocka_unit_test(t_bad_address),
		cmocka_unit_test(t_stop),
		cmocka_unit_test(t_unix_born_0660),
		cmocka_unit_test(t_tcp_hides_pids),
	};
	return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
