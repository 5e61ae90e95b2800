/* mcachefs_watch.c - the watch: mcached tells this mount, for every change
 * another client makes, which names and attributes went stale, and this
 * thread tells the kernel (fuse_lowlevel_notify_inval_entry / _inode,
 * from its own thread, never from a request) before acknowledging. So the
 * kernel may cache (timeouts of an hour by default) and still never shows
 * what a library client's call changed once that call returned: mcached
 * answers it only after the acknowledgement. A change made through
 * another mount is answered at once (two mounts waiting for each other's
 * directory locks would deadlock): this mount sees it once this thread has
 * applied it, a moment later.
 *
 * The kernel's inode numbers are mcache's, so an event names what the
 * kernel holds directly; events about what the kernel does not hold (no
 * node) are dropped, and replies racing with them cache nothing
 * (mcachefs.h invariant 5).
 *
 * When the watch ends (mcached closed it: it did not acknowledge within
 * its bound, or mcached went), the mount goes on without it: the kernel's
 * whole cache is invalidated and every later reply has timeouts of 0, as
 * with --no-watch. */
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcachefs.h"

static atomic_bool watch_stop;
static pthread_t watch_thread;
static bool watch_started;

/* The events of one read. */
struct batch {
	struct fs_wev *v;
	size_t n, cap;
	bool nomem;
};

static void batch_add(void *arg, const struct mc_watch_event *ev)
{
	struct batch *b = arg;
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 64;
		struct fs_wev *v = realloc(b->v, cap * sizeof(*v));
		if (!v) {
			b->nomem = true;
			return;
		}
		b->v = v;
		b->cap = cap;
	}
	struct fs_wev *w = &b->v[b->n];
	memset(w, 0, sizeof(*w));
	w->ino = ev->ino;
	if (ev->kind == MC_WATCH_ENTRY) {
		w->name = strndup(ev->name, ev->namelen);
		if (!w->name) {
			b->nomem = true;
			return;
		}
	}
	b->n++;
}

static void batch_clear(struct batch *b)
{
	for (size_t i = 0; i < b->n; i++) {
		free(b->v[i].name);
		free(b->v[i].pname);
	}
	b->n = 0;
	b->nomem = false;
}

/* Tell the kernel: names first, then inodes (an inode the kernel has not
 * taken in yet: its name). Invalidating a name takes its directory's lock,
 * so it waits for a lookup or listing of that directory in progress, which
 * may have read the namespace before the change; the inodes' turn (their
 * attributes, a directory's kept listing) comes after those are in. */
static void tell_kernel(struct fs *fs, const struct fs_wev *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!v[i].skip && v[i].name)
			fuse_lowlevel_notify_inval_entry(fs->se, v[i].ino, v[i].name,
			                                 strlen(v[i].name));
	for (size_t i = 0; i < n; i++) {
		const struct fs_wev *e = &v[i];
		if (e->skip || e->name)
			continue;
		int rc = fuse_lowlevel_notify_inval_inode(fs->se, e->ino, 0, 0);
		if (rc == -ENOENT && e->pname)
			fuse_lowlevel_notify_inval_entry(fs->se, e->parent, e->pname,
			                                 strlen(e->pname));
	}
}

/* The watch is over: the kernel keeps nothing cached from now on. */
static void watch_lost(struct fs *fs, int err)
{
	atomic_store(&fs->watching, false);
	fuse_log(FUSE_LOG_ERR,
	         "mcachefs: the watch ended (%s): the kernel no longer caches names or "
	         "attributes (timeouts 0)\n", strerror(err));
	struct fs_wev *v;
	size_t n = fs_nodes_all(fs, &v);
	tell_kernel(fs, v, n);
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
}

static void *watch_main(void *arg)
{
	struct fs *fs = arg;
	struct batch b = { 0 };
	unsigned quiet = 0;
	while (!atomic_load(&watch_stop)) {
		uint64_t seq = 0;
		int n = mc_watch_read(fs->watch, 200, batch_add, &b, &seq);
		/* Quiet for 30 s: say something, so that a server with an
		 * idle timeout keeps the watch. */
		if (n == 0 && ++quiet == 150) {
			quiet = 0;
			if (mc_watch_ack(fs->watch, 0) < 0) {
				watch_lost(fs, errno);
				break;
			}
		}
		if (n > 0)
			quiet = 0;
		if (n < 0 && errno == EINTR)
			continue;
		int err = n < 0 ? errno : b.nomem ? ENOMEM : 0;
		if (err) {
			batch_clear(&b);
			watch_lost(fs, err);
			break;
		}
		if (n == 0)
			continue;
		fs_nodes_watch(fs, b.v, b.n);
		tell_kernel(fs, b.v, b.n);
		batch_clear(&b);
		if (seq && mc_watch_ack(fs->watch, seq) < 0) {
			watch_lost(fs, errno);
			break;
		}
	}
	free(b.v);
	return NULL;
}

bool fs_watch_open(struct fs *fs)
{
	if (!fs->watch_on)
		return false;
	fs->watch = mc_watch_open(fs->socket);
	if (!fs->watch) {
		fprintf(stderr, "mcachefs: no watch (%s): the kernel caches names and attributes "
		        "only as --entry-timeout and --attr-timeout say (default 0)\n",
		        strerror(errno));
		return false;
	}
	fs->mount_id = mc_watch_id(fs->watch);
	atomic_store(&fs->watching, true);
	return true;
}

int fs_watch_start(struct fs *fs)
{
	if (!fs->watch)
		return 0;
	int rc = pthread_create(&watch_thread, NULL, watch_main, fs);
	if (rc) {
		watch_lost(fs, rc);
		return -rc;
	}
	watch_started = true;
	return 0;
}

void fs_watch_stop(struct fs *fs)
{
	if (watch_started) {
		atomic_store(&watch_stop, true);
		pthread_join(watch_thread, NULL);
		watch_started = false;
	}
	mc_watch_close(fs->watch);
	fs->watch = NULL;
}
