/* name_order.h - the order of the names of a directory: the store's (LMDB
 * compares keys bytewise, a shorter prefix first, and a dentry's key is
 * its parent's inode number then its name), in which directory scans,
 * listings and warmers go. */
#ifndef MCACHE_NAME_ORDER_H
#define MCACHE_NAME_ORDER_H

#include <stddef.h>
#include <string.h>

/* <0, 0, >0 as a (alen bytes) comes before, equals or follows b. */
static inline int name_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);
	return c ? c : (alen > blen) - (alen < blen);
}

/* A name between a and b (a before b, each at most MC_NAME_MAX bytes)
 * into out (MC_NAME_MAX bytes), returning its length: their mean as
 * base-256 fractions, so a cut at it halves a range of evenly spread
 * names. It may equal a when nothing lies between them in MC_NAME_MAX
 * bytes (a name never holds a zero byte, and trailing ones are cut):
 * the caller compares. */
size_t name_mid(const char *a, size_t alen, const char *b, size_t blen, char *out);

#endif
