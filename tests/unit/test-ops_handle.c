/* test-ops_handle.c - unit tests of the RPC operation layer (server/ops.c)
 * through handles: fstat, ftruncate, fsync and close on open files, an
 * unlinked file held open, handles per session and released with it,
 * readdir paging on a directory handle, and EMFILE when a session is out
 * of handles (the fixture: ops_fixture.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "ns.h"
#include "ops.h"
#include "ops_fixture.h"

static int setup(void **state)
{
	return ops_fixture_setup(state, "test-ops_handle");
}

static int teardown(void **state)
{
	return ops_fixture_teardown(state);
}

static void test_handles(void **state)
{
	struct fx *f = *state;
	assert_int_equal(path_op(f, MCACHE__OP_CODE__OP_CREATE, "/f", 0644), 0);
	Mcache__Attr oa;
	uint64_t h = open_ok(f, "/f", O_RDWR, &oa);
	Mcache__Op op = mkop(MCACHE__OP_CODE__OP_FSTAT, NULL, NULL);
	op.handle = h;
	struct op_out out;
	assert_int_equal(run_in(f->s, &op, &out), 0);
	assert_int_equal(out.res.attr->ino, oa.ino);
	assert_int_equal(out.res.attr->mode, S_IFREG | 0644);
	op_out_release(&out);

	op = mkop(MCACHE__OP_CODE__OP_FTRUNCATE, NULL, NULL);
	op.handle = h;
	op.size = 10;
	assert_int_equal(run(f, &op), 0);
	assert_int_equal(stat_ok(f, MCACHE__OP_CODE__OP_STAT, "/f").size, 10);
	/* A read-only handle cannot truncate. */
	uint64_t ro = open_ok(f, "/f", O_RDONLY, NULL);
	assert_int_not_equal(ro, h);
	op.handle = ro;
	assert_int_equal(run(f, &op), EINVAL);
	assert_int_equal(handle_op(f, MCACHE__OP_CODE__OP_FSYNC, ro), 0);

	/* Open with O_CREAT makes the file and a handle. */
	uint64_t hc = open_ok(f, "/new", O_CREAT | O_WRONLY, &oa);
	assert_int_equal(oa.mode, S_IFREG | 0644);
	assert_int_equal(handle_op(f, MCACHE__OP_CODE__OP_CLOSE, hc), 0);
	op = mkop(MCACHE__OP_CODE__OP_OPEN, "/missing", NULL);
	op.flags = O_RDONLY;
	assert_int_equal(run(f, &op), ENOENT);

	/* Unlinked but open: fstat works with nlink 0 until close. */
	assert_int_equal(path_op(f, MCACHE__OP_CODE__OP_UNLINK, "/f", 0), 0);
	op = mkop(MCACHE__OP_CODE__OP_FSTAT, NULL, NULL);
	op.handle = h;
	assert_int_equal(run_in(f->s, &op, &out), 0);
	assert_int_equal(out.res.attr->nlink, 0);
	assert_int_equal(out.res.attr->size, 10);
	op_out_release(&out);
	assert_int_equal(handle_op(f, MCACHE__OP_CODE__OP_CLOSE, h), 0);
	assert_int_equal(handle_op(f, MCACHE__OP_CODE__OP_FSTAT, h), EBADF);
	assert_int_equal(handle_op(f, MCACHE__OP_CODE__OP_CLOSE, h), EBADF);
	assert_int_equal(handle_op(f, MCACHE__OP_CODE__OP_FTRUNCATE, h), EBADF);
	assert_int_equal(handle_op(f, MCACHE__OP_CODE__OP_FSYNC, h), EBADF);
	assert_int_equal(handle_op(f, MCACHE__OP_CODE__OP_READDIR, h), EBADF);
	/* The other handle still holds the inode. */
	assert_int_equal(handle_op(f, MCACHE__OP_CODE__OP_FSTAT, ro), 0);
	assert_int_equal(handle_op(f, MCACHE__OP_CODE__OP_CLOSE, ro), 0);
	struct ns_counts c;
	ns_get_counts(f->m.ns, &c);
	uint64_t inodes = c.inodes;
	/* Never-issued handles. */
	assert_int_equal(handle_op(f, MCACHE__OP_CODE__OP_FSTAT, 0), EBADF);
	assert_int_equal(handle_op(f, MCACHE__OP_CODE__OP_FSTAT, 12345), EBADF);
	assert_int_equal(handle_op(f, MCACHE__OP_CODE__OP_FSTAT, UINT64_MAX), EBADF);
	/* A closed slot is reused. */
	uint64_t h2 = open_ok(f, "/new", O_RDONLY, NULL);
	assert_true(h2 == h || h2 == ro || h2 == hc);
	/* Handles are per session. */
	struct session *other = session_new(&f->m, &root_cred);
	assert_non_null(other);
	op = mkop(MCACHE__OP_CODE__OP_FSTAT, NULL, NULL);
	op.handle = h2;
	assert_int_equal(run_in(other, &op, &out), EBADF);
	op_out_release(&out);
	session_free(other);
	/* session_free releases what a session holds: an unlinked file goes. */
	other = session_new(&f->m, &root_cred);
	op = mkop(MCACHE__OP_CODE__OP_OPEN, "/new", NULL);
	op.flags = O_RDONLY;
	assert_int_equal(run_in(other, &op, &out), 0);
	op_out_release(&out);
	assert_int_equal(handle_op(f, MCACHE__OP_CODE__OP_CLOSE, h2), 0);
	assert_int_equal(path_op(f, MCACHE__OP_CODE__OP_UNLINK, "/new", 0), 0);
	ns_get_counts(f->m.ns, &c);
	assert_int_equal(c.inodes, inodes);
	session_free(other);
	ns_get_counts(f->m.ns, &c);
	assert_int_equal(c.inodes, inodes - 1);
}

static void test_readdir_paging(void **state)
{
	struct fx *f = *state;
	assert_int_equal(path_op(f, MCACHE__OP_CODE__OP_MKDIR, "/d", 0755), 0);
	enum { N = 25 };
	for (int i = 0; i < N; i++) {
		char p[32];
		snprintf(p, sizeof(p), i == 3 ? "/d/sub%d" : "/d/f%d", i);
		assert_int_equal(path_op(f, i == 3 ? MCACHE__OP_CODE__OP_MKDIR
		                                   : MCACHE__OP_CODE__OP_CREATE, p, 0755), 0);
	}
	uint64_t h = open_ok(f, "/d", O_RDONLY | O_DIRECTORY, NULL);
	bool seen[N] = { false };
	uint64_t cookie = 0;
	int pages = 0, total = 0;
	for (;;) {
		Mcache__Op op = mkop(MCACHE__OP_CODE__OP_READDIR, NULL, NULL);
		op.handle = h;
		op.cookie = cookie;
		op.count = 10;
		struct op_out out;
		assert_int_equal(run_in(f->s, &op, &out), 0);
		assert_true(out.res.n_entries <= 10);
		for (size_t k = 0; k < out.res.n_entries; k++) {
			const Mcache__Dirent *e = out.res.entries[k];
			char name[64] = { 0 };
			assert_true(e->name.len < sizeof(name));
			memcpy(name, e->name.data, e->name.len);
			int i;
			if (sscanf(name, "f%d", &i) != 1 && sscanf(name, "sub%d", &i) != 1)
				fail_msg("unexpected name %s", name);
			assert_true(i >= 0 && i < N);
			assert_false(seen[i]);
			seen[i] = true;
			char p[80];
			snprintf(p, sizeof(p), "/d/%s", name);
			Mcache__Attr a = stat_ok(f, MCACHE__OP_CODE__OP_LSTAT, p);
			assert_int_equal(e->ino, a.ino);
			assert_int_equal(e->type, i == 3 ? DT_DIR : DT_REG);
			total++;
		}
		bool eof = out.res.eof;
		assert_true(out.res.cookie >= cookie);
		cookie = out.res.cookie;
		if (!eof)
			assert_int_equal(out.res.n_entries, 10);
		op_out_release(&out);
		pages++;
		if (eof)
			break;
		assert_true(pages < 10);
	}
	assert_int_equal(total, N);
	assert_int_equal(pages, 3);
	/* Past the end: empty and eof. */
	Mcache__Op op = mkop(MCACHE__OP_CODE__OP_READDIR, NULL, NULL);
	op.handle = h;
	op.cookie = cookie;
	struct op_out out;
	assert_int_equal(run_in(f->s, &op, &out), 0);
	assert_int_equal(out.res.n_entries, 0);
	assert_true(out.res.eof);
	op_out_release(&out);
	/* A file handle is not a directory. */
	uint64_t fh = open_ok(f, "/d/f0", O_RDONLY, NULL);
	assert_int_equal(handle_op(f, MCACHE__OP_CODE__OP_READDIR, fh), ENOTDIR);
	/* A directory handle with the default count lists everything at once. */
	op.cookie = 0;
	op.count = 0;
	assert_int_equal(run_in(f->s, &op, &out), 0);
	assert_int_equal(out.res.n_entries, N);
	assert_true(out.res.eof);
	op_out_release(&out);
}

/* Out of handles: like open(2), EMFILE before the path is touched, so
 * O_CREAT creates nothing. */
static void test_emfile_creates_nothing(void **state)
{
	struct fx *f = *state;
	Mcache__Op op = mkop(MCACHE__OP_CODE__OP_CREATE, "/held", NULL);
	op.mode = 0644;
	assert_int_equal(run(f, &op), 0);
	op = mkop(MCACHE__OP_CODE__OP_OPEN, "/held", NULL);
	op.flags = O_RDONLY;
	for (int i = 0; i < 65536; i++)
		assert_int_equal(run(f, &op), 0);
	op = mkop(MCACHE__OP_CODE__OP_OPEN, "/new", NULL);
	op.flags = O_CREAT | O_EXCL | O_WRONLY;
	op.mode = 0644;
	assert_int_equal(run(f, &op), EMFILE);
	op = mkop(MCACHE__OP_CODE__OP_STAT, "/new", NULL);
	assert_int_equal(run(f, &op), ENOENT);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_emfile_creates_nothing),
		T(test_handles),
		T(test_readdir_paging),
	};
	return cmocka_run_group_tests_name("ops_handle", tests, NULL, NULL);
}
