/* test-ctlextents.c - `mcachectl extents` against a real mcached: extents and
 * extent-state ranges set through the public API, then read back from the
 * tool's table and --json output, and its errors. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>
#include <jansson.h>

#include "harness.h"
#include "mcache.h"

static struct mc_server srv;
static mc_client *cl;
static int fd = -1; /* /f, held open so its state stays */

/* mcachectl ARGS against the server (harness_ctl). */
#define ctl(out, size, ...) harness_ctl(&srv, out, size, __VA_ARGS__)

static int group_setup(void **state)
{
	(void)state;
	memset(&srv, 0, sizeof(srv));
	if (server_start(&srv, NULL) != 0)
		return -1;
	cl = mc_connect(srv.socket);
	if (!cl || mc_mkdir(cl, "/d", 0755) < 0)
		return -1;
	fd = mc_open(cl, "/f", O_CREAT | O_RDWR, 0644);
	if (fd < 0 || mc_ftruncate(cl, fd, 1 << 20) < 0)
		return -1;
	const struct mc_extent x[] = {
		{ .off = 0, .len = 4096, .phys = 1000000, .flags = 1 },
		{ .off = 8192, .len = 4096, .phys = 2000000, .flags = 0 },
	};
	for (size_t i = 0; i < 2; i++)
		if (mc_extent_set(cl, fd, &x[i]) < 0)
			return -1;
	/* Overlapping bits, so the merged runs differ from each bit's runs. */
	if (mc_range_set(cl, fd, 0, 99, MC_RANGE_DIRTY) < 0 ||
	    mc_range_set(cl, fd, 50, 199, MC_RANGE_UPTODATE) < 0 ||
	    mc_range_set(cl, fd, 1000, UINT64_MAX, 1u << 8) < 0)
		return -1;
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	mc_close(cl, fd);
	mc_disconnect(cl);
	return server_finish(&srv);
}

static void test_table(void **state)
{
	(void)state;
	char out[4096];
	assert_int_equal(ctl(out, sizeof(out), "extents /f"), 0);
	assert_string_equal(out,
		"OFF                  LEN                  PHYS                 FLAGS\n"
		"0                    4096                 1000000              0x1\n"
		"8192                 4096                 2000000              0x0\n"
		"START                END                  BITS\n"
		"0                    49                   0x1\n"
		"50                   99                   0x11\n"
		"100                  199                  0x10\n"
		"1000                 18446744073709551615 0x100\n");
}

static void test_json(void **state)
{
	(void)state;
	char out[8192];
	json_error_t err;
	assert_int_equal(ctl(out, sizeof(out), "--json extents /f"), 0);
	json_t *d = json_loads(out, 0, &err);
	assert_non_null(d);
	assert_int_equal(json_array_size(d), 1);
	json_t *o = json_array_get(d, 0);
	assert_string_equal(json_string_value(json_object_get(o, "path")), "/f");
	json_t *xs = json_object_get(o, "extents"), *rs = json_object_get(o, "ranges");
	assert_int_equal(json_array_size(xs), 2);
	json_t *x1 = json_array_get(xs, 1);
	assert_int_equal(json_integer_value(json_object_get(x1, "off")), 8192);
	assert_int_equal(json_integer_value(json_object_get(x1, "len")), 4096);
	assert_int_equal(json_integer_value(json_object_get(x1, "phys")), 2000000);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(xs, 0), "flags")), 1);
	assert_int_equal(json_array_size(rs), 4);
	json_t *r1 = json_array_get(rs, 1), *r3 = json_array_get(rs, 3);
	assert_int_equal(json_integer_value(json_object_get(r1, "start")), 50);
	assert_int_equal(json_integer_value(json_object_get(r1, "end")), 99);
	assert_int_equal(json_integer_value(json_object_get(r1, "bits")), 0x11);
	/* Past 2^63 - 1: the digits, as a string. */
	assert_string_equal(json_string_value(json_object_get(r3, "end")), "18446744073709551615");
	json_decref(d);
}

static void test_empty(void **state)
{
	(void)state;
	char out[4096];
	assert_true(mc_close(cl, mc_creat(cl, "/e", 0644)) == 0);
	assert_int_equal(ctl(out, sizeof(out), "extents /e"), 0);
	assert_string_equal(out,
		"OFF                  LEN                  PHYS                 FLAGS\n"
		"START                END                  BITS\n");
}

static void test_errors(void **state)
{
	(void)state;
	char out[4096];
	assert_int_equal(ctl(out, sizeof(out), "extents /d"), 1);
	assert_string_equal(out, "mcachectl: /d: Is a directory\n");
	assert_int_equal(ctl(out, sizeof(out), "extents /nope"), 1);
	assert_string_equal(out, "mcachectl: /nope: No such file or directory\n");
	assert_int_equal(ctl(out, sizeof(out), "extents"), 2);
	assert_int_equal(ctl(out, sizeof(out), "extents /f /e"), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests_name("ctlextents", tests, group_setup, group_teardown);
}
