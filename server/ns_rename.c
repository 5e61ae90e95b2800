/* ns_rename.c - rename(2) on the cached tree: the kernel's checks in its
 * order, then the change under the rename seq that lock-free walks check.
 * The design notes of the namespace are ns.c's. */
#include <errno.h>
#include <stdbool.h>
#include <sys/stat.h>

#include "ns_impl.h"

static bool on_stack(const struct nd *nd, mc_off_t dir)
{
	for (unsigned i = 0; i < nd->depth; i++)
		if (nd->stack[i] == dir)
			return true;
	return false;
}

/* What rename_checks found: old and new parents, names and inodes. */
struct rename_plan {
	mc_off_t p1, d1, x;   /* the source: parent, dentry, inode */
	mc_off_t p2, d2, y;   /* the target: parent, dentry (0: none cached), inode (0: none) */
	bool isdir;
};

/* Every check of rename(2), in the kernel's order; 1 when there is nothing
 * to do (source and target are the same inode). */
static int rename_checks(struct nd *o, struct nd *n, struct rename_plan *r)
{
	struct ns *ns = o->ns;
	struct shm *s = ns->shm;
	const struct cred *c = o->cred;
	if (o->last_type != MC_LAST_NORM || n->last_type != MC_LAST_NORM)
		return -EBUSY;
	r->p1 = nd_top(o);
	r->p2 = nd_top(n);
	int rc = ns_lookup(ns, r->p1, o->last, o->lastlen, &r->d1, &r->x);
	if (rc < 0)
		return rc;
	if (!r->x)
		return -ENOENT;
	rc = ns_lookup(ns, r->p2, n->last, n->lastlen, &r->d2, &r->y);
	if (rc < 0)
		return rc;
	mc_off_t x = r->x, y = r->y;
	bool isdir = r->isdir = S_ISDIR(inode_at(s, x)->mode);
	if (!isdir && (o->slash || n->slash))
		return -ENOTDIR;
	/* lock_rename()'s trap: the source may not be an ancestor of the
	 * target's parent, nor the target an ancestor of the source's. */
	if (r->p1 != r->p2 && isdir && on_stack(n, x))
		return -EINVAL;
	if (r->p1 != r->p2 && y && on_stack(o, y))
		return -ENOTEMPTY;
	if (x == y)
		return 1; /* the same inode: nothing to do, as Linux */
	rc = delete_checks(c, s, r->p1, x, isdir);
	if (rc < 0)
		return rc;
	rc = y ? delete_checks(c, s, r->p2, y, isdir)
	       : permission(c, inode_at(s, r->p2), MAY_WRITE | MAY_EXEC);
	if (rc < 0)
		return rc;
	if (isdir && r->p1 != r->p2) {
		rc = permission(c, inode_at(s, x), MAY_WRITE);
		if (rc < 0)
			return rc;
	}
	if (y && isdir && inode_at(s, y)->u.dir.nentries > 0)
		return -ENOTEMPTY;
	return 0;
}

/* Apply a checked rename; slot is the target name's dentry. Cannot fail. */
static void rename_apply(struct ns *ns, const struct rename_plan *r, mc_off_t slot)
{
	struct shm *s = ns->shm;
	mc_off_t p1 = r->p1, p2 = r->p2, x = r->x, y = r->y;
	bool isdir = r->isdir;
	int64_t now = now_ns();
	atomic_fetch_add_explicit(&s->hdr->rename_seq, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	/* The new name first (so the replaced inode is never reachable with
	 * its link gone); both names show x until the old one is dropped, inside
	 * the odd rename seq that path walks check. */
	name_set(ns, p2, slot, x);
	if (y)
		victim_drop_link(ns, y, isdir, now);
	mc_time_t t = mc_time_from_ns(now);
	INODE_EDIT(ns, x, { ie_->ctime = t; });
	inode_changed(ns, x);
	name_drop(ns, p1, r->d1);
	if (p1 == p2) {
		dir_entries(ns, p1, y ? -1 : 0, (y && isdir) ? -1 : 0, now);
	} else {
		dir_entries(ns, p1, -1, isdir ? -1 : 0, now);
		dir_entries(ns, p2, y ? 0 : 1, (isdir && !y) ? 1 : 0, now);
	}
	if (y)
		inode_maybe_free(ns, y);
	atomic_fetch_add_explicit(&s->hdr->rename_seq, 1, memory_order_release);
}

static int do_rename(struct ns *ns, const struct cred *c, const char *from, size_t flen,
                     const char *to, size_t tlen)
{
	struct nd o, n;
	struct rename_plan r;
	mc_off_t slot;
	nd_init(&o, ns, c);
	nd_init(&n, ns, c);
	int rc = ns_journal_room(ns);
	if (rc == 0)
		rc = walk_parent(&o, from, flen);
	if (rc == 0)
		rc = walk_parent(&n, to, tlen);
	if (rc == 0)
		rc = rename_checks(&o, &n, &r);
	if (rc == 0)
		rc = name_slot(ns, r.p2, r.d2, n.last, n.lastlen, &slot);
	if (rc == 0)
		rename_apply(ns, &r, slot);
	nd_free(&o);
	nd_free(&n);
	return rc < 0 ? rc : 0;
}

int ns_rename(struct ns *ns, const struct cred *c, const char *from, size_t flen,
              const char *to, size_t tlen)
{
	int rc;
	NS_LOCKED(ns, rc, do_rename(ns, c, from, flen, to, tlen));
	return rc;
}

