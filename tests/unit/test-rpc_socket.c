/* test-rpc_socket.c - the RPC server's listening socket and connections
 * (server/rpc.c): its mode (never looser than 0660, even under umask 0),
 * a second server refused, a stale socket replaced and a regular file
 * kept, the connection limit and the idle timeout. */
#include "rpc_fixture.h"
#include "chmod_spy.h"

static void test_socket_mode(void **state)
{
	struct fx *f = *state;
	struct stat st;

	assert_int_equal(lstat(f->path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0660);
}

/* Even under umask 0 the socket is never looser than 0660 (no chmod after
 * bind, whose window another user could connect in). */
static void test_socket_born_0660(void **state)
{
	struct fx *f = *state;
	struct rpc_opts o = f->o;
	struct rpc *r2 = NULL;
	char path[128];
	struct stat st;
	mode_t old;
	int rc;

	snprintf(path, sizeof(path), "%s/born.sock", f->dir);
	o.socket_path = path;
	chmod_calls = 0;
	old = umask(0);
	rc = rpc_start(&o, &f->m, &r2);
	umask(old);
	assert_int_equal(rc, 0);
	if (chmod_calls > 0 && (chmod_seen_mode & ~0660) != 0)
		fail_msg("the socket had mode %o before chmod", (unsigned)chmod_seen_mode);
	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0660);
	rpc_stop(r2);
}

static void test_second_start_refused(void **state)
{
	struct fx *f = *state;
	struct rpc *r2 = NULL;
	int fd;

	assert_int_equal(rpc_start(&f->o, &f->m, &r2), -EADDRINUSE);
	assert_null(r2);
	/* The first server's socket is intact. */
	fd = cli_open(f->path);
	cli_check_stat(fd, 2, "/first");
	close(fd);
}

static void test_stale_socket_replaced(void **state)
{
	struct fx *f = *state;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s, fd;

	rpc_stop(f->r);
	f->r = NULL;
	assert_int_equal(access(f->path, F_OK), -1);   /* unlinked at stop */
	/* A socket file nobody listens on. */
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	strcpy(sa.sun_path, f->path);
	assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(s);
	assert_int_equal(fx_start(f), 0);
	fd = cli_open(f->path);
	cli_check_stat(fd, 2, "/new");
	close(fd);
}

static void test_regular_file_kept(void **state)
{
	struct fx *f = *state;
	struct rpc *r2 = NULL;
	char path[128];
	struct rpc_opts o = f->o;
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s/not-a-socket", f->dir);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
	o.socket_path = path;
	assert_int_equal(rpc_start(&o, &f->m, &r2), -EADDRINUSE);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	unlink(path);

	memset(path, 'n', sizeof(path) - 1);
	path[0] = '/';
	path[sizeof(path) - 1] = 0;
	assert_int_equal(rpc_start(&o, &f->m, &r2), -ENAMETOOLONG);
}

static void test_max_conns(void **state)
{
	struct fx *f = *state;
	int fds[MAX_CONNS], extra;

	for (int i = 0; i < MAX_CONNS; i++)
		fds[i] = cli_open(f->path);
	assert_int_equal(rpc_clients(f->r), MAX_CONNS);
	/* Accepted, then closed at once. */
	extra = cli_connect(f->path);
	cli_expect_closed(extra);
	close(extra);
	assert_int_equal(rpc_clients(f->r), MAX_CONNS);
	/* One leaves: room for one more. */
	close(fds[0]);
	wait_clients(f->r, MAX_CONNS - 1);
	fds[0] = cli_open(f->path);
	cli_check_stat(fds[0], 2, "/room");
	for (int i = 0; i < MAX_CONNS; i++)
		close(fds[i]);
	wait_clients(f->r, 0);
}

static void test_idle_timeout(void **state)
{
	struct fx *f = *state;
	int idle = cli_open(f->path), busy = cli_open(f->path);
	uint64_t t0 = ms_now();

	/* busy keeps talking across the timeout; idle says nothing. */
	for (int i = 0; i < 6; i++) {
		cli_check_stat(busy, 10 + (uint64_t)i, "/busy");
		usleep(300 * 1000);
	}
	cli_expect_closed(idle);
	assert_true(ms_now() - t0 >= 1000);
	cli_check_stat(busy, 20, "/still");
	close(idle);
	wait_clients(f->r, 1);
	close(busy);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_socket_mode),
		T(test_socket_born_0660),
		T(test_second_start_refused),
		T(test_stale_socket_replaced),
		T(test_regular_file_kept),
		T(test_max_conns),
		cmocka_unit_test_setup_teardown(test_idle_timeout, fx_setup_idle, fx_teardown),
	};

	return cmocka_run_group_tests_name("rpc_socket", tests, NULL, NULL);
}
