/* dirty.c - what the namespace changed and the committer must write:
 * journal records for every change, the dirty bits that pin changed slots
 * until their batch is committed, and the swap/publish steps of a commit
 * (notes 2 and 3 in ns.c), and the bound on the uncommitted journal that
 * makes mutations wait, then fail, while commits do not keep up. Called
 * with the namespace lock held unless a function takes it itself. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "clock.h"
#include "log.h"
#include "ns_impl.h"

int64_t now_ns(void)
{
	return (int64_t)clock_ns(CLOCK_REALTIME);
}

/* Running out of memory for the journal would lose acknowledged changes:
 * there is no way to continue safely. */
void must(int rc, const char *what)
{
	if (rc < 0) {
		log_error("out of memory while %s; stopping", what);
		abort();
	}
}

static void offvec_push(struct offvec *v, mc_off_t off)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 256;
		mc_off_t *p = realloc(v->v, cap * sizeof(*p));
		must(p ? 0 : -ENOMEM, "recording dirty entries");
		v->v = p;
		v->cap = cap;
	}
	v->v[v->n++] = off;
}

/* ---- dirtying and journaling --------------------------------------------- */

/* Mark a slot dirty in the running batch: its flags hold DIRTY0 at bit0 and
 * DIRTY1 at bit0 << 1 (dentries and inodes alike); count it when it was
 * clean and remember it for the batch's publish. */
static void slot_dirty(struct ns *ns, uint16_t *flags, uint16_t bit0, uint64_t *ndirty,
                       struct offvec *dirty, mc_off_t off)
{
	unsigned p = (unsigned)(ns->running->seq & 1);
	uint16_t bit = (uint16_t)(bit0 << p);
	if (ns->arm && ns->armed_seq != ns->running->seq) {
		ns->armed_seq = ns->running->seq;
		ns->arm(ns->arm_arg);
	}
	if (*flags & bit)
		return;
	if (!(*flags & (bit0 | bit0 << 1)))
		(*ndirty)++;
	*flags |= bit;
	offvec_push(&dirty[p], off);
}

void dentry_dirty(struct ns *ns, mc_off_t d)
{
	_Static_assert(MC_D_DIRTY1 == MC_D_DIRTY0 << 1, "dentry dirty bits are adjacent");
	slot_dirty(ns, &dentry_at(ns->shm, d)->flags, MC_D_DIRTY0, &ns->shm->d_dirty,
	           ns->dirty_d, d);
}

void inode_dirty(struct ns *ns, mc_off_t off)
{
	_Static_assert(MC_I_DIRTY1 == MC_I_DIRTY0 << 1, "inode dirty bits are adjacent");
	slot_dirty(ns, &inode_at(ns->shm, off)->flags, MC_I_DIRTY0, &ns->shm->i_dirty,
	           ns->dirty_i, off);
}

/* Journal the current state of a cached inode. An inode without links was
 * deleted from the store when it lost its last one: nothing to write. */
void inode_changed(struct ns *ns, mc_off_t off)
{
	struct mc_inode *i = inode_at(ns->shm, off);
	watch_note_inode(i->ino);
	inode_dirty(ns, off);
	if (i->nlink == 0)
		return;
	struct mc_inode_rec rec;
	inode_rec(ns->shm, off, &rec);
	struct map *m = &ns->recs[ns->running->seq & 1];
	uint64_t *at = map_find(m, off);
	/* Already journaled in this batch: rewrite that record (it fails only
	 * when the slot held another inode then, which needs a new record). */
	if (at && journal_update_inode(ns->running, (size_t)*at, &rec) == 0)
		return;
	const char *t = NULL;
	size_t tlen = 0;
	if (S_ISLNK(i->mode))
		t = inode_target(ns->shm, off, &tlen);
	size_t where = ns->running->len;
	must(journal_put_inode(ns->running, &rec, t, tlen), "journaling an inode");
	if (at)
		*at = where;
	else
		must(map_put(m, off, where), "indexing the journal");
}

void inode_gone(struct ns *ns, mc_off_t off)
{
	watch_note_inode(inode_at(ns->shm, off)->ino);
	inode_dirty(ns, off);
	must(journal_del_inode(ns->running, inode_at(ns->shm, off)->ino), "journaling a delete");
}

void inode_unlinked(struct ns *ns, uint64_t ino, int64_t now)
{
	unsigned p = (unsigned)(ns->running->seq & 1);
	must(journal_unlink_inode(ns->running, ino, now), "journaling an unlink");
	uint64_t *t = map_find(&ns->drops[p], ino);
	if (!t) {
		must(map_put(&ns->drops[p], ino, (uint64_t)now), "noting an unlink");
		return;
	}
	*t = (uint64_t)now; /* another name of it: rare */
	uint64_t *n = map_find(&ns->drops_more[p], ino);
	if (n)
		(*n)++;
	else
		must(map_put(&ns->drops_more[p], ino, 1), "noting an unlink");
}

int inode_unlink_adjust(const struct ns *ns, struct mc_inode_rec *rec)
{
	if (ns->swapped && map_find(&ns->drops[ns->swapped->seq & 1], rec->ino))
		return -EAGAIN;
	unsigned p = (unsigned)(ns->running->seq & 1);
	uint64_t *t = map_find(&ns->drops[p], rec->ino);
	if (!t)
		return 0;
	uint64_t *more = map_find(&ns->drops_more[p], rec->ino);
	uint64_t n = 1 + (more ? *more : 0);
	if (rec->nlink <= n)
		return -EIO; /* the name it is loaded by is a link too */
	rec->nlink -= (uint32_t)n;
	rec->ctime_ns = (int64_t)*t;
	return 1;
}

/* ---- the journal bound --------------------------------------------------- */

void ns_journal_init(struct ns *ns, const struct ns_opts *o)
{
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&ns->room, &ca);
	pthread_condattr_destroy(&ca);
	if (o) {
		ns->jmax_recs = o->journal_max_records;
		ns->jmax_bytes = o->journal_max_bytes;
		ns->jwait_ms = o->journal_wait_ms;
	}
}

void ns_journal_fini(struct ns *ns)
{
	pthread_cond_destroy(&ns->room);
}

/* Is the uncommitted journal at 1/div of its bound (records or bytes)? */
static bool journal_at(const struct ns *ns, uint64_t div)
{
	uint64_t recs = ns->running->nrecs, bytes = ns->running->len;
	if (ns->swapped) {
		recs += ns->swapped->nrecs;
		bytes += ns->swapped->len;
	}
	return (ns->jmax_recs && recs >= ns->jmax_recs / div) ||
	       (ns->jmax_bytes && bytes >= ns->jmax_bytes / div);
}

int ns_journal_room(struct ns *ns)
{
	if (ns->kick && ns->running->nrecs > 0 && ns->kicked_seq != ns->running->seq &&
	    journal_at(ns, 2)) {
		ns->kicked_seq = ns->running->seq;
		ns->kick(ns->kick_arg);
	}
	if (!journal_at(ns, 1))
		return 0;
	if (ns->jrefusing) {
		/* A wait timed out and nothing was committed since: waiting again
		 * would only multiply the delay (a batch of mutations, a shutdown).
		 * A retry soon tells whether the store is back. */
		if (ns->kick)
			ns->kick(ns->kick_arg);
		ns->full_refusals++;
		return -ENOSPC;
	}
	ns->full_waits++;
	uint64_t w0 = mono_us();
	struct timespec dl;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += ns->jwait_ms / 1000;
	dl.tv_nsec += (long)(ns->jwait_ms % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	while (journal_at(ns, 1)) {
		if (ns->kick)
			ns->kick(ns->kick_arg);
		if (pthread_cond_timedwait(&ns->room, &ns->lock, &dl) == ETIMEDOUT &&
		    journal_at(ns, 1)) {
			ns->full_refusals++;
			ns->jrefusing = true;
			ns->full_wait_us += mono_us() - w0;
			return -ENOSPC;
		}
	}
	ns->full_wait_us += mono_us() - w0;
	return 0;
}

void ns_set_kick(struct ns *ns, void (*fn)(void *arg), void *arg)
{
	pthread_mutex_lock(&ns->lock);
	ns->kick = fn;
	ns->kick_arg = arg;
	pthread_mutex_unlock(&ns->lock);
}

void ns_set_arm(struct ns *ns, void (*fn)(void *arg), void *arg)
{
	pthread_mutex_lock(&ns->lock);
	ns->arm = fn;
	ns->arm_arg = arg;
	ns->armed_seq = 0;
	pthread_mutex_unlock(&ns->lock);
}

/* ---- commit support ------------------------------------------------------ */

uint64_t ns_pending_seq(struct ns *ns)
{
	pthread_mutex_lock(&ns->lock);
	uint64_t seq = 0;
	if (ns->running->nrecs > 0)
		seq = ns->running->seq;
	else if (ns->swapped)
		seq = ns->running->seq - 1;
	pthread_mutex_unlock(&ns->lock);
	return seq;
}

uint64_t ns_journal_records(struct ns *ns)
{
	pthread_mutex_lock(&ns->lock);
	uint64_t n = ns->running->nrecs;
	pthread_mutex_unlock(&ns->lock);
	return n;
}

static void backlog_get(const struct ns *ns, struct ns_backlog *out)
{
	*out = (struct ns_backlog){ ns->running->nrecs, ns->running->len,
	                            ns->running->nrecs > 0 };
	if (ns->swapped) {
		out->records += ns->swapped->nrecs;
		out->bytes += ns->swapped->len;
		out->batches++;
	}
}

void ns_journal_backlog(struct ns *ns, struct ns_backlog *out)
{
	pthread_mutex_lock(&ns->lock);
	backlog_get(ns, out);
	pthread_mutex_unlock(&ns->lock);
}

/* Take the lock as the committer (ns_impl.h, committer_waiting). */
static void committer_lock(struct ns *ns)
{
	atomic_fetch_add_explicit(&ns->committer_waiting, 1, memory_order_relaxed);
	pthread_mutex_lock(&ns->lock);
	atomic_fetch_sub_explicit(&ns->committer_waiting, 1, memory_order_relaxed);
}

struct journal_batch *ns_swap(struct ns *ns)
{
	committer_lock(ns);
	dir_owed_flush(ns); /* a run's directory record goes with its names */
	struct journal_batch *b = NULL;
	if (ns->running->nrecs > 0 && !ns->swapped && ns->spare) {
		b = ns->running;
		b->next_ino = ns->next_ino;
		ns->running = ns->spare;
		ns->spare = NULL;
		journal_batch_reset(ns->running, b->seq + 1);
		ns->swapped = b;
	} else if (ns->running->nrecs == 0) {
		/* Armed by a change that left no record: the next one arms again. */
		ns->armed_seq = 0;
	}
	pthread_mutex_unlock(&ns->lock);
	return b;
}

void ns_publish(struct ns *ns, struct journal_batch *b)
{
	struct shm *s = ns->shm;
	unsigned p = (unsigned)(b->seq & 1);
	/* No warmer may hold a snapshot older than this publish (ns_warm.c). */
	commit_sem_write_lock(&ns->csem);
	committer_lock(ns);
	uint16_t dbit = p ? MC_D_DIRTY1 : MC_D_DIRTY0;
	struct offvec *dv = &ns->dirty_d[p];
	for (size_t k = 0; k < dv->n; k++) {
		/* Freed since, its page perhaps another type's now (shm.h). */
		if (shm_off_type(s, dv->v[k]) != MC_PT_DENTRY)
			continue;
		struct mc_dentry *e = dentry_at(s, dv->v[k]);
		if (!(e->flags & MC_D_LIVE) || !(e->flags & dbit))
			continue;
		e->flags &= (uint16_t)~dbit;
		if (e->flags & (MC_D_DIRTY0 | MC_D_DIRTY1))
			continue;
		s->d_dirty--;
		/* A clean negative entry in a complete directory says nothing
		 * the directory does not; over a cap, it goes too. */
		if (!(e->flags & MC_D_POSITIVE) &&
		    (dcache_complete(s, e->parent) || s->d_negative > ns->neg_max ||
		     dcache_dirx(s, e->parent, false)->nneg > ns->neg_dir_max)) {
			dcache_del(s, dv->v[k]);
			ns->shr.st.neg_evicted++;
		}
	}
	dv->n = 0;
	uint16_t ibit = p ? MC_I_DIRTY1 : MC_I_DIRTY0;
	struct offvec *iv = &ns->dirty_i[p];
	for (size_t k = 0; k < iv->n; k++) {
		if (shm_off_type(s, iv->v[k]) != MC_PT_INODE)
			continue;
		struct mc_inode *i = inode_at(s, iv->v[k]);
		if (!(i->flags & MC_I_LIVE) || !(i->flags & ibit))
			continue;
		i->flags &= (uint16_t)~ibit;
		if (!(i->flags & (MC_I_DIRTY0 | MC_I_DIRTY1)))
			s->i_dirty--;
	}
	iv->n = 0;
	/* Its records' index is for the batch after next to reuse; its
	 * unlinks are in the store (ns.c note 7). */
	map_clear(&ns->recs[p]);
	map_clear(&ns->drops[p]);
	map_clear(&ns->drops_more[p]);
	atomic_store_explicit(&s->hdr->committed_seq, b->seq, memory_order_release);
	ns->spare = b;
	ns->swapped = NULL;
	ns->jrefusing = false;
	pthread_cond_broadcast(&ns->room);
	pthread_mutex_unlock(&ns->lock);
	commit_sem_write_unlock(&ns->csem);
}

void ns_get_counts(struct ns *ns, struct ns_counts *out)
{
	struct shm *s = ns->shm;
	pthread_mutex_lock(&ns->lock);
	out->positive = s->d_positive;
	out->negative = s->d_negative;
	out->dentries_dirty = s->d_dirty;
	out->dirs_complete = s->dirs_complete;
	out->inodes = s->slab[SLAB_INODE].live - s->reserved[SLAB_INODE]; /* shm.c note 11 */
	out->inodes_dirty = s->i_dirty;
	out->prunes = s->prunes;
	out->pruned = s->pruned;
	out->shm_used = shm_bytes_used(s);
	out->shm_total = s->size;
	out->alloc_failures = s->alloc_failures;
	out->pages_free = s->pool_pages + (s->hdr->npages - s->next_page);
	out->pages_returned = s->pages_returned;
	out->journal_records = ns->running->nrecs;
	struct ns_backlog bl;
	backlog_get(ns, &bl);
	out->backlog_records = bl.records;
	out->backlog_bytes = bl.bytes;
	out->full_waits = ns->full_waits;
	out->full_refusals = ns->full_refusals;
	out->full_wait_us = ns->full_wait_us;
	out->miss_reads = ns->miss_reads;
	out->miss_ahead_used = ns->miss_ahead_used;
	out->committed_seq = atomic_load_explicit(&s->hdr->committed_seq, memory_order_acquire);
	out->shrink = ns->shr.st;
	out->high_bytes = ns->shr.high;
	out->low_bytes = ns->shr.low;
	out->bytes_dentries = shm_slab_bytes(s, SLAB_DENTRY);
	out->bytes_inodes = shm_slab_bytes(s, SLAB_INODE);
	out->bytes_dirs = shm_slab_bytes(s, SLAB_DIRX);
	out->bytes_names = 0;
	for (unsigned k = SLAB_BLOB0; k < SLAB_COUNT; k++)
		out->bytes_names += shm_slab_bytes(s, (enum shm_slab)k);
	out->bytes_meta = s->meta_bytes;
	pthread_mutex_unlock(&ns->lock);
}
