/* test-slowlog.c - the slow-operation log: threshold, ring order and
 * length, path truncation and bad UTF-8, reconfiguration, rendering. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "mcache.pb-c.h"
#include "slowlog.h"

static void add(struct slowlog *sl, const char *path, uint64_t us)
{
	struct slowlog_op op = { .code = MCACHE__OP_CODE__OP_MKDIR, .path = path,
	                         .path_len = path ? strlen(path) : 0, .duration_us = us,
	                         .pid = 42, .uid = 7 };
	slowlog_add(sl, &op);
}

static json_t *render(struct slowlog *sl, unsigned n)
{
	char *s = NULL;
	size_t len = 0;
	assert_int_equal(slowlog_render(sl, n, &s, &len), 0);
	assert_int_equal(strlen(s), len);
	json_error_t e;
	json_t *a = json_loads(s, JSON_REJECT_DUPLICATES, &e);
	free(s);
	assert_true(json_is_array(a));
	return a;
}

static const char *path_at(json_t *a, size_t i)
{
	return json_string_value(json_object_get(json_array_get(a, i), "path"));
}

static void t_threshold(void **state)
{
	(void)state;
	struct slowlog *sl;
	assert_int_equal(slowlog_new(1000, 8, &sl), 0);
	assert_false(slowlog_wants(sl, 999));
	assert_true(slowlog_wants(sl, 1000));
	assert_false(slowlog_wants(NULL, UINT64_MAX));
	assert_int_equal(slowlog_configure(sl, 0, 8), 0);
	assert_true(slowlog_wants(sl, 0));
	slowlog_free(sl);
}

static void t_ring_newest_first(void **state)
{
	(void)state;
	struct slowlog *sl;
	char p[16];
	assert_int_equal(slowlog_new(0, 3, &sl), 0);
	for (int i = 1; i <= 5; i++) {
		snprintf(p, sizeof(p), "/p%d", i);
		add(sl, p, (uint64_t)i * 1000);
	}
	assert_int_equal(slowlog_total(sl), 5);
	json_t *a = render(sl, 0);
	assert_int_equal(json_array_size(a), 3);
	assert_string_equal(path_at(a, 0), "/p5");
	assert_string_equal(path_at(a, 2), "/p3");
	json_t *o = json_array_get(a, 0);
	assert_int_equal(json_integer_value(json_object_get(o, "id")), 5);
	assert_int_equal(json_integer_value(json_object_get(o, "pid")), 42);
	assert_int_equal(json_integer_value(json_object_get(o, "uid")), 7);
	assert_string_equal(json_string_value(json_object_get(o, "op")), "mkdir");
	assert_true(json_real_value(json_object_get(o, "duration_seconds")) == 0.005);
	json_decref(a);
	a = render(sl, 2);
	assert_int_equal(json_array_size(a), 2);
	assert_string_equal(path_at(a, 1), "/p4");
	json_decref(a);
	a = render(sl, 99);
	assert_int_equal(json_array_size(a), 3);
	json_decref(a);
	slowlog_free(sl);
}

static void t_paths(void **state)
{
	(void)state;
	struct slowlog *sl;
	char longp[300];
	memset(longp, 'a', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = '\0';
	assert_int_equal(slowlog_new(0, 4, &sl), 0);
	add(sl, longp, 1);
	add(sl, "/caf\xc3", 1);  /* a cut UTF-8 sequence */
	add(sl, NULL, 1);        /* an op without a path */
	json_t *a = render(sl, 0);
	assert_string_equal(path_at(a, 0), "");
	assert_string_equal(path_at(a, 1), "/caf?");
	assert_int_equal(strlen(path_at(a, 2)), SLOWLOG_PATH_MAX);
	assert_true(json_is_true(json_object_get(json_array_get(a, 2), "path_truncated")));
	assert_true(json_is_false(json_object_get(json_array_get(a, 1), "path_truncated")));
	json_decref(a);
	slowlog_free(sl);
}

/* A long UTF-8 path is cut before the character that straddles the bound,
 * so it stays valid and keeps its characters. */
static void t_paths_utf8(void **state)
{
	(void)state;
	struct slowlog *sl;
	char p[1 + 2 * 100 + 1], want[SLOWLOG_PATH_MAX + 1];
	size_t n = 0;
	p[n++] = '/';
	for (int i = 0; i < 100; i++) {      /* U+00E9, two bytes: byte 128 is its second */
		p[n++] = '\xc3';
		p[n++] = '\xa9';
	}
	p[n] = '\0';
	memcpy(want, p, SLOWLOG_PATH_MAX - 1);
	want[SLOWLOG_PATH_MAX - 1] = '\0';
	assert_int_equal(slowlog_new(0, 4, &sl), 0);
	add(sl, p, 1);
	add(sl, p + 1, 1);                   /* "\xc3\xa9"...: byte 128 starts a character */
	json_t *a = render(sl, 0);
	assert_string_equal(path_at(a, 1), want);
	assert_true(json_is_true(json_object_get(json_array_get(a, 1), "path_truncated")));
	assert_int_equal(strlen(path_at(a, 0)), SLOWLOG_PATH_MAX);
	assert_memory_equal(path_at(a, 0), p + 1, SLOWLOG_PATH_MAX);
	json_decref(a);
	slowlog_free(sl);
}

static void t_configure(void **state)
{
	(void)state;
	struct slowlog *sl;
	assert_int_equal(slowlog_new(0, 2, &sl), 0);
	add(sl, "/a", 1);
	/* The same length keeps the entries; a new one empties the log. */
	assert_int_equal(slowlog_configure(sl, 5, 2), 0);
	json_t *a = render(sl, 0);
	assert_int_equal(json_array_size(a), 1);
	json_decref(a);
	assert_int_equal(slowlog_configure(sl, 5, 4), 0);
	a = render(sl, 0);
	assert_int_equal(json_array_size(a), 0);
	json_decref(a);
	add(sl, "/b", 9);
	a = render(sl, 0);
	assert_int_equal(json_array_size(a), 1);
	/* Ids go on counting across the change. */
	assert_int_equal(json_integer_value(json_object_get(json_array_get(a, 0), "id")), 2);
	json_decref(a);
	assert_int_equal(slowlog_configure(sl, 5, SLOWLOG_LEN_MAX + 1), -EINVAL);
	/* Length 0: counted, not kept. */
	assert_int_equal(slowlog_configure(sl, 0, 0), 0);
	add(sl, "/c", 1);
	assert_int_equal(slowlog_total(sl), 3);
	a = render(sl, 0);
	assert_int_equal(json_array_size(a), 0);
	json_decref(a);
	slowlog_free(sl);
}

static void t_new_and_null(void **state)
{
	(void)state;
	struct slowlog *sl = NULL;
	assert_int_equal(slowlog_new(0, SLOWLOG_LEN_MAX + 1, &sl), -EINVAL);
	assert_null(sl);
	json_t *a = render(NULL, 0);
	assert_int_equal(json_array_size(a), 0);
	json_decref(a);
	slowlog_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_threshold),
		cmocka_unit_test(t_ring_newest_first),
		cmocka_unit_test(t_paths),
		cmocka_unit_test(t_paths_utf8),
		cmocka_unit_test(t_configure),
		cmocka_unit_test(t_new_and_null),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
