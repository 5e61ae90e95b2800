/* diff_tree.c - the differential test's listings and walks (see
 * test-diff.c): a directory listed on both sides and compared, and the
 * kernel tree walked to refresh the paths the generator reuses and, every
 * so often, compared entry by entry with mcache's. */
#include "diff.h"

/* ---- directory listings and tree walks ------------------------------------ */

struct entry {
	char *name;
	unsigned char type;  /* DT_* */
	uint64_t ino;
};

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

static void entries_free(struct entry *e, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(e[i].name);
	free(e);
}

static void entries_add(struct entry **e, size_t *n, const char *name, unsigned char type, uint64_t ino)
{
	*e = realloc(*e, (*n + 1) * sizeof(**e));
	assert_non_null(*e);
	(*e)[*n].name = strdup(name);
	assert_non_null((*e)[*n].name);
	(*e)[*n].type = type;
	(*e)[*n].ino = ino;
	(*n)++;
}

/* List a kernel directory (rel "" is the top), sorted. 0 or -1 with errno. */
static int klist(int kfd, const char *rel, struct entry **out, size_t *nout)
{
	int fd = openat(kfd, rel[0] ? rel : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	DIR *dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return -1;
	}
	struct entry *e = NULL;
	size_t n = 0;
	struct dirent *de;
	while ((de = readdir(dir)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			entries_add(&e, &n, de->d_name, de->d_type, de->d_ino);
	closedir(dir);
	if (n)
		qsort(e, n, sizeof(*e), entry_cmp);
	*out = e;
	*nout = n;
	return 0;
}

/* List an mcache directory, sorted. 0 or -1 with errno. */
static int mlist(mc_client *mc, const char *mp, struct entry **out, size_t *nout)
{
	MC_DIR *dir = mc_opendir(mc, mp);
	if (!dir)
		return -1;
	struct entry *e = NULL;
	size_t n = 0;
	struct dirent *de;
	errno = 0;
	while ((de = mc_readdir(dir))) {
		entries_add(&e, &n, de->d_name, de->d_type, de->d_ino);
		errno = 0;
	}
	int err = errno;
	mc_closedir(dir);
	if (err) {
		entries_free(e, n);
		errno = err;
		return -1;
	}
	if (n)
		qsort(e, n, sizeof(*e), entry_cmp);
	*out = e;
	*nout = n;
	return 0;
}

/* Compare two sorted listings of the directory named in what. */
static int list_check(struct diff *d, const char *what, const struct entry *ke, size_t kn,
                      const struct entry *me, size_t mn)
{
	size_t i = 0, j = 0;
	while (i < kn || j < mn) {
		int c = i == kn ? 1 : j == mn ? -1 : strcmp(ke[i].name, me[j].name);
		if (c < 0)
			return diff_fail(d, "%s: \"%s\" listed by the kernel only", what, ke[i].name);
		if (c > 0)
			return diff_fail(d, "%s: \"%s\" listed by mcache only", what, me[j].name);
		if (ke[i].type != me[j].type)
			return diff_fail(d, "%s: \"%s\" d_type kernel %u, mcache %u", what, ke[i].name,
			                 ke[i].type, me[j].type);
		if (j > 0 && !strcmp(me[j - 1].name, me[j].name))
			return diff_fail(d, "%s: mcache lists \"%s\" twice", what, me[j].name);
		i++;
		j++;
	}
	return 0;
}

int op_listdir(struct diff *d)
{
	char p[REL_MAX], mp[REL_MAX + 2];
	gen_path(d, p, sizeof(p));
	mpath(p, mp, sizeof(mp));
	diff_note(d, "opendir+readdir \"%s\"", p);
	struct entry *ke = NULL, *me = NULL;
	size_t kn = 0, mn = 0;
	struct res k = res_of(klist(d->kfd, p, &ke, &kn));
	struct res m = res_of(mlist(d->mc, mp, &me, &mn));
	int rc = res_check(d, k, m, false);
	if (rc == 0 && k.ret == 0)
		rc = list_check(d, d->hist[d->op % HISTORY], ke, kn, me, mn);
	if (k.ret == 0)
		entries_free(ke, kn);
	if (m.ret == 0)
		entries_free(me, mn);
	return rc;
}

void snap_clear(struct diff *d)
{
	for (size_t i = 0; i < d->nsnap; i++)
		free(d->snap[i]);
	d->nsnap = 0;
}

static void snap_add(struct diff *d, const char *rel)
{
	if (d->nsnap == d->capsnap) {
		d->capsnap = d->capsnap ? 2 * d->capsnap : 256;
		d->snap = realloc(d->snap, d->capsnap * sizeof(*d->snap));
		assert_non_null(d->snap);
	}
	d->snap[d->nsnap] = strdup(rel);
	assert_non_null(d->snap[d->nsnap]);
	d->nsnap++;
}

static void join(char *out, size_t cap, const char *dir, const char *name)
{
	if (dir[0])
		snprintf(out, cap, "%s/%s", dir, name);
	else
		snprintf(out, cap, "%s", name);
}

/* Walk the kernel tree below rel, recording every path for path generation
 * and, when compare, checking each entry against mcache. */
static int walk(struct diff *d, const char *rel, unsigned depth, bool compare)
{
	if (depth > WALK_DEPTH || strlen(rel) > REL_MAX - 300)
		return 0;  /* too deep to name: leave it (never seen in practice) */
	char mp[REL_MAX + 2];
	mpath(rel, mp, sizeof(mp));
	struct entry *ke = NULL, *me = NULL;
	size_t kn = 0, mn = 0;
	if (klist(d->kfd, rel, &ke, &kn) < 0) {
		/* Only a directory the test cannot enter (chmod 0 as non-root). */
		return 0;
	}
	int rc = 0;
	if (compare) {
		if (mlist(d->mc, mp, &me, &mn) < 0) {
			rc = diff_fail(d, "walk: mc_opendir/readdir \"%s\": %s", mp, strerror(errno));
			goto out;
		}
		char what[REL_MAX + 32];
		snprintf(what, sizeof(what), "walk: listing of \"%s\"", mp);
		if ((rc = list_check(d, what, ke, kn, me, mn)) < 0)
			goto out;
	}
	for (size_t i = 0; i < kn && rc == 0; i++) {
		char crel[REL_MAX], cmp[REL_MAX + 2], what[REL_MAX + 32];
		join(crel, sizeof(crel), rel, ke[i].name);
		mpath(crel, cmp, sizeof(cmp));
		snap_add(d, crel);
		if (compare) {
			struct stat ks, ms;
			snprintf(what, sizeof(what), "walk: lstat \"%s\"", cmp);
			if (fstatat(d->kfd, crel, &ks, AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			if (mc_lstat(d->mc, cmp, &ms) < 0) {
				rc = diff_fail(d, "%s: %s", what, strerror(errno));
				break;
			}
			if ((rc = attr_check(d, what, &ks, &ms)) < 0)
				break;
			if (me[i].ino != (uint64_t)ms.st_ino) {
				rc = diff_fail(d, "%s: mcache d_ino %llu but st_ino %llu", what,
				               (unsigned long long)me[i].ino, (unsigned long long)ms.st_ino);
				break;
			}
			if (S_ISLNK(ks.st_mode)) {
				char kb[4096], mb[4096];
				ssize_t kl = readlinkat(d->kfd, crel, kb, sizeof(kb));
				ssize_t ml = mc_readlink(d->mc, cmp, mb, sizeof(mb));
				if (kl != ml || (kl > 0 && memcmp(kb, mb, (size_t)kl))) {
					rc = diff_fail(d, "%s: symlink target kernel \"%.*s\", mcache \"%.*s\"",
					               what, (int)(kl > 0 ? kl : 0), kb, (int)(ml > 0 ? ml : 0), mb);
					break;
				}
			}
		}
		if (ke[i].type == DT_DIR)
			rc = walk(d, crel, depth + 1, compare);
	}
out:
	entries_free(ke, kn);
	if (me)
		entries_free(me, mn);
	return rc;
}

/* Refresh the path list; with compare, also compare the top directory and
 * every entry below it. */
int tree_check(struct diff *d, bool compare)
{
	snap_clear(d);
	if (compare) {
		struct stat ks, ms;
		assert_int_equal(fstat(d->kfd, &ks), 0);
		if (mc_lstat(d->mc, "/", &ms) < 0)
			return diff_fail(d, "walk: mc_lstat \"/\": %s", strerror(errno));
		if (attr_check(d, "walk: lstat \"/\"", &ks, &ms) < 0)
			return -1;
	}
	return walk(d, "", 0, compare);
}
