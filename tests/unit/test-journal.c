/* test-journal.c - unit tests of the commit-log record codec (server/journal.c). */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "journal.h"
#include "mc_shm.h"

static struct mc_inode_rec mkinode(uint64_t ino, uint32_t mode, uint64_t size)
{
	struct mc_inode_rec r = {
		.ino = ino, .mode = mode, .nlink = 1, .uid = 1000, .gid = 100,
		.size = size, .atime_ns = -5, .mtime_ns = 1700000000123456789,
		.ctime_ns = INT64_MIN,
	};
	return r;
}

static void assert_inode_eq(const struct mc_inode_rec *a, const struct mc_inode_rec *b)
{
	assert_int_equal(a->ino, b->ino);
	assert_int_equal(a->mode, b->mode);
	assert_int_equal(a->nlink, b->nlink);
	assert_int_equal(a->uid, b->uid);
	assert_int_equal(a->gid, b->gid);
	assert_int_equal(a->size, b->size);
	assert_true(a->atime_ns == b->atime_ns);
	assert_true(a->mtime_ns == b->mtime_ns);
	assert_true(a->ctime_ns == b->ctime_ns);
}

static char long_name[MC_NAME_MAX];
static char long_target[MC_SYMLINK_MAX];

/* A batch with every record type and the extreme lengths; returns nrecs. */
static unsigned build_all(struct journal_batch *b)
{
	memset(long_name, 'n', sizeof(long_name));
	for (size_t i = 0; i < sizeof(long_target); i++)
		long_target[i] = (char)('a' + i % 26);
	struct mc_inode_rec reg = mkinode(7, S_IFREG | 0644, 12345);
	struct mc_inode_rec lnk = mkinode(8, S_IFLNK | 0777, 3);
	struct mc_inode_rec lnk2 = mkinode(9, S_IFLNK | 0777, MC_SYMLINK_MAX);
	struct mc_inode_rec dir = mkinode(UINT64_MAX, S_IFDIR | 0755, 2);
	assert_int_equal(journal_put_inode(b, &reg, NULL, 0), 0);
	assert_int_equal(journal_put_inode(b, &lnk, "a/b", 3), 0);
	assert_int_equal(journal_put_inode(b, &lnk2, long_target, sizeof(long_target)), 0);
	assert_int_equal(journal_put_inode(b, &dir, NULL, 0), 0);
	assert_int_equal(journal_del_inode(b, 0x0102030405060708ull), 0);
	assert_int_equal(journal_put_dentry(b, 1, "x", 1, 7, DT_REG), 0);
	assert_int_equal(journal_put_dentry(b, 7, long_name, sizeof(long_name), 8, DT_LNK), 0);
	assert_int_equal(journal_del_dentry(b, 1, "x", 1), 0);
	assert_int_equal(journal_del_dentry(b, UINT64_MAX, long_name, sizeof(long_name)), 0);
	assert_int_equal(journal_unlink_inode(b, 0x1112131415161718ull, -5), 0);
	return 10;
}

static void test_roundtrip_all_types(void **state)
{
	struct journal_batch b;
	journal_batch_init(&b, 42);
	assert_int_equal(b.seq, 42);
	unsigned n = build_all(&b);
	assert_int_equal(b.nrecs, n);

	struct journal_rec r;
	size_t pos = 0;
	struct mc_inode_rec reg = mkinode(7, S_IFREG | 0644, 12345);
	struct mc_inode_rec lnk = mkinode(8, S_IFLNK | 0777, 3);
	struct mc_inode_rec lnk2 = mkinode(9, S_IFLNK | 0777, MC_SYMLINK_MAX);
	struct mc_inode_rec dir = mkinode(UINT64_MAX, S_IFDIR | 0755, 2);

	assert_int_equal(journal_next(b.buf, b.len, &pos, &r), 1);
	assert_int_equal(r.type, JR_INODE_PUT);
	assert_inode_eq(&r.inode, &reg);
	assert_null(r.target);
	assert_int_equal(r.target_len, 0);

	assert_int_equal(journal_next(b.buf, b.len, &pos, &r), 1);
	assert_int_equal(r.type, JR_INODE_PUT);
	assert_inode_eq(&r.inode, &lnk);
	assert_int_equal(r.target_len, 3);
	assert_memory_equal(r.target, "a/b", 3);

	assert_int_equal(journal_next(b.buf, b.len, &pos, &r), 1);
	assert_inode_eq(&r.inode, &lnk2);
	assert_int_equal(r.target_len, MC_SYMLINK_MAX);
	assert_memory_equal(r.target, long_target, MC_SYMLINK_MAX);

	assert_int_equal(journal_next(b.buf, b.len, &pos, &r), 1);
	assert_inode_eq(&r.inode, &dir);
	assert_null(r.target);

	assert_int_equal(journal_next(b.buf, b.len, &pos, &r), 1);
	assert_int_equal(r.type, JR_INODE_DEL);
	assert_int_equal(r.ino, 0x0102030405060708ull);

	assert_int_equal(journal_next(b.buf, b.len, &pos, &r), 1);
	assert_int_equal(r.type, JR_DENTRY_PUT);
	assert_int_equal(r.parent, 1);
	assert_int_equal(r.ino, 7);
	assert_int_equal(r.dtype, DT_REG);
	assert_int_equal(r.namelen, 1);
	assert_memory_equal(r.name, "x", 1);

	assert_int_equal(journal_next(b.buf, b.len, &pos, &r), 1);
	assert_int_equal(r.type, JR_DENTRY_PUT);
	assert_int_equal(r.parent, 7);
	assert_int_equal(r.ino, 8);
	assert_int_equal(r.dtype, DT_LNK);
	assert_int_equal(r.namelen, MC_NAME_MAX);
	assert_memory_equal(r.name, long_name, MC_NAME_MAX);

	assert_int_equal(journal_next(b.buf, b.len, &pos, &r), 1);
	assert_int_equal(r.type, JR_DENTRY_DEL);
	assert_int_equal(r.parent, 1);
	assert_int_equal(r.namelen, 1);
	assert_memory_equal(r.name, "x", 1);

	assert_int_equal(journal_next(b.buf, b.len, &pos, &r), 1);
	assert_int_equal(r.type, JR_DENTRY_DEL);
	assert_int_equal(r.parent, UINT64_MAX);
	assert_int_equal(r.namelen, MC_NAME_MAX);

	assert_int_equal(journal_next(b.buf, b.len, &pos, &r), 1);
	assert_int_equal(r.type, JR_INODE_UNLINK);
	assert_int_equal(r.ino, 0x1112131415161718ull);
	assert_int_equal(r.ctime_ns, -5);

	assert_int_equal(pos, b.len);
	assert_int_equal(journal_next(b.buf, b.len, &pos, &r), 0);
	assert_int_equal(pos, b.len);
	journal_batch_free(&b);
}

/* The encoding is explicit little-endian, byte for byte. */
static void test_inode_encoding_bytes(void **state)
{
	struct mc_inode_rec r = {
		.ino = 0x0102030405060708ull, .mode = 0x11223344, .nlink = 0x55667788,
		.uid = 0x99aabbcc, .gid = 0xddeeff00, .size = 0x1122334455667788ull,
		.atime_ns = -1, .mtime_ns = 0x0807060504030201ll, .ctime_ns = 0,
	};
	uint8_t out[JOURNAL_INODE_DISK_SIZE];
	static const uint8_t want[JOURNAL_INODE_DISK_SIZE] = {
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
		0x44, 0x33, 0x22, 0x11, 0x88, 0x77, 0x66, 0x55,
		0xcc, 0xbb, 0xaa, 0x99, 0x00, 0xff, 0xee, 0xdd,
		0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
		0, 0, 0, 0, 0, 0, 0, 0,
	};
	journal_inode_encode(&r, out);
	assert_memory_equal(out, want, sizeof(want));
	struct mc_inode_rec back;
	journal_inode_decode(out, &back);
	assert_inode_eq(&back, &r);

	/* The record header too: type, dtype, namelen LE16, body_len LE32. */
	struct journal_batch b;
	journal_batch_init(&b, 1);
	assert_int_equal(journal_put_dentry(&b, 2, "ab", 2, 3, DT_DIR), 0);
	static const uint8_t hdr[] = { JR_DENTRY_PUT, DT_DIR, 2, 0, 18, 0, 0, 0,
	                               2, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0,
	                               'a', 'b' };
	assert_int_equal(b.len, sizeof(hdr));
	assert_memory_equal(b.buf, hdr, sizeof(hdr));
	journal_batch_free(&b);
}

/* Appends past the first buffer double it; every record still decodes; a
 * reset keeps the buffer. */
static void test_buffer_growth_and_reset(void **state)
{
	struct journal_batch b;
	journal_batch_init(&b, 1);
	size_t last_cap = 0;
	unsigned grows = 0;
	char name[32];
	for (unsigned i = 0; i < 5000; i++) {
		int n = snprintf(name, sizeof(name), "file-%u", i);
		assert_int_equal(journal_put_dentry(&b, 1, name, (size_t)n, 100 + i, DT_REG), 0);
		if (b.cap != last_cap) {
			if (last_cap)
				assert_int_equal(b.cap, last_cap * 2);
			last_cap = b.cap;
			grows++;
		}
		assert_true(b.len <= b.cap);
	}
	assert_true(grows > 3);
	assert_int_equal(b.nrecs, 5000);
	size_t pos = 0;
	struct journal_rec r;
	for (unsigned i = 0; i < 5000; i++) {
		assert_int_equal(journal_next(b.buf, b.len, &pos, &r), 1);
		int n = snprintf(name, sizeof(name), "file-%u", i);
		assert_int_equal(r.namelen, (size_t)n);
		assert_memory_equal(r.name, name, (size_t)n);
		assert_int_equal(r.ino, 100 + i);
	}
	assert_int_equal(journal_next(b.buf, b.len, &pos, &r), 0);

	uint8_t *buf = b.buf;
	size_t cap = b.cap;
	b.next_ino = 77;
	journal_batch_reset(&b, 2);
	assert_int_equal(b.seq, 2);
	assert_int_equal(b.len, 0);
	assert_int_equal(b.nrecs, 0);
	assert_int_equal(b.next_ino, 77);
	assert_ptr_equal(b.buf, buf);
	assert_int_equal(b.cap, cap);
	pos = 0;
	assert_int_equal(journal_next(b.buf, b.len, &pos, &r), 0);
	journal_batch_free(&b);
	assert_null(b.buf);
	journal_batch_free(&b);   /* twice is harmless */
}

/* Arguments that would not decode are refused and leave the batch as it was. */
static void test_append_rejects_invalid(void **state)
{
	struct journal_batch b;
	journal_batch_init(&b, 1);
	assert_int_equal(journal_put_dentry(&b, 1, "keep", 4, 2, DT_REG), 0);
	size_t len = b.len;
	char big[MC_NAME_MAX + 1];
	char tgt[MC_SYMLINK_MAX + 1];
	memset(big, 'x', sizeof(big));
	memset(tgt, 't', sizeof(tgt));
	struct mc_inode_rec reg = mkinode(5, S_IFREG | 0600, 0);
	struct mc_inode_rec lnk = mkinode(5, S_IFLNK | 0777, 1);
	struct mc_inode_rec bad = mkinode(5, 0777, 0);
	struct mc_inode_rec zero = mkinode(0, S_IFREG | 0600, 0);

	assert_int_equal(journal_put_dentry(&b, 1, "", 0, 2, DT_REG), -EINVAL);
	assert_int_equal(journal_put_dentry(&b, 1, big, sizeof(big), 2, DT_REG), -EINVAL);
	assert_int_equal(journal_put_dentry(&b, 1, "a/b", 3, 2, DT_REG), -EINVAL);
	assert_int_equal(journal_put_dentry(&b, 1, "a\0b", 3, 2, DT_REG), -EINVAL);
	assert_int_equal(journal_put_dentry(&b, 0, "a", 1, 2, DT_REG), -EINVAL);
	assert_int_equal(journal_put_dentry(&b, 1, "a", 1, 0, DT_REG), -EINVAL);
	assert_int_equal(journal_put_dentry(&b, 1, "a", 1, 2, 3), -EINVAL);
	assert_int_equal(journal_del_dentry(&b, 1, big, sizeof(big)), -EINVAL);
	assert_int_equal(journal_del_dentry(&b, 0, "a", 1), -EINVAL);
	assert_int_equal(journal_del_inode(&b, 0), -EINVAL);
	assert_int_equal(journal_unlink_inode(&b, 0, 1), -EINVAL);
	assert_int_equal(journal_put_inode(&b, &lnk, tgt, sizeof(tgt)), -EINVAL);
	assert_int_equal(journal_put_inode(&b, &reg, "t", 1), -EINVAL);
	assert_int_equal(journal_put_inode(&b, &bad, NULL, 0), -EINVAL);
	assert_int_equal(journal_put_inode(&b, &zero, NULL, 0), -EINVAL);
	assert_int_equal(b.len, len);
	assert_int_equal(b.nrecs, 1);
	journal_batch_free(&b);
}

/* Decode a heap copy of exactly len bytes (so ASan sees any overread);
 * returns the number of records before the end or error, *last the final rc. */
static unsigned decode_copy(const uint8_t *src, size_t len, int *last)
{
	uint8_t *copy = malloc(len ? len : 1);
	assert_non_null(copy);
	memcpy(copy, src, len);
	size_t pos = 0;
	struct journal_rec r;
	unsigned n = 0;
	int rc;
	while ((rc = journal_next(copy, len, &pos, &r)) == 1) {
		n++;
		assert_true(pos <= len);
	}
	if (rc < 0)
		assert_true(pos <= len);
	free(copy);
	*last = rc;
	return n;
}

/* Every proper prefix of a batch decodes the whole records it holds, then
 * fails with -EPROTO, unless it ends exactly on a record boundary. */
static void test_truncated_every_prefix(void **state)
{
	struct journal_batch b;
	journal_batch_init(&b, 1);
	unsigned total = build_all(&b);

	/* Record boundaries. */
	size_t bounds[16];
	unsigned nb = 0;
	size_t pos = 0;
	struct journal_rec r;
	bounds[nb++] = 0;
	while (journal_next(b.buf, b.len, &pos, &r) == 1)
		bounds[nb++] = pos;
	assert_int_equal(nb, total + 1);

	unsigned checked = 0;
	for (size_t len = 0; len <= b.len; len++) {
		unsigned whole = 0;
		bool boundary = false;
		for (unsigned i = 0; i < nb; i++) {
			if (bounds[i] <= len)
				whole = i;
			if (bounds[i] == len)
				boundary = true;
		}
		int rc;
		unsigned n = decode_copy(b.buf, len, &rc);
		assert_int_equal(n, whole);
		assert_int_equal(rc, boundary ? 0 : -EPROTO);
		checked++;
	}
	assert_int_equal(checked, b.len + 1);
	journal_batch_free(&b);
}

/* Hand-made bad records. */
static void test_garbled_records(void **state)
{
	struct {
		const char *what;
		uint8_t bytes[40];
		size_t len;
	} cases[] = {
		{ "type 0", { 0, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0 }, 16 },
		{ "type 5", { 5, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0 }, 16 },
		{ "type 255", { 255, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0 }, 16 },
		{ "inode_del body 7", { JR_INODE_DEL, 0, 0, 0, 7, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0 }, 15 },
		{ "inode_del body 9", { JR_INODE_DEL, 0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0 }, 17 },
		{ "inode_del ino 0", { JR_INODE_DEL, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }, 16 },
		{ "inode_del namelen", { JR_INODE_DEL, 0, 1, 0, 8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0 }, 16 },
		{ "inode_del dtype", { JR_INODE_DEL, 4, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0 }, 16 },
		{ "inode_unlink body 8", { JR_INODE_UNLINK, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0 }, 16 },
		{ "inode_unlink ino 0", { JR_INODE_UNLINK, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		                          1, 0, 0, 0, 0, 0, 0, 0 }, 24 },
		{ "inode_unlink namelen", { JR_INODE_UNLINK, 0, 1, 0, 16, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0,
		                            1, 0, 0, 0, 0, 0, 0, 0 }, 24 },
		{ "body_len huge", { JR_INODE_DEL, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0, 0, 0, 0, 0 }, 16 },
		{ "inode_put short body", { JR_INODE_PUT, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0 }, 16 },
		{ "dentry_put namelen 0", { JR_DENTRY_PUT, DT_REG, 0, 0, 16, 0, 0, 0,
		                            1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0 }, 24 },
		{ "dentry_put namelen > body", { JR_DENTRY_PUT, DT_REG, 2, 0, 17, 0, 0, 0,
		                                 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 'a' }, 25 },
		{ "dentry_put namelen < body", { JR_DENTRY_PUT, DT_REG, 1, 0, 18, 0, 0, 0,
		                                 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 'a', 'b' }, 26 },
		{ "dentry_put slash", { JR_DENTRY_PUT, DT_REG, 1, 0, 17, 0, 0, 0,
		                        1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, '/' }, 25 },
		{ "dentry_put nul", { JR_DENTRY_PUT, DT_REG, 1, 0, 17, 0, 0, 0,
		                      1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0 }, 25 },
		{ "dentry_put bad dtype", { JR_DENTRY_PUT, 99, 1, 0, 17, 0, 0, 0,
		                            1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 'a' }, 25 },
		{ "dentry_put ino 0", { JR_DENTRY_PUT, DT_REG, 1, 0, 17, 0, 0, 0,
		                        1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 'a' }, 25 },
		{ "dentry_del parent 0", { JR_DENTRY_DEL, 0, 1, 0, 9, 0, 0, 0,
		                           0, 0, 0, 0, 0, 0, 0, 0, 'a' }, 17 },
		{ "dentry_del body past end", { JR_DENTRY_DEL, 0, 2, 0, 10, 0, 0, 0,
		                                1, 0, 0, 0, 0, 0, 0, 0, 'a' }, 17 },
		{ "header only 7 bytes", { JR_INODE_DEL, 0, 0, 0, 8, 0, 0 }, 7 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc;
		unsigned n = decode_copy(cases[i].bytes, cases[i].len, &rc);
		if (rc != -EPROTO || n != 0)
			fail_msg("case '%s': n=%u rc=%d", cases[i].what, n, rc);
	}

	/* Inode records: a target on a regular file, a bad file type, ino 0,
	 * a target longer than MC_SYMLINK_MAX. */
	struct journal_batch b;
	journal_batch_init(&b, 1);
	struct mc_inode_rec lnk = mkinode(5, S_IFLNK | 0777, 1);
	assert_int_equal(journal_put_inode(&b, &lnk, "t", 1), 0);
	uint8_t rec[8 + JOURNAL_INODE_DISK_SIZE + 1];
	assert_int_equal(b.len, sizeof(rec));
	int rc;

	memcpy(rec, b.buf, sizeof(rec));
	struct mc_inode_rec reg = mkinode(5, S_IFREG | 0644, 1);
	journal_inode_encode(&reg, rec + 8);
	assert_int_equal(decode_copy(rec, sizeof(rec), &rc), 0);
	assert_int_equal(rc, -EPROTO);

	memcpy(rec, b.buf, sizeof(rec));
	struct mc_inode_rec typ = mkinode(5, 0xf000 | 0644, 1);
	journal_inode_encode(&typ, rec + 8);
	assert_int_equal(decode_copy(rec, sizeof(rec), &rc), 0);
	assert_int_equal(rc, -EPROTO);

	memcpy(rec, b.buf, sizeof(rec));
	struct mc_inode_rec z = mkinode(0, S_IFLNK | 0777, 1);
	journal_inode_encode(&z, rec + 8);
	assert_int_equal(decode_copy(rec, sizeof(rec), &rc), 0);
	assert_int_equal(rc, -EPROTO);
	journal_batch_free(&b);

	size_t biglen = 8 + JOURNAL_INODE_DISK_SIZE + MC_SYMLINK_MAX + 1;
	uint8_t *big = calloc(1, biglen);
	assert_non_null(big);
	big[0] = JR_INODE_PUT;
	uint32_t body = (uint32_t)(biglen - 8);
	big[4] = (uint8_t)body;
	big[5] = (uint8_t)(body >> 8);
	journal_inode_encode(&lnk, big + 8);
	assert_int_equal(decode_copy(big, biglen, &rc), 0);
	assert_int_equal(rc, -EPROTO);
	free(big);

	/* A 256-byte name, consistent lengths otherwise. */
	biglen = 8 + 8 + 256;
	big = malloc(biglen);
	assert_non_null(big);
	memset(big, 'a', biglen);
	memcpy(big, (const uint8_t[]){ JR_DENTRY_DEL, 0, 0, 1, 8, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0 }, 16);
	assert_int_equal(decode_copy(big, biglen, &rc), 0);
	assert_int_equal(rc, -EPROTO);
	free(big);

	/* A position past the end is refused, at the end is the end. */
	uint8_t one = 0;
	size_t pos = 2;
	struct journal_rec r;
	assert_int_equal(journal_next(&one, 1, &pos, &r), -EPROTO);
	assert_int_equal(pos, 2);
	pos = 1;
	assert_int_equal(journal_next(&one, 1, &pos, &r), 0);
}

/* Every single-byte corruption of a valid batch either decodes or fails with
 * -EPROTO, never reads outside the buffer, and never moves pos past len. */
static void test_byte_flips(void **state)
{
	struct journal_batch b;
	journal_batch_init(&b, 1);
	struct mc_inode_rec lnk = mkinode(8, S_IFLNK | 0777, 3);
	assert_int_equal(journal_put_inode(&b, &lnk, "abc", 3), 0);
	assert_int_equal(journal_del_inode(&b, 9), 0);
	assert_int_equal(journal_put_dentry(&b, 1, "name", 4, 8, DT_LNK), 0);
	assert_int_equal(journal_del_dentry(&b, 1, "old", 3), 0);

	/* Header offsets that must catch any change: every type byte, and the
	 * namelen and body_len of the dentry records (their lengths must agree
	 * exactly). The inode_put record starts at 0, inode_del at 8+56+3. */
	size_t rec_start[4];
	size_t pos = 0;
	struct journal_rec r;
	for (int i = 0; i < 4; i++) {
		rec_start[i] = pos;
		assert_int_equal(journal_next(b.buf, b.len, &pos, &r), 1);
	}
	static const uint8_t vals[] = { 0x00, 0x01, 0x02, 0x04, 0x08, 0x10, 0x2f, 0x7f, 0x80, 0xff };
	unsigned must = 0;
	uint8_t *copy = malloc(b.len);
	assert_non_null(copy);
	for (size_t i = 0; i < b.len; i++) {
		bool strict = false;
		for (int k = 0; k < 4; k++) {
			if (i == rec_start[k])
				strict = true;
			if (k >= 2 && i >= rec_start[k] + 2 && i < rec_start[k] + 8)
				strict = true;
		}
		for (size_t v = 0; v < sizeof(vals); v++) {
			if (vals[v] == b.buf[i])
				continue;
			memcpy(copy, b.buf, b.len);
			copy[i] = vals[v];
			int rc;
			pos = 0;
			while ((rc = journal_next(copy, b.len, &pos, &r)) == 1)
				assert_true(pos <= b.len);
			assert_true(rc == 0 || rc == -EPROTO);
			if (strict && rc != -EPROTO)
				fail_msg("byte %zu = 0x%02x not caught", i, vals[v]);
			must += strict;
		}
	}
	free(copy);
	assert_true(must > 100);
	journal_batch_free(&b);
}

static void test_update_inode_in_place(void **state)
{
	(void)state;
	struct journal_batch b;
	journal_batch_init(&b, 1);
	struct mc_inode_rec r = { .ino = 7, .mode = S_IFDIR | 0755, .nlink = 2, .size = 0 };
	size_t at = b.len;
	assert_int_equal(journal_put_inode(&b, &r, NULL, 0), 0);
	assert_int_equal(journal_put_dentry(&b, 7, "x", 1, 8, DT_REG), 0);
	size_t len = b.len;
	r.size = 5;
	r.nlink = 3;
	assert_int_equal(journal_update_inode(&b, at, &r), 0);
	assert_int_equal(b.len, len);
	assert_int_equal(b.nrecs, 2);
	size_t pos = 0;
	struct journal_rec rec;
	assert_int_equal(journal_next(b.buf, b.len, &pos, &rec), 1);
	assert_int_equal(rec.type, JR_INODE_PUT);
	assert_int_equal(rec.inode.size, 5);
	assert_int_equal(rec.inode.nlink, 3);
	/* Not that inode's record, or not an inode record at all. */
	r.ino = 8;
	assert_int_equal(journal_update_inode(&b, at, &r), -EINVAL);
	r.ino = 7;
	assert_int_equal(journal_update_inode(&b, pos, &r), -EINVAL);
	assert_int_equal(journal_update_inode(&b, b.len, &r), -EINVAL);
	assert_int_equal(journal_update_inode(&b, b.len + 100, &r), -EINVAL);
	journal_batch_free(&b);
}

/* b->types has the bit of every record type appended, and only those: a
 * failed append adds none, an inode rewritten in place keeps it, a reset
 * clears them. */
static void test_types_mask(void **state)
{
	(void)state;
	struct journal_batch b;
	journal_batch_init(&b, 1);
	assert_int_equal(b.types, 0);
	struct mc_inode_rec r = { .ino = 9, .mode = S_IFREG | 0600, .nlink = 1 };
	assert_int_equal(journal_put_inode(&b, &r, NULL, 0), 0);
	assert_int_equal(journal_put_dentry(&b, 1, "a", 1, 9, DT_REG), 0);
	assert_int_equal(b.types, 1u << JR_INODE_PUT | 1u << JR_DENTRY_PUT);
	assert_int_equal(journal_put_dentry(&b, 1, "a/b", 3, 9, DT_REG), -EINVAL);
	r.size = 5;
	assert_int_equal(journal_update_inode(&b, 0, &r), 0);
	assert_int_equal(b.types, 1u << JR_INODE_PUT | 1u << JR_DENTRY_PUT);
	assert_int_equal(journal_set_extent(&b, 9, 0, 99, 4096, 0), 0);
	assert_int_equal(journal_unlink_inode(&b, 9, 1), 0);
	assert_int_equal(b.types, 1u << JR_INODE_PUT | 1u << JR_DENTRY_PUT |
	                          1u << JR_EXTENT_SET | 1u << JR_INODE_UNLINK);
	journal_batch_reset(&b, 2);
	assert_int_equal(b.types, 0);
	assert_int_equal(journal_punch_extent(&b, 9, 0, 9), 0);
	assert_int_equal(journal_del_dentry(&b, 1, "a", 1), 0);
	assert_int_equal(journal_del_inode(&b, 9), 0);
	assert_int_equal(b.types, 1u << JR_EXTENT_PUNCH | 1u << JR_DENTRY_DEL | 1u << JR_INODE_DEL);
	journal_batch_free(&b);
	assert_int_equal(b.types, 0);
}

/* journal_check_frames passes what the appenders write, and refuses a
 * header garbled in its type, its lengths or its count, and a cut
 * batch. */
static void test_check_frames(void **state)
{
	(void)state;
	struct journal_batch b;
	journal_batch_init(&b, 1);
	assert_int_equal(journal_check_frames(&b), 0);
	struct mc_inode_rec r = { .ino = 9, .mode = S_IFLNK | 0777, .nlink = 1, .size = 3 };
	assert_int_equal(journal_put_inode(&b, &r, "abc", 3), 0);
	assert_int_equal(journal_put_dentry(&b, 1, "name", 4, 9, DT_LNK), 0);
	assert_int_equal(journal_del_dentry(&b, 1, "old", 3), 0);
	assert_int_equal(journal_del_inode(&b, 8), 0);
	assert_int_equal(journal_unlink_inode(&b, 7, 1), 0);
	assert_int_equal(journal_set_extent(&b, 9, 0, 99, 4096, 1), 0);
	assert_int_equal(journal_punch_extent(&b, 9, 0, 9), 0);
	assert_int_equal(journal_check_frames(&b), 0);
	size_t second = 8 + JOURNAL_INODE_DISK_SIZE + 3;
	uint8_t *h = b.buf + second;                  /* the DENTRY_PUT's header */
	h[0] = 0x7f;
	assert_int_equal(journal_check_frames(&b), -EPROTO);
	h[0] = JR_DENTRY_PUT;
	h[2] = 5;                                     /* namelen no longer the body's */
	assert_int_equal(journal_check_frames(&b), -EPROTO);
	h[2] = 4;
	h[4] = 0x7f;                                  /* body_len past the end */
	assert_int_equal(journal_check_frames(&b), -EPROTO);
	h[4] = 20;
	assert_int_equal(journal_check_frames(&b), 0);
	b.nrecs++;
	assert_int_equal(journal_check_frames(&b), -EPROTO);
	b.nrecs--;
	b.len--;
	assert_int_equal(journal_check_frames(&b), -EPROTO);
	journal_batch_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_all_types),
		cmocka_unit_test(test_update_inode_in_place),
		cmocka_unit_test(test_inode_encoding_bytes),
		cmocka_unit_test(test_buffer_growth_and_reset),
		cmocka_unit_test(test_append_rejects_invalid),
		cmocka_unit_test(test_truncated_every_prefix),
		cmocka_unit_test(test_garbled_records),
		cmocka_unit_test(test_byte_flips),
		cmocka_unit_test(test_types_mask),
		cmocka_unit_test(test_check_frames),
	};
	return cmocka_run_group_tests_name("journal", tests, NULL, NULL);
}
