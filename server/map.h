/* map.h - a small hash map from nonzero 64-bit keys to 64-bit values (open
 * addressing, linear probing, backward-shift deletion), for the server's
 * private indexes: inodes held open, journal records per slot. Not thread
 * safe: its owner's lock covers it. */
#ifndef MC_MAP_H
#define MC_MAP_H

#include <stddef.h>
#include <stdint.h>

struct map {
	uint64_t *keys;      /* 0: empty */
	uint64_t *vals;
	size_t cap, n;       /* cap is 0 or a power of two; n <= cap / 2 */
};

/* The value of key, or NULL. The pointer is valid until the next map_put,
 * map_reserve, map_del or map_clear. */
uint64_t *map_find(const struct map *m, uint64_t key);
/* Make room for one more key: then the next map_put cannot fail.
 * 0 or -ENOMEM (the map unchanged). */
int map_reserve(struct map *m);
/* Set key to val (adding it). 0 or -ENOMEM (the map unchanged). */
int map_put(struct map *m, uint64_t key, uint64_t val);
/* Remove key if present. */
void map_del(struct map *m, uint64_t key);
/* Remove every key, keeping the table unless it is far larger than they
 * needed (then a smaller one: the cost of a clear follows what the map
 * held last, not the most it ever held). */
void map_clear(struct map *m);
void map_free(struct map *m);

#endif
