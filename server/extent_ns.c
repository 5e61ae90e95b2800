/* extent_ns.c - the namespace's extent-state calls (extent_ns.h): find the
 * inode's tree and run the tree operation under the namespace lock. */
#include "extent_ns.h"

#include <errno.h>
#include <sys/stat.h>
#include <string.h>

#include "extent_map.h"
#include "extent_state.h"
#include "ns_impl.h"

/* The state tree of a cached ino; -EBADF when the inode is not cached. */
static int tree_of(struct ns *ns, uint64_t ino, bool create, mc_off_t *out)
{
	if (!inode_find(ns->shm, ino))
		return -EBADF;
	return extent_state_tree(&ns->ext, ino, create, out);
}

static int do_range(struct ns *ns, uint64_t ino, uint64_t start, uint64_t end, uint32_t bits,
                    uint32_t owner, bool set, bool new_locker)
{
	mc_off_t t;
	int rc = tree_of(ns, ino, set, &t);
	if (rc == -ENOENT) /* clearing where nothing was set */
		return start > end || bits == 0 ? -EINVAL : 0;
	if (rc < 0)
		return rc;
	if (!set)
		return estate_clear(&ns->ext, t, start, end, bits, owner);
	rc = estate_set(&ns->ext, t, start, end, bits, owner);
	if (rc == 0 && (bits & MC_ES_LOCKED) && new_locker)
		extent_lockers(&ns->ext, ino, 1);
	/* A set that failed on a tree with nothing in it (made just now, say)
	 * leaves no empty tree behind. */
	if (rc < 0 && etree_at(&ns->ext, t)->count == 0 && extent_lockers(&ns->ext, ino, 0) == 0)
		extent_tree_forget(&ns->ext, ino);
	return rc;
}

int ns_range_set(struct ns *ns, uint64_t ino, uint64_t start, uint64_t end, uint32_t bits,
                 uint32_t owner, bool new_locker)
{
	int rc;
	NS_LOCKED(ns, rc, do_range(ns, ino, start, end, bits, owner, true, new_locker));
	return rc;
}

int ns_range_clear(struct ns *ns, uint64_t ino, uint64_t start, uint64_t end, uint32_t bits,
                   uint32_t owner)
{
	int rc;
	NS_LOCKED(ns, rc, do_range(ns, ino, start, end, bits, owner, false, false));
	return rc;
}

int ns_range_test(struct ns *ns, uint64_t ino, uint64_t start, uint64_t end, uint32_t bits,
                  bool all)
{
	if (start > end || bits == 0)
		return -EINVAL;
	pthread_mutex_lock(&ns->lock);
	mc_off_t t;
	int rc = tree_of(ns, ino, false, &t);
	if (rc == 0)
		rc = estate_test(&ns->ext, t, start, end, bits, all);
	else if (rc == -ENOENT)
		rc = 0;
	pthread_mutex_unlock(&ns->lock);
	return rc;
}

int ns_range_find(struct ns *ns, uint64_t ino, uint64_t from, uint32_t bits, uint64_t *start,
                  uint64_t *end)
{
	if (bits == 0)
		return -EINVAL;
	pthread_mutex_lock(&ns->lock);
	mc_off_t t;
	int rc = tree_of(ns, ino, false, &t);
	if (rc == 0)
		rc = estate_find(&ns->ext, t, from, bits, start, end);
	pthread_mutex_unlock(&ns->lock);
	return rc;
}

void ns_range_release(struct ns *ns, uint64_t ino, uint32_t owner)
{
	pthread_mutex_lock(&ns->lock);
	uint64_t *v = map_find(&ns->ext.state_trees, ino);
	if (v) {
		estate_unlock_owner(&ns->ext, (mc_off_t)*v, owner);
		extent_lockers(&ns->ext, ino, -1);
	}
	pthread_mutex_unlock(&ns->lock);
}

/* ---- extent maps -------------------------------------------------------- */

struct load {
	struct extent_cache *c;
	mc_off_t tree;
	uint64_t from;      /* map_has: any extent reaching at or past this? */
};

static int load_one(void *arg, uint64_t start, uint64_t len, uint64_t phys, uint32_t flags)
{
	struct load *l = arg;
	return emap_set(l->c, l->tree, start, len, phys, flags);
}

/* The map of ino, loaded whole from the store when absent, lock held.
 * Sound because a map is dropped only with a clean inode (every change to
 * it committed) or a deleted one: when absent, the store has it all. */
static int map_tree(struct ns *ns, uint64_t ino, mc_off_t *out)
{
	int rc = extent_map_tree(&ns->ext, ino, false, out);
	if (rc != -ENOENT)
		return rc;
	rc = extent_map_tree(&ns->ext, ino, true, out);
	if (rc < 0)
		return rc;
	struct load l = { &ns->ext, *out, 0 };
	rc = store_scan_extents(ns->store, ino, load_one, &l);
	if (rc < 0)
		extent_map_drop(&ns->ext, ino);
	else
		extent_map_publish(&ns->ext, ino);
	return rc;
}

static int reaches(void *arg, uint64_t start, uint64_t len, uint64_t phys, uint32_t flags)
{
	(void)phys;
	(void)flags;
	const struct load *l = arg;
	return start + (len - 1) >= l->from;
}

/* The regular file held under ino, lock held: its slot, or -EBADF. */
static int held_file(struct ns *ns, uint64_t ino, bool writable, mc_off_t *ioff)
{
	mc_off_t off = inode_find(ns->shm, ino);
	if (!off || !writable)
		return -EBADF;
	if (!S_ISREG(inode_at(ns->shm, off)->mode))
		return -EINVAL;
	*ioff = off;
	return 0;
}

static int do_extent_change(struct ns *ns, uint64_t ino, bool writable, uint64_t start,
                            uint64_t end, bool set, uint64_t phys, uint32_t flags)
{
	mc_off_t ioff = 0, t = 0;
	int rc = ns_journal_room(ns);
	if (rc == 0)
		rc = held_file(ns, ino, writable, &ioff);
	if (rc == 0)
		rc = map_tree(ns, ino, &t);
	if (rc < 0)
		return rc;
	/* A file whose last link is gone (held open) has no rows left in the
	 * store: its map lives on in memory only, until the last handle. */
	bool journal = inode_at(ns->shm, ioff)->nlink > 0;
	if (set) {
		rc = emap_set(&ns->ext, t, start, end - start + 1, phys, flags);
		if (rc == 0 && journal)
			must(journal_set_extent(ns->running, ino, start, end, phys, flags),
			     "journaling an extent");
	} else {
		rc = emap_punch(&ns->ext, t, start, end);
		if (rc == 0 && journal)
			must(journal_punch_extent(ns->running, ino, start, end), "journaling a punch");
	}
	/* The inode stays dirty, so cached, until the change is committed. */
	if (rc == 0)
		inode_changed(ns, ioff);
	return rc;
}

int ns_extent_set(struct ns *ns, uint64_t ino, bool writable, uint64_t off, uint64_t len,
                  uint64_t phys, uint32_t flags)
{
	if (len == 0 || off + (len - 1) < off)
		return -EINVAL;
	int rc;
	NS_LOCKED(ns, rc, do_extent_change(ns, ino, writable, off, off + (len - 1), true, phys, flags));
	return rc;
}

int ns_extent_punch(struct ns *ns, uint64_t ino, bool writable, uint64_t off, uint64_t len)
{
	if (len == 0)
		return -EINVAL;
	uint64_t end = off + (len - 1) < off ? UINT64_MAX : off + (len - 1);
	int rc;
	NS_LOCKED(ns, rc, do_extent_change(ns, ino, writable, off, end, false, 0, 0));
	return rc;
}

static int do_extent_map(struct ns *ns, uint64_t ino, uint64_t off, uint64_t len,
                         struct emap_ext *out, size_t max, size_t *count)
{
	mc_off_t ioff, t;
	int rc = held_file(ns, ino, true, &ioff);
	if (rc == 0)
		rc = map_tree(ns, ino, &t);
	if (rc == 0)
		*count = emap_lookup(&ns->ext, t, off, len, out, max);
	return rc;
}

int ns_extent_map(struct ns *ns, uint64_t ino, uint64_t off, uint64_t len, struct emap_ext *out,
                  size_t max, size_t *count)
{
	int rc;
	NS_LOCKED(ns, rc, do_extent_map(ns, ino, off, len, out, max, count));
	return rc;
}

int do_extent_truncate(struct ns *ns, mc_off_t ioff, uint64_t size)
{
	const struct mc_inode *i = inode_at(ns->shm, ioff);
	if (!S_ISREG(i->mode))
		return 0;
	uint64_t ino = i->ino;
	mc_off_t t;
	int rc = extent_map_tree(&ns->ext, ino, false, &t);
	if (rc == -ENOENT) {
		/* Not loaded: load it only if the store has something to cut. */
		struct load l = { &ns->ext, 0, size };
		rc = store_scan_extents(ns->store, ino, reaches, &l);
		if (rc < 0)
			return rc;
		if (rc == 1)
			rc = map_tree(ns, ino, &t);
		else
			t = 0;
	}
	if (rc < 0)
		return rc;
	if (t) {
		if (size == 0)
			extent_map_clear(&ns->ext, ino);
		else /* [size, end of space] cuts no extent in two: cannot fail */
			emap_punch(&ns->ext, t, size, UINT64_MAX);
		if (i->nlink > 0)
			must(journal_punch_extent(ns->running, ino, size, UINT64_MAX),
			     "journaling a punch");
	}
	if (size != 0)
		return 0;
	uint64_t *v = map_find(&ns->ext.state_trees, ino);
	if (!v)
		return 0;
	if ((*v >> 32) == 0)
		extent_state_drop(&ns->ext, ino);
	else /* no edge to split at 0 and at the end: cannot fail */
		estate_clear(&ns->ext, (mc_off_t)*v, 0, UINT64_MAX, ~MC_ES_LOCKED, 0);
	return 0;
}

void ns_extent_stats(struct ns *ns, struct stats_extents *out)
{
	pthread_mutex_lock(&ns->lock);
	const struct extent_cache *e = &ns->ext;
	out->trees = e->trees;
	out->states = e->states;
	out->mapped = e->mapped;
	out->splits = e->splits;
	out->merges = e->merges;
	out->evictions = e->evictions;
	out->evicted_states = e->evicted_states;
	out->bytes = extent_cache_bytes(e);
	out->shrunk = e->shrunk;
	memset(&out->evict_ns, 0, sizeof(out->evict_ns));
	hist_merge(&out->evict_ns, &e->evict_ns);
	pthread_mutex_unlock(&ns->lock);
}

/* ---- the shrinker's part ------------------------------------------------ */

#define PINNED_BITS (MC_ES_DIRTY | MC_ES_DELALLOC | MC_ES_LOCKED | MC_ES_WRITEBACK)
#define IDLE_BATCH 64u

bool do_extent_state_pinned(struct ns *ns, uint64_t ino)
{
	struct extent_cache *c = &ns->ext;
	mc_off_t t;
	uint64_t s, e;
	if (extent_state_tree(c, ino, false, &t) != 0)
		return false;
	return extent_lockers(c, ino, 0) != 0 ||
	       estate_find(c, t, 0, PINNED_BITS, &s, &e) != -ENOENT;
}

/* Free ino's trees that are idle: none while the file is open (held);
 * its state tree unless a range lock counts or a record carries a bit of
 * PINNED_BITS; its map unless the inode is dirty (the store lacks some of
 * it). The number of trees freed. */
static uint64_t idle_drop(struct ns *ns, uint64_t ino)
{
	struct extent_cache *c = &ns->ext;
	if (map_find(&ns->holds, ino))
		return 0;
	uint64_t n = 0;
	mc_off_t t;
	if (extent_state_tree(c, ino, false, &t) == 0 && !do_extent_state_pinned(ns, ino)) {
		extent_state_drop(c, ino);
		n++;
	}
	mc_off_t ioff = inode_find(ns->shm, ino);
	bool dirty = ioff && (inode_at(ns->shm, ioff)->flags & (MC_I_DIRTY0 | MC_I_DIRTY1));
	if (!dirty && extent_map_tree(c, ino, false, &t) == 0) {
		extent_map_drop(c, ino);
		n++;
	}
	c->shrunk += n;
	return n;
}

uint64_t do_extent_shrink(struct ns *ns, uint64_t target, uint64_t min_free)
{
	struct extent_cache *c = &ns->ext;
	uint64_t freed = 0;
	/* Every tree is looked at once at most: the scan goes round. */
	uint64_t left = c->trees;
	while (left > 0 && (shm_bytes_used(ns->shm) > target || c->chunks_free < min_free)) {
		uint64_t inos[IDLE_BATCH];
		size_t n = extent_idle_scan(c, inos, IDLE_BATCH);
		if (n == 0)
			break;
		for (size_t i = 0; i < n && (shm_bytes_used(ns->shm) > target ||
		                             c->chunks_free < min_free); i++)
			freed += idle_drop(ns, inos[i]);
		left = left > n ? left - n : 0;
	}
	return freed;
}

int ns_evict(struct ns *ns, const struct cred *c, const char *path, size_t len)
{
	struct nd nd;
	mc_off_t res;
	pthread_mutex_lock(&ns->lock);
	nd_init(&nd, ns, c);
	int rc = walk_path(&nd, path, len, true, &res);
	nd_free(&nd);
	if (rc == 0) {
		const struct mc_inode *i = inode_at(ns->shm, res);
		uint64_t ino = i->ino;
		/* Open: its state and locks are in use. Dirty: its map has
		 * changes the store does not have yet. */
		if (map_find(&ns->holds, ino) || (i->flags & (MC_I_DIRTY0 | MC_I_DIRTY1)))
			rc = -EBUSY;
		else
			extent_ino_drop(&ns->ext, ino);
	}
	pthread_mutex_unlock(&ns->lock);
	return rc;
}
