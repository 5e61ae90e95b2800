/* test-clients.c - the table of connected clients: listing, order,
 * removal, request counts and rendering. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "clients.h"

static json_t *render(struct clients *t)
{
	char *s = NULL;
	size_t len = 0;
	assert_int_equal(clients_render(t, &s, &len), 0);
	assert_int_equal(strlen(s), len);
	json_t *a = json_loads(s, JSON_REJECT_DUPLICATES, NULL);
	free(s);
	assert_true(json_is_array(a));
	return a;
}

static json_int_t field(json_t *a, size_t i, const char *k)
{
	return json_integer_value(json_object_get(json_array_get(a, i), k));
}

static void t_list(void **state)
{
	(void)state;
	struct clients *t;
	struct client_ent a = { .listed = false }, b = { .listed = false };
	assert_int_equal(clients_new(&t), 0);
	clients_add(t, &a, 100, 1000, 1001);
	clients_add(t, &b, 200, 2000, 2001);
	client_ent_request(&b);
	client_ent_request(&b);
	assert_int_equal(clients_count(t), 2);
	json_t *l = render(t);
	assert_int_equal(json_array_size(l), 2);
	assert_int_equal(field(l, 0, "pid"), 100);   /* oldest first */
	assert_int_equal(field(l, 0, "uid"), 1000);
	assert_int_equal(field(l, 0, "gid"), 1001);
	assert_int_equal(field(l, 0, "requests"), 0);
	assert_int_equal(field(l, 1, "pid"), 200);
	assert_int_equal(field(l, 1, "requests"), 2);
	double age = json_real_value(json_object_get(json_array_get(l, 0), "age_seconds"));
	assert_true(age >= 0 && age < 60);
	json_decref(l);

	clients_remove(t, &a);
	clients_remove(t, &a);          /* a no-op the second time */
	assert_int_equal(clients_count(t), 1);
	l = render(t);
	assert_int_equal(json_array_size(l), 1);
	assert_int_equal(field(l, 0, "pid"), 200);
	json_decref(l);
	clients_remove(t, &b);
	assert_int_equal(clients_count(t), 0);
	clients_free(t);
}

static void t_null_table(void **state)
{
	(void)state;
	struct client_ent e = { .listed = false };
	clients_add(NULL, &e, 1, 2, 3);
	assert_false(e.listed);
	clients_remove(NULL, &e);
	json_t *l = render(NULL);
	assert_int_equal(json_array_size(l), 0);
	json_decref(l);
	clients_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_list),
		cmocka_unit_test(t_null_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
