/* mc_path.h - the path and permission rules that the server's namespace
 * (server/walk.c) and the client's shared-memory walk (client/shmview.c)
 * must apply identically: splitting a path into components, and Linux's
 * generic_permission(). */
#ifndef MC_PATH_H
#define MC_PATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "mc_shm.h"

#define MC_MAY_EXEC  1
#define MC_MAY_WRITE 2
#define MC_MAY_READ  4

/* What the last component of a path is. */
enum mc_last { MC_LAST_NORM, MC_LAST_ROOT, MC_LAST_DOT, MC_LAST_DOTDOT };

struct mc_comp {
	const char *name;
	size_t len;
	bool last;       /* nothing but slashes follows */
	bool slash;      /* the last component was followed by slashes */
	uint64_t hash;   /* mc_hash_part(seed, name, len) (mc_path_next_hash) */
	uint64_t w[2];   /* the name's first 16 bytes, zero-padded past len */
};

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the word-at-a-time parser is little-endian");

#define MC_PATH_ONES  0x0101010101010101ull
#define MC_PATH_HIGHS 0x8080808080808080ull
#define MC_PATH_SLASHES 0x2f2f2f2f2f2f2f2full

/* The index of the first '/' byte of the little-endian word w, 8 if none. */
static inline unsigned mc_path_slash_at(uint64_t w)
{
	uint64_t x = w ^ MC_PATH_SLASHES;
	uint64_t z = (x - MC_PATH_ONES) & ~x & MC_PATH_HIGHS;
	return z ? (unsigned)__builtin_ctzll(z) >> 3 : 8;
}

/* p[0..n), n <= 8, as a little-endian word zero-padded past n, reading no
 * byte outside: a memcpy of a variable length under 8 is a call. Two
 * overlapping 4-byte loads cover 4..7 bytes, three byte loads 1..3. */
static inline uint64_t mc_load_part(const char *p, size_t n)
{
	uint64_t w;
	if (n == 8) {
		memcpy(&w, p, 8);
		return w;
	}
	if (n >= 4) {
		uint32_t a, b;
		memcpy(&a, p, 4);
		memcpy(&b, p + n - 4, 4);
		return a | (uint64_t)b << (8 * (n - 4));
	}
	if (n == 0)
		return 0;
	w = (uint8_t)p[0];
	w |= (uint64_t)(uint8_t)p[n / 2] << (8 * (n / 2));
	return w | (uint64_t)(uint8_t)p[n - 1] << (8 * (n - 1));
}

/* The next component of the path at *p (before end), skipping slashes,
 * found 8 bytes at a time and folded into c->hash on the way (the dentry
 * hash's name part, mc_hash_part, from seed). false when only slashes were
 * left. Reads no byte at or past end. */
static inline bool mc_path_next_hash(const char **p, const char *end, uint64_t seed,
                                     struct mc_comp *c)
{
	const char *s = *p;
	while (s < end && *s == '/')
		s++;
	if (s == end)
		return false;
	const char *q = s;
	uint64_t h = seed;
	unsigned k = 0;
	c->w[0] = c->w[1] = 0;
	for (;;) {
		uint64_t w = 0;
		size_t room = (size_t)(end - q);
		if (room >= 8)
			memcpy(&w, q, 8);
		else
			w = mc_load_part(q, room); /* zero bytes are never '/' */
		unsigned i = mc_path_slash_at(w);
		if (i > room)
			i = (unsigned)room;
		if (i < 8) {
			if (i) {
				w &= ~0ull >> (64 - 8 * i);
				h = mc_hash_mix(h, w);
				if (k < 2)
					c->w[k] = w;
			}
			q += i;
			break;
		}
		h = mc_hash_mix(h, w);
		if (k < 2)
			c->w[k] = w;
		k++;
		q += 8;
	}
	const char *e = q;
	while (q < end && *q == '/')
		q++;
	c->name = s;
	c->len = (size_t)(e - s);
	c->hash = h;
	c->last = q == end;
	c->slash = e < end;
	*p = e;
	return true;
}

/* The component name[0..len) (no slash in it, nothing after it), as
 * mc_path_next_hash would give it. */
static inline void mc_comp_make(const char *name, size_t len, uint64_t seed, struct mc_comp *c)
{
	/* The first two words apart: they are kept (c->w) as well as hashed. */
	uint64_t h = seed, w0 = 0, w1 = 0;
	size_t k = len & ~(size_t)7;   /* bytes in whole words */
	if (len >= 8) {
		memcpy(&w0, name, 8);
		h = mc_hash_mix(h, w0);
		if (len >= 16) {
			memcpy(&w1, name + 8, 8);
			h = mc_hash_mix(h, w1);
			for (size_t i = 16; i < k; i += 8) {
				uint64_t w;
				memcpy(&w, name + i, 8);
				h = mc_hash_mix(h, w);
			}
		}
	}
	if (k < len) {
		uint64_t w = mc_load_part(name + k, len - k);
		h = mc_hash_mix(h, w);
		if (k == 0)
			w0 = w;
		else if (k == 8)
			w1 = w;
	}
	c->w[0] = w0;
	c->w[1] = w1;
	c->name = name;
	c->len = len;
	c->hash = h;
	c->last = true;
	c->slash = false;
}

/* mc_path_next_hash with seed 0, for those who need no hash. */
static inline bool mc_path_next(const char **p, const char *end, struct mc_comp *c)
{
	return mc_path_next_hash(p, end, 0, c);
}

static inline enum mc_last mc_comp_type(const char *name, size_t len)
{
	if (len == 1 && name[0] == '.')
		return MC_LAST_DOT;
	if (len == 2 && name[0] == '.' && name[1] == '.')
		return MC_LAST_DOTDOT;
	return MC_LAST_NORM;
}

static inline bool mc_in_group(uint32_t gid, const uint32_t *groups, int ngroups, uint32_t g)
{
	if (gid == g)
		return true;
	for (int i = 0; i < ngroups; i++)
		if (groups[i] == g)
			return true;
	return false;
}

/* generic_permission(): may (uid, gid, groups) access an inode of mode,
 * owner and group with mask (MC_MAY_*)? Root passes reads and writes, and
 * exec where any exec bit is set or on a directory. 0 or -EACCES (13). */
static inline int mc_permission(uint32_t uid, uint32_t gid, const uint32_t *groups, int ngroups,
                                uint32_t mode, uint32_t owner, uint32_t group, int mask)
{
	if (uid == 0) {
		if (!(mask & MC_MAY_EXEC) || S_ISDIR(mode) || (mode & 0111))
			return 0;
		return -13;
	}
	unsigned bits;
	if (uid == owner)
		bits = (mode >> 6) & 7;
	else if (mc_in_group(gid, groups, ngroups, group))
		bits = (mode >> 3) & 7;
	else
		bits = mode & 7;
	return ((unsigned)mask & ~bits) ? -13 : 0;
}

#endif
