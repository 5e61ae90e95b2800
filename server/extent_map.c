/* extent_map.c - extent maps (extent_map.h) on the record trees of
 * extent.h. A punch trims the extents it cuts in place (a record's start
 * may move forward without disturbing the treap: the order stays) and
 * splits one that it cuts in the middle; a set is a punch and an insert. */
#include "extent_map.h"

#include <errno.h>

static mc_eref map_insert(struct extent_cache *c, mc_off_t tree, mc_eref prev, uint64_t start,
                           uint64_t end, uint64_t phys, uint32_t flags)
{
	mc_eref n = erec_insert(c, tree, prev, start, end, flags);
	emap_at(c, n)->phys = phys;
	c->mapped++;
	return n;
}

/* The punch itself, with the room for one split reserved. */
static void do_punch(struct extent_cache *c, mc_off_t tree, uint64_t start, uint64_t end)
{
	struct mc_etree *t = etree_at(c, tree);
	mc_eref cur = erec_first_from(c, t, start, NULL);
	while (cur) {
		struct mc_estate *r = erec_at(c, cur);
		if (r->start > end)
			break;
		mc_eref next = r->next;
		if (r->start < start && r->end > end) {
			map_insert(c, tree, cur, end + 1, r->end,
			           emap_at(c, cur)->phys + (end + 1 - r->start), r->bits);
			r->end = start - 1;
			break;
		}
		if (r->start < start) {
			r->end = start - 1;
		} else if (r->end > end) {
			emap_at(c, cur)->phys += end + 1 - r->start;
			r->start = end + 1;
			break;
		} else {
			erec_remove(c, tree, cur);
			c->mapped--;
		}
		cur = next;
	}
	t->hint = 0;
}

/* Records a punch of [start, end] adds: 1 when it falls inside one extent. */
static uint32_t punch_need(const struct extent_cache *c, mc_off_t tree, uint64_t start,
                           uint64_t end)
{
	mc_eref n = erec_first_from(c, etree_at(c, tree), start, NULL);
	return n && erec_at(c, n)->start < start && erec_at(c, n)->end > end;
}

int emap_punch(struct extent_cache *c, mc_off_t tree, uint64_t start, uint64_t end)
{
	if (start > end)
		return -EINVAL;
	int rc = extent_reserve(c, tree, punch_need(c, tree, start, end));
	if (rc < 0)
		return rc;
	struct mc_etree *t = etree_at(c, tree);
	shm_write_begin(&t->seq);
	do_punch(c, tree, start, end);
	shm_write_end(&t->seq);
	return 0;
}

int emap_set(struct extent_cache *c, mc_off_t tree, uint64_t off, uint64_t len, uint64_t phys,
             uint32_t flags)
{
	if (len == 0 || off + (len - 1) < off)
		return -EINVAL;
	uint64_t end = off + (len - 1);
	int rc = extent_reserve(c, tree, 1 + punch_need(c, tree, off, end));
	if (rc < 0)
		return rc;
	struct mc_etree *t = etree_at(c, tree);
	shm_write_begin(&t->seq);
	do_punch(c, tree, off, end);
	mc_eref prev;
	erec_first_from(c, t, off, &prev);
	t->hint = map_insert(c, tree, prev, off, end, phys, flags);
	shm_write_end(&t->seq);
	return 0;
}

size_t emap_lookup(const struct extent_cache *c, mc_off_t tree, uint64_t off, uint64_t len,
                   struct emap_ext *out, size_t max)
{
	const struct mc_etree *t = etree_at(c, tree);
	uint64_t end = len == 0 || off + (len - 1) < off ? UINT64_MAX : off + (len - 1);
	size_t n = 0;
	for (mc_eref m = erec_first_from(c, t, off, NULL); m; m = erec_at(c, m)->next) {
		const struct mc_estate *r = erec_at(c, m);
		if (r->start > end)
			break;
		if (n < max)
			out[n] = (struct emap_ext){ r->start, r->end - r->start + 1, emap_at(c, m)->phys,
			                            r->bits };
		n++;
	}
	return n;
}
