/* test-fsck.c - unit tests of the consistency check (server/fsck.h) over a
 * real namespace, LMDB store and segment: a committed tree is clean with
 * its cache compared; uncommitted changes and an inode held open after its
 * last unlink are no problem; a cache changed behind the namespace's back
 * (a clean inode, a clean dentry, a name added to a complete directory, a
 * name dropped from one) is reported by kind; the report's JSON and its
 * bound. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <lmdb.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "dcache.h"
#include "fsck.h"
#include "inode.h"
#include "journal.h"
#include "mc_shm.h"
#include "ns.h"
#include "ops.h"
#include "shm.h"
#include "store.h"
#include "fixture.h"

#define P(s) (s), strlen(s)

static const struct cred root_cred = { .uid = 0, .gid = 0 };

struct fx {
	char dir[256];
	struct store *st;
	struct shm *shm;
	struct ns *ns;
};

static bool commit_now(struct fx *f)
{
	struct journal_batch *b = ns_swap(f->ns);
	if (!b)
		return false;
	struct store_commit_times t;
	if (store_commit(f->st, b, &t) != 0)
		fail_msg("store_commit failed");
	ns_publish(f->ns, b);
	return true;
}

static ns_attr stat_ok(struct fx *f, const char *path)
{
	ns_attr a;
	if (ns_stat(f->ns, &root_cred, P(path), false, &a) != 0)
		fail_msg("stat %s", path);
	return a;
}

/* /a, /a/b, /a/f and its second name /a/g, /s -> /a: committed, and /a
 * listed so that it is complete. */
static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	fixture_template(f->dir, sizeof(f->dir), "test-fsck");
	struct store_opts o = { .root_mode = 0755 };
	if (!mkdtemp(f->dir) || store_open(f->dir, &o, &f->st) < 0 ||
	    shm_create(8ull << 20, &f->shm) < 0 || ns_new(f->shm, f->st, NULL, &f->ns) < 0)
		return -1;
	const struct cred *c = &root_cred;
	if (ns_mkdir(f->ns, c, P("/a"), 0755, NULL) || ns_mkdir(f->ns, c, P("/a/b"), 0755, NULL) ||
	    ns_open(f->ns, c, P("/a/f"), O_CREAT | O_WRONLY, 0644, false, NULL) ||
	    ns_link(f->ns, c, P("/a/f"), P("/a/g")) || ns_symlink(f->ns, c, P("/a"), P("/s")))
		return -1;
	while (commit_now(f))
		;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	ns_free(f->ns);
	shm_destroy(f->shm);
	store_close(f->st);
	fixture_rmtree(f->dir);
	free(f);
	return 0;
}

/* Run the whole check; the number of problems of kind (all kinds:
 * FSCK_KIND_COUNT), after asserting that no other kind was found. */
static size_t check(struct fx *f, enum fsck_kind kind)
{
	struct fsck_report rep = {0};
	assert_int_equal(fsck_ns(f->ns, &rep), 0);
	size_t n = 0;
	for (size_t i = 0; i < rep.n; i++) {
		if (kind != FSCK_KIND_COUNT && rep.v[i].kind != kind)
			fail_msg("unexpected %s: %s", fsck_kind_name(rep.v[i].kind), rep.v[i].detail);
		printf("# %s ino %llu: %s\n", fsck_kind_name(rep.v[i].kind),
		       (unsigned long long)rep.v[i].ino, rep.v[i].detail);
		n++;
	}
	assert_int_equal(rep.inodes, 5);
	fsck_report_free(&rep);
	return n;
}

static void t_clean(void **state)
{
	struct fx *f = *state;
	struct fsck_report rep = {0};
	assert_int_equal(fsck_ns(f->ns, &rep), 0);
	assert_int_equal(rep.n, 0);
	assert_int_equal(rep.inodes, 5);
	assert_int_equal(rep.dentries, 5);
	assert_true(rep.cached_inodes >= 5);
	assert_true(rep.cached_dentries >= 5);
	/* The store alone agrees. */
	struct fsck_report st = {0};
	assert_int_equal(fsck_store(f->st, NULL, NULL, &st), 0);
	assert_int_equal(st.n, 0);
	assert_int_equal(st.cached_inodes, 0);
	fsck_report_free(&st);
	char *js = fsck_report_json(&rep);
	json_t *doc = json_loads(js, 0, NULL);
	assert_non_null(doc);
	assert_true(json_is_true(json_object_get(doc, "clean")));
	assert_int_equal(json_array_size(json_object_get(doc, "problems")), 0);
	json_decref(doc);
	free(js);
	fsck_report_free(&rep);
}

static void t_dirty_and_held(void **state)
{
	struct fx *f = *state;
	ns_attr h;
	assert_int_equal(ns_open(f->ns, &root_cred, P("/a/open"), O_CREAT | O_RDWR, 0644, true, &h), 0);
	assert_true(commit_now(f));
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("/a/open")), 0);
	assert_true(commit_now(f));
	/* Uncommitted: a new directory, a removed name, a changed mode. */
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/new"), 0755, NULL), 0);
	assert_int_equal(ns_unlink(f->ns, &root_cred, P("/a/g")), 0);
	assert_int_equal(ns_chmod(f->ns, &root_cred, P("/a/f"), 0600), 0);
	assert_int_equal(check(f, FSCK_KIND_COUNT), 0);
	ns_release(f->ns, h.ino);
	while (commit_now(f))
		;
	struct fsck_report rep = {0};
	assert_int_equal(fsck_ns(f->ns, &rep), 0);
	assert_int_equal(rep.n, 0);
	fsck_report_free(&rep);
}

static struct mc_inode *cached_inode(struct fx *f, const char *path)
{
	mc_off_t off = inode_find(f->shm, stat_ok(f, path).ino);
	assert_true(off != 0);
	return inode_at(f->shm, off);
}

static void t_cache_inode(void **state)
{
	struct fx *f = *state;
	struct mc_inode *i = cached_inode(f, "/a/f");
	i->uid = 4242;
	assert_int_equal(check(f, FSCK_CACHE_INODE), 1);
	i->uid = 0;
	i->mtime += 1;
	assert_int_equal(check(f, FSCK_CACHE_INODE), 1);
	i->mtime -= 1;
	assert_int_equal(check(f, FSCK_KIND_COUNT), 0);
}

static void t_cache_dentry(void **state)
{
	struct fx *f = *state;
	mc_off_t dir = inode_find(f->shm, stat_ok(f, "/a").ino);
	mc_off_t d = dcache_find(f->shm, dir, P("b"));
	assert_true(d != 0);
	struct mc_dentry *e = dentry_at(f->shm, d);
	e->dtype = DT_REG;
	assert_int_equal(check(f, FSCK_CACHE_DENTRY), 1);
	e->dtype = DT_DIR;
	/* A name the store has, cached as absent: in a directory that is not
	 * complete, so that only the dentry is wrong. */
	mc_off_t root = inode_find(f->shm, 1);
	dcache_clear_complete(f->shm, root);
	mc_off_t s = dcache_find(f->shm, root, P("s"));
	assert_true(s != 0);
	struct mc_dentry saved = *dentry_at(f->shm, s);
	dentry_at(f->shm, s)->flags &= (uint16_t)~MC_D_POSITIVE;
	assert_int_equal(check(f, FSCK_CACHE_DENTRY), 1);
	dentry_at(f->shm, s)->flags = saved.flags;
	assert_int_equal(check(f, FSCK_KIND_COUNT), 0);
}

static int count_ent(void *arg, const char *name, size_t len, uint64_t ino, uint8_t dtype)
{
	return 0;
}

static void t_cache_dir(void **state)
{
	struct fx *f = *state;
	mc_off_t dir = inode_find(f->shm, stat_ok(f, "/a").ino);
	/* Listing /a loads it complete. */
	uint64_t next;
	bool eof;
	ns_attr h;
	assert_int_equal(ns_open(f->ns, &root_cred, P("/a"), O_RDONLY | O_DIRECTORY, 0, true, &h), 0);
	assert_int_equal(ns_readdir(f->ns, &root_cred, h.ino, 0, 100, count_ent, NULL, &next, &eof), 0);
	assert_true(eof);
	ns_release(f->ns, h.ino);
	assert_true(dcache_complete(f->shm, dir));
	assert_int_equal(check(f, FSCK_KIND_COUNT), 0);
	/* A name of the store dropped from the complete directory. */
	mc_off_t d = dcache_find(f->shm, dir, P("g"));
	assert_true(d != 0);
	mc_off_t ino = dentry_at(f->shm, d)->inode;
	dcache_del(f->shm, d);
	assert_true(check(f, FSCK_CACHE_DIR) >= 1);
	d = dcache_add(f->shm, dir, P("g"), ino, DT_REG);
	assert_true(d != 0);
	assert_int_equal(check(f, FSCK_KIND_COUNT), 0);
}

/* More entries than one hold of the lock compares: every one is still
 * compared, the last created included. */
static void t_many(void **state)
{
	struct fx *f = *state;
	char p[64];
	assert_int_equal(ns_mkdir(f->ns, &root_cred, P("/big"), 0755, NULL), 0);
	for (int i = 0; i < 3000; i++) {
		snprintf(p, sizeof(p), "/big/f%04d", i);
		assert_int_equal(ns_open(f->ns, &root_cred, P(p), O_CREAT | O_WRONLY, 0644, false, NULL), 0);
	}
	while (commit_now(f))
		;
	struct fsck_report rep = {0};
	assert_int_equal(fsck_ns(f->ns, &rep), 0);
	assert_int_equal(rep.n, 0);
	assert_int_equal(rep.inodes, 3006);
	assert_true(rep.cached_inodes >= 3006);
	assert_true(rep.cached_dentries >= 3005);
	fsck_report_free(&rep);
	struct mc_inode *i = cached_inode(f, "/big/f2999");
	i->gid = 77;
	struct mc_inode *j = cached_inode(f, "/big/f0000");
	j->gid = 77;
	assert_int_equal(fsck_ns(f->ns, &rep), 0);
	assert_int_equal(rep.n, 2);
	assert_int_equal(rep.v[0].kind, FSCK_CACHE_INODE);
	assert_int_equal(rep.v[1].kind, FSCK_CACHE_INODE);
	fsck_report_free(&rep);
}

/* The main database's entries in the LMDB environment in dir. */
static size_t env_entries(const char *dir)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_stat st;
	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_open(env, dir, MDB_RDONLY, 0600), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
	assert_int_equal(mdb_dbi_open(txn, NULL, 0, &dbi), 0);
	assert_int_equal(mdb_stat(txn, dbi, &st), 0);
	mdb_txn_abort(txn);
	mdb_env_close(env);
	return st.ms_entries;
}

/* An offline check of an LMDB environment with nothing in it (a data
 * directory whose first start died before setting it up) says it is no
 * store and writes nothing: it does not set up a new, clean, namespace. */
static void t_offline_empty_env(void **state)
{
	(void)state;
	char dir[] = "/tmp/mcache-fsck-empty.XXXXXX";
	MDB_env *env;
	struct fsck_report rep = {0};
	assert_non_null(mkdtemp(dir));
	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_open(env, dir, 0, 0600), 0);
	mdb_env_close(env);
	assert_int_equal(env_entries(dir), 0);
	assert_int_equal(fsck_offline(dir, &rep), -EINVAL);
	assert_int_equal(rep.n, 0);
	assert_int_equal(env_entries(dir), 0);
	fsck_report_free(&rep);
	fixture_rmtree(dir);
}

/* The names in dir, sorted and joined by spaces, into buf. */
static const char *dir_names(const char *dir, char *buf, size_t size)
{
	struct dirent **v;
	int n = scandir(dir, &v, NULL, alphasort);
	size_t len = 0;
	assert_true(n >= 0);
	buf[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (strcmp(v[i]->d_name, ".") && strcmp(v[i]->d_name, ".."))
			len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? " " : "",
			                        v[i]->d_name);
		free(v[i]);
	}
	free(v);
	return buf;
}

/* Offline, the check reads a copy of a data directory (data.mdb alone, as
 * mdb_copy makes it) without making a file there, and says EBUSY for a
 * directory whose store is open. */
static void t_offline_read_only(void **state)
{
	struct fx *f = *state;
	struct fsck_report rep = {0};
	char copy[300], from[320], to[320], names[256];
	assert_int_equal(fsck_offline(f->dir, &rep), -EBUSY);
	snprintf(copy, sizeof(copy), "%s/copy", f->dir);
	assert_int_equal(mkdir(copy, 0700), 0);
	snprintf(from, sizeof(from), "%s/data.mdb", f->dir);
	snprintf(to, sizeof(to), "%s/data.mdb", copy);
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(in >= 0 && out >= 0);
	char buf[65536];
	ssize_t n;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	assert_int_equal(n, 0);
	close(in);
	assert_int_equal(close(out), 0);
	assert_int_equal(fsck_offline(copy, &rep), 0);
	assert_int_equal(rep.n, 0);
	assert_int_equal(rep.inodes, 5);
	assert_int_equal(rep.dentries, 5);
	assert_string_equal(dir_names(copy, names, sizeof(names)), "data.mdb");
	fsck_report_free(&rep);
}

static void t_report_bound(void **state)
{
	(void)state;
	struct fsck_report rep = {0};
	for (unsigned i = 0; i < FSCK_PROBLEMS_MAX + 5; i++)
		assert_int_equal(fsck_add(&rep, FSCK_NLINK, i, "n\xff\\", 3, "p%u", i), 0);
	assert_int_equal(rep.n, FSCK_PROBLEMS_MAX);
	assert_int_equal(rep.dropped, 5);
	assert_string_equal(rep.v[0].name, "n\\xff\\x5c");
	char *js = fsck_report_json(&rep);
	json_t *doc = json_loads(js, 0, NULL);
	assert_non_null(doc);
	assert_true(json_is_false(json_object_get(doc, "clean")));
	assert_int_equal(json_integer_value(json_object_get(doc, "dropped")), 5);
	json_t *p0 = json_array_get(json_object_get(doc, "problems"), 0);
	assert_string_equal(json_string_value(json_object_get(p0, "kind")), "nlink");
	json_decref(doc);
	free(js);
	fsck_report_free(&rep);
	for (int k = 0; k < FSCK_KIND_COUNT; k++)
		assert_true(strlen(fsck_kind_name((enum fsck_kind)k)) > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(t_clean, setup, teardown),
		cmocka_unit_test_setup_teardown(t_dirty_and_held, setup, teardown),
		cmocka_unit_test_setup_teardown(t_cache_inode, setup, teardown),
		cmocka_unit_test_setup_teardown(t_cache_dentry, setup, teardown),
		cmocka_unit_test_setup_teardown(t_cache_dir, setup, teardown),
		cmocka_unit_test_setup_teardown(t_many, setup, teardown),
		cmocka_unit_test(t_report_bound),
		cmocka_unit_test(t_offline_empty_env),
		cmocka_unit_test_setup_teardown(t_offline_read_only, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
