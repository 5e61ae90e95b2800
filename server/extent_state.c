/* extent_state.c - extent-state trees (extent_state.h), on the record
 * trees of extent.h (a treap for lookups, a list for walks).
 *
 * A call runs in two passes over the records its range touches: the first
 * checks for lock conflicts and counts the records the second may need
 * (edge splits and, when setting, one per gap), reserves them in the arena,
 * and only then does the second pass change anything: so a call that fails
 * changes nothing (invariant 4). The tree's seq is odd during the second.
 */
#include "extent_state.h"

#include <assert.h>
#include <errno.h>

/* Link a reserved state record after prev (0: at the front). */
static mc_eref rec_insert(struct extent_cache *c, mc_off_t tree, mc_eref prev, uint64_t start,
                           uint64_t end, uint32_t bits, uint32_t owner)
{
	mc_eref n = erec_insert(c, tree, prev, start, end, bits);
	erec_at(c, n)->owner = owner;
	c->states++;
	return n;
}

static void rec_remove(struct extent_cache *c, mc_off_t tree, mc_eref n)
{
	erec_remove(c, tree, n);
	c->states--;
}

/* Split n at `at` (start < at <= end): n keeps [start, at - 1]; the new
 * record [at, end] is returned. */
static mc_eref rec_split(struct extent_cache *c, mc_off_t tree, mc_eref n, uint64_t at)
{
	struct mc_estate *r = erec_at(c, n);
	uint64_t end = r->end;
	r->end = at - 1;
	c->splits++;
	return rec_insert(c, tree, n, at, end, r->bits, r->owner);
}

/* Merge b into a when they touch and are equal; the record that holds b's
 * range afterwards. */
static mc_eref rec_merge(struct extent_cache *c, mc_off_t tree, mc_eref a, mc_eref b)
{
	if (!a || !b)
		return b;
	struct mc_estate *ra = erec_at(c, a), *rb = erec_at(c, b);
	if (ra->end + 1 != rb->start || ra->bits != rb->bits || ra->owner != rb->owner)
		return b;
	ra->end = rb->end;
	rec_remove(c, tree, b);
	c->merges++;
	return a;
}

/* ---- set and clear ----------------------------------------------------- */

/* Pass one: conflicts, and the records pass two may need. */
static int range_check(const struct extent_cache *c, const struct mc_etree *t, uint64_t start,
                       uint64_t end, uint32_t bits, uint32_t owner, bool set, uint32_t *need)
{
	uint32_t gaps = 0;
	uint64_t pos = start;
	bool covered = false;
	for (mc_eref n = erec_first_from(c, t, start, NULL); n; n = erec_at(c, n)->next) {
		const struct mc_estate *r = erec_at(c, n);
		if (r->start > end)
			break;
		if (r->start > pos)
			gaps++;
		if (r->bits & bits & MC_ES_LOCKED) {
			if (set)
				return -EAGAIN;
			if (r->owner != owner)
				return -EPERM;
		}
		if (r->end >= end) {
			covered = true;
			break;
		}
		pos = r->end + 1;
	}
	if (!covered)
		gaps++;
	*need = 2 + (set ? gaps : 0);
	return 0;
}

static int range_apply(struct extent_cache *c, mc_off_t tree, uint64_t start, uint64_t end,
                       uint32_t bits, uint32_t owner, bool set)
{
	if (start > end || bits == 0 || (set && (bits & MC_ES_LOCKED) && owner == 0))
		return -EINVAL;
	struct mc_etree *t = etree_at(c, tree);
	uint32_t need;
	int rc = range_check(c, t, start, end, bits, owner, set, &need);
	if (rc < 0)
		return rc;
	rc = extent_reserve(c, tree, need);
	if (rc < 0)
		return rc;

	shm_write_begin(&t->seq);
	mc_eref prev;
	mc_eref cur = erec_first_from(c, t, start, &prev);
	uint64_t pos = start;
	for (;;) {
		uint64_t upto; /* last byte handled in this step */
		if (!cur || erec_at(c, cur)->start > pos) {
			upto = cur && erec_at(c, cur)->start - 1 < end ? erec_at(c, cur)->start - 1 : end;
			if (set) {
				uint32_t o = bits & MC_ES_LOCKED ? owner : 0;
				mc_eref n = rec_insert(c, tree, prev, pos, upto, bits, o);
				prev = rec_merge(c, tree, prev, n);
			}
		} else {
			struct mc_estate *r = erec_at(c, cur);
			uint32_t nb = set ? r->bits | bits : r->bits & ~bits;
			uint32_t no = 0;
			if (nb & MC_ES_LOCKED)
				no = set && (bits & MC_ES_LOCKED) ? owner : r->owner;
			if (nb != r->bits || no != r->owner) {
				if (r->start < pos) {
					prev = cur;
					cur = rec_split(c, tree, cur, pos);
					r = erec_at(c, cur);
				}
				if (r->end > end)
					rec_split(c, tree, cur, end + 1);
				r->bits = nb;
				r->owner = no;
			}
			upto = r->end < end ? r->end : end;
			if (nb == 0) {
				mc_eref next = r->next;
				rec_remove(c, tree, cur);
				cur = next;
				goto step;
			}
			prev = rec_merge(c, tree, prev, cur);
		}
		cur = prev ? erec_at(c, prev)->next : t->first;
step:
		if (upto >= end)
			break;
		pos = upto + 1;
	}
	if (prev) {
		rec_merge(c, tree, prev, erec_at(c, prev)->next);
		t->hint = prev;
	}
	shm_write_end(&t->seq);
	return 0;
}

int estate_set(struct extent_cache *c, mc_off_t tree, uint64_t start, uint64_t end,
               uint32_t bits, uint32_t owner)
{
	return range_apply(c, tree, start, end, bits, owner, true);
}

int estate_clear(struct extent_cache *c, mc_off_t tree, uint64_t start, uint64_t end,
                 uint32_t bits, uint32_t owner)
{
	return range_apply(c, tree, start, end, bits, owner, false);
}

/* ---- queries ----------------------------------------------------------- */

int estate_test(struct extent_cache *c, mc_off_t tree, uint64_t start, uint64_t end,
                uint32_t bits, bool all)
{
	if (start > end || bits == 0)
		return -EINVAL;
	const struct mc_etree *t = etree_at(c, tree);
	uint64_t pos = start;
	for (mc_eref n = erec_first_from(c, t, start, NULL); n; n = erec_at(c, n)->next) {
		const struct mc_estate *r = erec_at(c, n);
		if (r->start > end)
			break;
		if (all) {
			if (r->start > pos || (r->bits & bits) != bits)
				return 0;
			if (r->end >= end)
				return 1;
			pos = r->end + 1;
		} else if (r->bits & bits) {
			return 1;
		}
	}
	return 0;
}

int estate_find(struct extent_cache *c, mc_off_t tree, uint64_t from, uint32_t bits,
                uint64_t *start, uint64_t *end)
{
	if (bits == 0)
		return -EINVAL;
	const struct mc_etree *t = etree_at(c, tree);
	mc_eref n = erec_first_from(c, t, from, NULL);
	while (n && !(erec_at(c, n)->bits & bits))
		n = erec_at(c, n)->next;
	if (!n)
		return -ENOENT;
	const struct mc_estate *r = erec_at(c, n);
	uint64_t s = r->start > from ? r->start : from;
	uint64_t e = r->end;
	for (mc_eref m = r->next; m; m = erec_at(c, m)->next) {
		const struct mc_estate *q = erec_at(c, m);
		if (q->start != e + 1 || !(q->bits & bits))
			break;
		e = q->end;
	}
	*start = s;
	*end = e;
	return 0;
}

uint64_t estate_unlock_owner(struct extent_cache *c, mc_off_t tree, uint32_t owner)
{
	struct mc_etree *t = etree_at(c, tree);
	uint64_t released = 0;
	shm_write_begin(&t->seq);
	mc_eref n = t->first;
	while (n) {
		struct mc_estate *r = erec_at(c, n);
		if (!(r->bits & MC_ES_LOCKED) || r->owner != owner) {
			n = r->next;
			continue;
		}
		released++;
		r->bits &= ~MC_ES_LOCKED;
		r->owner = 0;
		if (r->bits == 0) {
			mc_eref next = r->next;
			rec_remove(c, tree, n);
			n = next;
			continue;
		}
		mc_eref m = rec_merge(c, tree, r->prev, n);
		rec_merge(c, tree, m, erec_at(c, m)->next);
		n = erec_at(c, m)->next;
	}
	shm_write_end(&t->seq);
	return released;
}
