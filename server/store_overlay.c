/* store_overlay.c - committed changes not yet in the tables, by table key
 * (store_overlay.h): a chained hash table of entries that each hold the key
 * and the newest value, grown by doubling, emptied at once when the
 * store applies the log to its tables. Each dentry entry is also on its
 * parent's list (struct ovl_dir, found by parent in a struct map), and an
 * entry never moves once made (a dentry's room fits any of its values), so
 * those lists need no upkeep but the push of a new key.
 *
 * INVARIANTS
 *  1. Entries and directory lists come from the overlay's arena and are
 *     never freed one by one: an inode entry replaced by a larger one stays
 *     there, unreachable, until ovl_clear frees every chunk at once. So the
 *     arena holds at most one dead entry per inode record added.
 *  2. Keys are distinct (one entry per table and key), so a sort of them
 *     needs no stability, and its order is the tables' (ovl_keycmp).
 *  3. made[0..n) holds each entry once, in the order its key first came
 *     (an entry replaced takes its old one's place, e->at); the sorts start
 *     from that order, where a batch's new keys come in runs already.
 *  4. ovl_reset (at an apply) empties the bucket table and made[] but
 *     keeps their memory up to OVL_KEEP_BUCKETS buckets, so the overlay of
 *     the next batches does not grow them again by doubling; ovl_clear
 *     gives everything back.
 */
#include "store_overlay.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "mc_shm.h"

#define OVL_MIN_BUCKETS 256u
#define OVL_DENTRY_VAL  9u      /* u64 ino, u8 dtype (store.h) */
#define OVL_CHUNK       (64u << 10)     /* arena bytes at a time */
#define OVL_SORT_SMALL  16u     /* runs sorted by insertion */
#define OVL_KEEP_BUCKETS (64u << 10)    /* a clear keeps a table this size or less */

/* A word at a time: keys are 8 bytes (an inode) or 9..8+MC_NAME_MAX (a
 * dentry), so a byte-at-a-time hash spends most of ovl_set's time. The
 * final mix spreads every bit into the low ones, which pick the bucket. */
static uint64_t ovl_hash(unsigned t, const uint8_t *k, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull * (t + 1) ^ n, w;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		memcpy(&w, k + i, 8);
		h = (h ^ w) * 0x9fb21c651e98df25ull;
		h ^= h >> 29;
	}
	if (i < n) {
		w = 0;
		memcpy(&w, k + i, n - i);
		h = (h ^ w) * 0x9fb21c651e98df25ull;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 33);
}

/* n bytes from the overlay's arena (8-aligned), freed all at once by
 * ovl_clear; NULL: no memory. */
static void *ovl_alloc(struct store_ovl *o, size_t n)
{
	struct ovl_chunk *c = o->arena;
	n = (n + 7) & ~(size_t)7;
	if (!c || c->cap - c->used < n) {
		size_t cap = n > OVL_CHUNK ? n : OVL_CHUNK;
		if (!(c = malloc(sizeof(*c) + cap)))
			return NULL;
		c->next = o->arena;
		c->used = 0;
		c->cap = cap;
		o->arena = c;
	}
	void *p = c->mem + c->used;
	c->used += n;
	return p;
}

static struct ovl_ent **ovl_slot(const struct store_ovl *o, unsigned t, const uint8_t *k,
                                 size_t klen, uint64_t h)
{
	struct ovl_ent **pp = &o->tab[h & (o->nbuckets - 1)];
	for (; *pp; pp = &(*pp)->next) {
		const struct ovl_ent *e = *pp;
		if (e->hash == h && e->table == t && e->klen == klen &&
		    memcmp(e->data, k, klen) == 0)
			break;
	}
	return pp;
}

static int ovl_grow(struct store_ovl *o)
{
	size_t nb = o->nbuckets ? o->nbuckets * 2 : OVL_MIN_BUCKETS;
	struct ovl_ent **tab = calloc(nb, sizeof(*tab));
	if (!tab)
		return -ENOMEM;
	for (size_t i = 0; i < o->nbuckets; i++) {
		struct ovl_ent *e = o->tab[i], *next;
		for (; e; e = next) {
			next = e->next;
			e->next = tab[e->hash & (nb - 1)];
			tab[e->hash & (nb - 1)] = e;
		}
	}
	free(o->tab);
	o->tab = tab;
	o->nbuckets = nb;
	return 0;
}

static struct ovl_dir *ovl_dir_find(const struct store_ovl *o, uint64_t parent)
{
	uint64_t *v = map_find(&o->dirs, parent);
	return v ? (struct ovl_dir *)(uintptr_t)*v : NULL;
}

/* The list of parent's dentries, made when missing; NULL: no memory. */
static struct ovl_dir *ovl_dir_get(struct store_ovl *o, uint64_t parent)
{
	/* A batch's names come in runs of one directory: the last one
	 * found is asked again without the map. */
	struct ovl_dir *d = o->last_dir;
	if (d && d->parent == parent)
		return d;
	d = ovl_dir_find(o, parent);
	if (!d) {
		if (map_reserve(&o->dirs) < 0 || !(d = ovl_alloc(o, sizeof(*d))))
			return NULL;
		*d = (struct ovl_dir){ .parent = parent };
		map_put(&o->dirs, parent, (uintptr_t)d); /* reserved: cannot fail */
	}
	o->last_dir = d;
	return d;
}

/* Room in o->made for one more entry; 0 or -ENOMEM. */
static int ovl_made_room(struct store_ovl *o)
{
	if (o->n < o->made_cap)
		return 0;
	size_t cap = o->made_cap ? o->made_cap * 2 : OVL_MIN_BUCKETS;
	struct ovl_ent **m = cap <= UINT32_MAX ? realloc(o->made, cap * sizeof(*m)) : NULL;
	if (!m)
		return -ENOMEM;
	o->made = m;
	o->made_cap = cap;
	return 0;
}

/* Set key k of table t to v (vlen bytes), or to deleted when v is NULL. */
static int ovl_set(struct store_ovl *o, unsigned t, const uint8_t *k, size_t klen,
                   const uint8_t *v, size_t vlen)
{
	if ((o->n >= o->nbuckets && ovl_grow(o) < 0) || ovl_made_room(o) < 0)
		return -ENOMEM;
	uint64_t h = ovl_hash(t, k, klen);
	struct ovl_ent **pp = ovl_slot(o, t, k, klen, h), *old = *pp;
	o->gen++;
	struct ovl_ent *e;
	struct ovl_dir *d = NULL;
	/* A dentry's room is the size of its value (deletions too): it never
	 * moves, being on its parent's list. An inode's fits any inode but a
	 * symlink's with a longer target. */
	size_t cap = t == OVL_DENTRIES ? OVL_DENTRY_VAL :
	             vlen > JOURNAL_INODE_DISK_SIZE ? vlen : JOURNAL_INODE_DISK_SIZE;
	if (old && old->vcap >= vlen) {
		e = old;                        /* reuse it: the value fits */
	} else {
		/* Inode numbers start at 1: 0 is no key of the map. */
		if (t == OVL_DENTRIES && get_be64(k) == 0)
			return -EINVAL;
		if (t == OVL_DENTRIES && !(d = ovl_dir_get(o, get_be64(k))))
			return -ENOMEM;
		e = ovl_alloc(o, sizeof(*e) + klen + cap);
		if (!e)
			return -ENOMEM;
		e->next = old ? old->next : NULL;
		e->dnext = NULL;
		e->hash = h;
		e->k8 = get_be64(k);
		e->table = (uint8_t)t;
		e->klen = (uint16_t)klen;
		e->vcap = (uint16_t)cap;
		e->dropped = old && old->dropped;
		memcpy(e->data, k, klen);
		*pp = e;                        /* an old one (an inode's: on no list)
		                                 * stays in the arena until the clear */
		e->at = old ? old->at : (uint32_t)o->n++;
		o->made[e->at] = e;
		if (d) {
			e->dnext = d->first;
			d->first = e;
			d->n++;
		}
	}
	e->deleted = v == NULL;
	e->dropped = e->dropped || e->deleted;
	e->vlen = (uint16_t)vlen;
	if (vlen)
		memcpy(e->data + klen, v, vlen);
	return 0;
}

int ovl_add(struct store_ovl *o, const struct journal_rec *r)
{
	uint8_t key[8 + MC_NAME_MAX];
	uint8_t val[JOURNAL_INODE_DISK_SIZE + MC_SYMLINK_MAX];

	switch (r->type) {
	case JR_INODE_PUT:
		put_be64(key, r->inode.ino);
		journal_inode_encode(&r->inode, val);
		if (r->target_len)
			memcpy(val + JOURNAL_INODE_DISK_SIZE, r->target, r->target_len);
		return ovl_set(o, OVL_INODES, key, 8, val, JOURNAL_INODE_DISK_SIZE + r->target_len);
	case JR_INODE_DEL:
		put_be64(key, r->ino);
		return ovl_set(o, OVL_INODES, key, 8, NULL, 0);
	case JR_DENTRY_PUT:
		put_be64(key, r->parent);
		memcpy(key + 8, r->name, r->namelen);
		put_le64(val, r->ino);
		val[8] = r->dtype;
		return ovl_set(o, OVL_DENTRIES, key, 8 + r->namelen, val, 9);
	case JR_DENTRY_DEL:
		put_be64(key, r->parent);
		memcpy(key + 8, r->name, r->namelen);
		return ovl_set(o, OVL_DENTRIES, key, 8 + r->namelen, NULL, 0);
	case JR_EXTENT_SET:
	case JR_EXTENT_PUNCH:
		return 0;
	case JR_INODE_UNLINK:
		/* Relative to the tables: its batch is applied in its own
		 * commit (store_log.c note 5), so it never comes here. Should it,
		 * the overlay is broken and reads apply first. */
		return -EINVAL;
	}
	return 0;
}

/* A record header (journal.h): u8 type, u8 dtype, u16 namelen, u32
 * body_len. */
#define OVL_REC_HDR 8u

int ovl_add_batch(struct store_ovl *o, const uint8_t *buf, size_t len)
{
	uint8_t key[8 + MC_NAME_MAX];
	uint8_t val[OVL_DENTRY_VAL];
	size_t at = 0;
	while (at < len) {
		if (len - at < OVL_REC_HDR)
			return -EPROTO;
		const uint8_t *h = buf + at, *body = h + OVL_REC_HDR;
		size_t namelen = get_le16(h + 2), blen = get_le32(h + 4);
		if (blen > len - at - OVL_REC_HDR)
			return -EPROTO;
		at += OVL_REC_HDR + blen;
		int rc = 0;
		switch (h[0]) {
		case JR_INODE_PUT:
			/* The body is the table's value: the inode as stored, then
			 * the symlink target. */
			if (blen < JOURNAL_INODE_DISK_SIZE)
				return -EPROTO;
			put_be64(key, get_le64(body));
			rc = ovl_set(o, OVL_INODES, key, 8, body, blen);
			break;
		case JR_INODE_DEL:
			if (blen != 8)
				return -EPROTO;
			put_be64(key, get_le64(body));
			rc = ovl_set(o, OVL_INODES, key, 8, NULL, 0);
			break;
		case JR_DENTRY_PUT:
			if (namelen < 1 || namelen > MC_NAME_MAX || blen != 16 + namelen)
				return -EPROTO;
			put_be64(key, get_le64(body));
			memcpy(key + 8, body + 16, namelen);
			memcpy(val, body + 8, 8);       /* the child, little-endian as stored */
			val[8] = h[1];
			rc = ovl_set(o, OVL_DENTRIES, key, 8 + namelen, val, OVL_DENTRY_VAL);
			break;
		case JR_DENTRY_DEL:
			if (namelen < 1 || namelen > MC_NAME_MAX || blen != 8 + namelen)
				return -EPROTO;
			put_be64(key, get_le64(body));
			memcpy(key + 8, body + 8, namelen);
			rc = ovl_set(o, OVL_DENTRIES, key, 8 + namelen, NULL, 0);
			break;
		case JR_EXTENT_SET:
		case JR_EXTENT_PUNCH:
			break;
		case JR_INODE_UNLINK:
			return -EINVAL;                 /* as in ovl_add */
		default:
			return -EPROTO;
		}
		if (rc)
			return rc;
	}
	return 0;
}

int ovl_get(const struct store_ovl *o, enum ovl_table t, const uint8_t *key, size_t klen,
            const uint8_t **val, size_t *vlen)
{
	if (o->n == 0)
		return 0;
	const struct ovl_ent *e = *ovl_slot(o, t, key, klen, ovl_hash(t, key, klen));
	if (!e)
		return 0;
	if (e->deleted)
		return -ENOENT;
	*val = e->data + e->klen;
	*vlen = e->vlen;
	return 1;
}

bool ovl_inode_dropped(const struct store_ovl *o, uint64_t ino)
{
	uint8_t key[8];
	if (o->n == 0)
		return false;
	put_be64(key, ino);
	const struct ovl_ent *e = *ovl_slot(o, OVL_INODES, key, 8, ovl_hash(OVL_INODES, key, 8));
	return e && e->dropped;
}

int ovl_keycmp(const struct ovl_ent *e, const uint8_t *k, size_t klen)
{
	size_t n = e->klen < klen ? e->klen : klen;
	int c = memcmp(e->data, k, n);
	if (c)
		return c;
	return e->klen < klen ? -1 : e->klen > klen ? 1 : 0;
}

/* A sort item: the key's first 8 bytes and 8 more, past the bytes every
 * key of the sort shares (a directory's generated names), as big-endian
 * words (zeros past the key's end), so most comparisons are of integers;
 * the entry breaks ties (the zeros may hide a shorter key, or the keys go
 * on). */
struct ovl_sk {
	uint64_t k8, k16;
	const struct ovl_ent *e;
};

/* How many bytes past the first 8 the m keys of v all share. */
static size_t ovl_sk_shared(const struct ovl_sk *v, size_t m)
{
	const uint8_t *ref = v[0].e->data + 8;
	size_t l = v[0].e->klen - 8;
	for (size_t i = 1; i < m && l; i++) {
		const struct ovl_ent *e = v[i].e;
		size_t j = 0;
		if (e->klen - 8u < l)
			l = e->klen - 8u;
		while (j < l && e->data[8 + j] == ref[j])
			j++;
		l = j;
	}
	return l;
}

/* Fill in v's words, keys shared up to byte 8 + off. */
static void ovl_sk_words(struct ovl_sk *v, size_t m, size_t off)
{
	for (size_t i = 0; i < m; i++) {
		const struct ovl_ent *e = v[i].e;
		uint8_t b[8] = {0};
		size_t rest = e->klen - 8u - off;
		memcpy(b, e->data + 8 + off, rest < 8 ? rest : 8);
		v[i].k8 = e->k8;
		v[i].k16 = get_be64(b);
	}
}

/* x before y in the tables' key order? */
static inline bool ovl_sk_less(const struct ovl_sk *x, const struct ovl_sk *y)
{
	if (x->k8 != y->k8)             /* the inode, or the parent: most keys differ there */
		return x->k8 < y->k8;
	if (x->k16 != y->k16)
		return x->k16 < y->k16;
	return ovl_keycmp(x->e, y->e->data, y->e->klen) < 0;
}

/* Sort v[0..n) (keys all distinct), tmp room for n items: a merge sort,
 * runs of OVL_SORT_SMALL by insertion, a merge skipped where its halves
 * are in order already (a directory's names made in order). */
static void ovl_sk_sort(struct ovl_sk *v, struct ovl_sk *tmp, size_t n)
{
	if (n <= OVL_SORT_SMALL) {
		for (size_t i = 1; i < n; i++) {
			struct ovl_sk x = v[i];
			size_t j = i;
			for (; j > 0 && ovl_sk_less(&x, &v[j - 1]); j--)
				v[j] = v[j - 1];
			v[j] = x;
		}
		return;
	}
	size_t h = n / 2;
	ovl_sk_sort(v, tmp, h);
	ovl_sk_sort(v + h, tmp, n - h);
	if (!ovl_sk_less(&v[h], &v[h - 1]))
		return;
	memcpy(tmp, v, h * sizeof(*v));
	size_t i = 0, j = h, k = 0;
	while (i < h && j < n)
		v[k++] = ovl_sk_less(&v[j], &tmp[i]) ? v[j++] : tmp[i++];
	memcpy(v + k, tmp + i, (h - i) * sizeof(*v));   /* what is left of v[j..n) stays */
}

/* Room for cap sort items and the merge's half; NULL: no memory. */
static struct ovl_sk *ovl_sk_new(size_t cap)
{
	return malloc((cap + cap / 2) * sizeof(struct ovl_sk));
}

/* Sort the m items of v (from ovl_sk_new, their entries set) and hand their entries out in
 * v's own memory (*out, free() it; NULL when m is 0). */
static void ovl_sk_done(struct ovl_sk *v, size_t m, const struct ovl_ent ***out, size_t *n)
{
	*n = m;
	if (!m) {
		free(v);
		*out = NULL;
		return;
	}
	ovl_sk_words(v, m, ovl_sk_shared(v, m));
	ovl_sk_sort(v, v + m, m);
	/* In place: pointer i (8 bytes) lands where items up to i (24) were
	 * read already; e is of the pointers' own type. */
	const struct ovl_ent **p = (const struct ovl_ent **)(void *)v;
	for (size_t i = 0; i < m; i++)
		p[i] = v[i].e;
	*out = p;
}

int ovl_sorted(const struct store_ovl *o, enum ovl_table t, const struct ovl_ent ***out,
               size_t *n)
{
	struct ovl_sk *v = NULL;
	size_t m = 0;
	if (o->n && !(v = ovl_sk_new(o->n)))
		return -ENOMEM;
	for (size_t i = 0; i < o->n; i++)       /* made in order mostly: runs */
		if (o->made[i]->table == t)
			v[m++].e = o->made[i];
	ovl_sk_done(v, m, out, n);
	return 0;
}

size_t ovl_dir_count(const struct store_ovl *o, uint64_t parent)
{
	const struct ovl_dir *d = ovl_dir_find(o, parent);
	return d ? d->n : 0;
}

int ovl_dir_sorted(const struct store_ovl *o, uint64_t parent, const char *after,
                   size_t after_len, const struct ovl_ent ***out, size_t *n)
{
	uint8_t k[8 + MC_NAME_MAX];
	const struct ovl_dir *d = ovl_dir_find(o, parent);
	struct ovl_sk *v;
	size_t m = 0;
	*out = NULL;
	*n = 0;
	if (!d || d->n == 0)
		return 0;
	if (after_len > MC_NAME_MAX)
		after_len = MC_NAME_MAX;
	put_be64(k, parent);
	if (after_len)
		memcpy(k + 8, after, after_len);
	if (!(v = ovl_sk_new(d->n)))
		return -ENOMEM;
	/* The list is newest first: back to front, in the order made (runs). */
	for (const struct ovl_ent *e = d->first; e; e = e->dnext)
		if (!after_len || ovl_keycmp(e, k, 8 + after_len) > 0)
			v[d->n - ++m].e = e;
	memmove(v, v + (d->n - m), m * sizeof(*v));
	ovl_sk_done(v, m, out, n);
	return 0;
}

/* Free the bucket table and made[] (entries, lists and arena gone). */
static void ovl_drop_tab(struct store_ovl *o)
{
	free(o->tab);
	o->tab = NULL;
	o->nbuckets = 0;
	free(o->made);
	o->made = NULL;
	o->made_cap = 0;
}

void ovl_reset(struct store_ovl *o)
{
	map_free(&o->dirs);             /* the lists are in the arena */
	o->last_dir = NULL;
	for (struct ovl_chunk *c = o->arena, *next; c; c = next) {
		next = c->next;
		free(c);
	}
	o->arena = NULL;
	if (o->nbuckets > OVL_KEEP_BUCKETS)
		ovl_drop_tab(o);
	else if (o->nbuckets)           /* the next batches will need as many (invariant 4) */
		memset(o->tab, 0, o->nbuckets * sizeof(*o->tab));
	o->n = 0;
	o->gen++;
}

void ovl_clear(struct store_ovl *o)
{
	ovl_reset(o);
	ovl_drop_tab(o);
}
