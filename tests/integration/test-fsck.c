/* test-fsck.c - `mcachectl fsck` against a real mcached and on its data
 * directory: a clean namespace passes online and offline (exit 0), with
 * uncommitted changes and an open unlinked file too; then copies of the
 * stopped server's store, each corrupted on purpose by writing LMDB
 * directly, must each report the kind of problem made (exit 1); and the
 * errors: a running server's directory, a directory with no store, a bad
 * option (exit 2). Then the server is started again on the original store,
 * which is still clean. */
#include <errno.h>
#include <fcntl.h>
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
#include <sys/wait.h>
#include <dirent.h>
#include <endian.h>

#include <cmocka.h>
#include <jansson.h>

#include "harness.h"
#include "mcache.h"

static struct mc_server srv;
static uint64_t ino_d, ino_sub, ino_f, ino_l;

/* mcachectl ARGS against the server (harness_ctl). */
#define ctl(out, size, ...) harness_ctl(&srv, out, size, __VA_ARGS__)

static uint64_t ino_of(mc_client *c, const char *path)
{
	struct stat st;
	assert_int_equal(mc_lstat(c, path, &st), 0);
	return st.st_ino;
}

/* /d, /d/sub, /d/f (8 KiB, one extent) and its second name /d/g, /l -> /d. */
static int group_setup(void **state)
{
	(void)state;
	memset(&srv, 0, sizeof(srv));
	if (server_start(&srv, NULL) != 0)
		return -1;
	mc_client *c = mc_connect(srv.socket);
	if (!c || mc_mkdir(c, "/d", 0755) < 0 || mc_mkdir(c, "/d/sub", 0755) < 0)
		return -1;
	int fd = mc_open(c, "/d/f", O_CREAT | O_RDWR, 0644);
	const struct mc_extent x = { .off = 0, .len = 4096, .phys = 1 << 20, .flags = 0 };
	if (fd < 0 || mc_ftruncate(c, fd, 8192) < 0 || mc_extent_set(c, fd, &x) < 0 ||
	    mc_close(c, fd) < 0)
		return -1;
	if (mc_link(c, "/d/f", "/d/g") < 0 || mc_symlink(c, "/d", "/l") < 0 || mc_sync(c) < 0)
		return -1;
	mc_disconnect(c);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	return server_finish(&srv);
}

static json_t *parse(const char *out)
{
	json_error_t e;
	json_t *doc = json_loads(out, 0, &e);
	if (!doc)
		fail_msg("not JSON (%s): %s", e.text, out);
	return doc;
}

static void t_online_clean(void **state)
{
	(void)state;
	static char out[1 << 16];
	mc_client *c = harness_client(&srv);
	ino_d = ino_of(c, "/d");
	ino_sub = ino_of(c, "/d/sub");
	ino_f = ino_of(c, "/d/f");
	ino_l = ino_of(c, "/l");
	assert_int_equal(ctl(out, sizeof(out), "fsck"), 0);
	assert_non_null(strstr(out, "checked 5 inodes, 5 dentries, 1 extents"));
	assert_non_null(strstr(out, ": clean"));
	assert_int_equal(ctl(out, sizeof(out), "fsck --json"), 0);
	json_t *doc = parse(out);
	assert_true(json_is_true(json_object_get(doc, "clean")));
	json_t *ck = json_object_get(doc, "checked");
	assert_int_equal(json_integer_value(json_object_get(ck, "inodes")), 5);
	assert_true(json_integer_value(json_object_get(ck, "cached_inodes")) >= 5);
	assert_true(json_integer_value(json_object_get(ck, "cached_dirs")) >= 1);
	assert_int_equal(json_array_size(json_object_get(doc, "problems")), 0);
	json_decref(doc);
	/* The global --json says the same. */
	assert_int_equal(ctl(out, sizeof(out), "--json fsck"), 0);
	doc = parse(out);
	assert_true(json_is_true(json_object_get(doc, "clean")));
	json_decref(doc);

	/* Uncommitted changes and a file open after its last unlink are no
	 * problem either. */
	int fd = mc_open(c, "/d/open", O_CREAT | O_RDWR, 0644);
	assert_true(fd >= 0);
	assert_int_equal(mc_sync(c), 0);
	assert_int_equal(mc_unlink(c, "/d/open"), 0);
	assert_int_equal(mc_sync(c), 0);
	assert_int_equal(mc_mkdir(c, "/tmp1", 0755), 0);
	assert_int_equal(mc_chmod(c, "/d/f", 0600), 0);
	assert_int_equal(ctl(out, sizeof(out), "fsck"), 0);
	assert_int_equal(mc_close(c, fd), 0);
	assert_int_equal(mc_rmdir(c, "/tmp1"), 0);
	assert_int_equal(mc_chmod(c, "/d/f", 0644), 0);
	assert_int_equal(mc_sync(c), 0);
	mc_disconnect(c);
}

static void t_errors(void **state)
{
	(void)state;
	static char out[4096];
	assert_int_equal(ctl(out, sizeof(out), "fsck --offline '%s'", srv.data), 2);
	assert_non_null(strstr(out, "in use by a running mcached"));
	assert_int_equal(ctl(out, sizeof(out), "fsck --offline '%s'", srv.dir), 2);
	assert_non_null(strstr(out, "no store there"));
	assert_int_equal(ctl(out, sizeof(out), "fsck --bogus"), 2);
	assert_int_equal(ctl(out, sizeof(out), "fsck extra"), 2);
	assert_int_equal(ctl(out, sizeof(out), "fsck --help"), 0);
	assert_non_null(strstr(out, "--offline DATA_DIR"));
}

static void t_offline_clean(void **state)
{
	(void)state;
	static char out[1 << 16];
	assert_int_equal(server_stop(&srv, SIGTERM), 0);
	assert_int_equal(ctl(out, sizeof(out), "fsck --offline '%s'", srv.data), 0);
	assert_non_null(strstr(out, "checked 5 inodes, 5 dentries, 1 extents: clean"));
}

/* ---- corruption, written with LMDB into a copy of the store ------------- */

struct env {
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi inodes, dentries, extents, meta;
};

static void env_open(struct env *e, const char *dir)
{
	assert_int_equal(mdb_env_create(&e->env), 0);
	assert_int_equal(mdb_env_set_maxdbs(e->env, 5), 0);
	assert_int_equal(mdb_env_open(e->env, dir, 0, 0600), 0);
	assert_int_equal(mdb_txn_begin(e->env, NULL, 0, &e->txn), 0);
	assert_int_equal(mdb_dbi_open(e->txn, "inodes", 0, &e->inodes), 0);
	assert_int_equal(mdb_dbi_open(e->txn, "dentries", 0, &e->dentries), 0);
	assert_int_equal(mdb_dbi_open(e->txn, "extents", 0, &e->extents), 0);
	assert_int_equal(mdb_dbi_open(e->txn, "meta", 0, &e->meta), 0);
}

static void env_close(struct env *e)
{
	assert_int_equal(mdb_txn_commit(e->txn), 0);
	mdb_env_close(e->env);
}

static void put(struct env *e, MDB_dbi dbi, const void *k, size_t kl, const void *v, size_t vl)
{
	MDB_val key = { kl, (void *)k }, val = { vl, (void *)v };
	assert_int_equal(mdb_put(e->txn, dbi, &key, &val, 0), 0);
}

static void del(struct env *e, MDB_dbi dbi, const void *k, size_t kl)
{
	MDB_val key = { kl, (void *)k };
	assert_int_equal(mdb_del(e->txn, dbi, &key, NULL), 0);
}

static size_t dkey(uint8_t *k, uint64_t parent, const char *name)
{
	uint64_t be = htobe64(parent);
	memcpy(k, &be, 8);
	memcpy(k + 8, name, strlen(name));
	return 8 + strlen(name);
}

static void put_dentry(struct env *e, uint64_t parent, const char *name, uint64_t ino,
                       uint8_t dtype)
{
	uint8_t k[8 + 256], v[9];
	uint64_t le = htole64(ino);
	memcpy(v, &le, 8);
	v[8] = dtype;
	put(e, e->dentries, k, dkey(k, parent, name), v, sizeof(v));
}

static void del_dentry(struct env *e, uint64_t parent, const char *name)
{
	uint8_t k[8 + 256];
	del(e, e->dentries, k, dkey(k, parent, name));
}

/* Patch a 32- or 64-bit little-endian field of inode ino's record (the
 * record's layout: ino u64, mode u32, nlink u32 at 12, uid, gid, size u64
 * at 24, times), or give it another number (ino != new_ino). */
static void patch_inode(struct env *e, uint64_t ino, size_t at, uint64_t val, unsigned width,
                        uint64_t new_ino)
{
	uint64_t be = htobe64(ino);
	MDB_val key = { 8, &be }, v;
	uint8_t rec[56 + 4096];
	assert_int_equal(mdb_get(e->txn, e->inodes, &key, &v), 0);
	assert_true(v.mv_size >= 56 && v.mv_size <= sizeof(rec));
	memcpy(rec, v.mv_data, v.mv_size);
	if (width == 4) {
		uint32_t le = htole32((uint32_t)val);
		memcpy(rec + at, &le, 4);
	} else if (width == 8) {
		uint64_t le = htole64(val);
		memcpy(rec + at, &le, 8);
	}
	uint64_t nle = htole64(new_ino), nbe = htobe64(new_ino);
	memcpy(rec, &nle, 8);
	put(e, e->inodes, &nbe, 8, rec, v.mv_size);
}

static void c_bad_record(struct env *e)
{
	uint64_t k = htobe64(ino_f);
	put(e, e->inodes, &k, 8, "short", 5);
}

static void c_bad_dentry(struct env *e)
{
	uint8_t k[8 + 256];
	put(e, e->dentries, k, dkey(k, ino_d, "f"), "xyz", 3);
}

static void c_bad_extent(struct env *e)
{
	uint64_t k[2] = { htobe64(ino_f), htobe64(0) };
	put(e, e->extents, k, 16, "too short", 9);
}

static void c_no_root(struct env *e)
{
	uint64_t k = htobe64(1);
	del(e, e->inodes, &k, 8);
}

static void c_ino_range(struct env *e)
{
	/* A second copy of /d/f's record, numbered far past next_ino. */
	patch_inode(e, ino_f, 0, 0, 0, 1000000);
}

static void c_bad_parent(struct env *e) { put_dentry(e, ino_f, "x", ino_l, DT_LNK); }
static void c_dangling(struct env *e) { put_dentry(e, ino_d, "ghost", 777777, DT_REG); }
static void c_dtype(struct env *e) { put_dentry(e, ino_d, "f", ino_f, DT_DIR); }
static void c_nlink(struct env *e) { patch_inode(e, ino_f, 12, 5, 4, ino_f); }
static void c_size(struct env *e) { patch_inode(e, ino_d, 24, 9, 8, ino_d); }
static void c_orphan(struct env *e) { del_dentry(e, 1, "l"); }
static void c_multi_parent(struct env *e) { put_dentry(e, 1, "sub2", ino_sub, DT_DIR); }

static void c_unreachable(struct env *e)
{
	/* /d/sub taken out and made its own parent: a cycle. */
	del_dentry(e, ino_d, "sub");
	put_dentry(e, ino_sub, "loop", ino_sub, DT_DIR);
}

static void c_extent(struct env *e)
{
	uint64_t k[2] = { htobe64(ino_f), htobe64(1 << 20) };
	uint8_t v[20] = {0};
	uint64_t len = htole64(4096);
	memcpy(v, &len, 8);
	put(e, e->extents, k, 16, v, 20);
}

static const struct corruption {
	const char *kind;
	void (*fn)(struct env *e);
	uint64_t *ino;        /* the problem's inode, or NULL: not checked */
} corruptions[] = {
	{ "bad-record", c_bad_record, &ino_f },
	{ "bad-record", c_bad_dentry, &ino_d },
	{ "bad-record", c_bad_extent, &ino_f },
	{ "no-root", c_no_root, NULL },
	{ "ino-range", c_ino_range, NULL },
	{ "bad-parent", c_bad_parent, &ino_f },
	{ "dangling", c_dangling, &ino_d },
	{ "dtype", c_dtype, &ino_d },
	{ "nlink", c_nlink, &ino_f },
	{ "size", c_size, &ino_d },
	{ "orphan", c_orphan, &ino_l },
	{ "multi-parent", c_multi_parent, &ino_sub },
	{ "unreachable", c_unreachable, &ino_sub },
	{ "extent", c_extent, &ino_f },
};

static void t_corrupt(void **state)
{
	(void)state;
	static char out[1 << 16];
	char copy[600], cmd[1400];
	for (size_t i = 0; i < sizeof(corruptions) / sizeof(corruptions[0]); i++) {
		const struct corruption *c = &corruptions[i];
		snprintf(copy, sizeof(copy), "%s/copy-%zu", srv.dir, i);
		snprintf(cmd, sizeof(cmd), "cp -a '%s' '%s'", srv.data, copy);
		assert_int_equal(system(cmd), 0);
		struct env e;
		env_open(&e, copy);
		c->fn(&e);
		env_close(&e);

		assert_int_equal(ctl(out, sizeof(out), "fsck --offline '%s'", copy), 1);
		char want[64];
		snprintf(want, sizeof(want), "%s ino ", c->kind);
		if (!strstr(out, want))
			fail_msg("%s: not reported:\n%s", c->kind, out);
		assert_int_equal(ctl(out, sizeof(out), "fsck --json --offline '%s'", copy), 1);
		json_t *doc = parse(out), *p;
		size_t j;
		bool found = false;
		assert_true(json_is_false(json_object_get(doc, "clean")));
		json_array_foreach(json_object_get(doc, "problems"), j, p) {
			if (strcmp(json_string_value(json_object_get(p, "kind")), c->kind) != 0)
				continue;
			if (c->ino && (uint64_t)json_integer_value(json_object_get(p, "ino")) != *c->ino)
				continue;
			assert_non_null(json_string_value(json_object_get(p, "detail")));
			found = true;
		}
		if (!found)
			fail_msg("%s: no problem of that kind for the expected inode:\n%s", c->kind,
			         out);
		json_decref(doc);
		printf("# %s: detected\n", c->kind);
	}
}

/* The store the copies came from, served again: still clean, the cache
 * loaded from it included. */
static void t_restart_clean(void **state)
{
	(void)state;
	static char out[1 << 16];
	assert_int_equal(server_start(&srv, NULL), 0);
	mc_client *c = harness_client(&srv);
	struct stat st;
	assert_int_equal(mc_stat(c, "/l/f", &st), 0);
	assert_int_equal(st.st_nlink, 2);
	mc_disconnect(c);
	assert_int_equal(ctl(out, sizeof(out), "fsck"), 0);
	assert_non_null(strstr(out, "checked 5 inodes, 5 dentries, 1 extents; cache: "));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_online_clean),
		cmocka_unit_test(t_errors),
		cmocka_unit_test(t_offline_clean),
		cmocka_unit_test(t_corrupt),
		cmocka_unit_test(t_restart_clean),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
