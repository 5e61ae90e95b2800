/* listing.c - directory listings (ns_readdir): pages of a held directory in
 * cookie order, from the cache. */
#include <errno.h>
#include <sys/stat.h>

#include "ns_impl.h"

int ns_readdir(struct ns *ns, const struct cred *c, uint64_t ino, uint64_t cookie, unsigned max,
               ns_dirent_fn fn, void *arg, uint64_t *next, bool *eof)
{
	(void)c;
	struct shm *s = ns->shm;
	int rc = 0;
	pthread_mutex_lock(&ns->lock);
	mc_off_t dir = inode_find(s, ino);
	if (!dir) {
		rc = -EBADF;
		goto out;
	}
	if (!S_ISDIR(inode_at(s, dir)->mode)) {
		rc = -ENOTDIR;
		goto out;
	}
	uint64_t last = cookie;
	bool end = true;
	if (inode_at(s, dir)->nlink > 0) {
		struct reclaim r;
		reclaim_begin(ns, &r);
		do
			rc = ns_load_dir(ns, dir);
		while (do_reclaim_retry(ns, rc, &r));
		if (rc < 0)
			goto out;
		struct mc_dirx *dx = dcache_dirx(s, dir, false);
		unsigned n = 0;
		for (mc_off_t d = dx ? dx->head : 0; d; d = dentry_at(s, d)->sib_next) {
			struct mc_dentry *e = dentry_at(s, d);
			if (e->cookie <= cookie || !(e->flags & MC_D_POSITIVE))
				continue;
			if (n == max) {
				end = false;
				break;
			}
			rc = fn(arg, dcache_name(s, d), e->namelen, inode_at(s, e->inode)->ino, e->dtype);
			if (rc < 0)
				goto out;
			last = e->cookie;
			n++;
		}
	}
	*next = last;
	*eof = end;
out:
	pthread_mutex_unlock(&ns->lock);
	return rc;
}
