/* fuzz-tree.c - the namespace the segment-reading fuzz targets walk
 * (fuzz-tree.h). */
#include "fuzz-tree.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ns.h"
#include "shm.h"
#include "store.h"

const struct cred fuzz_creds[4] = {
	{ .uid = 0, .gid = 0 },
	{ .uid = 1000, .gid = 1000 },
	{ .uid = 1001, .gid = 1001, .ngroups = 1, .groups = { 1000 } },
	{ .uid = 2000, .gid = 2000 },
};

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

#define P(s) (s), strlen(s)

static void mkfile(struct fuzz_tree *t, const char *path, uint32_t mode)
{
	fz_check(ns_open(t->ns, &fuzz_creds[0], P(path), O_CREAT | O_EXCL | O_WRONLY, mode,
	                 false, NULL) == 0);
}

void fuzz_tree_up(struct fuzz_tree *t, uint64_t shm_size)
{
	const struct cred *root = &fuzz_creds[0];
	const char *base = getenv("TMPDIR");
	struct store_opts so = { .root_mode = 0755, .map_size = 16u << 20 };
	char name[64], target[301];
	ns_attr a;

	snprintf(t->dir, sizeof(t->dir), "%s/fuzz-tree-XXXXXX", base && *base ? base : "/tmp");
	fz_check(mkdtemp(t->dir));
	fz_check(store_open(t->dir, &so, &t->st) == 0);
	fz_check(shm_create(shm_size, &t->shm) == 0);
	fz_check(ns_new(t->shm, t->st, NULL, &t->ns) == 0);
	fz_check(ns_mkdir(t->ns, root, P("/a"), 0755, NULL) == 0);
	fz_check(ns_mkdir(t->ns, root, P("/a/b"), 0750, NULL) == 0);
	fz_check(ns_chown(t->ns, root, P("/a/b"), 1000, 1000) == 0);
	mkfile(t, "/a/b/c", 0644);
	mkfile(t, "/a/b/name-of-forty-bytes-0123456789abcdefg", 0600);
	fz_check(ns_symlink(t->ns, root, P("b/c"), P("/a/lnk")) == 0);
	fz_check(ns_symlink(t->ns, root, P("/a/b"), P("/a/dirlnk")) == 0);
	fz_check(ns_symlink(t->ns, root, P(".."), P("/a/up")) == 0);
	fz_check(ns_symlink(t->ns, root, P("nowhere"), P("/a/dangling")) == 0);
	fz_check(ns_mkdir(t->ns, root, P("/a/x"), 0311, NULL) == 0);
	fz_check(ns_mkdir(t->ns, root, P("/a/x/y"), 0755, NULL) == 0);
	fz_check(ns_symlink(t->ns, root, P("/loop"), P("/loop")) == 0);
	mkfile(t, "/f", 0644);
	fz_check(ns_mkdir(t->ns, root, P("/d"), 0755, NULL) == 0);
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "/d/f%02d", i);
		mkfile(t, name, 0644);
	}
	memset(target, 't', 300);
	target[300] = 0;
	fz_check(ns_symlink(t->ns, root, target, 300, P("/long")) == 0);
	fz_check(ns_stat(t->ns, root, P("/a/missing"), false, &a) == -ENOENT);
}

void fuzz_tree_down(struct fuzz_tree *t)
{
	ns_free(t->ns);
	shm_destroy(t->shm);
	store_close(t->st);
	nftw(t->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	memset(t, 0, sizeof(*t));
}
