/* harness.h - start and stop a real mcached for integration tests, on a
 * socket and data directory under a fresh temporary directory. */
#ifndef MC_HARNESS_H
#define MC_HARNESS_H

#include <stdint.h>
#include <sys/types.h>

#include "mcache.h"
#include "mcache.pb-c.h"

/* Assert that call fails with -1 and errno e (cmocka). */
#define EXPECT_ERR(call, e)                                                   \
	do {                                                                  \
		errno = 0;                                                    \
		assert_int_equal((long)(call), -1);                           \
		assert_int_equal(errno, (e));                                 \
	} while (0)

/* Assert that call returns 0; else fail naming the call and errno. */
#define EXPECT_OK(call)                                                       \
	do {                                                                  \
		errno = 0;                                                    \
		long rc_ = (long)(call);                                      \
		if (rc_ != 0)                                                 \
			fail_msg("%s: %ld, errno %d (%s)", #call, rc_, errno, \
			         strerror(errno));                            \
	} while (0)

struct mc_server {
	pid_t pid;
	char dir[256];       /* temporary directory holding everything below */
	char socket[512];    /* dir/mcached.sock */
	char data[512];      /* dir/data */
	char admin[512];     /* dir/admin.sock (the --admin is unix:admin) */
	char log[512];       /* dir/mcached.log: the server's stderr */
};

/* Make a temporary directory (unless s->dir is already set, to restart a
 * server on the same data) and start $MCACHED (the path meson passes) with
 * --socket, --data, --admin unix:..., and the
 * NULL-terminated extra arguments. Waits until the socket accepts
 * connections (at most 10 s). 0, or -1 with a message on stderr. */
int server_start(struct mc_server *s, const char *const *extra_args);

/* Send sig (SIGTERM for a clean stop, SIGKILL for a crash) and wait.
 * Returns the exit status (0..255), 128 + signal if it died by a signal, or
 * -1 if it did not exit within 15 s (it is then killed). */
int server_stop(struct mc_server *s, int sig);

/* A plain (blocking) unix stream socket connected to path: the fd, or -1
 * with errno. For tests that speak the raw protocol. */
int harness_connect(const char *path);

/* The integer member key of the first object named section (a quoted or bare
 * object key, e.g. "\"limits\"", at any depth, in document order) of the
 * server's statistics JSON, parsed with jansson (duplicate keys rejected).
 * 0 and *out, or -1 when the JSON is invalid or either is missing. */
int harness_json_u64(const char *json, const char *section, const char *key, uint64_t *out);

/* The functions below fail the running cmocka test instead of returning an
 * error. */

/* mc_connect to s. */
mc_client *harness_client(const struct mc_server *s);
/* harness_json_u64 of the server's statistics, read through c. */
uint64_t harness_stat_u64(mc_client *c, const char *section, const char *key);
/* Server s is alive (its process has not exited), and a fresh client can
 * mkdir a new directory and stat it as one. */
void harness_assert_healthy(const struct mc_server *s);

/* A namespace listing: one line per name under "/", sorted. */
struct harness_lines {
	char **v;
	size_t n;
};

/* Every name under "/" (each lstat'ed, directories walked into), sorted.
 * With detail a line is "path mode ino size", else "path type" (the mode's
 * S_IFMT bits only). Free with harness_lines_free. */
struct harness_lines harness_snapshot(mc_client *c, int detail);
void harness_lines_free(struct harness_lines *l);
/* Fail the test at the first line where a and b differ, or if their counts
 * differ. */
void harness_assert_same(const struct harness_lines *a, const struct harness_lines *b);

/* Run $MCACHECTL -s <s's socket> ARGS (ARGS formatted as printf; the shell
 * splits them) with stderr joined to stdout, its output (cut at size - 1
 * bytes, NUL-terminated) in out; its exit status. */
int harness_ctl(const struct mc_server *s, char *out, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* The next Response read from a raw connection, or NULL with *err
 * (-ECONNRESET: the server closed, -EAGAIN: nothing in the socket's receive
 * timeout, -EPROTO: not a Response). A descriptor passed with it (the
 * segment, after hello) is closed. */
Mcache__Response *harness_read_response(int fd, int *err);

/* Remove the temporary directory and everything in it. */
void server_cleanup(struct mc_server *s);

/* The end of a test group: stop s with SIGTERM (naming its log when it did
 * not exit 0), then server_cleanup. 0 when it exited 0, else -1. */
int server_finish(struct mc_server *s);

/* The server of a test group that shares one default server: the group
 * setup clears and starts it (0, or -1 if it did not start), the group
 * teardown is server_finish of it. */
extern struct mc_server harness_srv;
int harness_group_setup(void **state);
int harness_group_teardown(void **state);

#endif
