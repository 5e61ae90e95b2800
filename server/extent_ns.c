/* extent_ns.c - the namespace's extent-state calls (extent_ns.h): find the
 * inode's tree and run the tree operation under the namespace lock. */
#include "extent_ns.h"

#include <errno.h>
#include <string.h>

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

void do_extent_truncated(struct ns *ns, uint64_t ino)
{
	uint64_t *v = map_find(&ns->ext.state_trees, ino);
	if (!v)
		return;
	if ((*v >> 32) == 0)
		extent_ino_drop(&ns->ext, ino);
	else /* no edge to split at 0 and at the end: cannot fail */
		estate_clear(&ns->ext, (mc_off_t)*v, 0, UINT64_MAX, ~MC_ES_LOCKED, 0);
}

void ns_extent_stats(struct ns *ns, struct stats_extents *out)
{
	pthread_mutex_lock(&ns->lock);
	const struct extent_cache *e = &ns->ext;
	out->trees = e->trees;
	out->states = e->states;
	out->splits = e->splits;
	out->merges = e->merges;
	out->evictions = e->evictions;
	out->evicted_states = e->evicted_states;
	out->bytes = extent_cache_bytes(e);
	memset(&out->evict_ns, 0, sizeof(out->evict_ns));
	hist_merge(&out->evict_ns, &e->evict_ns);
	pthread_mutex_unlock(&ns->lock);
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
		uint64_t ino = inode_at(ns->shm, res)->ino;
		if (map_find(&ns->holds, ino))
			rc = -EBUSY;
		else
			extent_ino_drop(&ns->ext, ino);
	}
	pthread_mutex_unlock(&ns->lock);
	return rc;
}
