/* test-shmview.c - the client's shared-memory read path against a segment
 * built by the real server modules (shm, dcache, ns over an LMDB store;
 * shmview_fixture.h): every local answer must equal the server's, and
 * what the cache cannot answer must be a miss, never a guess. Times are
 * in test-shmview_time.c. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
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

#include "ns.h"
#include "ops.h"
#include "dcache.h"
#include "shm.h"
#include "mc_walk.h"
#include "shmview_impl.h"
#include "shmview_fixture.h"

static int setup(void **state)
{
	return shmview_fixture_setup(state, "shmview");
}

static int teardown(void **state)
{
	return shmview_fixture_teardown(state);
}

/* A dentry bucket's inode is a prefetch hint, never data (mc_shm.h note
 * 12): with every hint pointing elsewhere -- at another live inode, into a
 * dentry page, past the segment -- every answer is still the server's. */
static void test_bucket_hint_not_trusted(void **state)
{
	struct fx *f = *state;
	assert_int_equal(ns_mkdir(f->ns, &f->root, P("/h"), 0755, NULL), 0);
	assert_int_equal(ns_mkdir(f->ns, &f->root, P("/h/d"), 0700, NULL), 0);
	char p[64];
	for (int i = 0; i < 50; i++) {
		snprintf(p, sizeof(p), "/h/d/f%d", i);
		mkfile(f, p);
	}
	assert_int_equal(ns_symlink(f->ns, &f->root, P("d/f1"), P("/h/l")), 0);
	struct shm *s = f->shm;
	mc_off_t other = dcache_find(s, s->hdr->root, P("h"));
	assert_int_not_equal(other, 0);
	const mc_off_t wrong[] = { s->hdr->root, other, UINT32_MAX,
	                           (mc_off_t)(s->size >> MC_OFF_SHIFT) };
	for (size_t w = 0; w < sizeof(wrong) / sizeof(wrong[0]); w++) {
		for (uint32_t g = 0; g <= s->hdr->dbucket_mask; g++)
			for (unsigned b = 0; b < MC_DGROUP_BUCKETS; b++)
				if (s->dgroups[g].b[b].head)
					atomic_store(&s->dgroups[g].b[b].inode, wrong[w]);
		prefix_clear(f->v);
		for (int i = 0; i < 50; i += 7) {
			snprintf(p, sizeof(p), "/h/d/f%d", i);
			same_as_server(f, p, true);
		}
		same_as_server(f, "/h/l", false);
		same_as_server(f, "/h/l", true);
		same_as_server(f, "/h/d/missing", true);
		same_as_server(f, "/h", true);
	}
}

static void test_rejects_bad_header(void **state)
{
	(void)state;
	static char junk[1 << 16];
	struct view v;
	assert_int_equal(view_init(&v, junk, sizeof(junk)), -EPROTO);
}

static void test_stat_cached_paths(void **state)
{
	struct fx *f = *state;
	assert_int_equal(ns_mkdir(f->ns, &f->root, P("/a"), 0755, NULL), 0);
	assert_int_equal(ns_mkdir(f->ns, &f->root, P("/a/b"), 0700, NULL), 0);
	mkfile(f, "/a/b/file-with-a-rather-long-name-0123456789");
	mkfile(f, "/a/b/c");
	assert_int_equal(ns_symlink(f->ns, &f->root, P("b/c"), P("/a/lnk")), 0);
	assert_int_equal(ns_symlink(f->ns, &f->root, P("/a/b"), P("/a/dirlnk")), 0);
	const char *paths[] = { "/", "/a", "/a/b", "/a/b/c", "/a//b///c", "/a/./b/../b/c",
		"/a/b/file-with-a-rather-long-name-0123456789", "/a/lnk", "/a/dirlnk/c",
		"/a/dirlnk/", "/..", "/a/b/.", "/a/b/..", "/a/b/c/", "/a/b/c/x", "/a/lnk/",
		"/a/b/missing", "/a/b/missing/deeper" };
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		same_as_server(f, paths[i], true);
		same_as_server(f, paths[i], false);
	}
}

static void test_negative_and_complete(void **state)
{
	struct fx *f = *state;
	struct stat st;
	/* A new directory is complete: misses in it are local ENOENT. */
	assert_int_equal(ns_mkdir(f->ns, &f->root, P("/d"), 0755, NULL), 0);
	assert_int_equal(view_stat(f->v, P("/d/nothing"), true, &st), -ENOENT);
	/* Unlinked names leave a negative entry or vanish from a complete dir:
	 * both answer ENOENT locally. */
	mkfile(f, "/d/x");
	assert_int_equal(view_stat(f->v, P("/d/x"), true, &st), 0);
	assert_int_equal(ns_unlink(f->ns, &f->root, P("/d/x")), 0);
	assert_int_equal(view_stat(f->v, P("/d/x"), true, &st), -ENOENT);
	/* A new namespace's root is empty in the store, so it is complete from
	 * the start: an unknown name in it is a local ENOENT, no round trip. */
	assert_int_equal(view_stat(f->v, P("/unknown"), true, &st), -ENOENT);
	ns_attr a;
	assert_int_equal(ns_stat(f->ns, &f->root, P("/unknown"), true, &a), -ENOENT);
	assert_int_equal(view_stat(f->v, P("/unknown"), true, &st), -ENOENT);
	/* A relative path or a long component is answered locally too. */
	assert_int_equal(view_stat(f->v, P("d"), true, &st), -EINVAL);
	char longname[300] = "/d/";
	memset(longname + 3, 'n', 256);
	longname[259] = 0;
	assert_int_equal(view_stat(f->v, P(longname), true, &st), -ENAMETOOLONG);
}

static void test_permissions(void **state)
{
	struct fx *f = *state;
	struct stat st;
	assert_int_equal(ns_mkdir(f->ns, &f->root, P("/priv"), 0700, NULL), 0);
	mkfile(f, "/priv/f");
	f->v->cred = (struct view_cred){ .uid = 1000, .gid = 1000 };
	assert_int_equal(view_stat(f->v, P("/priv/f"), true, &st), -EACCES);
	assert_int_equal(view_stat(f->v, P("/priv"), true, &st), 0);
	assert_int_equal(ns_chmod(f->ns, &f->root, P("/priv"), 0711), 0);
	assert_int_equal(view_stat(f->v, P("/priv/f"), true, &st), 0);
	struct view_dir d;
	assert_int_equal(view_opendir(f->v, P("/priv"), &d), -EACCES);
	f->v->cred = (struct view_cred){ 0 };
}

static void test_bounds_fall_back(void **state)
{
	struct fx *f = *state;
	struct stat st;
	assert_int_equal(ns_mkdir(f->ns, &f->root, P("/x"), 0755, NULL), 0);
	assert_int_equal(ns_mkdir(f->ns, &f->root, P("/x/y"), 0755, NULL), 0);
	assert_int_equal(ns_symlink(f->ns, &f->root, P("/x/y"), P("/x/l")), 0);
	assert_int_equal(view_stat(f->v, P("/x/y"), true, &st), 0);
	f->v->lim.depth = 2;
	assert_int_equal(view_stat(f->v, P("/x/y"), true, &st), VIEW_MISS);
	view_default_limits(&f->v->lim);
	f->v->lim.links = 0;
	assert_int_equal(view_stat(f->v, P("/x/l"), true, &st), VIEW_MISS);
	assert_int_equal(view_stat(f->v, P("/x/l"), false, &st), 0);
	view_default_limits(&f->v->lim);
	f->v->lim.chain = 0;
	assert_int_equal(view_stat(f->v, P("/x"), true, &st), VIEW_MISS);
	view_default_limits(&f->v->lim);
}

static void test_readlink_and_ino(void **state)
{
	struct fx *f = *state;
	char buf[64];
	size_t n;
	assert_int_equal(ns_symlink(f->ns, &f->root, P("some/target"), P("/sl")), 0);
	assert_int_equal(view_readlink(f->v, P("/sl"), buf, sizeof(buf), &n), 0);
	assert_int_equal(n, 11);
	assert_memory_equal(buf, "some/target", 11);
	assert_int_equal(view_readlink(f->v, P("/sl"), buf, 4, &n), 0);
	assert_int_equal(n, 4);
	assert_int_equal(view_readlink(f->v, P("/"), buf, sizeof(buf), &n), -EINVAL);
	ns_attr a;
	assert_int_equal(ns_stat(f->ns, &f->root, P("/sl"), false, &a), 0);
	struct stat st;
	assert_int_equal(view_stat_ino(f->v, a.ino, &st), 0);
	assert_int_equal(st.st_ino, a.ino);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(view_stat_ino(f->v, 999999, &st), VIEW_MISS);
}

static void test_readdir_pages(void **state)
{
	struct fx *f = *state;
	char p[64];
	assert_int_equal(ns_mkdir(f->ns, &f->root, P("/big"), 0755, NULL), 0);
	for (int i = 0; i < 1000; i++) {
		snprintf(p, sizeof(p), "/big/entry-%04d%s", i, i % 7 ? "" : "-with-a-long-name");
		mkfile(f, p);
	}
	struct view_dir d;
	assert_int_equal(view_opendir(f->v, P("/big"), &d), 0);
	static struct view_dirent ents[64];
	char seen[1000] = { 0 };
	unsigned total = 0, n;
	bool eof = false;
	int round = 0;
	while (!eof) {
		assert_int_equal(view_readdir(f->v, &d, ents, 64, &n, &eof), 0);
		for (unsigned i = 0; i < n; i++) {
			if (strcmp(ents[i].name, "new-entry") == 0)
				continue;
			assert_memory_equal(ents[i].name, "entry-", 6);
			int k = atoi(ents[i].name + 6);
			assert_true(k >= 0 && k < 1000);
			assert_int_equal(seen[k], 0);
			seen[k] = 1;
			assert_int_equal(ents[i].type, DT_REG);
		}
		total += n;
		/* Changes elsewhere in the directory between pages: old entries
		 * are neither repeated nor skipped. */
		if (round++ == 3) {
			assert_int_equal(ns_unlink(f->ns, &f->root, P("/big/entry-0999")), 0);
			seen[999] = 1;
			mkfile(f, "/big/new-entry");
		}
	}
	for (int k = 0; k < 1000; k++)
		assert_int_equal(seen[k], 1);
	assert_true(total == 999 || total == 1000); /* the new entry may or may not show */
	/* A new namespace's root is complete: listed locally too. */
	assert_int_equal(view_opendir(f->v, P("/"), &d), 0);
}

/* Hits mark the dentry's bit in the referenced bitmap (for the shrinker's
 * second chance); a miss or a negative answer marks nothing. */
static void test_referenced_bits(void **state)
{
	struct fx *f = *state;
	uint64_t nbits = f->shm->size >> MC_OFF_SHIFT;
	_Atomic uint64_t *bits = calloc((nbits + 63) / 64, sizeof(*bits));
	assert_non_null(bits);
	f->v->refbits = bits;
	f->v->nbits = nbits;
	assert_int_equal(ns_mkdir(f->ns, &f->root, P("/r"), 0755, NULL), 0);
	mkfile(f, "/r/hot");
	mkfile(f, "/r/cold");
	struct stat st;
	assert_int_equal(view_stat(f->v, P("/r/nothing"), true, &st), -ENOENT);
	size_t set = 0;
	for (uint64_t w = 0; w < (nbits + 63) / 64; w++)
		set += (size_t)__builtin_popcountll(atomic_load(&bits[w]));
	/* "/r" itself was walked through. */
	assert_int_equal(set, 1);
	assert_int_equal(view_stat(f->v, P("/r/hot"), true, &st), 0);
	set = 0;
	for (uint64_t w = 0; w < (nbits + 63) / 64; w++)
		set += (size_t)__builtin_popcountll(atomic_load(&bits[w]));
	assert_int_equal(set, 2);
	/* The bit is the one of the dentry's offset. */
	mc_off_t dir = dcache_find(f->shm, f->shm->hdr->root, "r", 1);
	assert_true(dir != 0);
	mc_off_t hot = dcache_find(f->shm, dentry_at(f->shm, dir)->inode, "hot", 3);
	mc_off_t cold = dcache_find(f->shm, dentry_at(f->shm, dir)->inode, "cold", 4);
	assert_true(atomic_load(&bits[hot >> 6]) & (1ull << (hot & 63)));
	assert_false(atomic_load(&bits[cold >> 6]) & (1ull << (cold & 63)));
	f->v->refbits = NULL;
	free(bits);
}

/* The word-at-a-time parser yields the components a byte-at-a-time split
 * yields, with the name hash of each (mc_hash_part), at every length around
 * the word boundaries and with any slashes around. */
static void test_parse_and_hash(void **state)
{
	(void)state;
	char path[256], name[64];
	for (unsigned len = 1; len <= 40; len++) {
		for (unsigned lead = 0; lead < 3; lead++) {
			for (unsigned trail = 1; trail < 4; trail++) {
				size_t n = 0;
				for (unsigned k = 0; k < lead; k++)
					path[n++] = '/';
				for (unsigned k = 0; k < len; k++)
					name[k] = path[n++] = (char)('a' + (k * 7 + len) % 26);
				for (unsigned k = 0; k < trail; k++)
					path[n++] = '/';
				memcpy(path + n, "x/yz", 4);
				n += 4;
				const char *p = path, *end = path + n;
				struct mc_comp c = { 0 };
				assert_true(mc_path_next_hash(&p, end, 77, &c));
				assert_int_equal(c.len, len);
				assert_ptr_equal(c.name, path + lead);
				assert_true(c.hash == mc_hash_part(77, name, len));
				uint64_t w[2] = { 0, 0 };
				memcpy(w, name, len < 16 ? len : 16);
				assert_true(c.w[0] == w[0] && c.w[1] == w[1]);
				assert_false(c.last);
				assert_true(mc_path_next_hash(&p, end, 77, &c));
				assert_int_equal(c.len, 1);
				assert_true(c.hash == mc_hash_part(77, "x", 1));
				assert_true(mc_path_next_hash(&p, end, 77, &c));
				assert_int_equal(c.len, 2);
				assert_true(c.last);
				assert_false(c.slash);
				assert_false(mc_path_next_hash(&p, end, 77, &c));
				/* The end bounds the parse, whatever lies past it. */
				p = path + lead;
				end = path + lead + len;
				assert_true(mc_path_next_hash(&p, end, 77, &c));
				assert_int_equal(c.len, len);
				assert_true(c.last);
				assert_true(c.hash == mc_hash_part(77, name, len));
			}
		}
	}
	assert_true(mc_hash_name(5, 9, "abc", 3) == mc_hash_fin(mc_hash_part(5, "abc", 3), 9, 3));
}

/* The last component made whole (mc_comp_make, the prefix cache's way to
 * the last name) hashes and keeps the words the parser gives it, at every
 * length around the word boundaries; each name lies in a buffer of exactly
 * its size, so a read past it is an ASan error. mc_load_part reads 0..8
 * bytes the same way. */
static void test_comp_make_and_load_part(void **state)
{
	(void)state;
	for (unsigned len = 0; len <= 40; len++) {
		char *name = malloc(len ? len : 1);
		assert_non_null(name);
		for (unsigned k = 0; k < len; k++)
			name[k] = (char)('a' + (k * 5 + len) % 26);
		uint64_t w[2] = { 0, 0 };
		memcpy(w, name, len < 16 ? len : 16);
		if (len <= 8)
			assert_true(mc_load_part(name, len) == w[0]);
		if (len > 0) {
			struct mc_comp c, p;
			mc_comp_make(name, len, 77, &c);
			const char *q = name;
			assert_true(mc_path_next_hash(&q, name + len, 77, &p));
			assert_ptr_equal(c.name, name);
			assert_int_equal(c.len, len);
			assert_true(c.hash == mc_hash_part(77, name, len));
			assert_true(c.hash == p.hash);
			assert_true(c.w[0] == w[0] && c.w[1] == w[1]);
			assert_true(c.last && !c.slash);
		}
		free(name);
	}
}

/* Names that differ only in one byte around the 8- and 16-byte words of
 * the inline compare, and long names, each find their own file. */
static void test_names_at_word_edges(void **state)
{
	struct fx *f = *state;
	assert_int_equal(ns_mkdir(f->ns, &f->root, P("/w"), 0755, NULL), 0);
	char p[64];
	for (unsigned len = 1; len <= 20; len++) {
		for (unsigned at = 0; at < len; at += (len > 9 ? 7 : 1)) {
			memset(p, 0, sizeof(p));
			memcpy(p, "/w/", 3);
			memset(p + 3, 'q', len);
			p[3 + at] = 'r';
			mkfile(f, p);
		}
	}
	for (unsigned len = 1; len <= 21; len++) {
		for (unsigned at = 0; at < len; at++) {
			memset(p, 0, sizeof(p));
			memcpy(p, "/w/", 3);
			memset(p + 3, 'q', len);
			p[3 + at] = 'r';
			same_as_server(f, p, true);
			p[3 + at] = 'q';
			same_as_server(f, p, true); /* all 'q': absent, a complete dir's ENOENT */
		}
	}
}

/* The walk's rules come from the one skeleton: the 41st symlink of a walk is
 * ELOOP on both sides, the 40th is not; a symlink in the middle must end at
 * a directory. */
static void test_symlink_limits(void **state)
{
	struct fx *f = *state;
	assert_int_equal(ns_mkdir(f->ns, &f->root, P("/s"), 0755, NULL), 0);
	mkfile(f, "/s/file");
	assert_int_equal(ns_symlink(f->ns, &f->root, P("."), P("/s/dot")), 0);
	assert_int_equal(ns_symlink(f->ns, &f->root, P("file"), P("/s/tofile")), 0);
	char p[512] = "/s";
	for (int k = 0; k < 40; k++)
		strcat(p, "/dot");
	strcat(p, "/file");
	same_as_server(f, p, true);
	struct stat st;
	assert_int_equal(view_stat(f->v, P(p), true, &st), 0);
	memmove(p + 6, p + 2, strlen(p + 2) + 1);
	memcpy(p + 2, "/dot", 4);
	same_as_server(f, p, true);
	assert_int_equal(view_stat(f->v, P(p), true, &st), -ELOOP);
	same_as_server(f, "/s/tofile/x", true);
	same_as_server(f, "/s/tofile/", true);
	same_as_server(f, "/s/tofile", false);
	assert_int_equal(view_stat(f->v, P("/s/tofile/x"), true, &st), -ENOTDIR);
}

/* One range check per offset: offset 0, an offset whose slot would cross
 * its page, one in a page of another type and one past the segment are all
 * refused; a segment whose page 0 is not the header's is not taken. */
static void test_offset_checks(void **state)
{
	struct fx *f = *state;
	struct view *v = f->v;
	mc_off_t root = f->shm->hdr->root;
	assert_non_null(view_at(v, root, sizeof(struct mc_inode), MC_PT_INODE));
	assert_null(view_at(v, root, sizeof(struct mc_inode), MC_PT_DENTRY));
	assert_null(view_at(v, 0, sizeof(struct mc_inode), MC_PT_INODE));
	const uint32_t per_page = MC_PAGE_SIZE >> MC_OFF_SHIFT;
	mc_off_t page_end = (root / per_page + 1) * per_page - 1; /* the last unit of root's page */
	assert_non_null(view_at(v, page_end, MC_OFF_UNIT, MC_PT_INODE));
	assert_null(view_at(v, page_end, sizeof(struct mc_inode), MC_PT_INODE));
	assert_null(view_at(v, (mc_off_t)(v->npages * per_page), 16, MC_PT_INODE));
	assert_null(view_at(v, UINT32_MAX, 16, MC_PT_INODE));
	static _Alignas(64) char seg[4 * MC_PAGE_SIZE];
	memcpy(seg, f->shm->base, sizeof(struct mc_shm_header));
	struct mc_shm_header *h = (struct mc_shm_header *)seg;
	h->size = sizeof(seg);
	h->npages = 4;
	h->page_types_off = 256;
	h->dbuckets_off = h->ibuckets_off = 512;
	h->dbucket_mask = h->ibucket_mask = 0;
	h->ebuckets_off = 0;
	seg[256] = MC_PT_META;
	struct view v2;
	assert_int_equal(view_init(&v2, seg, sizeof(seg)), 0);
	seg[256] = MC_PT_INODE;
	assert_int_equal(view_init(&v2, seg, sizeof(seg)), -EPROTO);
}

/* Is the prefix "/<key>" cached in f's view? */
static bool prefix_cached(struct fx *f, const char *key)
{
	size_t klen = strlen(key);
	for (unsigned k = 0; k < PREFIX_SLOTS; k++) {
		const struct prefix_entry *e = &f->v->prefixes[k];
		if (e->klen == klen && memcmp(e->key, key, klen) == 0)
			return true;
	}
	return false;
}

/* The prefix cache answers only while every dentry and inode it passed is
 * unchanged: a chmod of a directory on the way, a rename, an rmdir and a
 * new directory of the same name, a changed symlink each give the new
 * answer, equal to the server's. */
static void test_prefix_cache(void **state)
{
	struct fx *f = *state;
	struct stat st;
	struct cred user = { .uid = 1000, .gid = 1000 };
	assert_int_equal(ns_mkdir(f->ns, &f->root, P("/p"), 0755, NULL), 0);
	assert_int_equal(ns_mkdir(f->ns, &f->root, P("/p/q"), 0755, NULL), 0);
	mkfile(f, "/p/q/f");
	f->v->cred = (struct view_cred){ .uid = 1000, .gid = 1000 };
	assert_int_equal(view_stat(f->v, P("/p/q/f"), true, &st), 0);
	assert_true(prefix_cached(f, "/p/q/"));
	ino_t f_ino = st.st_ino;
	/* Served from the cache: the same answer again. */
	assert_int_equal(view_stat(f->v, P("/p/q/f"), true, &st), 0);
	assert_int_equal(st.st_ino, f_ino);
	/* chmod of a directory on the way: no search permission any more. */
	assert_int_equal(ns_chmod(f->ns, &f->root, P("/p"), 0700), 0);
	assert_int_equal(view_stat(f->v, P("/p/q/f"), true, &st), -EACCES);
	ns_attr a;
	assert_int_equal(ns_stat(f->ns, &user, P("/p/q/f"), true, &a), -EACCES);
	assert_int_equal(ns_chmod(f->ns, &f->root, P("/p"), 0755), 0);
	assert_int_equal(view_stat(f->v, P("/p/q/f"), true, &st), 0);
	f->v->cred = (struct view_cred){ 0 };
	/* A new view credential does not use the entries of another. */
	assert_int_equal(view_stat(f->v, P("/p/q/f"), true, &st), 0);
	/* Rename the directory away and make a new one of the same name. */
	assert_int_equal(view_stat(f->v, P("/p/q/f"), true, &st), 0);
	assert_true(prefix_cached(f, "/p/q/"));
	assert_int_equal(ns_rename(f->ns, &f->root, P("/p/q"), P("/p/r")), 0);
	assert_int_equal(ns_mkdir(f->ns, &f->root, P("/p/q"), 0755, NULL), 0);
	mkfile(f, "/p/q/g");
	same_as_server(f, "/p/q/f", true);
	same_as_server(f, "/p/q/g", true);
	same_as_server(f, "/p/r/f", true);
	/* rmdir and mkdir again. */
	assert_int_equal(view_stat(f->v, P("/p/q/g"), true, &st), 0);
	assert_int_equal(ns_unlink(f->ns, &f->root, P("/p/q/g")), 0);
	assert_int_equal(ns_rmdir(f->ns, &f->root, P("/p/q")), 0);
	same_as_server(f, "/p/q/g", true);
	assert_int_equal(ns_mkdir(f->ns, &f->root, P("/p/q"), 0755, NULL), 0);
	mkfile(f, "/p/q/h");
	same_as_server(f, "/p/q/g", true);
	same_as_server(f, "/p/q/h", true);
	/* A prefix through a symlink is not cached; a changed link is seen. */
	assert_int_equal(ns_symlink(f->ns, &f->root, P("q"), P("/p/l")), 0);
	same_as_server(f, "/p/l/h", true);
	assert_false(prefix_cached(f, "/p/l/"));
	assert_int_equal(ns_unlink(f->ns, &f->root, P("/p/l")), 0);
	assert_int_equal(ns_symlink(f->ns, &f->root, P("r"), P("/p/l")), 0);
	same_as_server(f, "/p/l/h", true);
	same_as_server(f, "/p/l/f", true);
	/* ".." after a cached prefix walks up through the cached stack. */
	same_as_server(f, "/p/q/..", true);
	same_as_server(f, "/p/q/../r/f", true);
	assert_int_equal(view_stat(f->v, P("/p/q/.."), true, &st), 0);
	ns_attr pa;
	assert_int_equal(ns_stat(f->ns, &f->root, P("/p"), true, &pa), 0);
	assert_int_equal(st.st_ino, pa.ino);
}

/* Threads sharing one view (one client) share its prefix cache: with more
 * prefixes than entries they keep rewriting entries under each other, and
 * every answer must still be the file's own. */
#define PT_DIRS 100

#define PT_THREADS 4

struct pt_arg {
	struct view *v;
	const uint64_t *ino;
	unsigned seed;
	unsigned bad;
};

static void *pt_main(void *arg)
{
	struct pt_arg *a = arg;
	char p[64];
	unsigned x = a->seed;
	for (int n = 0; n < 20000; n++) {
		x = x * 1103515245u + 12345u;
		unsigned k = (x >> 8) % PT_DIRS;
		snprintf(p, sizeof(p), "/t/d%u/f", k);
		struct stat st;
		if (view_stat(a->v, p, strlen(p), true, &st) != 0 || st.st_ino != a->ino[k])
			a->bad++;
	}
	return NULL;
}

static void test_prefix_threads(void **state)
{
	struct fx *f = *state;
	static uint64_t ino[PT_DIRS];
	char p[64];
	assert_int_equal(ns_mkdir(f->ns, &f->root, P("/t"), 0755, NULL), 0);
	for (unsigned k = 0; k < PT_DIRS; k++) {
		snprintf(p, sizeof(p), "/t/d%u", k);
		assert_int_equal(ns_mkdir(f->ns, &f->root, P(p), 0755, NULL), 0);
		strcat(p, "/f");
		mkfile(f, p);
		ns_attr a;
		assert_int_equal(ns_stat(f->ns, &f->root, P(p), true, &a), 0);
		ino[k] = a.ino;
	}
	pthread_t th[PT_THREADS];
	struct pt_arg args[PT_THREADS];
	for (unsigned i = 0; i < PT_THREADS; i++) {
		args[i] = (struct pt_arg){ .v = f->v, .ino = ino, .seed = i + 1 };
		assert_int_equal(pthread_create(&th[i], NULL, pt_main, &args[i]), 0);
	}
	unsigned bad = 0;
	for (unsigned i = 0; i < PT_THREADS; i++) {
		pthread_join(th[i], NULL);
		bad += args[i].bad;
	}
	assert_int_equal(bad, 0);
	unsigned used = 0;
	for (unsigned k = 0; k < PREFIX_SLOTS; k++)
		used += f->v->prefixes[k].klen != 0;
	assert_true(used > PREFIX_SLOTS / 2);
}

/* A thread acting for other credentials (mc_cred_set) is checked with
 * them, before and after the first such thread; other threads keep the
 * view's own. */
static void *acting_peer(void *arg)
{
	struct fx *f = arg;
	struct stat st;
	return (void *)(intptr_t)view_stat(f->v, P("/priv/f"), true, &st);
}

static void test_acting_credentials(void **state)
{
	struct fx *f = *state;
	struct stat st;
	assert_int_equal(ns_mkdir(f->ns, &f->root, P("/priv"), 0700, NULL), 0);
	mkfile(f, "/priv/f");
	assert_int_equal(view_stat(f->v, P("/priv/f"), true, &st), 0);
	static const struct view_cred user = { .uid = 1000, .gid = 1000 };
	view_cred_act(&user);
	assert_true(view_cred_acting(&f->v->cred) == &user);
	assert_int_equal(view_stat(f->v, P("/priv/f"), true, &st), -EACCES);
	pthread_t t;
	void *rc;
	assert_int_equal(pthread_create(&t, NULL, acting_peer, f), 0);
	assert_int_equal(pthread_join(t, &rc), 0);
	assert_int_equal((intptr_t)rc, 0);   /* the view's own: root */
	view_cred_act(NULL);
	assert_true(view_cred_acting(&f->v->cred) == &f->v->cred);
	assert_int_equal(view_stat(f->v, P("/priv/f"), true, &st), 0);
	view_cred_act(&user);
	assert_int_equal(view_stat(f->v, P("/priv/f"), true, &st), -EACCES);
	view_cred_act(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rejects_bad_header),
		cmocka_unit_test_setup_teardown(test_stat_cached_paths, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bucket_hint_not_trusted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_negative_and_complete, setup, teardown),
		cmocka_unit_test_setup_teardown(test_permissions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bounds_fall_back, setup, teardown),
		cmocka_unit_test_setup_teardown(test_readlink_and_ino, setup, teardown),
		cmocka_unit_test_setup_teardown(test_readdir_pages, setup, teardown),
		cmocka_unit_test_setup_teardown(test_referenced_bits, setup, teardown),
		cmocka_unit_test(test_parse_and_hash),
		cmocka_unit_test(test_comp_make_and_load_part),
		cmocka_unit_test_setup_teardown(test_names_at_word_edges, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlink_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_offset_checks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prefix_cache, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prefix_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_acting_credentials, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
