/* dir.c - libmcache's directory listings: opendir opens a server handle,
 * readdir fetches pages of entries (OP_READDIR) and hands them out one at a
 * time, closedir closes the handle.
 *
 * Invariants of an MC_DIR (struct mc_dir in client_impl.h):
 *  1. page, when not NULL, is the last READDIR response; entries before pos
 *     have been returned.
 *  2. cookie is the server's cursor for the page after page; it is only
 *     used once page is exhausted, and only when eof is false.
 *  3. ent is the storage of the struct dirent last returned.
 */
#include "client_impl.h"

#include <stdlib.h>
#include <string.h>

/* Entries asked for per page. */
#define DIR_PAGE 512u

static void dir_link(mc_client *c, struct mc_dir *d)
{
	d->c = c;
	d->prev = NULL;
	d->next = c->dirs;
	if (c->dirs)
		c->dirs->prev = d;
	c->dirs = d;
}

void dir_free(struct mc_dir *d)
{
	if (d->prev)
		d->prev->next = d->next;
	else
		d->c->dirs = d->next;
	if (d->next)
		d->next->prev = d->prev;
	if (d->page)
		mcache__response__free_unpacked(d->page, NULL);
	free(d);
}

MC_DIR *mc_opendir(mc_client *c, const char *path)
{
	Mcache__Op op = MCACHE__OP__INIT;
	Mcache__Response *rsp = NULL;
	int err = client_check(c);
	if (err == 0)
		err = path_check(path);
	if (err < 0) {
		errno = -err;
		return NULL;
	}
	struct mc_dir *d = calloc(1, sizeof(*d));
	if (!d) {
		errno = ENOMEM;
		return NULL;
	}
	op.code = MCACHE__OP_CODE__OP_OPEN;
	path_set(&op.path, path);
	op.flags = O_RDONLY | O_DIRECTORY;
	err = client_op(c, &op, &rsp);
	if (err < 0) {
		free(d);
		errno = -err;
		return NULL;
	}
	d->handle = rsp->results[0]->handle;
	mcache__response__free_unpacked(rsp, NULL);
	dir_link(c, d);
	return d;
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
	for (;;) {
		if (d->page && d->pos < d->page->results[0]->n_entries)
			break;
		if (d->page && d->eof)
			return NULL; /* the end: errno unchanged */
		err = dir_fetch(d);
		if (err < 0) {
			errno = -err;
			return NULL;
		}
	}
	const Mcache__Dirent *e = d->page->results[0]->entries[d->pos++];
	if (!e || e->name.len == 0 || e->name.len >= sizeof(d->ent.d_name) ||
	    memchr(e->name.data, 0, e->name.len) || memchr(e->name.data, '/', e->name.len)) {
		errno = EPROTO;
		return NULL;
	}
	struct dirent *ent = &d->ent;
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
	Mcache__Op op = MCACHE__OP__INIT;
	if (!d)
		return client_fail(-EFAULT);
	mc_client *c = d->c;
	uint64_t handle = d->handle;
	int err = client_check(c);
	/* As closedir(3): the MC_DIR is freed whatever happens. */
	dir_free(d);
	if (err < 0)
		return client_fail(err);
	op.code = MCACHE__OP_CODE__OP_CLOSE;
	op.handle = handle;
	err = client_op_simple(c, &op);
	return err < 0 ? client_fail(err) : 0;
}
