/* store_overlay.c - committed changes not yet in the tables, by table key
 * (store_overlay.h): a chained hash table of entries that each hold the key
 * and the newest value, grown by doubling, emptied at once when the
 * store applies the log to its tables. Each dentry entry is also on its
 * parent's list (struct ovl_dir, found by parent in a struct map), and an
 * entry never moves once made (a dentry's room fits any of its values), so
 * those lists need no upkeep but the push of a new key. */
#include "store_overlay.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "mc_shm.h"

#define OVL_MIN_BUCKETS 256u
#define OVL_DENTRY_VAL  9u      /* u64 ino, u8 dtype (store.h) */

static uint64_t ovl_hash(unsigned t, const uint8_t *k, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull ^ t;
	for (size_t i = 0; i < n; i++) {
		h ^= k[i];
		h *= 0x100000001b3ull;
	}
	return h;
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
	struct ovl_dir *d = ovl_dir_find(o, parent);
	if (d)
		return d;
	if (map_reserve(&o->dirs) < 0 || !(d = calloc(1, sizeof(*d))))
		return NULL;
	d->parent = parent;
	map_put(&o->dirs, parent, (uintptr_t)d); /* reserved: cannot fail */
	return d;
}

/* Set key k of table t to v (vlen bytes), or to deleted when v is NULL. */
static int ovl_set(struct store_ovl *o, unsigned t, const uint8_t *k, size_t klen,
                   const uint8_t *v, size_t vlen)
{
	if (o->n >= o->nbuckets && ovl_grow(o) < 0)
		return -ENOMEM;
	uint64_t h = ovl_hash(t, k, klen);
	struct ovl_ent **pp = ovl_slot(o, t, k, klen, h), *old = *pp;
	o->gen++;
	struct ovl_ent *e;
	struct ovl_dir *d = NULL;
	/* A dentry's room is the size of its value (deletions too): it never
	 * moves, being on its parent's list. */
	size_t cap = t == OVL_DENTRIES ? OVL_DENTRY_VAL : vlen;
	if (old && old->vcap >= vlen) {
		e = old;                        /* reuse it: the value fits */
	} else {
		/* Inode numbers start at 1: 0 is no key of the map. */
		if (t == OVL_DENTRIES && get_be64(k) == 0)
			return -EINVAL;
		if (t == OVL_DENTRIES && !(d = ovl_dir_get(o, get_be64(k))))
			return -ENOMEM;
		e = malloc(sizeof(*e) + klen + cap);
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
		*pp = e;
		if (old)
			free(old);              /* an inode's: on no list */
		else
			o->n++;
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

static int ovl_cmp(const void *a, const void *b)
{
	const struct ovl_ent *x = *(const struct ovl_ent *const *)a;
	const struct ovl_ent *y = *(const struct ovl_ent *const *)b;
	if (x->k8 != y->k8)             /* the inode, or the parent: most keys differ there */
		return x->k8 < y->k8 ? -1 : 1;
	return ovl_keycmp(x, y->data, y->klen);
}

int ovl_sorted(const struct store_ovl *o, enum ovl_table t, const struct ovl_ent ***out,
               size_t *n)
{
	const struct ovl_ent **v = NULL;
	size_t m = 0;
	if (o->n) {
		v = malloc(o->n * sizeof(*v));
		if (!v)
			return -ENOMEM;
	}
	for (size_t i = 0; i < o->nbuckets; i++)
		for (const struct ovl_ent *e = o->tab[i]; e; e = e->next)
			if (e->table == t)
				v[m++] = e;
	if (m)
		qsort(v, m, sizeof(*v), ovl_cmp);
	if (!m) {
		free(v);
		v = NULL;
	}
	*out = v;
	*n = m;
	return 0;
}

static int ovl_namecmp(const void *a, const void *b)
{
	const struct ovl_ent *x = *(const struct ovl_ent *const *)a;
	const struct ovl_ent *y = *(const struct ovl_ent *const *)b;
	return ovl_keycmp(x, y->data, y->klen);     /* one parent: the names decide */
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
	const struct ovl_ent **v = NULL;
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
	v = malloc(d->n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (const struct ovl_ent *e = d->first; e; e = e->dnext)
		if (!after_len || ovl_keycmp(e, k, 8 + after_len) > 0)
			v[m++] = e;
	if (m > 1)
		qsort(v, m, sizeof(*v), ovl_namecmp);
	if (!m) {
		free(v);
		v = NULL;
	}
	*out = v;
	*n = m;
	return 0;
}

void ovl_clear(struct store_ovl *o)
{
	for (size_t i = 0; i < o->dirs.cap; i++)
		if (o->dirs.keys[i])
			free((struct ovl_dir *)(uintptr_t)o->dirs.vals[i]);
	map_free(&o->dirs);
	for (size_t i = 0; i < o->nbuckets; i++) {
		struct ovl_ent *e = o->tab[i], *next;
		for (; e; e = next) {
			next = e->next;
			free(e);
		}
	}
	free(o->tab);
	o->tab = NULL;
	o->nbuckets = 0;
	o->n = 0;
	o->gen++;
}
