/* fuzz-path.c - libFuzzer target for the path rules both sides apply: the
 * component splitter and permission check of proto/mc_path.h, the client's
 * path_check() (client/path.c), and the two walks that use them, the
 * client's shared-memory walk (client/shmview.c) against the server's
 * (server/walk.c through ns_stat/ns_readlink).
 *
 * Input: byte 0 selects the caller (bits 0-1: root, uid 1000, uid 1001 in
 * group 1000, uid 2000) and whether the last symlink is followed (bit 2);
 * bytes 1-2 are a mode and byte 3 an access mask for the permission check;
 * the rest is the path, NULs and all.
 *
 * The namespace is the tree of fuzz-tree.h, built anew every PATH_RENEW
 * inputs (the server's walks cache what they load, negative entries too).
 *
 * With $MCACHE_FUZZ_VERBOSE set, both walks' answers are printed.
 *
 * Invariants checked:
 *   1. mc_path_next() yields exactly the non-empty slash-separated pieces of
 *      the path, in order, each inside the path; last and slash say what
 *      follows the component; the loop ends.
 *   2. mc_comp_type() is DOT for ".", DOTDOT for "..", NORM otherwise.
 *   3. mc_permission() grants exactly what the owner, group or other bits
 *      (or root's rules) allow, bit by bit.
 *   4. path_check() on the path up to its first NUL: ENOENT when empty,
 *      ENAMETOOLONG beyond MC_CLIENT_PATH_MAX, else 0 and its length.
 *   5. view_stat() and view_readlink() either miss or give the answer the
 *      server gives (error, inode number, mode; the target's bytes).
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client_impl.h"
#include "fuzz-tree.h"
#include "mc_path.h"
#include "ns.h"
#include "ops.h"
#include "shm.h"
#include "shmview.h"
#include "store.h"

#define PATH_RENEW    20000u        /* inputs between fresh namespaces */
#define PATH_SHM_SIZE (4u << 20)
#define PATH_INPUT_MAX 8192u

static struct {
	struct fuzz_tree t;
	struct view v;
	bool up;
	bool verbose;
	unsigned inputs;
} fx;

static void tree_up(void)
{
	fuzz_tree_up(&fx.t, PATH_SHM_SIZE);
	fz_check(view_init(&fx.v, fx.t.shm->base, fx.t.shm->size) == 0);
	view_default_limits(&fx.v.lim);
	fx.verbose = getenv("MCACHE_FUZZ_VERBOSE") != NULL;
	fx.up = true;
}

static void tree_at_exit(void)
{
	if (fx.up)
		fuzz_tree_down(&fx.t);
	fx.up = false;
}

/* Invariant 1 against a plain reading of the path. */
static void check_split(const char *path, size_t len)
{
	const char *p = path, *end = path + len, *prev_end = path;
	const char *r = path;      /* the reference's position */
	struct mc_comp c;
	size_t n = 0;

	while (mc_path_next(&p, end, &c)) {
		fz_check(++n <= len);
		while (r < end && *r == '/')
			r++;
		fz_check(r < end);
		const char *re = r;
		while (re < end && *re != '/')
			re++;
		fz_check(c.name == r && c.len == (size_t)(re - r) && c.len > 0);
		fz_check(c.name >= prev_end && p == c.name + c.len);
		fz_check(!memchr(c.name, '/', c.len));
		const char *q = re;
		while (q < end && *q == '/')
			q++;
		fz_check(c.last == (q == end));
		fz_check(c.slash == (re < end));
		enum mc_last t = mc_comp_type(c.name, c.len);
		if (c.len == 1 && c.name[0] == '.')
			fz_check(t == MC_LAST_DOT);
		else if (c.len == 2 && c.name[0] == '.' && c.name[1] == '.')
			fz_check(t == MC_LAST_DOTDOT);
		else
			fz_check(t == MC_LAST_NORM);
		prev_end = re;
		r = re;
	}
	while (r < end && *r == '/')
		r++;
	fz_check(r == end);
}

/* Invariant 3, one access bit at a time. */
static void check_permission(const struct cred *c, uint32_t mode, int mask)
{
	uint32_t owner = 1000, group = 1000;
	bool ok = true;
	uint32_t groups[SESSION_MAX_GROUPS];

	for (int i = 0; i < c->ngroups; i++)
		groups[i] = c->groups[i];
	for (int bit = 0; bit < 3; bit++) {
		int want = 1 << bit;
		if (!(mask & want))
			continue;
		bool may;
		if (c->uid == 0)
			may = want != MC_MAY_EXEC || S_ISDIR(mode) || (mode & 0111);
		else if (c->uid == owner)
			may = mode & ((uint32_t)want << 6);
		else if (c->gid == group || (c->ngroups > 0 && c->groups[0] == group))
			may = mode & ((uint32_t)want << 3);
		else
			may = mode & (uint32_t)want;
		ok = ok && may;
	}
	int rc = mc_permission(c->uid, c->gid, groups, c->ngroups, mode, owner, group, mask);
	fz_check(rc == (ok ? 0 : -EACCES));
}

/* Invariant 4. */
static void check_path_check(const char *path, size_t len)
{
	size_t n = strnlen(path, len), out = 0;
	int rc = path_check(path, &out);
	if (n == 0)
		fz_check(rc == -ENOENT);
	else if (n > MC_CLIENT_PATH_MAX)
		fz_check(rc == -ENAMETOOLONG);
	else
		fz_check(rc == 0 && out == n);
}

/* Invariant 5. */
static void check_walks(const struct cred *c, const char *path, size_t len, bool follow)
{
	struct stat st;
	ns_attr a;
	char lbuf[MC_SYMLINK_MAX], sbuf[MC_SYMLINK_MAX];
	size_t llen = 0, slen = 0;

	fx.v.cred.uid = c->uid;
	fx.v.cred.gid = c->gid;
	fx.v.cred.ngroups = c->ngroups;
	for (int i = 0; i < c->ngroups; i++)
		fx.v.cred.groups[i] = c->groups[i];

	int lrc = view_stat(&fx.v, path, len, follow, &st);
	int src = ns_stat(fx.t.ns, c, path, len, follow, &a);
	if (fx.verbose)
		fprintf(stderr, "uid %u %s %.*s: view %d, server %d\n", (unsigned)c->uid,
		        follow ? "stat" : "lstat", (int)len, path, lrc, src);
	if (lrc != VIEW_MISS) {
		if (lrc != src)
			fprintf(stderr, "view_stat %d, ns_stat %d\n", lrc, src);
		fz_check(lrc == src);
		if (lrc == 0)
			fz_check(st.st_ino == a.ino && st.st_mode == a.mode);
	}
	lrc = view_readlink(&fx.v, path, len, lbuf, sizeof(lbuf), &llen);
	src = ns_readlink(fx.t.ns, c, path, len, sbuf, &slen);
	if (lrc != VIEW_MISS) {
		if (lrc != src)
			fprintf(stderr, "view_readlink %d, ns_readlink %d\n", lrc, src);
		fz_check(lrc == src);
		if (lrc == 0)
			fz_check(llen == slen && memcmp(lbuf, sbuf, llen) == 0);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 4 || size > PATH_INPUT_MAX)
		return 0;
	if (!fx.up) {
		tree_up();
		atexit(tree_at_exit);
	}
	const struct cred *c = &fuzz_creds[data[0] & 3];
	bool follow = data[0] & 4;
	uint32_t mode = (uint32_t)data[1] | (uint32_t)data[2] << 8;
	int mask = data[3] & 7;
	size_t len = size - 4;
	/* A NUL-terminated copy, so path_check may look past the end. */
	char *path = malloc(len + 1);
	fz_check(path);
	memcpy(path, data + 4, len);
	path[len] = 0;

	check_split(path, len);
	check_permission(c, mode, mask);
	check_path_check(path, len + 1);
	check_walks(c, path, len, follow);
	free(path);
	if (++fx.inputs % PATH_RENEW == 0) {
		tree_at_exit();
		tree_up();
	}
	return 0;
}
