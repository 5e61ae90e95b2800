/* dir.c - libmcache's directory listings. A directory that is complete in
 * shared memory is listed from there, a page at a time, with no system
 * call (local). Otherwise opendir opens a server handle, readdir fetches
 * pages of entries (OP_READDIR) and hands them out one at a time, and
 * closedir closes the handle. Both use the same cursor (the per-directory
 * cookie), so a local listing that the cache stops answering continues
 * through the server exactly where it was.
 *
 *   mc_opendir ─(complete in memory)─► local ─(VIEW_MISS)─► server
 *        └──────────(otherwise)───────────────────────────► server
 *
 * Invariants of an MC_DIR (struct mc_dir in client_impl.h):
 *  1. page, when not NULL, is the last READDIR response; entries before pos
 *     have been returned.
 *  2. cookie is the server's cursor for the page after page; it is only
 *     used once page is exhausted, and only when eof is false.
 *  3. ent is the storage of the struct dirent last returned.
 *  4. local: lpage[lpos..lcount) are read but not yet returned; vd.cookie
 *     is the cookie of lpage's last entry; eof says the listing ended.
 *  5. seen[] holds a 64-bit hash of every name a local listing returned.
 *     When it moves to the server, the directory may have lost cached
 *     entries meanwhile (the server evicts); those it loads again get new
 *     cookies, past ours, or the listing starts over from the store when
 *     the directory no longer fits in the cache. So from then on a name
 *     whose hash is in seen[] (sorted) was returned already and is
 *     dropped: no name is returned twice (a name removed and made again
 *     during the listing may or may not be returned, as POSIX allows).
 */
#include "client_impl.h"

#include <stdlib.h>
#include <string.h>

/* Entries asked for per page. */
#define DIR_PAGE 512u

void dir_free(struct mc_dir *d)
{
	client_unlink_dir(d);
	free(d->seen);
	if (d->page)
		mcache__response__free_unpacked(d->page, NULL);
	free(d->lpage);
	free(d->path);
	free(d);
}

/* Open path as a directory on the server: 0 and the handle and inode. */
static int dir_open_server(mc_client *c, const char *path, uint64_t *handle, uint64_t *ino)
{
	Mcache__Op op = MCACHE__OP__INIT;
	Mcache__Response *rsp = NULL;
	op.code = MCACHE__OP_CODE__OP_OPEN;
	path_set(&op.path, path);
	op.flags = O_RDONLY | O_DIRECTORY;
	int err = client_op(c, &op, &rsp);
	if (err < 0)
		return err;
	*handle = rsp->results[0]->handle;
	*ino = rsp->results[0]->attr ? rsp->results[0]->attr->ino : 0;
	mcache__response__free_unpacked(rsp, NULL);
	return 0;
}

/* Try to list d from shared memory. 0 (d is local), VIEW_MISS, or -errno. */
static int dir_open_local(mc_client *c, struct mc_dir *d, const char *path)
{
	int err = client_view_result(c, view_opendir(c->view, path, strlen(path), &d->vd));
	if (err != 0)
		return err;
	d->lpage = malloc(MC_DIR_LOCAL_PAGE * sizeof(*d->lpage));
	d->path = strdup(path);
	if (!d->lpage || !d->path)
		return -ENOMEM;
	d->local = true;
	return 0;
}

/* The cache stopped answering a local listing: go on through the server
 * from the same cookie. If the path no longer names the directory being
 * listed, that directory is gone and the listing ends. */
static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static uint64_t name_hash(const char *name, size_t len)
{
	return mc_hash_name(0, 0, name, len);
}

/* Remember a name a local listing returns (invariant 5). */
static int dir_seen_add(struct mc_dir *d, const char *name, size_t len)
{
	if (d->nseen == d->capseen) {
		size_t cap = d->capseen ? d->capseen * 2 : 256;
		uint64_t *p = realloc(d->seen, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		d->seen = p;
		d->capseen = cap;
	}
	d->seen[d->nseen++] = name_hash(name, len);
	return 0;
}

static bool dir_seen(const struct mc_dir *d, const char *name, size_t len)
{
	uint64_t h = name_hash(name, len);
	return bsearch(&h, d->seen, d->nseen, sizeof(*d->seen), cmp_u64) != NULL;
}

static int dir_to_server(struct mc_dir *d)
{
	uint64_t handle, ino;
	if (d->nseen) {
		qsort(d->seen, d->nseen, sizeof(*d->seen), cmp_u64);
		d->dedupe = true;
	}
	int err = dir_open_server(d->c, d->path, &handle, &ino);
	d->local = false;
	d->eof = false;
	d->cookie = d->vd.cookie;
	if (err == -ENOENT || err == -ENOTDIR) {
		d->eof = true;
		return 0;
	}
	if (err < 0)
		return err;
	d->handle = handle;
	if (ino != d->vd.ino)
		d->eof = true;
	return 0;
}

MC_DIR *mc_opendir(mc_client *c, const char *path)
{
	int err = client_check(c);
	if (err == 0)
		err = path_check_c(c, path, NULL);
	if (err < 0) {
		errno = -err;
		return NULL;
	}
	struct mc_dir *d = calloc(1, sizeof(*d));
	if (!d) {
		errno = ENOMEM;
		return NULL;
	}
	d->c = c;
	err = client_local(c) ? dir_open_local(c, d, path) : VIEW_MISS;
	if (err == VIEW_MISS) {
		uint64_t ino;
		d->local = false;
		err = dir_open_server(c, path, &d->handle, &ino);
	}
	if (err < 0) {
		free(d->lpage);
		free(d->path);
		free(d);
		errno = -err;
		return NULL;
	}
	client_link_dir(c, d);
	return d;
}

/* The next entry of a local listing, NULL at the end (or when the listing
 * moved to the server: then d->local is false). */
static int dir_next_local(struct mc_dir *d, const struct view_dirent **out)
{
	while (d->lpos == d->lcount) {
		if (d->eof) {
			*out = NULL;
			return 0;
		}
		unsigned n;
		bool eof;
		int err = client_local(d->c)
		        ? client_view_result(d->c, view_readdir(d->c->view, &d->vd, d->lpage,
		                                                MC_DIR_LOCAL_PAGE, &n, &eof))
		        : -ENOTCONN;
		if (err == VIEW_MISS) {
			*out = NULL;
			return dir_to_server(d);
		}
		if (err < 0)
			return err;
		d->lcount = n;
		d->lpos = 0;
		d->eof = eof;
	}
	*out = &d->lpage[d->lpos++];
	return 0;
}

/* Fetch the next page into d->page. 0, or -errno. */
static int dir_fetch(struct mc_dir *d)
{
	Mcache__Op op = MCACHE__OP__INIT;
	Mcache__Response *rsp = NULL;
	op.code = MCACHE__OP_CODE__OP_READDIR;
	op.handle = d->handle;
	op.cookie = d->cookie;
	op.count = DIR_PAGE;
	int err = client_op(d->c, &op, &rsp);
	if (err < 0)
		return err;
	const Mcache__Result *r = rsp->results[0];
	/* An empty page that neither ends the listing nor moves the cursor
	 * would make us loop forever. */
	if (r->n_entries == 0 && !r->eof && r->cookie == d->cookie) {
		mcache__response__free_unpacked(rsp, NULL);
		return -EPROTO;
	}
	if (d->page)
		mcache__response__free_unpacked(d->page, NULL);
	d->page = rsp;
	d->pos = 0;
	d->cookie = r->cookie;
	d->eof = r->eof;
	return 0;
}

struct dirent *mc_readdir(MC_DIR *d)
{
	if (!d) {
		errno = EFAULT;
		return NULL;
	}
	int err = client_check(d->c);
	if (err < 0) {
		errno = -err;
		return NULL;
	}
	struct dirent *ent = &d->ent;
	if (d->local) {
		const struct view_dirent *v;
		err = dir_next_local(d, &v);
		if (err < 0) {
			errno = -err;
			return NULL;
		}
		if (v) {
			err = dir_seen_add(d, v->name, v->namelen);
			if (err < 0) {
				errno = -err;
				return NULL;
			}
			ent->d_ino = (ino_t)v->ino;
			ent->d_type = v->type;
			memcpy(ent->d_name, v->name, (size_t)v->namelen + 1);
			ent->d_off = (off_t)++d->index;
			ent->d_reclen = (unsigned short)(offsetof(struct dirent, d_name) + v->namelen + 1);
			return ent;
		}
		if (d->local || d->eof)
			return NULL; /* the end: errno unchanged */
	}
	const Mcache__Dirent *e;
	do {
		for (;;) {
			if (d->page && d->pos < d->page->results[0]->n_entries)
				break;
			if (d->eof)
				return NULL; /* the end: errno unchanged */
			err = dir_fetch(d);
			if (err < 0) {
				errno = -err;
				return NULL;
			}
		}
		e = d->page->results[0]->entries[d->pos++];
		if (!e || e->name.len == 0 || e->name.len >= sizeof(d->ent.d_name) ||
		    memchr(e->name.data, 0, e->name.len) || memchr(e->name.data, '/', e->name.len)) {
			errno = EPROTO;
			return NULL;
		}
	} while (d->dedupe && dir_seen(d, (const char *)e->name.data, e->name.len));
	ent->d_ino = (ino_t)e->ino;
	ent->d_type = (unsigned char)e->type;
	memcpy(ent->d_name, e->name.data, e->name.len);
	ent->d_name[e->name.len] = 0;
	/* d_off: a position to come back to; we count entries returned. */
	ent->d_off = (off_t)++d->index;
	ent->d_reclen = (unsigned short)(offsetof(struct dirent, d_name) + e->name.len + 1);
	return ent;
}

int mc_closedir(MC_DIR *d)
{
	if (!d)
		return client_fail(-EFAULT);
	mc_client *c = d->c;
	uint64_t handle = d->handle;
	int err = client_check(c);
	/* As closedir(3): the MC_DIR is freed whatever happens. */
	dir_free(d);
	if (err < 0)
		return client_fail(err);
	if (!handle)
		return 0; /* listed from shared memory: nothing open on the server */
	err = client_close_handle(c, handle);
	return err < 0 ? client_fail(err) : 0;
}
