/* api_fixture.h - what test-api.c and its siblings (test-api_dir.c,
 * test-api_client.c) share: errno-checking assertions and the calls by path
 * they make against the group's mcached (tests/integration/harness.h)
 * (header only: each test program is one test source and the harness). */
#ifndef MC_TEST_API_FIXTURE_H
#define MC_TEST_API_FIXTURE_H

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
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

/* errno-checking assertions: the call fails with -1 (or NULL) and errno e. */
#define EXPECT_NULL_ERR(call, e)                                              \
	do {                                                                  \
		errno = 0;                                                    \
		assert_null(call);                                            \
		assert_int_equal(errno, (e));                                 \
	} while (0)

static inline void mkfile(mc_client *c, const char *path, mode_t mode)
{
	int fd = mc_open(c, path, O_CREAT | O_EXCL | O_WRONLY, mode);
	if (fd < 0)
		fail_msg("create %s: %s", path, strerror(errno));
	assert_int_equal(mc_close(c, fd), 0);
}

static inline void mkdir_ok(mc_client *c, const char *path, mode_t mode)
{
	if (mc_mkdir(c, path, mode) < 0)
		fail_msg("mkdir %s: %s", path, strerror(errno));
}

static inline struct stat stat_ok(mc_client *c, const char *path)
{
	struct stat st;
	if (mc_lstat(c, path, &st) < 0)
		fail_msg("lstat %s: %s", path, strerror(errno));
	return st;
}

static inline int64_t ts_ns(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

static inline void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* A string of n copies of ch (static buffer, n < 8192). */
static inline const char *repeat(char ch, size_t n, const char *prefix)
{
	static char buf[8192];
	size_t p = strlen(prefix);
	memcpy(buf, prefix, p);
	memset(buf + p, ch, n);
	buf[p + n] = 0;
	return buf;
}

#endif
