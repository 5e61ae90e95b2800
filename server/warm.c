/* warm.c - the warmer threads (warm.h).
 *
 * Work is a queue of directories (struct warm_item): the root first, then
 * every subdirectory found, in FIFO order, so upper levels are loaded
 * before deep leaves and the threads split the tree between them. One step
 * of a thread is one bounded batch of one directory:
 *
 *   [idle] ──pop──► q = published seq ─► store_snap_take ─► scan up to
 *     ▲             WARM_BATCH entries ─► store_snap_release ─► ns_warm_stage
 *     │             (slots reserved and filled) ─► commit_sem read ─► seq
 *     │             still q? ─► ns_warm_dir (namespace lock, inserts; stops
 *     │             early if committer_waiting) ─► commit_sem read unlock
 *     └── requeue at the head with the resume name (a yield, a stale
 *         batch, or more entries), or queue the subdirectories at the
 *         tail (done)
 *
 * Invariants:
 *  1. A thread inserts what its snapshot gave holding the commit semaphore
 *     for reading, and no publish falls between the snapshot and the
 *     insert (ns_warm.c note 1). Usually it reads and decodes the batch
 *     without the semaphore, so a committer never waits for a scan: it
 *     notes the published sequence before the snapshot, and once it holds
 *     the semaphore it inserts only if the sequence has not moved. A batch
 *     found stale is thrown away and read again: the item's next step
 *     takes the semaphore before its snapshot (polling
 *     committer_waiting between entries), as the old way did, so warming
 *     goes on under a steady stream of commits. The snapshot is released
 *     before the namespace lock is taken, since a store reader (a miss)
 *     may hold that lock: the copies in buf are all the insert needs.
 *  2. A thread holds at most one of w->mu, the commit semaphore: it never
 *     takes w->mu with the semaphore held, and the namespace lock is only
 *     taken inside ns_warm_stage, ns_warm_dir and ns_warm_stage_return
 *     (order: semaphore, namespace lock), never under w->mu. The miss hook
 *     takes w->mu under the namespace lock: w->mu is a leaf. A thread out
 *     of work gives its stage's reserved slots back before it waits.
 *  3. The start-up warm-up is over (`warmed`) when the queue is empty and
 *     no thread is in a step; read-ahead items queued later do not undo it.
 *  4. An item's resume name is the last entry it processed: a directory is
 *     read in name order, once, across its steps. A warm-up item reads its
 *     directory to the end even when it became complete meanwhile (a
 *     listing, a read-ahead item): its subdirectories are queued by it
 *     alone.
 *  5. The threads run at nice --warm-nice, 19 by default (they are named
 *     "mcached-warm"): the committer, the connection threads and the
 *     clients on the same machine go first, so a commit is not delayed by
 *     warmers that keep every core busy. While a step reads the store
 *     without the commit semaphore or the namespace lock (the usual case)
 *     the thread is in the SCHED_IDLE class too (warm_class), which any
 *     other thread woken on its CPU preempts at once; at nice 19 alone the
 *     scheduler lets the running warmer finish its slice first, a few ms.
 *     Not while it inserts: on a busy machine an idle-class thread may
 *     wait for a CPU for a long time, and a warmer holding the namespace
 *     lock (or the commit semaphore) would make the committer and the
 *     clients wait with it; nice 19 still gets a small share. A read
 *     holds only the store's read sides: the map-resize lock (which a
 *     commit takes for writing only to grow the map) and, while LMDB fills
 *     one scan chunk, the overlay lock (store_read.c note 1d); a committer
 *     that preempts a warmer there and waits for it sleeps, and so gives
 *     the warmer its CPU back, unless other work saturates the machine,
 *     where --warm-nice 0 is the way out. Coming back from SCHED_IDLE
 *     needs CAP_SYS_NICE or an RLIMIT_NICE that allows the nice value
 *     (the systemd unit's LimitNICE): warm_start tries it once on a thread
 *     of its own (warm_idle_allowed), and without it the warmers stay at
 *     their nice value throughout. --warm-nice 0 turns both off. A machine
 *     saturated by other work may be better served by a lower value.
 *     In either class a warmer asks for the shortest time slice the kernel
 *     takes (WARM_SLICE_NS, thread_sched.h): a thread woken beside a
 *     warmer that inserts, or one that yielded its CPU to it while
 *     polling, then waits for at most that slice, not the default one
 *     (1.4 ms on a 2-CPU machine). The warmers get no less CPU for it.
 *  6. A step that stopped for the committer (or found its batch stale:
 *     the committer published meanwhile) gives the CPU up
 *     (sched_yield) once the semaphore is let go, so the woken committer
 *     runs before the warmer takes another step.
 *  7. While a commit someone waits for is under way (commit_sem.h note 4)
 *     a warmer steps aside for the whole of it, not just the publish: its
 *     scan stops at the next entry, it inserts nothing of that batch
 *     (after the publish it would be stale anyway), lets go of the
 *     snapshot and the semaphore and sleeps until the commit is answered.
 *     At nice 19 a warmer still keeps a CPU for a while when a thread of
 *     the commit wakes up (the scheduler lets the running thread finish
 *     its slice), and with two warmers on two cores every wakeup of the
 *     committer, of the thread answering the waiter and of the client
 *     waited for one. The sleep is bounded (WARM_ASIDE_MAX_US); a warmer
 *     whose sleep ran out takes its next step whole, so a stream of
 *     waiters (--sync) slows the warm-up but cannot stop it.
 *  8. A large directory is split between threads by name range, when a
 *     thread runs out of work while another is in an item with more to
 *     read (warm_split): that item's remaining names (after, until]
 *     are cut at a name between its resume name and its end (the tables'
 *     last name of the directory when it has no end yet, a hint: any cut
 *     is correct), into (after, mid], kept by the item, and (mid, until],
 *     a new item at the head of the queue. A thread that cannot find work
 *     waits for one, so two warmers split a flat directory of a million
 *     names in two and keep splitting what is left as one runs dry. The
 *     parts share a span: their mark (ns_warm.c note 5: the ranges never
 *     meet, so no part's names can be cached by another's inserts) and
 *     how many parts are still in the queue or a step; the directory is
 *     done when the last one is. Each part pushes the subdirectories it
 *     read and tells ns_warm_dir it is at its end at its range's end: the
 *     directory is marked complete by whichever part sees every entry
 *     cached, which counts them (ns_warm.c note 4), so not before the
 *     last part. A read-ahead item is split the same way (a miss in a
 *     large directory then waits for half of it), its parts stop once
 *     the directory is complete.
 *  9. A directory is read by one item at a time: a second item would
 *     read it again beside the first, each finding the other's inserts
 *     and so looking up every name (ns_warm.c note 5), twice the work of
 *     one read. `queued` holds every directory with an item in the queue
 *     or in a step, and what it is (QUEUED_*): a miss queues a read-ahead
 *     item only for a directory it does not hold, and moves a warm-up item
 *     that has not begun to the head of the queue instead (counted in
 *     `promoted`). A warm-up item for a directory read ahead (a miss came
 *     before the warm-up reached its parent) is parked in `queued` until
 *     the read-ahead is over, then queued at the head: the directory is
 *     complete by then, and it reads on only for the subdirectories. The
 *     item that put the directory in `queued` (its span, once split)
 *     takes it out with its last part, or hands it to the parked item.
 */
#include "warm.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/resource.h>
#include <unistd.h>

#include "clock.h"
#include "commit_sem.h"
#include "log.h"
#include "map.h"
#include "name_order.h"
#include "ns.h"
#include "store_read.h"
#include "thread_sched.h"

#define WARM_BATCH NS_WARM_MAX /* a batch is staged whole (ns_warm_stage) */
/* Longest a warmer sleeps for one waited-for commit (note 7). */
#define WARM_ASIDE_MAX_US 2000u
/* The warmers' time slice (note 5): the shortest the kernel takes. */
#define WARM_SLICE_NS THREAD_SLICE_MIN_NS

/* What the parts of a split directory share (note 8), w->mu held but for
 * mark, which ns_warm_dir reads and writes under the namespace lock. */
struct warm_span {
	struct ns_warm_mark mark;
	unsigned parts;            /* items of it in the queue or in a step */
	bool listed;               /* the first part's listed (note 9) */
};

struct warm_item {
	TAILQ_ENTRY(warm_item) q;
	uint64_t ino;
	bool readahead;            /* queued by a miss: this directory only */
	bool stale;                /* its last batch was stale: hold next step (note 1) */
	bool bounded;              /* it ends at until (note 8); else at the directory's end */
	bool listed;               /* it put its directory in `queued` (note 9) */
	struct warm_span *span;    /* shared with the other parts; NULL: not split */
	struct ns_warm_mark mark;  /* what its steps left in the directory, when not split */
	uint16_t after_len, until_len;
	char after[MC_NAME_MAX];   /* its resume name: it reads the names past it */
	char until[MC_NAME_MAX];   /* ... up to this one, when bounded */
};
TAILQ_HEAD(warm_queue, warm_item);

struct warm_thread {
	struct warm *w;
	pthread_t th;
	bool started;
	struct store_snap *snap;
	struct ns_warm_ent *buf;   /* WARM_BATCH entries */
	struct ns_warm_stage *stage; /* slots for them, filled before the semaphore */
	size_t n;                  /* entries in buf */
	bool held;                 /* the scan holds the commit semaphore (note 1) */
	bool yielded;              /* the scan stopped for the committer */
	bool aside;                /* ... to step aside (note 7) */
	bool whole;                /* this step does not step aside (note 7) */
	bool idle;                 /* in the SCHED_IDLE class (note 5) */
	bool past;                 /* the scan reached the item's until (note 8) */
	const struct warm_item *it; /* the item of the scan */
	_Atomic uint64_t entries, busy_ns;
};

struct warm {
	struct ns *ns;
	struct commit_sem *sem;
	pthread_mutex_t mu;
	pthread_cond_t cv;         /* work queued, warm-up over, stop */
	struct warm_queue queue;
	struct map queued;         /* directories with an item queued or in a step (note 9),
	                            * and what it is (QUEUED_*) */
	unsigned busy;             /* threads in a step */
	atomic_uint hungry;        /* threads waiting for an item while some are busy */
	bool stop, warmed;
	atomic_bool stopping;      /* stop, read without mu: a scan ends early */
	uint64_t start_ns, end_ns;
	_Atomic uint64_t entries, bytes, yields, dirs_done, dirs_queued, readahead, splits,
	    promoted, lookups;
	unsigned delay_us;         /* MCACHED_WARM_ENTRY_DELAY_US (warm.h) */
	int nice;                  /* the threads' nice value (note 5) */
	bool idle_reads;           /* reads run in SCHED_IDLE (note 5) */
	unsigned n;
	struct warm_thread t[];
};

static void add(_Atomic uint64_t *v, uint64_t x)
{
	atomic_fetch_add_explicit(v, x, memory_order_relaxed);
}

static uint64_t get(const _Atomic uint64_t *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

/* What `queued` says of a directory (note 9): its warm-up item has begun;
 * its read-ahead item is queued or has begun; else its warm-up item that
 * has not begun, or (low bit set) the one parked behind the read-ahead. */
#define QUEUED_BEGUN 2u
#define QUEUED_AHEAD 4u
#define QUEUED_PARKED 1u

static struct warm_item *queued_item(uint64_t v)
{
	return (struct warm_item *)(uintptr_t)(v & ~(uint64_t)QUEUED_PARKED);
}

/* The warm-up item that has not begun, when v names one. */
static struct warm_item *queued_waiting(uint64_t v)
{
	return v == QUEUED_BEGUN || v == QUEUED_AHEAD || (v & QUEUED_PARKED) ? NULL : queued_item(v);
}

/* Queue directory ino (w->mu held), at the head for a read-ahead; listed
 * in `queued` when it holds no item of ino yet, or parked behind its
 * read-ahead (note 9). */
static int push(struct warm *w, uint64_t ino, bool readahead, bool at_head)
{
	struct warm_item *it = calloc(1, sizeof(*it));
	if (!it)
		return -ENOMEM;
	it->ino = ino;
	it->readahead = readahead;
	add(&w->dirs_queued, 1);
	uint64_t *v = map_find(&w->queued, ino);
	if (v && *v == QUEUED_AHEAD && !readahead) {
		*v = (uint64_t)(uintptr_t)it | QUEUED_PARKED;
		it->listed = true; /* the read-ahead hands the directory over */
		return 0;
	}
	if (!v && map_reserve(&w->queued) == 0) {
		map_put(&w->queued, ino, readahead ? QUEUED_AHEAD : (uint64_t)(uintptr_t)it);
		it->listed = true;
	}
	if (at_head)
		TAILQ_INSERT_HEAD(&w->queue, it, q);
	else
		TAILQ_INSERT_TAIL(&w->queue, it, q);
	pthread_cond_signal(&w->cv);
	return 0;
}

/* The miss hook: read the whole directory ahead, unless an item reads it
 * already; one that has not begun goes first (note 9). */
static void warm_on_miss(void *arg, uint64_t dir_ino)
{
	struct warm *w = arg;
	pthread_mutex_lock(&w->mu);
	const uint64_t *v = w->stop ? NULL : map_find(&w->queued, dir_ino);
	struct warm_item *it = v ? queued_waiting(*v) : NULL;
	if (it) {
		TAILQ_REMOVE(&w->queue, it, q);
		TAILQ_INSERT_HEAD(&w->queue, it, q);
		add(&w->promoted, 1);
	} else if (!v && !w->stop && push(w, dir_ino, true, true) == 0) {
		add(&w->readahead, 1);
	}
	pthread_mutex_unlock(&w->mu);
}

/* store_snap_scan_dir callback: copy one entry into the batch. */
static int collect(void *arg, const char *name, size_t namelen, uint64_t ino, uint8_t dtype,
                   const struct mc_inode_rec *rec, const char *target, size_t tlen)
{
	struct warm_thread *t = arg;
	if (t->w->delay_us)
		usleep(t->w->delay_us); /* a slow store, for tests */
	if ((t->held && commit_sem_contended(t->w->sem)) ||
	    atomic_load_explicit(&t->w->stopping, memory_order_relaxed)) {
		t->yielded = true;
		return 1;
	}
	if (!t->whole && commit_sem_aside_wanted(t->w->sem)) {
		t->yielded = t->aside = true;
		return 1;
	}
	if (t->it->bounded && name_cmp(name, namelen, t->it->until, t->it->until_len) > 0) {
		t->past = true;
		return 1;
	}
	ns_warm_ent_set(&t->buf[t->n++], name, namelen, ino, dtype, rec, target, tlen);
	return t->n == WARM_BATCH ? 1 : 0;
}

/* Note 5: into the SCHED_IDLE class for a read that holds nothing, back
 * to the thread's nice value before anything is taken. */
static void warm_class(struct warm_thread *t, bool idle)
{
	/* idle_reads: at nice w->nice > 0, which warm_main set. */
	if (t->w->idle_reads && t->idle != idle &&
	    thread_sched_set(idle ? SCHED_IDLE : SCHED_OTHER, t->w->nice, WARM_SLICE_NS) == 0)
		t->idle = idle;
}

/* One step on item it: 1 when it has more to do (requeue it), 0 when the
 * directory is done, -ENOSPC when the cache is as full as warming may
 * make it, another -errno on failure (the item is dropped). */
static int warm_step(struct warm_thread *t, struct warm_item *it, size_t *processed)
{
	struct warm *w = t->w;
	struct ns_warm_res res = { 0 };
	uint64_t t0 = mono_ns();
	t->n = 0;
	t->yielded = t->aside = t->past = false;
	t->it = it;
	t->held = it->stale;
	it->stale = false;
	ns_warm_prepare(w->ns); /* before the semaphore: a committer never waits for it */
	if (t->held)
		commit_sem_read_lock(w->sem);
	else
		warm_class(t, true);
	uint64_t seq = ns_published_seq(w->ns);
	int rc = store_snap_take(t->snap);
	if (rc == 0) {
		rc = store_snap_scan_dir(t->snap, it->ino, it->after, it->after_len, collect, t);
		/* buf holds copies: the snapshot goes before the namespace lock
		 * is taken (a reader of the store may hold that lock). */
		store_snap_release(t->snap);
	}
	warm_class(t, false);
	bool at_end = !t->yielded && (t->n < WARM_BATCH || t->past);
	if (t->aside) {
		/* Note 7: none of this batch, read it again after the commit. */
		if (t->held)
			commit_sem_read_unlock(w->sem);
		it->stale = t->held;
		t->n = 0;
		rc = rc < 0 ? rc : 1;
		goto done;
	}
	if (rc == 0 && t->n > 0)
		ns_warm_stage(w->ns, t->stage, it->ino, t->buf, t->n); /* as ns_warm_prepare */
	if (!t->held) {
		commit_sem_read_lock(w->sem);
		if (rc == 0 && ns_published_seq(w->ns) != seq) {
			it->stale = true; /* note 1: read it again, holding */
			t->yielded = true;
			rc = 1;
		}
	}
	if (rc == 0)
		rc = ns_warm_dir(w->ns, t->stage, it->ino, t->buf, t->n, at_end,
		                 it->span ? &it->span->mark : &it->mark, &res);
	if (rc == 0 && res.processed < t->n)
		t->yielded = true; /* ns_warm_dir stopped for the committer */
	/* A complete directory: read-ahead is done; the warm-up reads on to
	 * the end, inserting nothing, to queue every subdirectory (note 4). */
	if (rc == 0 && (t->yielded || !at_end) && !(res.complete && it->readahead))
		rc = 1;
	commit_sem_read_unlock(w->sem);
	if (t->yielded)
		sched_yield(); /* note 6 */
done:
	add(&t->busy_ns, mono_ns() - t0);
	t->whole = false;
	if (t->aside) /* note 7 */
		t->whole = !commit_sem_step_aside(w->sem, WARM_ASIDE_MAX_US);
	add(&t->entries, res.added);
	add(&w->entries, res.added);
	add(&w->lookups, res.lookups);
	add(&w->bytes, res.bytes);
	if (t->yielded)
		add(&w->yields, 1);
	if (res.processed > 0) {
		const struct ns_warm_ent *last = &t->buf[res.processed - 1];
		memcpy(it->after, last->name, last->namelen);
		it->after_len = last->namelen;
	}
	*processed = res.processed;
	if (rc == -ENOENT)
		rc = 0; /* not a cached directory (any more): nothing to warm */
	return rc;
}

/* Note 8: where to cut what is left of it, into mid (*mid_len): the mean
 * of its resume name and its end, halved towards the resume name while
 * the tables hold no name between the cut and the end (a few names far
 * past the others, say, would leave the second half those alone).
 * false: nothing to cut at. */
static bool split_point(struct warm_thread *t, const struct warm_item *it, char *mid,
                        size_t *mid_len)
{
	char end[MC_NAME_MAX], next[MC_NAME_MAX], cut[MC_NAME_MAX];
	size_t end_len = it->until_len, next_len;
	bool ok = false;
	memcpy(end, it->until, it->until_len);
	if (store_snap_take(t->snap) < 0)
		return false;
	if (!it->bounded && store_snap_last_name(t->snap, it->ino, end, &end_len) <= 0)
		goto out;
	for (int tries = 0; tries < 16; tries++) {
		size_t n = name_mid(it->after, it->after_len, end, end_len, cut);
		if (name_cmp(cut, n, it->after, it->after_len) <= 0)
			break;
		memcpy(mid, cut, n);
		*mid_len = n;
		ok = true;
		int found = store_snap_name_from(t->snap, it->ino, cut, n, next, &next_len);
		if (found > 0 && name_cmp(next, next_len, end, end_len) < 0)
			break;
		memcpy(end, cut, n); /* nothing in between: look lower */
		end_len = n;
	}
out:
	store_snap_release(t->snap);
	return ok;
}

/* Note 8: cut what is left of it (owned by the caller, out of the queue)
 * in two, keeping the first half; the item for the second half, to be
 * queued, or NULL when there is no name to cut at (or no memory). */
static struct warm_item *warm_split(struct warm_thread *t, struct warm_item *it)
{
	char mid[MC_NAME_MAX];
	size_t mid_len = 0;
	if (!split_point(t, it, mid, &mid_len))
		return NULL;
	struct warm_item *part = calloc(1, sizeof(*part));
	if (!part)
		return NULL;
	if (!it->span) { /* its first cut: it is the only reader so far */
		if (!(it->span = calloc(1, sizeof(*it->span)))) {
			free(part);
			return NULL;
		}
		it->span->mark = it->mark;
		it->span->parts = 1; /* the queue's part is counted when queued */
		it->span->listed = it->listed;
	}
	part->ino = it->ino;
	part->readahead = it->readahead;
	part->span = it->span;
	part->bounded = it->bounded;
	part->until_len = it->until_len;
	memcpy(part->until, it->until, it->until_len);
	part->after_len = (uint16_t)mid_len;
	memcpy(part->after, mid, mid_len);
	it->bounded = true;
	it->until_len = (uint16_t)mid_len;
	memcpy(it->until, mid, mid_len);
	return part;
}

/* Free an item that is done with (w->mu held): true when it was the last
 * part of its directory (note 8); the directory then leaves `queued`, or
 * goes to the warm-up item parked behind it (note 9). */
static bool item_free(struct warm *w, struct warm_item *it)
{
	bool last = !it->span || --it->span->parts == 0;
	bool listed = it->span ? it->span->listed : it->listed;
	if (it->span && last)
		free(it->span);
	uint64_t *v = listed && last ? map_find(&w->queued, it->ino) : NULL;
	if (v && (*v & QUEUED_PARKED)) {
		struct warm_item *parked = queued_item(*v);
		*v = (uint64_t)(uintptr_t)parked; /* listed, not begun */
		TAILQ_INSERT_HEAD(&w->queue, parked, q);
		pthread_cond_signal(&w->cv);
	} else if (v) {
		map_del(&w->queued, it->ino);
	}
	free(it);
	return last;
}

/* Queue the subdirectories the last step processed (w->mu held). */
static void push_subdirs(struct warm *w, struct warm_thread *t, size_t processed)
{
	for (size_t k = 0; k < processed; k++)
		if (t->buf[k].dtype == DT_DIR && t->buf[k].have_rec &&
		    push(w, t->buf[k].ino, false, false) < 0)
			log_warn("warm: out of memory queueing directory %llu",
			         (unsigned long long)t->buf[k].ino);
}

static void queue_clear(struct warm *w)
{
	struct warm_item *it;
	while ((it = TAILQ_FIRST(&w->queue))) {
		TAILQ_REMOVE(&w->queue, it, q);
		item_free(w, it);
	}
}

static void *warm_main(void *arg)
{
	struct warm_thread *t = arg;
	struct warm *w = t->w;
	/* Note 5; on failure the thread just runs at the server's priority. */
	pthread_setname_np(pthread_self(), "mcached-warm");
	if (w->nice && setpriority(PRIO_PROCESS, (id_t)gettid(), w->nice) < 0)
		log_warn("warm: cannot lower the warmer's priority: %s", strerror(errno));
	thread_slice_set(WARM_SLICE_NS);
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->stop && TAILQ_EMPTY(&w->queue)) {
			if (ns_warm_stage_holds(t->stage)) {
				/* Out of work: its reserved slots go back (the
				 * namespace lock is not taken under w->mu). */
				pthread_mutex_unlock(&w->mu);
				ns_warm_stage_return(w->ns, t->stage);
				pthread_mutex_lock(&w->mu);
				continue;
			}
			if (w->busy == 0 && !w->warmed) {
				w->warmed = true;
				w->end_ns = mono_ns();
				pthread_cond_broadcast(&w->cv);
			}
			atomic_fetch_add(&w->hungry, 1);
			pthread_cond_wait(&w->cv, &w->mu);
			atomic_fetch_sub(&w->hungry, 1);
		}
		if (w->stop)
			break;
		struct warm_item *it = TAILQ_FIRST(&w->queue);
		TAILQ_REMOVE(&w->queue, it, q);
		if (it->listed) { /* note 9: a miss no longer moves it */
			uint64_t *v = map_find(&w->queued, it->ino);
			if (v && *v == (uint64_t)(uintptr_t)it)
				*v = QUEUED_BEGUN;
		}
		w->busy++;
		pthread_mutex_unlock(&w->mu);

		size_t processed = 0;
		int rc = warm_step(t, it, &processed);
		struct warm_item *part = NULL;
		if (rc == 1 && atomic_load(&w->hungry) > 0)
			part = warm_split(t, it); /* note 8; it is still ours */

		pthread_mutex_lock(&w->mu);
		w->busy--;
		if (!it->readahead)
			push_subdirs(w, t, processed);
		if (part) {
			part->span->parts++;
			TAILQ_INSERT_HEAD(&w->queue, part, q);
			add(&w->splits, 1);
			pthread_cond_signal(&w->cv);
		}
		if (rc == 1 && !w->stop) {
			TAILQ_INSERT_HEAD(&w->queue, it, q);
			continue;
		}
		if (rc == -ENOSPC && !w->warmed) {
			log_info("warm: the cache reached its low watermark; warm-up stops");
			queue_clear(w);
		} else if (rc < 0 && rc != -ENOSPC) {
			log_warn("warm: directory %llu: %s", (unsigned long long)it->ino,
			         strerror(-rc));
		}
		if (item_free(w, it) && rc == 0)
			add(&w->dirs_done, 1);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

void warm_stop(struct warm *w)
{
	if (!w)
		return;
	ns_set_miss_hook(w->ns, NULL, NULL);
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	atomic_store_explicit(&w->stopping, true, memory_order_relaxed);
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	for (unsigned i = 0; i < w->n; i++) {
		struct warm_thread *t = &w->t[i];
		if (t->started)
			pthread_join(t->th, NULL);
		store_snap_free(t->snap);
		ns_warm_stage_free(w->ns, t->stage);
		free(t->buf);
	}
	queue_clear(w);
	map_free(&w->queued);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	free(w);
}

/* warm_idle_allowed's thread: at nice *arg, into SCHED_IDLE and back. */
static void *idle_probe(void *arg)
{
	int nice = *(const int *)arg;
	bool ok = setpriority(PRIO_PROCESS, (id_t)gettid(), nice) == 0 &&
	          thread_sched_set(SCHED_IDLE, nice, WARM_SLICE_NS) == 0 &&
	          thread_sched_set(SCHED_OTHER, nice, WARM_SLICE_NS) == 0;
	return ok ? arg : NULL;
}

/* Note 5: may a warmer at nice `nice` leave SCHED_IDLE again? Tried on a
 * thread of its own, which ends wherever the try left it. */
static bool warm_idle_allowed(int nice)
{
	pthread_t th;
	void *ret = NULL;
	if (nice <= 0 || pthread_create(&th, NULL, idle_probe, &nice) != 0)
		return false;
	pthread_join(th, &ret);
	return ret != NULL;
}

int warm_start(struct ns *ns, struct store *st, unsigned n, int nice, bool warm_up,
               struct warm **out)
{
	*out = NULL;
	if (n == 0)
		return 0;
	struct warm *w = calloc(1, sizeof(*w) + n * sizeof(w->t[0]));
	if (!w)
		return -ENOMEM;
	w->ns = ns;
	w->sem = ns_commit_sem(ns);
	w->n = n;
	w->nice = nice;
	w->idle_reads = warm_idle_allowed(nice);
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	TAILQ_INIT(&w->queue);
	w->start_ns = mono_ns();
	const char *d = getenv("MCACHED_WARM_ENTRY_DELAY_US");
	if (d)
		w->delay_us = (unsigned)strtoul(d, NULL, 10);
	int rc = warm_up ? push(w, 1, false, false) : 0; /* the root */
	for (unsigned i = 0; rc == 0 && i < n; i++) {
		struct warm_thread *t = &w->t[i];
		t->w = w;
		t->buf = malloc(WARM_BATCH * sizeof(*t->buf));
		t->stage = ns_warm_stage_new();
		if (!t->buf || !t->stage)
			rc = -ENOMEM;
		if (rc == 0)
			rc = store_snap_new(st, &t->snap);
	}
	for (unsigned i = 0; rc == 0 && i < n; i++) {
		rc = -pthread_create(&w->t[i].th, NULL, warm_main, &w->t[i]);
		w->t[i].started = rc == 0;
	}
	if (rc < 0) {
		warm_stop(w);
		return rc;
	}
	ns_set_miss_hook(ns, warm_on_miss, w);
	*out = w;
	return 0;
}

void warm_wait(struct warm *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	while (!w->warmed && !w->stop)
		pthread_cond_wait(&w->cv, &w->mu);
	pthread_mutex_unlock(&w->mu);
}

void warm_get_stats(struct warm *w, struct stats_warm *out)
{
	memset(out, 0, sizeof(*out));
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	bool warmed = w->warmed;
	uint64_t end = warmed ? w->end_ns : mono_ns();
	pthread_mutex_unlock(&w->mu);
	out->threads = w->n;
	out->entries = get(&w->entries);
	out->bytes = get(&w->bytes);
	out->yields = get(&w->yields);
	out->dirs_done = get(&w->dirs_done);
	out->dirs_queued = get(&w->dirs_queued);
	out->readahead = get(&w->readahead);
	out->splits = get(&w->splits);
	out->promoted = get(&w->promoted);
	out->lookups = get(&w->lookups);
	out->done = warmed;
	out->elapsed_us = (end - w->start_ns) / 1000u;
	out->rate = out->elapsed_us ? out->entries * 1000000u / out->elapsed_us : 0;
	uint64_t rate_sum = 0;
	for (unsigned i = 0; i < w->n; i++) {
		uint64_t busy = get(&w->t[i].busy_ns), n = get(&w->t[i].entries);
		uint64_t rate = busy ? n * 1000000000u / busy : 0;
		rate_sum += rate;
		if (i < STATS_WARMERS_MAX) {
			out->per_thread[i].entries = n;
			out->per_thread[i].rate = rate;
		}
	}
	out->rate_per_thread = rate_sum / w->n;
}

bool warm_done(struct warm *w)
{
	if (!w)
		return false;
	pthread_mutex_lock(&w->mu);
	bool d = w->warmed;
	pthread_mutex_unlock(&w->mu);
	return d;
}
