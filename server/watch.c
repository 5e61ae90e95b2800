/* watch.c - watchers and the replies that wait for them (see watch.h).
 *
 * A watcher's life:
 *
 *   watch_op(SUBSCRIBE) ──► listed ──watch_publish──► events pending
 *                              ▲                         │ push_cb (its worker):
 *        ack (watch_op(ACK)):  │                         ▼ one frame, timer armed
 *        outstanding settled ──┴──────────────────── outstanding
 *                                                        │ timer_cb: oldest
 *   watch_sess_release ◄── conn closed ◄── sink.drop ◄───┘ older than the bound
 *   (unlisted, waiters settled, events freed)
 */
#include "watch.h"

#include <errno.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <time.h>

#include "clock.h"
#include "frame.h"
#include "grow.h"
#include "log.h"
#include "mc_watch.h"
#include "mcache.pb-c.h"

/* A reply waiting for acknowledgements (invariant 3). */
struct waiter {
	unsigned count;
	void (*cb)(void *arg, int err);
	void *arg;
};

/* A sequence sent (or pending) to a watcher and not yet acknowledged. */
struct owed {
	uint64_t seq;
	uint64_t t_ms;               /* when it was published */
	struct waiter *wt;           /* NULL: nobody waits (a mount's change) */
};

struct watcher {
	TAILQ_ENTRY(watcher) link;
	struct watch_hub *h;
	bool listed;                 /* on h->list */
	bool doomed;                 /* unlisted for lost events: drop at once */
	struct watch_sess *s;
	uint64_t mount_id;
	struct event *ev_push;
	struct event *ev_timer;
	uint8_t *pend;               /* events not yet pushed */
	size_t plen, pcap;
	uint64_t pend_seq;           /* the last sequence in pend */
	struct owed *owed;           /* ring of outstanding sequences, oldest first */
	size_t nowed, capowed, head;
};

TAILQ_HEAD(watcher_list, watcher);

struct watch_hub {
	pthread_mutex_t mu;
	struct watcher_list list;
	_Atomic unsigned nwatchers;
	uint64_t next_mount_id;
	uint64_t seq;
};

static _Thread_local struct watch_sess *note_sess;

int watch_hub_new(struct watch_hub **out)
{
	struct watch_hub *h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	pthread_mutex_init(&h->mu, NULL);
	TAILQ_INIT(&h->list);
	h->next_mount_id = 1;
	*out = h;
	return 0;
}

void watch_hub_free(struct watch_hub *h)
{
	if (!h)
		return;
	pthread_mutex_destroy(&h->mu);
	free(h);
}

/* ---- noting events ------------------------------------------------------ */

void watch_note_begin(struct watch_hub *h, struct watch_sess *s)
{
	note_sess = h && atomic_load_explicit(&h->nwatchers, memory_order_acquire) ? s : NULL;
}

void watch_note_end(void)
{
	note_sess = NULL;
}

static void note(struct watch_sess *s, unsigned kind, uint64_t id, const char *name, size_t n)
{
	size_t need = s->len + MC_WEV_HDR + n;
	if (need > s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		while (cap < need)
			cap *= 2;
		uint8_t *b = realloc(s->buf, cap);
		if (!b) {
			s->lost = true;
			return;
		}
		s->buf = b;
		s->cap = cap;
	}
	mc_wev_put(s->buf + s->len, kind, id, name, n);
	s->len = need;
}

void watch_note_inode(uint64_t ino)
{
	struct watch_sess *s = note_sess;
	if (!s)
		return;
	for (unsigned i = 0; i < s->nrecent && i < 4; i++)
		if (s->recent[i] == ino)
			return;
	s->recent[s->nrecent++ % 4] = ino;
	note(s, MC_WEV_ATTR, ino, NULL, 0);
}

void watch_note_entry(uint64_t parent, const char *name, size_t namelen)
{
	struct watch_sess *s = note_sess;
	if (s && namelen > 0 && namelen <= 0xffff)
		note(s, MC_WEV_ENTRY, parent, name, namelen);
}

/* ---- settling ------------------------------------------------------------ */

/* A settled waiter to call back after h->mu is let go (invariant 3). */
struct done_list {
	struct waiter **v;
	size_t n, cap;
	struct waiter *one[8];
};

static void done_add(struct done_list *d, struct waiter *wt)
{
	if (!d->v) {
		d->v = d->one;
		d->cap = 8;
	}
	if (d->n == d->cap) {
		size_t cap = d->cap * 2;
		struct waiter **v = d->v == d->one ? malloc(cap * sizeof(*v))
		                                   : realloc(d->v, cap * sizeof(*v));
		if (!v) {
			/* Cannot defer: call it now (under the lock, which a
			 * callback only needs for event_active: no deadlock). */
			wt->cb(wt->arg, 0);
			free(wt);
			return;
		}
		if (d->v == d->one)
			memcpy(v, d->one, sizeof(d->one));
		d->v = v;
		d->cap = cap;
	}
	d->v[d->n++] = wt;
}

static void done_run(struct done_list *d)
{
	for (size_t i = 0; i < d->n; i++) {
		d->v[i]->cb(d->v[i]->arg, 0);
		free(d->v[i]);
	}
	if (d->v != d->one)
		free(d->v);
}

/* Settle w's outstanding sequences up to seq (all: UINT64_MAX); h->mu held. */
static void do_settle(struct watcher *w, uint64_t seq, struct done_list *d)
{
	while (w->nowed > 0) {
		struct owed *o = &w->owed[w->head];
		if (o->seq > seq)
			break;
		if (o->wt && --o->wt->count == 0)
			done_add(d, o->wt);
		w->head = (w->head + 1) % w->capowed;
		w->nowed--;
	}
}

/* Take w off the list, settling everything it owes; h->mu held. */
static void do_unlist(struct watcher *w, struct done_list *d)
{
	struct watch_hub *h = w->h;
	if (!w->listed)
		return;
	do_settle(w, UINT64_MAX, d);
	TAILQ_REMOVE(&h->list, w, link);
	atomic_fetch_sub(&h->nwatchers, 1);
	w->listed = false;
}

static void watcher_free(struct watcher *w)
{
	if (w->ev_push)
		event_free(w->ev_push);
	if (w->ev_timer)
		event_free(w->ev_timer);
	free(w->pend);
	free(w->owed);
	free(w);
}

/* ---- pushing -------------------------------------------------------------- */

static void timer_arm(struct watcher *w, uint64_t ms)
{
	struct timeval tv = { (time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000 };
	evtimer_add(w->ev_timer, &tv);
}

/* Events in one push at most: a long change (rmtree) is sent in several
 * frames, all but the last with sequence 0 (acknowledging 0 settles
 * nothing), so the watcher acknowledges only once it applied them all. */
#define WATCH_PUSH_MAX (1u << 20)

/* Worker thread: send what is pending, in frames of WATCH_PUSH_MAX. */
static void push_cb(evutil_socket_t fd, short what, void *arg)
{
	struct watcher *w = arg;
	struct watch_hub *h = w->h;
	(void)fd;
	(void)what;
	pthread_mutex_lock(&h->mu);
	uint8_t *buf = w->pend;
	size_t len = w->plen;
	uint64_t seq = w->pend_seq;
	w->pend = NULL;
	w->plen = w->pcap = 0;
	pthread_mutex_unlock(&h->mu);
	if (!len) {
		free(buf);
		return;
	}
	if (!evtimer_pending(w->ev_timer, NULL))
		timer_arm(w, WATCH_ACK_TIMEOUT_MS);
	/* The frames go out in one send: a failed send may close the
	 * connection, and w with it. */
	uint8_t *out = NULL;
	size_t olen = 0;
	int err = 0;
	for (size_t off = 0, end; off < len && !err; off = end) {
		/* Cut at an event's end (each is under WATCH_PUSH_MAX). */
		end = off;
		for (size_t pos = off; pos < len;) {
			unsigned kind;
			uint64_t id;
			const char *name;
			size_t nl;
			if (mc_wev_next(buf, len, &pos, &kind, &id, &name, &nl) != 1 ||
			    (pos - off > WATCH_PUSH_MAX && end > off))
				break;
			end = pos;
		}
		Mcache__Result res = MCACHE__RESULT__INIT;
		Mcache__Result *rp = &res;
		Mcache__Response rsp = MCACHE__RESPONSE__INIT;
		res.cookie = end == len ? seq : 0;
		res.data.data = buf + off;
		res.data.len = end - off;
		rsp.n_results = 1;
		rsp.results = &rp;
		uint8_t *frame;
		size_t flen;
		err = end > off ? frame_pack_response(&rsp, UINT32_MAX, &frame, &flen) : -EPROTO;
		if (err)
			break;
		if (!out) {
			out = frame;
			olen = flen;
			continue;
		}
		uint8_t *o = realloc(out, olen + flen);
		if (!o) {
			free(frame);
			err = -ENOMEM;
			break;
		}
		memcpy(o + olen, frame, flen);
		free(frame);
		out = o;
		olen += flen;
	}
	free(buf);
	if (err) {
		/* The events are lost for this watcher: it cannot be trusted
		 * any more. */
		log_warn("watch: mount %llu: cannot send events (%s): disconnecting it",
		         (unsigned long long)w->mount_id, strerror(-err));
		free(out);
		w->s->sink.drop(w->s->sink.arg);
		return;
	}
	w->s->sink.send(w->s->sink.arg, out, olen);
}

/* Worker thread: drop w when its oldest outstanding sequence is overdue. */
static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct watcher *w = arg;
	struct watch_hub *h = w->h;
	(void)fd;
	(void)what;
	if (w->doomed) {
		w->s->sink.drop(w->s->sink.arg);
		return;
	}
	pthread_mutex_lock(&h->mu);
	uint64_t age = 0;
	bool owes = w->nowed > 0;
	if (owes)
		age = mono_ms() - w->owed[w->head].t_ms;
	pthread_mutex_unlock(&h->mu);
	if (!owes)
		return;
	if (age < WATCH_ACK_TIMEOUT_MS) {
		timer_arm(w, WATCH_ACK_TIMEOUT_MS - age);
		return;
	}
	log_warn("watch: mount %llu did not acknowledge events for %llu ms: disconnecting it",
	         (unsigned long long)w->mount_id, (unsigned long long)age);
	w->s->sink.drop(w->s->sink.arg);   /* closes the conn: watch_sess_release */
}

/* Append seq's events to w, owed to wt (may be NULL); h->mu held. */
static int do_queue(struct watcher *w, const uint8_t *ev, size_t len, uint64_t seq,
                    uint64_t t, struct waiter *wt)
{
	if (w->nowed == w->capowed) {
		size_t cap = w->capowed ? w->capowed * 2 : 16;
		struct owed *o = malloc(cap * sizeof(*o));
		if (!o)
			return -ENOMEM;
		for (size_t i = 0; i < w->nowed; i++)
			o[i] = w->owed[(w->head + i) % w->capowed];
		free(w->owed);
		w->owed = o;
		w->capowed = cap;
		w->head = 0;
	}
	uint8_t *b = grow(w->pend, &w->pcap, w->plen + len, 1024);
	if (!b)
		return -ENOMEM;
	w->pend = b;
	memcpy(w->pend + w->plen, ev, len);
	w->plen += len;
	w->pend_seq = seq;
	w->owed[(w->head + w->nowed) % w->capowed] = (struct owed){ seq, t, wt };
	w->nowed++;
	if (wt)
		wt->count++;
	event_active(w->ev_push, EV_WRITE, 0);
	return 0;
}

int watch_publish(struct watch_hub *h, struct watch_sess *s, void (*cb)(void *arg, int err),
                  void *arg)
{
	struct done_list d = { 0 };
	struct waiter *wt = NULL;
	int rc = 0;

	if (!h || !watch_pending(s))
		goto out;
	if (s->mount_id == 0) {
		wt = calloc(1, sizeof(*wt));
		/* Without it the reply cannot wait: the watchers are dropped
		 * below instead, which is as safe. */
		if (wt) {
			wt->cb = cb;
			wt->arg = arg;
		}
	}
	pthread_mutex_lock(&h->mu);
	uint64_t seq = ++h->seq, t = mono_ms();
	struct watcher *w, *next;
	for (w = TAILQ_FIRST(&h->list); w; w = next) {
		next = TAILQ_NEXT(w, link);
		if (w->mount_id == s->mount_id)
			continue;
		if ((s->mount_id == 0 && !wt) || s->lost ||
		    do_queue(w, s->buf, s->len, seq, t, wt) < 0) {
			/* Events it will not get: it must not go on trusting its
			 * kernel's cache. */
			log_warn("watch: mount %llu: events lost (out of memory): disconnecting it",
			         (unsigned long long)w->mount_id);
			do_unlist(w, &d);
			/* Its worker closes its connection (timer_cb). */
			w->doomed = true;
			event_active(w->ev_timer, EV_TIMEOUT, 0);
		}
	}
	if (wt && wt->count > 0) {
		rc = 1;
		wt = NULL;
	}
	pthread_mutex_unlock(&h->mu);
	done_run(&d);
out:
	free(wt);
	s->len = 0;
	s->lost = false;
	s->nrecent = 0;
	return rc;
}

/* ---- the op and the end of a session -------------------------------------- */

static int watch_subscribe(struct watch_hub *h, struct watch_sess *s, uint64_t *out)
{
	struct watcher *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->h = h;
	w->s = s;
	w->ev_push = event_new(s->sink.base, -1, 0, push_cb, w);
	w->ev_timer = evtimer_new(s->sink.base, timer_cb, w);
	if (!w->ev_push || !w->ev_timer) {
		watcher_free(w);
		return -ENOMEM;
	}
	pthread_mutex_lock(&h->mu);
	w->mount_id = h->next_mount_id++;
	TAILQ_INSERT_TAIL(&h->list, w, link);
	w->listed = true;
	atomic_fetch_add_explicit(&h->nwatchers, 1, memory_order_release);
	pthread_mutex_unlock(&h->mu);
	s->w = w;
	s->mount_id = w->mount_id;
	*out = w->mount_id;
	log_info("watch: mount %llu watching", (unsigned long long)w->mount_id);
	return 0;
}

static void watch_ack(struct watch_hub *h, struct watcher *w, uint64_t seq)
{
	struct done_list d = { 0 };
	pthread_mutex_lock(&h->mu);
	do_settle(w, seq, &d);
	bool owes = w->nowed > 0;
	pthread_mutex_unlock(&h->mu);
	if (!owes)
		evtimer_del(w->ev_timer);
	done_run(&d);
}

int watch_op(struct watch_hub *h, struct watch_sess *s, unsigned flags, uint64_t cookie,
             bool privileged, uint64_t *out_cookie)
{
	if (!privileged)
		return -EACCES;
	if (!h || !s->sink.base)
		return -EOPNOTSUPP;
	switch (flags) {
	case MC_WATCH_SUBSCRIBE:
		if (s->mount_id)
			return -EALREADY;
		return watch_subscribe(h, s, out_cookie);
	case MC_WATCH_TAG:
		if (cookie == 0)
			return -EINVAL;
		if (s->mount_id)
			return s->mount_id == cookie ? 0 : -EALREADY;
		s->mount_id = cookie;
		return 0;
	case MC_WATCH_ACK:
		if (!s->w)
			return -EINVAL;
		watch_ack(h, s->w, cookie);
		return 0;
	default:
		return -EINVAL;
	}
}

void watch_sess_release(struct watch_hub *h, struct watch_sess *s)
{
	struct watcher *w = s->w;
	if (w) {
		struct done_list d = { 0 };
		pthread_mutex_lock(&h->mu);
		do_unlist(w, &d);
		pthread_mutex_unlock(&h->mu);
		done_run(&d);
		log_info("watch: mount %llu gone", (unsigned long long)w->mount_id);
		watcher_free(w);
		s->w = NULL;
	}
	free(s->buf);
	s->buf = NULL;
	s->len = s->cap = 0;
}
