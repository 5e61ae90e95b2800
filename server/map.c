/* map.c - the server's small private hash map (map.h). */
#include "map.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A table's first size, and the smallest map_clear cuts one to. */
#define MAP_MIN_CAP 64u

static size_t map_home(const struct map *m, uint64_t key)
{
	return (size_t)(key * 0x9e3779b97f4a7c15ull >> 17) & (m->cap - 1);
}

/* The slot of key, or the empty slot where it would go. */
static size_t map_slot(const struct map *m, uint64_t key)
{
	size_t i = map_home(m, key);
	while (m->keys[i] && m->keys[i] != key)
		i = (i + 1) & (m->cap - 1);
	return i;
}

uint64_t *map_find(const struct map *m, uint64_t key)
{
	if (!m->n)
		return NULL;
	size_t i = map_slot(m, key);
	return m->keys[i] ? &m->vals[i] : NULL;
}

int map_reserve(struct map *m)
{
	if ((m->n + 1) * 2 <= m->cap)
		return 0;
	struct map g = { .cap = m->cap ? m->cap * 2 : MAP_MIN_CAP };
	g.keys = calloc(g.cap, sizeof(*g.keys));
	g.vals = malloc(g.cap * sizeof(*g.vals));
	if (!g.keys || !g.vals) {
		free(g.keys);
		free(g.vals);
		return -ENOMEM;
	}
	for (size_t k = 0; k < m->cap; k++) {
		if (m->keys[k]) {
			size_t j = map_slot(&g, m->keys[k]);
			g.keys[j] = m->keys[k];
			g.vals[j] = m->vals[k];
			g.n++;
		}
	}
	free(m->keys);
	free(m->vals);
	*m = g;
	return 0;
}

int map_put(struct map *m, uint64_t key, uint64_t val)
{
	int rc = map_reserve(m);
	if (rc < 0)
		return rc;
	size_t i = map_slot(m, key);
	if (!m->keys[i]) {
		m->keys[i] = key;
		m->n++;
	}
	m->vals[i] = val;
	return 0;
}

void map_del(struct map *m, uint64_t key)
{
	if (!m->n)
		return;
	size_t i = map_slot(m, key);
	if (!m->keys[i])
		return;
	/* Backward-shift deletion keeps every probe sequence unbroken. */
	size_t j = i;
	for (;;) {
		m->keys[i] = 0;
		for (;;) {
			j = (j + 1) & (m->cap - 1);
			if (!m->keys[j]) {
				m->n--;
				return;
			}
			size_t k = map_home(m, m->keys[j]);
			if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
				continue;
			break;
		}
		m->keys[i] = m->keys[j];
		m->vals[i] = m->vals[j];
		i = j;
	}
}

void map_clear(struct map *m)
{
	if (!m->n)
		return;
	/* A clear costs the table's size. So a table at least four times
	 * the size its keys call for (four slots a key, a power of two) is
	 * cut to that size: otherwise one burst (a batch of a million
	 * records) would make every later clear (each publish, under the
	 * namespace lock) cost what the burst needed. Keys held in steady
	 * numbers keep their table, which growing for them made at most
	 * four slots a key. Without memory for the smaller table, the large
	 * one is kept. */
	size_t want = MAP_MIN_CAP;
	while (want < m->n * 4)
		want *= 2;
	if (m->cap >= want * 4) {
		uint64_t *k = calloc(want, sizeof(*k)), *v = malloc(want * sizeof(*v));
		if (k && v) {
			free(m->keys);
			free(m->vals);
			*m = (struct map){ .keys = k, .vals = v, .cap = want };
			return;
		}
		free(k);
		free(v);
	}
	memset(m->keys, 0, m->cap * sizeof(*m->keys));
	m->n = 0;
}

void map_free(struct map *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}
