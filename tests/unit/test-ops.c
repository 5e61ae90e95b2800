/* test-ops.c - unit tests of the RPC operation layer (server/ops.c): every
 * op code through ops_exec with a hand-built server (config, store, shm,
 * namespace, committer; ops_fixture.h), errno values on the wire,
 * attributes, readlink results, statistics and fsck reports, path checks,
 * a user's session, --sync and the op table; handles and readdir are in
 * test-ops_handle.c. */
#include <malloc.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "commit.h"
#include "config.h"
#include "ns.h"
#include "ops.h"
#include "stats.h"
#include "store.h"
#include "ops_fixture.h"

static const struct cred user_cred = { .uid = 1000, .gid = 1000 };

static int setup(void **state)
{
	return ops_fixture_setup(state, "test-ops");
}

static int teardown(void **state)
{
	return ops_fixture_teardown(state);
}

/* ---- cases ----------------------------------------------------------------- */

static void test_mkdir_create_stat(void **state)
{
	struct fx *f = *state;
	assert_int_equal(path_op(f, MCACHE__OP_CODE__OP_MKDIR, "/d", 0750), 0);
	Mcache__Attr a = stat_ok(f, MCACHE__OP_CODE__OP_STAT, "/d");
	assert_int_equal(a.mode, S_IFDIR | 0750);
	assert_int_equal(a.nlink, 2);
	assert_int_equal(a.size, 40);
	assert_int_equal(a.uid, 0);
	assert_true(a.ino > 1);
	assert_true(a.mtime_sec > 1600000000);
	assert_true(a.mtime_nsec < 1000000000);
	for (int i = 0; i < 3; i++) {
		char p[32];
		snprintf(p, sizeof(p), "/d/f%d", i);
		assert_int_equal(path_op(f, MCACHE__OP_CODE__OP_CREATE, p, 0600), 0);
	}
	assert_int_equal(path_op(f, MCACHE__OP_CODE__OP_MKDIR, "/d/sub", 0755), 0);
	a = stat_ok(f, MCACHE__OP_CODE__OP_STAT, "/d");
	assert_int_equal(a.size, 40 + 20 * 4);
	assert_int_equal(a.nlink, 3);
	Mcache__Attr fa = stat_ok(f, MCACHE__OP_CODE__OP_LOOKUP, "/d/f1");
	assert_int_equal(fa.mode, S_IFREG | 0600);
	assert_int_equal(fa.size, 0);
	assert_int_equal(fa.nlink, 1);
	Mcache__Attr r = stat_ok(f, MCACHE__OP_CODE__OP_STAT, "/");
	assert_int_equal(r.ino, 1);
	assert_int_equal(r.size, 40 + 20);
	/* Errors travel as positive errno values. */
	assert_int_equal(path_op(f, MCACHE__OP_CODE__OP_MKDIR, "/d", 0755), EEXIST);
	assert_int_equal(path_op(f, MCACHE__OP_CODE__OP_CREATE, "/d/f1", 0644), EEXIST);
	assert_int_equal(path_op(f, MCACHE__OP_CODE__OP_STAT, "/nope", 0), ENOENT);
	assert_int_equal(path_op(f, MCACHE__OP_CODE__OP_RMDIR, "/d", 0), ENOTEMPTY);
	assert_int_equal(path_op(f, MCACHE__OP_CODE__OP_RMDIR, "/d/f1", 0), ENOTDIR);
	assert_int_equal(path_op(f, MCACHE__OP_CODE__OP_UNLINK, "/d/sub", 0), EISDIR);
	assert_int_equal(path_op(f, MCACHE__OP_CODE__OP_STAT, "relative", 0), EINVAL);
	/* No attr on failure. */
	Mcache__Op op = mkop(MCACHE__OP_CODE__OP_STAT, "/nope", NULL);
	struct op_out out;
	assert_int_equal(run_in(f->s, &op, &out), ENOENT);
	assert_null(out.res.attr);
	op_out_release(&out);
}

static void test_every_op_code(void **state)
{
	struct fx *f = *state;
	assert_int_equal(path_op(f, MCACHE__OP_CODE__OP_MKDIR, "/d", 0755), 0);
	assert_int_equal(path_op(f, MCACHE__OP_CODE__OP_CREATE, "/d/f", 0644), 0);
	Mcache__Attr fa = stat_ok(f, MCACHE__OP_CODE__OP_STAT, "/d/f");

	Mcache__Op op = mkop(MCACHE__OP_CODE__OP_LINK, "/d/f", "/d/g");
	assert_int_equal(run(f, &op), 0);
	assert_int_equal(stat_ok(f, MCACHE__OP_CODE__OP_STAT, "/d/g").ino, fa.ino);
	assert_int_equal(stat_ok(f, MCACHE__OP_CODE__OP_STAT, "/d/g").nlink, 2);

	/* SYMLINK: link at path, target in path2. */
	op = mkop(MCACHE__OP_CODE__OP_SYMLINK, "/sl", "/d/f");
	assert_int_equal(run(f, &op), 0);
	Mcache__Attr la = stat_ok(f, MCACHE__OP_CODE__OP_LSTAT, "/sl");
	assert_int_equal(la.mode, S_IFLNK | 0777);
	assert_int_equal(la.size, 4);
	assert_int_equal(stat_ok(f, MCACHE__OP_CODE__OP_STAT, "/sl").ino, fa.ino);
	op = mkop(MCACHE__OP_CODE__OP_READLINK, "/sl", NULL);
	struct op_out out;
	assert_int_equal(run_in(f->s, &op, &out), 0);
	assert_int_equal(out.res.data.len, 4);
	assert_memory_equal(out.res.data.data, "/d/f", 4);
	op_out_release(&out);
	op = mkop(MCACHE__OP_CODE__OP_READLINK, "/d/f", NULL);
	assert_int_equal(run(f, &op), EINVAL);

	op = mkop(MCACHE__OP_CODE__OP_CHMOD, "/d/f", NULL);
	op.mode = 0600;
	assert_int_equal(run(f, &op), 0);
	assert_int_equal(stat_ok(f, MCACHE__OP_CODE__OP_STAT, "/d/f").mode, S_IFREG | 0600);

	op = mkop(MCACHE__OP_CODE__OP_CHOWN, "/d/f", NULL);
	op.uid = 1000;
	op.gid = 0xffffffffu;
	assert_int_equal(run(f, &op), 0);
	Mcache__Attr ca = stat_ok(f, MCACHE__OP_CODE__OP_STAT, "/d/f");
	assert_int_equal(ca.uid, 1000);
	assert_int_equal(ca.gid, 0);

	op = mkop(MCACHE__OP_CODE__OP_UTIMENS, "/d/f", NULL);
	op.atime_sec = 100;
	op.atime_nsec = 5;
	op.mtime_sec = -1;
	op.mtime_nsec = 500000000;
	assert_int_equal(run(f, &op), 0);
	Mcache__Attr ta = stat_ok(f, MCACHE__OP_CODE__OP_STAT, "/d/f");
	assert_int_equal(ta.atime_sec, 100);
	assert_int_equal(ta.atime_nsec, 5);
	assert_int_equal(ta.mtime_sec, -1);
	assert_int_equal(ta.mtime_nsec, 500000000);
	op.mtime_nsec = 1000000000; /* neither valid nor UTIME_NOW/OMIT */
	assert_int_equal(run(f, &op), EINVAL);

	op = mkop(MCACHE__OP_CODE__OP_TRUNCATE, "/d/f", NULL);
	op.size = 123456;
	assert_int_equal(run(f, &op), 0);
	assert_int_equal(stat_ok(f, MCACHE__OP_CODE__OP_STAT, "/d/g").size, 123456);
	op.size = (uint64_t)-5; /* negative as int64 */
	assert_int_equal(run(f, &op), EINVAL);

	op = mkop(MCACHE__OP_CODE__OP_RENAME, "/d/g", "/d/h");
	assert_int_equal(run(f, &op), 0);
	assert_int_equal(path_op(f, MCACHE__OP_CODE__OP_STAT, "/d/g", 0), ENOENT);
	op = mkop(MCACHE__OP_CODE__OP_RENAME, "/d", "/d/h/x");
	assert_int_equal(run(f, &op), ENOTDIR);

	assert_int_equal(path_op(f, MCACHE__OP_CODE__OP_UNLINK, "/d/h", 0), 0);
	assert_int_equal(stat_ok(f, MCACHE__OP_CODE__OP_STAT, "/d/f").nlink, 1);
	assert_int_equal(path_op(f, MCACHE__OP_CODE__OP_MKDIR, "/d/e", 0755), 0);
	assert_int_equal(path_op(f, MCACHE__OP_CODE__OP_RMDIR, "/d/e", 0), 0);
	assert_int_equal(path_op(f, MCACHE__OP_CODE__OP_RMTREE, "/d", 0), 0);
	assert_int_equal(path_op(f, MCACHE__OP_CODE__OP_STAT, "/d", 0), ENOENT);
	assert_int_equal(path_op(f, MCACHE__OP_CODE__OP_RMTREE, "/d", 0), ENOENT);
	assert_int_equal(path_op(f, MCACHE__OP_CODE__OP_RMTREE, "/", 0), EBUSY);

	op = mkop(MCACHE__OP_CODE__OP_SYNC, NULL, NULL);
	assert_int_equal(run(f, &op), 0);
	op = mkop(MCACHE__OP_CODE__OP_NONE, "/", NULL);
	assert_int_equal(run(f, &op), EOPNOTSUPP);
	op = mkop((Mcache__OpCode)99, "/", NULL);
	assert_int_equal(run(f, &op), EOPNOTSUPP);
}

static void test_stats_json(void **state)
{
	struct fx *f = *state;
	assert_int_equal(path_op(f, MCACHE__OP_CODE__OP_MKDIR, "/d", 0755), 0);
	Mcache__Op op = mkop(MCACHE__OP_CODE__OP_STATS, NULL, NULL);
	struct op_out out;
	assert_int_equal(run_in(f->s, &op, &out), 0);
	assert_true(out.res.data.len > 10);
	char *txt = calloc(1, out.res.data.len + 1);
	assert_non_null(txt);
	memcpy(txt, out.res.data.data, out.res.data.len);
	assert_int_equal(txt[0], '{');
	assert_non_null(strstr(txt, "\"dentries\""));
	assert_non_null(strstr(txt, "\"positive\""));
	free(txt);
	op_out_release(&out);
}

static void test_path_checks(void **state)
{
	struct fx *f = *state;
	static const Mcache__OpCode codes[] = {
		MCACHE__OP_CODE__OP_STAT, MCACHE__OP_CODE__OP_MKDIR, MCACHE__OP_CODE__OP_CREATE,
		MCACHE__OP_CODE__OP_UNLINK, MCACHE__OP_CODE__OP_OPEN, MCACHE__OP_CODE__OP_RMTREE,
		MCACHE__OP_CODE__OP_CHMOD, MCACHE__OP_CODE__OP_READLINK,
	};
	static char big[5000];
	memset(big, '/', sizeof(big));
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		Mcache__Op op = mkop(codes[i], NULL, NULL);
		op.path.data = (uint8_t *)"/a\0b";
		op.path.len = 4;
		assert_int_equal(run(f, &op), EINVAL);
		op.path.data = (uint8_t *)"";
		op.path.len = 0;
		assert_int_equal(run(f, &op), ENOENT);
		op.path.data = (uint8_t *)big;
		op.path.len = 4096;
		assert_int_equal(run(f, &op), ENAMETOOLONG);
	}
	/* 4095 bytes is a path (all slashes: the root). */
	Mcache__Op op = mkop(MCACHE__OP_CODE__OP_STAT, NULL, NULL);
	op.path.data = (uint8_t *)big;
	op.path.len = 4095;
	struct op_out out;
	assert_int_equal(run_in(f->s, &op, &out), 0);
	assert_int_equal(out.res.attr->ino, 1);
	op_out_release(&out);
	/* The second path is checked too. */
	assert_int_equal(path_op(f, MCACHE__OP_CODE__OP_CREATE, "/a", 0644), 0);
	static const Mcache__OpCode two[] = {
		MCACHE__OP_CODE__OP_RENAME, MCACHE__OP_CODE__OP_LINK, MCACHE__OP_CODE__OP_SYMLINK,
	};
	for (size_t i = 0; i < 3; i++) {
		op = mkop(two[i], "/b", NULL);
		if (two[i] != MCACHE__OP_CODE__OP_SYMLINK)
			op.path.data = (uint8_t *)"/a", op.path.len = 2;
		op.path2.data = (uint8_t *)"/c\0d";
		op.path2.len = 4;
		assert_int_equal(run(f, &op), EINVAL);
		op.path2.len = 0;
		assert_int_equal(run(f, &op), ENOENT);
		op.path2.data = (uint8_t *)big;
		op.path2.len = 4096;
		assert_int_equal(run(f, &op), ENAMETOOLONG);
	}
	assert_int_equal(path_op(f, MCACHE__OP_CODE__OP_STAT, "/b", 0), ENOENT);
	assert_int_equal(path_op(f, MCACHE__OP_CODE__OP_STAT, "/a", 0), 0);
	/* Nothing of this was journaled. */
	assert_int_equal(commit_wait(f->m.commit, ns_pending_seq(f->m.ns)), 0);
	struct ns_counts c;
	ns_get_counts(f->m.ns, &c);
	assert_int_equal(c.journal_records, 0);
}

static void test_sync_sets_wait_seq(void **state)
{
	struct fx *f = *state;
	struct op_out out;
	/* Without --sync, mutations do not wait. */
	Mcache__Op op = mkop(MCACHE__OP_CODE__OP_MKDIR, "/a", NULL);
	op.mode = 0755;
	assert_int_equal(run_in(f->s, &op, &out), 0);
	assert_int_equal(out.wait_seq, 0);
	op_out_release(&out);
	/* mc_sync waits for what is pending. */
	op = mkop(MCACHE__OP_CODE__OP_SYNC, NULL, NULL);
	assert_int_equal(run_in(f->s, &op, &out), 0);
	uint64_t w = out.wait_seq;
	op_out_release(&out);
	if (w)
		assert_int_equal(commit_wait(f->m.commit, w), 0);
	assert_int_equal(ns_pending_seq(f->m.ns), 0);
	assert_int_equal(run_in(f->s, &op, &out), 0);
	assert_int_equal(out.wait_seq, 0); /* nothing pending now */
	op_out_release(&out);

	f->cfg.sync = true;
	static const struct {
		Mcache__OpCode code;
		const char *path, *path2;
		int err;
	} cases[] = {
		{ MCACHE__OP_CODE__OP_MKDIR, "/b", NULL, 0 },
		{ MCACHE__OP_CODE__OP_CREATE, "/b/f", NULL, 0 },
		{ MCACHE__OP_CODE__OP_LINK, "/b/f", "/b/g", 0 },
		{ MCACHE__OP_CODE__OP_SYMLINK, "/b/s", "f", 0 },
		{ MCACHE__OP_CODE__OP_CHMOD, "/b/f", NULL, 0 },
		{ MCACHE__OP_CODE__OP_TRUNCATE, "/b/f", NULL, 0 },
		{ MCACHE__OP_CODE__OP_UTIMENS, "/b/f", NULL, 0 },
		{ MCACHE__OP_CODE__OP_RENAME, "/b/g", "/b/h", 0 },
		{ MCACHE__OP_CODE__OP_UNLINK, "/b/h", NULL, 0 },
		{ MCACHE__OP_CODE__OP_RMTREE, "/b", NULL, 0 },
		{ MCACHE__OP_CODE__OP_RMDIR, "/a", NULL, 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		op = mkop(cases[i].code, cases[i].path, cases[i].path2);
		op.mode = 0755;
		op.uid = op.gid = 0xffffffffu;
		assert_int_equal(run_in(f->s, &op, &out), cases[i].err);
		uint64_t pend = ns_pending_seq(f->m.ns);
		if (out.wait_seq == 0 || out.wait_seq < pend)
			fail_msg("case %zu (op %d): wait_seq %llu, pending %llu", i, cases[i].code,
			         (unsigned long long)out.wait_seq, (unsigned long long)pend);
		assert_int_equal(commit_wait(f->m.commit, out.wait_seq), 0);
		struct store_meta m;
		assert_int_equal(store_get_meta(f->m.store, &m), 0);
		assert_true(m.last_seq >= out.wait_seq);
		op_out_release(&out);
	}
	/* A failed mutation and a read have nothing to wait for. */
	assert_int_equal(ns_pending_seq(f->m.ns), 0);
	op = mkop(MCACHE__OP_CODE__OP_MKDIR, "/nope/x", NULL);
	assert_int_equal(run_in(f->s, &op, &out), ENOENT);
	assert_int_equal(out.wait_seq, 0);
	op_out_release(&out);
	op = mkop(MCACHE__OP_CODE__OP_STAT, "/", NULL);
	assert_int_equal(run_in(f->s, &op, &out), 0);
	assert_int_equal(out.wait_seq, 0);
	op_out_release(&out);
	/* An open handle for writing under --sync. */
	Mcache__Op oop = mkop(MCACHE__OP_CODE__OP_OPEN, "/o", NULL);
	oop.flags = O_CREAT | O_RDWR;
	oop.mode = 0644;
	assert_int_equal(run_in(f->s, &oop, &out), 0);
	assert_true(out.wait_seq > 0);
	uint64_t h = out.res.handle;
	op_out_release(&out);
	op = mkop(MCACHE__OP_CODE__OP_FTRUNCATE, NULL, NULL);
	op.handle = h;
	op.size = 5;
	assert_int_equal(run_in(f->s, &op, &out), 0);
	assert_true(out.wait_seq > 0);
	op_out_release(&out);
	op = mkop(MCACHE__OP_CODE__OP_FSYNC, NULL, NULL);
	op.handle = h;
	assert_int_equal(run_in(f->s, &op, &out), 0);
	uint64_t fw = out.wait_seq;
	op_out_release(&out);
	assert_int_equal(commit_wait(f->m.commit, fw), 0);
	struct store_meta m;
	assert_int_equal(store_get_meta(f->m.store, &m), 0);
	assert_true(m.last_seq >= fw);
	assert_int_equal(ns_pending_seq(f->m.ns), 0);
}

static void test_user_session(void **state)
{
	struct fx *f = *state;
	assert_int_equal(path_op(f, MCACHE__OP_CODE__OP_MKDIR, "/ro", 0755), 0);
	assert_int_equal(path_op(f, MCACHE__OP_CODE__OP_MKDIR, "/pub", 0777), 0);
	struct session *u = session_new(&f->m, &user_cred);
	assert_non_null(u);
	struct op_out out;
	Mcache__Op op = mkop(MCACHE__OP_CODE__OP_MKDIR, "/ro/x", NULL);
	op.mode = 0755;
	assert_int_equal(run_in(u, &op, &out), EACCES);
	op_out_release(&out);
	op = mkop(MCACHE__OP_CODE__OP_CREATE, "/pub/mine", NULL);
	op.mode = 0600;
	assert_int_equal(run_in(u, &op, &out), 0);
	op_out_release(&out);
	Mcache__Attr a = stat_ok(f, MCACHE__OP_CODE__OP_STAT, "/pub/mine");
	assert_int_equal(a.uid, 1000);
	assert_int_equal(a.gid, 1000);
	op = mkop(MCACHE__OP_CODE__OP_CHMOD, "/ro", NULL);
	op.mode = 0777;
	assert_int_equal(run_in(u, &op, &out), EPERM);
	op_out_release(&out);
	/* The root's file is not readable... */
	assert_int_equal(path_op(f, MCACHE__OP_CODE__OP_CREATE, "/ro/secret", 0600), 0);
	op = mkop(MCACHE__OP_CODE__OP_OPEN, "/ro/secret", NULL);
	op.flags = O_RDONLY;
	assert_int_equal(run_in(u, &op, &out), EACCES);
	op_out_release(&out);
	/* A session's group list is capped, not overrun. */
	struct cred many = user_cred;
	many.ngroups = SESSION_MAX_GROUPS + 100;
	for (int i = 0; i < SESSION_MAX_GROUPS; i++)
		many.groups[i] = (gid_t)(2000 + i);
	struct session *m = session_new(&f->m, &many);
	assert_non_null(m);
	session_free(m);
	session_free(u);
}

/* --commit-interval-ms 0: the committer sleeps until a mutation kicks it,
 * so the change is committed at once without anyone waiting for it. */
static void test_interval_zero_commits_on_mutation(void **state)
{
	struct fx *f = *state;
	commit_stop(f->m.commit);
	f->cfg.commit_interval_ms = 0;
	assert_int_equal(commit_start(f->m.ns, f->m.store, 0, &f->m.commit), 0);
	struct store_meta before, after;
	assert_int_equal(store_get_meta(f->m.store, &before), 0);
	Mcache__Op op = mkop(MCACHE__OP_CODE__OP_MKDIR, "/kicked", NULL);
	op.mode = 0755;
	assert_int_equal(run(f, &op), 0);
	for (int i = 0; i < 2000; i++) {
		assert_int_equal(store_get_meta(f->m.store, &after), 0);
		if (after.last_seq > before.last_seq)
			break;
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	assert_true(after.last_seq > before.last_seq);
}

/* A readlink result holds what the target needs, not MC_SYMLINK_MAX bytes,
 * and a failed one holds nothing: one request may carry thousands. */
static void test_readlink_sized_by_target(void **state)
{
	struct fx *f = *state;
	Mcache__Op op = mkop(MCACHE__OP_CODE__OP_SYMLINK, "/short", "abc");
	assert_int_equal(run(f, &op), 0);
	struct op_out out;
	op = mkop(MCACHE__OP_CODE__OP_READLINK, "/short", NULL);
	assert_int_equal(run_in(f->s, &op, &out), 0);
	assert_int_equal(out.res.data.len, 3);
	assert_memory_equal(out.res.data.data, "abc", 3);
	assert_true(malloc_usable_size(out.data) < 64);
	op_out_release(&out);
	op = mkop(MCACHE__OP_CODE__OP_READLINK, "/missing", NULL);
	assert_int_equal(run_in(f->s, &op, &out), ENOENT);
	assert_null(out.data);
	op_out_release(&out);
}

/* OP_FSCK: the report for root; EPERM for a user that is neither root nor
 * the server's. */
static void test_fsck_op(void **state)
{
	struct fx *f = *state;
	assert_int_equal(path_op(f, MCACHE__OP_CODE__OP_MKDIR, "/d", 0755), 0);
	Mcache__Op op = mkop(MCACHE__OP_CODE__OP_FSCK, NULL, NULL);
	struct op_out out;
	assert_int_equal(run_in(f->s, &op, &out), 0);
	char *txt = strndup((const char *)out.res.data.data, out.res.data.len);
	assert_non_null(txt);
	assert_non_null(strstr(txt, "\"clean\": true"));
	free(txt);
	op_out_release(&out);
	struct cred other = { .uid = geteuid() + 1, .gid = 1000 };
	struct session *u = session_new(&f->m, &other);
	assert_non_null(u);
	assert_int_equal(run_in(u, &op, &out), EPERM);
	assert_int_equal(out.res.data.len, 0);
	op_out_release(&out);
	session_free(u);
}

/* The op table: a row for every code the protocol names, under the same
 * name the statistics use, and the checks its flags promise run before
 * the handler (an empty path is ENOENT, a handle never opened EBADF). */
static void test_op_table(void **state)
{
	struct fx *f = *state;
	const ProtobufCEnumDescriptor *d = &mcache__op_code__descriptor;
	unsigned rows = 0;

	assert_null(ops_find(MCACHE__OP_CODE__OP_NONE));
	assert_null(ops_find(100000));
	for (unsigned i = 0; i < d->n_values; i++) {
		unsigned code = (unsigned)d->values[i].value;
		if (code == MCACHE__OP_CODE__OP_NONE)
			continue;
		const struct op_desc *od = ops_find(code);
		assert_non_null(od);
		assert_string_equal(od->name, stats_op_name(code));
		rows++;
		Mcache__Op op = mkop((Mcache__OpCode)code, NULL, NULL);
		op.handle = 77;
		if (od->flags & (OPF_PATH | OPF_PATH2))
			assert_int_equal(run(f, &op), ENOENT);
		else if (od->flags & (OPF_HANDLE | OPF_FILE))
			assert_int_equal(run(f, &op), EBADF);
		if (od->flags & OPF_PATH2) {
			/* path2 is checked as well as path. */
			op = mkop((Mcache__OpCode)code, "/x", NULL);
			assert_int_equal(run(f, &op), ENOENT);
			op = mkop((Mcache__OpCode)code, NULL, "/x");
			assert_int_equal(run(f, &op), ENOENT);
		}
	}
	assert_true(rows >= 32);
	/* A directory handle is not a file's: OPF_FILE ops say EISDIR. */
	uint64_t h = open_ok(f, "/", O_RDONLY, NULL);
	for (unsigned code = 0; code < 1024; code++) {
		const struct op_desc *od = ops_find(code);
		if (!od || !(od->flags & OPF_FILE))
			continue;
		Mcache__Op op = mkop((Mcache__OpCode)code, NULL, NULL);
		op.handle = h;
		op.end = 1;
		op.len = 1;
		assert_int_equal(run(f, &op), EISDIR);
	}
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_mkdir_create_stat),
		T(test_interval_zero_commits_on_mutation),
		T(test_readlink_sized_by_target),
		T(test_every_op_code),
		T(test_stats_json),
		T(test_path_checks),
		T(test_sync_sets_wait_seq),
		T(test_user_session),
		T(test_fsck_op),
		T(test_op_table),
	};
	return cmocka_run_group_tests_name("ops", tests, NULL, NULL);
}
