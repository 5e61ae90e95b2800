/* ns_name.c - names in directories: the entry counts of a directory and
 * the dentries a create, link, rename or removal sets or drops, each
 * change dirtied and journaled (ns.c notes 2 and 3). Called with the lock
 * held.
 */
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

#include "ns_impl.h"

/* Deferring a directory's record (dir_defer_begin, or a run of
 * operations under one lock: ns_hold_begin) changes nothing a reader of
 * the segment sees: each create or removal still edits the directory's
 * entry count and times inside its seq, as it goes. Only the journal
 * record waits, and the journal is the committer's alone, which takes it
 * only in ns_swap, under the lock: ns_swap writes the owed record first,
 * so a batch handed out always holds the directory's state after its last
 * change (an operation that lets the lock go half way, to read the store
 * or wait for room, may be overtaken by a swap). The dirty bit is set at
 * the first change, so the directory is pinned as before; the watchers
 * are told of the change as it happens. */
void dir_owed_flush(struct ns *ns)
{
	if (ns->dir_owed)
		inode_changed(ns, ns->dir_owed);
	ns->dir_owed = 0;
}

/* dir's record is owed from now: the one owed before is written first. */
static void dir_owe(struct ns *ns, mc_off_t dir)
{
	dir_owed_flush(ns);
	inode_dirty(ns, dir);
	ns->dir_owed = dir;
}

void dir_defer_begin(struct ns *ns)
{
	ns->dir_defer = true;
}

void dir_defer_end(struct ns *ns)
{
	dir_owed_flush(ns);
	ns->dir_defer = false;
}

void dir_entries(struct ns *ns, mc_off_t dir, int delta, int nlink_delta, int64_t now)
{
	mc_time_t t = mc_time_from_ns(now);
	uint32_t seq = atomic_load_explicit(&inode_at(ns->shm, dir)->seq, memory_order_relaxed);
	INODE_EDIT(ns, dir, {
		ie_->u.dir.nentries = (uint32_t)((int64_t)ie_->u.dir.nentries + delta);
		ie_->nlink = (uint32_t)((int64_t)ie_->nlink + nlink_delta);
		ie_->mtime = t;
		ie_->ctime = t;
	});
	if (!ns->dir_defer && ns_held != ns) {
		inode_changed(ns, dir);
	} else {
		watch_note_inode(inode_at(ns->shm, dir)->ino);
		if (ns->dir_owed != dir)
			dir_owe(ns, dir);
	}
	walk_memo_carry(ns, dir, seq);
	/* Its last entry went: no stale name of the tree stays (rule 1). */
	if (delta < 0 && inode_at(ns->shm, dir)->u.dir.nentries == 0) {
		dcache_now_empty(ns->shm, dir);
		if (dcache_complete(ns->shm, dir))
			dcache_dirx(ns->shm, dir, false)->rm_seq = (uint32_t)ns->running->seq | 1u;
	}
}

/* Dirty and journal d (in dir), which names inode i of type dtype. */
void name_record(struct ns *ns, mc_off_t dir, mc_off_t d, const struct mc_inode *i,
                 uint8_t dtype)
{
	struct shm *s = ns->shm;
	dentry_dirty(ns, d);
	watch_note_entry(inode_at(s, dir)->ino, dcache_name(s, d), dentry_at(s, d)->namelen);
	must(journal_put_dentry(ns->running, inode_at(s, dir)->ino, dcache_name(s, d),
	                        dentry_at(s, d)->namelen, i->ino, dtype),
	     "journaling a dentry");
}

/* Name d (in dir) now names inode off of type dtype. */
void name_set(struct ns *ns, mc_off_t dir, mc_off_t d, mc_off_t off)
{
	struct shm *s = ns->shm;
	struct mc_inode *i = inode_at(s, off);
	uint8_t dtype = (uint8_t)IFTODT(i->mode);
	dcache_set(s, d, off, dtype);
	name_record(ns, dir, d, i, dtype);
}

/* Remove name d from dir (note 3). */
void name_drop(struct ns *ns, mc_off_t dir, mc_off_t d)
{
	struct shm *s = ns->shm;
	watch_note_entry(inode_at(s, dir)->ino, dcache_name(s, d), dentry_at(s, d)->namelen);
	must(journal_del_dentry(ns->running, inode_at(s, dir)->ino, dcache_name(s, d),
	                        dentry_at(s, d)->namelen),
	     "journaling a dentry delete");
	if (dcache_complete(s, dir)) {
		dcache_del(s, d);
		dcache_dirx(s, dir, false)->rm_seq = (uint32_t)ns->running->seq | 1u;
	} else {
		dcache_set(s, d, 0, 0);
		dentry_dirty(ns, d);
	}
}

/* A dentry slot for a new name in dir: the cached negative one, or a new
 * negative placeholder. */
int name_slot(struct ns *ns, mc_off_t dir, mc_off_t d, const char *name, size_t len,
                     mc_off_t *out)
{
	if (!d) {
		d = dcache_add(ns->shm, dir, name, len, 0, 0);
		if (!d)
			return -ENOSPC;
	}
	*out = d;
	return 0;
}
