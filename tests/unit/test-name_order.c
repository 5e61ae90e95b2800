/* test-name_order.c - unit tests of the order of names and of the name
 * halfway between two (server/name_order.c), by which the warmers split a
 * directory between them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mc_shm.h"
#include "name_order.h"

static int cmp(const char *a, const char *b)
{
	return name_cmp(a, strlen(a), b, strlen(b));
}

/* Bytewise, unsigned, a prefix first. */
static void test_cmp(void **state)
{
	(void)state;
	assert_true(cmp("a", "b") < 0);
	assert_true(cmp("b", "a") > 0);
	assert_int_equal(cmp("ab", "ab"), 0);
	assert_true(cmp("ab", "abc") < 0);
	assert_true(cmp("abc", "ab") > 0);
	assert_true(cmp("", "a") < 0);
	assert_true(cmp("z", "\xc3\xa9") < 0); /* bytes above 127 come last */
}

/* mid of a and b, checked to lie in [a, b); returns whether it is past a. */
static int mid_between(const char *a, size_t alen, const char *b, size_t blen, char *out,
                       size_t *olen)
{
	*olen = name_mid(a, alen, b, blen, out);
	assert_true(*olen <= MC_NAME_MAX);
	assert_true(name_cmp(out, *olen, a, alen) >= 0);
	assert_true(name_cmp(out, *olen, b, blen) < 0);
	if (*olen > 0)
		assert_int_not_equal(out[*olen - 1], 0); /* trailing zeros cut */
	return name_cmp(out, *olen, a, alen) > 0;
}

static void test_mid_examples(void **state)
{
	(void)state;
	char m[MC_NAME_MAX];
	size_t n;
	assert_true(mid_between("", 0, "z", 1, m, &n));
	assert_int_equal(n, 1);
	assert_int_equal((unsigned char)m[0], 'z' / 2);
	assert_true(mid_between("a", 1, "b", 1, m, &n));
	assert_int_equal(n, 2);
	assert_memory_equal(m, "a\x80", 2);
	/* Names one apart in their last byte: a byte more. */
	assert_true(mid_between("a", 1, "a\x01", 2, m, &n));
	assert_int_equal(n, 3);
	assert_memory_equal(m, "a\0\x80", 3);
	/* Nothing between them within MC_NAME_MAX bytes: a itself. */
	char a[MC_NAME_MAX], b[MC_NAME_MAX];
	memset(a, 'x', sizeof(a));
	memcpy(b, a, sizeof(b));
	b[MC_NAME_MAX - 1] = 'y';
	assert_false(mid_between(a, sizeof(a), b, sizeof(b), m, &n));
	assert_int_equal(n, MC_NAME_MAX);
	/* The longest names, far apart: a carry through every byte. */
	memset(a, 0xff, sizeof(a));
	a[0] = 'a';
	memset(b, 0xff, sizeof(b));
	b[0] = 'c';
	assert_true(mid_between(a, sizeof(a), b, sizeof(b), m, &n));
	assert_int_equal((unsigned char)m[0], 'b');
}

/* Random pairs of every length: always in [a, b), past a unless they
 * share all but a last byte one apart at MC_NAME_MAX. */
static void test_mid_random(void **state)
{
	(void)state;
	srand(7);
	char a[MC_NAME_MAX], b[MC_NAME_MAX], m[MC_NAME_MAX];
	for (int k = 0; k < 20000; k++) {
		size_t alen = (size_t)rand() % (MC_NAME_MAX + 1);
		size_t blen = 1 + (size_t)rand() % MC_NAME_MAX;
		size_t common = (size_t)rand() % (blen + 1);
		for (size_t i = 0; i < MC_NAME_MAX; i++) {
			a[i] = (char)(1 + rand() % 255);
			b[i] = i < common ? a[i] : (char)(1 + rand() % 255);
		}
		int c = name_cmp(a, alen, b, blen);
		if (c == 0)
			continue;
		size_t n;
		if (c < 0)
			mid_between(a, alen, b, blen, m, &n);
		else
			mid_between(b, blen, a, alen, m, &n);
	}
}

/* Cut at the mean, names spread evenly fall in halves of like size:
 * numbered names, and random lowercase ones. */
static void test_mid_halves(void **state)
{
	(void)state;
	enum { N = 100000 };
	char m[MC_NAME_MAX], x[16], y[16];
	snprintf(x, sizeof(x), "f%07d", 0);
	snprintf(y, sizeof(y), "f%07d", N - 1);
	size_t n;
	assert_true(mid_between(x, strlen(x), y, strlen(y), m, &n));
	int below = 0;
	for (int i = 0; i < N; i++) {
		snprintf(x, sizeof(x), "f%07d", i);
		below += name_cmp(x, strlen(x), m, n) <= 0;
	}
	print_message("# f0000000..f%07d cut at %.*s: %d below\n", N - 1, (int)n, m, below);
	assert_true(below > N * 4 / 10 && below < N * 6 / 10);

	srand(11);
	static char names[N][9];
	int lo = 0, hi = 0;
	for (int i = 0; i < N; i++) {
		for (int j = 0; j < 8; j++)
			names[i][j] = (char)('a' + rand() % 26);
		if (name_cmp(names[i], 8, names[lo], 8) < 0)
			lo = i;
		if (name_cmp(names[i], 8, names[hi], 8) > 0)
			hi = i;
	}
	assert_true(mid_between(names[lo], 8, names[hi], 8, m, &n));
	below = 0;
	for (int i = 0; i < N; i++)
		below += name_cmp(names[i], 8, m, n) <= 0;
	assert_true(below > N * 4 / 10 && below < N * 6 / 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cmp),
		cmocka_unit_test(test_mid_examples),
		cmocka_unit_test(test_mid_random),
		cmocka_unit_test(test_mid_halves),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
