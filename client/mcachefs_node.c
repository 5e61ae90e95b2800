/* mcachefs_node.c - the inode table of mcachefs: which inodes the kernel
 * knows, under which name, and the paths built from them; per-thread
 * clients and per-request credentials (mcachefs.h invariants 1-4). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcachefs.h"

static _Thread_local mc_client *thread_client;
/* fs->gen when this thread's request began (invariant 5). */
static _Thread_local uint64_t thread_gen;

static size_t slot_of(const struct fs *fs, uint64_t ino)
{
	return (size_t)((ino * 0x9e3779b97f4a7c15ull) >> 20) & fs->tabmask;
}

static struct fs_node *node_find(struct fs *fs, uint64_t ino)
{
	for (struct fs_node *n = fs->tab[slot_of(fs, ino)]; n; n = n->next)
		if (n->ino == ino)
			return n;
	return NULL;
}

static int node_grow(struct fs *fs)
{
	size_t cap = (fs->tabmask + 1) * 2;
	struct fs_node **t = calloc(cap, sizeof(*t));
	if (!t)
		return -ENOMEM;
	struct fs_node **old = fs->tab;
	size_t oldcap = fs->tabmask + 1;
	fs->tab = t;
	fs->tabmask = cap - 1;
	for (size_t i = 0; i < oldcap; i++) {
		struct fs_node *n = old[i], *next;
		for (; n; n = next) {
			next = n->next;
			size_t k = slot_of(fs, n->ino);
			n->next = t[k];
			t[k] = n;
		}
	}
	free(old);
	return 0;
}

int fs_nodes_init(struct fs *fs)
{
	pthread_mutex_init(&fs->mu, NULL);
	fs->tabmask = 1023;
	fs->tab = calloc(fs->tabmask + 1, sizeof(*fs->tab));
	struct fs_node *root = calloc(1, sizeof(*root));
	if (!fs->tab || !root) {
		free(fs->tab);
		free(root);
		return -ENOMEM;
	}
	root->ino = FUSE_ROOT_ID;
	root->parent = FUSE_ROOT_ID;
	root->nlookup = 1;
	fs->tab[slot_of(fs, root->ino)] = root;
	fs->nnodes = 1;
	return 0;
}

void fs_nodes_free(struct fs *fs)
{
	for (size_t i = 0; fs->tab && i <= fs->tabmask; i++) {
		struct fs_node *n = fs->tab[i], *next;
		for (; n; n = next) {
			next = n->next;
			free(n->name);
			free(n);
		}
	}
	free(fs->tab);
	fs->tab = NULL;
	for (size_t i = 0; i < fs->nclients; i++)
		mc_disconnect(fs->clients[i]);
	free(fs->clients);
	fs->clients = NULL;
	fs->nclients = 0;
}

static mc_client *client_get(struct fs *fs)
{
	if (thread_client)
		return thread_client;
	/* Connect as ourselves (root), not as the caller. */
	mc_cred_set(NULL);
	mc_client *c = mc_connect(fs->socket);
	if (!c)
		return NULL;
	if (mc_path_max_set(c, FS_PATH_MAX) < 0 ||
	    (fs->watch && mc_mount_tag(c, fs->mount_id) < 0)) {
		int e = errno;
		mc_disconnect(c);
		errno = e;
		return NULL;
	}
	pthread_mutex_lock(&fs->mu);
	if (fs->nclients == fs->capclients) {
		size_t cap = fs->capclients ? fs->capclients * 2 : 16;
		mc_client **p = realloc(fs->clients, cap * sizeof(*p));
		if (!p) {
			pthread_mutex_unlock(&fs->mu);
			mc_disconnect(c);
			errno = ENOMEM;
			return NULL;
		}
		fs->clients = p;
		fs->capclients = cap;
	}
	fs->clients[fs->nclients++] = c;
	pthread_mutex_unlock(&fs->mu);
	thread_client = c;
	return c;
}

int fs_begin(struct fs_req *r, fuse_req_t req)
{
	struct fs *fs = fuse_req_userdata(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	thread_gen = atomic_load(&fs->gen);
	r->fs = fs;
	r->c = client_get(fs);
	if (!r->c)
		return errno == ENOMEM ? -ENOMEM : -ENOTCONN;
	r->uid = ctx->uid;
	r->gid = ctx->gid;
	r->ngroups = 0;
	if (ctx->uid != 0) {
		/* Root passes every check whatever its groups: only others
		 * cost a read of /proc/PID/status. */
		int n = fuse_req_getgroups(req, 64, r->groups);
		r->ngroups = n < 0 ? 0 : n > 64 ? 64 : n;
	}
	if (!fs->act)
		return 0;
	struct mc_cred cred = { .uid = r->uid, .gid = r->gid, .ngroups = (size_t)r->ngroups,
		                .groups = r->groups };
	return mc_cred_set(&cred) < 0 ? -errno : 0;
}

/* Path of ino, fs->mu held. */
static int do_path(struct fs *fs, uint64_t ino, char *buf, size_t size)
{
	/* Measure the names from ino up to the root, then write them from the
	 * end backwards (a path may hold thousands of names). */
	size_t len = 0;
	for (uint64_t i = ino; i != FUSE_ROOT_ID;) {
		struct fs_node *n = node_find(fs, i);
		if (!n || !n->name)
			return -ESTALE;
		len += 1 + strlen(n->name);
		if (len + 1 > size)
			return -ENAMETOOLONG;
		i = n->parent;
	}
	if (len == 0) {
		if (size < 2)
			return -ENAMETOOLONG;
		memcpy(buf, "/", 2);
		return 0;
	}
	char *p = buf + len;
	*p = '\0';
	for (uint64_t i = ino; i != FUSE_ROOT_ID;) {
		struct fs_node *n = node_find(fs, i);
		size_t k = strlen(n->name);
		p -= k;
		memcpy(p, n->name, k);
		*--p = '/';
		i = n->parent;
	}
	return 0;
}

int fs_path(struct fs *fs, uint64_t ino, char *buf, size_t size)
{
	pthread_mutex_lock(&fs->mu);
	int rc = do_path(fs, ino, buf, size);
	pthread_mutex_unlock(&fs->mu);
	return rc;
}

int fs_child_path(struct fs *fs, uint64_t parent, const char *name, char *buf, size_t size)
{
	int rc = fs_path(fs, parent, buf, size);
	if (rc < 0)
		return rc;
	size_t len = strlen(buf), k = strlen(name);
	if (len + 1 + k + 1 > size)
		return -ENAMETOOLONG;
	if (len > 1)
		buf[len++] = '/';
	memcpy(buf + len, name, k + 1);
	return 0;
}

static void node_set_attr(struct fs_node *n, const struct stat *st)
{
	n->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	n->ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
	n->size = (uint64_t)st->st_size;
}

static void do_forget(struct fs *fs, uint64_t ino, uint64_t k)
{
	size_t slot = slot_of(fs, ino);
	for (struct fs_node **pp = &fs->tab[slot]; *pp; pp = &(*pp)->next) {
		struct fs_node *n = *pp;
		if (n->ino != ino)
			continue;
		n->nlookup = n->nlookup > k ? n->nlookup - k : 0;
		if (n->nlookup == 0 && ino != FUSE_ROOT_ID) {
			*pp = n->next;
			free(n->name);
			free(n);
			fs->nnodes--;
		}
		return;
	}
}

/* May a reply of this request let the kernel cache (invariant 5)? */
static bool reply_may_cache(struct fs *fs)
{
	if (!fs->watch)
		return true;             /* timeouts as given, with the poller */
	return atomic_load(&fs->watching) && atomic_load(&fs->gen) == thread_gen;
}

double fs_attr_timeout(struct fs *fs)
{
	return reply_may_cache(fs) ? fs->attr_timeout : 0;
}

int fs_node_ref(struct fs *fs, uint64_t parent, const char *name, const struct stat *st,
                struct fuse_entry_param *e)
{
	uint64_t ino = (uint64_t)st->st_ino;
	pthread_mutex_lock(&fs->mu);
	if (e) {
		bool cache = reply_may_cache(fs);
		e->attr_timeout = cache ? fs->attr_timeout : 0;
		e->entry_timeout = cache ? fs->entry_timeout : 0;
	}
	struct fs_node *n = node_find(fs, ino);
	int rc = 0;
	if (!n) {
		if (fs->nnodes > fs->tabmask && node_grow(fs) < 0) {
			rc = -ENOMEM;
			goto out;
		}
		n = calloc(1, sizeof(*n));
		if (!n) {
			rc = -ENOMEM;
			goto out;
		}
		n->ino = ino;
		size_t k = slot_of(fs, ino);
		n->next = fs->tab[k];
		fs->tab[k] = n;
		fs->nnodes++;
	}
	if (ino != FUSE_ROOT_ID && (!n->name || n->parent != parent || strcmp(n->name, name))) {
		char *s = strdup(name);
		if (!s) {
			rc = -ENOMEM;
			if (n->nlookup == 0)
				do_forget(fs, ino, 0);
			goto out;
		}
		free(n->name);
		n->name = s;
		n->parent = parent;
	}
	n->nlookup++;
	node_set_attr(n, st);
out:
	pthread_mutex_unlock(&fs->mu);
	return rc;
}

void fs_node_forget(struct fs *fs, uint64_t ino, uint64_t n)
{
	pthread_mutex_lock(&fs->mu);
	do_forget(fs, ino, n);
	pthread_mutex_unlock(&fs->mu);
}

void fs_node_unname(struct fs *fs, uint64_t parent, const char *name, uint64_t ino)
{
	pthread_mutex_lock(&fs->mu);
	struct fs_node *n = node_find(fs, ino);
	if (n && n->name && n->parent == parent && !strcmp(n->name, name)) {
		free(n->name);
		n->name = NULL;
	}
	pthread_mutex_unlock(&fs->mu);
}

void fs_node_rename(struct fs *fs, uint64_t ino, uint64_t np, const char *nn)
{
	char *s = strdup(nn);
	pthread_mutex_lock(&fs->mu);
	struct fs_node *n = node_find(fs, ino);
	if (n) {
		free(n->name);
		n->name = s;   /* NULL on ENOMEM: detached, found again by lookup */
		n->parent = np;
		s = NULL;
	}
	pthread_mutex_unlock(&fs->mu);
	free(s);
}

void fs_node_seen(struct fs *fs, const struct stat *st)
{
	pthread_mutex_lock(&fs->mu);
	struct fs_node *n = node_find(fs, (uint64_t)st->st_ino);
	if (n)
		node_set_attr(n, st);
	pthread_mutex_unlock(&fs->mu);
}

void fs_nodes_watch(struct fs *fs, struct fs_wev *ev, size_t n)
{
	pthread_mutex_lock(&fs->mu);
	atomic_fetch_add(&fs->gen, 1);
	for (size_t i = 0; i < n; i++) {
		struct fs_node *nd = node_find(fs, ev[i].ino);
		ev[i].skip = !nd;
		if (nd && !ev[i].name && nd->name && ev[i].ino != FUSE_ROOT_ID) {
			ev[i].parent = nd->parent;
			ev[i].pname = strdup(nd->name);   /* NULL: the inode alone */
		}
	}
	pthread_mutex_unlock(&fs->mu);
}

size_t fs_nodes_all(struct fs *fs, struct fs_wev **out)
{
	size_t k = 0;
	pthread_mutex_lock(&fs->mu);
	atomic_fetch_add(&fs->gen, 1);
	struct fs_wev *ev = calloc(2 * fs->nnodes + 1, sizeof(*ev));
	for (size_t i = 0; ev && i <= fs->tabmask; i++)
		for (struct fs_node *n = fs->tab[i]; n; n = n->next) {
			ev[k++].ino = n->ino;
			if (n->name && n->ino != FUSE_ROOT_ID) {
				ev[k].ino = n->parent;
				ev[k].name = strdup(n->name);
				if (ev[k].name)
					k++;
			}
		}
	pthread_mutex_unlock(&fs->mu);
	*out = ev;
	return k;
}

/* One node as the poller checks it: taken under the lock, checked
 * without it. */
struct probe {
	uint64_t ino, parent;
	char *path;                  /* malloc'd */
	char *name;                  /* points into path */
	int64_t mtime_ns, ctime_ns;
	uint64_t size;
	bool gone, changed;
	struct stat st;
};

static int64_t ts_ns(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

/* Snapshot every named node with its path (fs->mu held). */
static size_t poll_snapshot(struct fs *fs, struct probe **out)
{
	struct probe *p = calloc(fs->nnodes ? fs->nnodes : 1, sizeof(*p));
	size_t n = 0;
	char path[FS_PATH_MAX];
	if (!p)
		return 0;
	for (size_t i = 0; i <= fs->tabmask && n < fs->nnodes; i++) {
		for (struct fs_node *nd = fs->tab[i]; nd && n < fs->nnodes; nd = nd->next) {
			if ((nd->ino != FUSE_ROOT_ID && !nd->name) ||
			    do_path(fs, nd->ino, path, sizeof(path)) < 0)
				continue;
			char *copy = strdup(path);
			if (!copy)
				break;
			p[n] = (struct probe){ .ino = nd->ino, .parent = nd->parent, .path = copy,
				               .name = strrchr(copy, '/') + 1,
				               .mtime_ns = nd->mtime_ns, .ctime_ns = nd->ctime_ns,
				               .size = nd->size };
			n++;
		}
	}
	*out = p;
	return n;
}

void fs_nodes_poll(struct fs *fs)
{
	mc_client *c = client_get(fs);
	if (!c)
		return;
	mc_cred_set(NULL);
	struct probe *p;
	pthread_mutex_lock(&fs->mu);
	size_t n = poll_snapshot(fs, &p);
	pthread_mutex_unlock(&fs->mu);

	/* Without the lock: requests go on while the namespace is read. */
	for (size_t i = 0; i < n; i++) {
		struct probe *q = &p[i];
		q->gone = mc_lstat(c, q->path, &q->st) < 0 || (uint64_t)q->st.st_ino != q->ino;
		q->changed = !q->gone && (ts_ns(&q->st.st_mtim) != q->mtime_ns ||
		                          ts_ns(&q->st.st_ctim) != q->ctime_ns ||
		                          (uint64_t)q->st.st_size != q->size);
	}

	/* Record what the kernel will be told, for nodes still as taken. */
	pthread_mutex_lock(&fs->mu);
	for (size_t i = 0; i < n; i++) {
		struct probe *q = &p[i];
		struct fs_node *nd = node_find(fs, q->ino);
		if (!nd || (q->ino != FUSE_ROOT_ID && (!nd->name || nd->parent != q->parent ||
		                                      strcmp(nd->name, q->name))))
			continue;
		if (q->changed) {
			node_set_attr(nd, &q->st);
		} else if (q->gone && q->ino != FUSE_ROOT_ID) {
			/* The kernel drops the entry: it is looked up afresh. */
			free(nd->name);
			nd->name = NULL;
		}
	}
	pthread_mutex_unlock(&fs->mu);

	/* Outside the lock: the kernel may call back into us. */
	for (size_t i = 0; i < n; i++) {
		struct probe *q = &p[i];
		if (q->gone && q->ino != FUSE_ROOT_ID)
			fuse_lowlevel_notify_inval_entry(fs->se, q->parent, q->name, strlen(q->name));
		if (q->gone || q->changed)
			fuse_lowlevel_notify_inval_inode(fs->se, q->ino, 0, 0);
		free(q->path);
	}
	free(p);
}
