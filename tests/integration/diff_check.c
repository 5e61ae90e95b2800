/* diff_check.c - the differential test's verdicts (see test-diff.c): the
 * one-to-one map between kernel and mcache inode numbers, the history of
 * operations, the report of a mismatch, and the comparison of two results
 * and two sets of attributes. */
#include "diff.h"

/* ---- inode number map: kernel ino <-> mcache ino must be one-to-one ------- */

void inomap_free(struct inomap *m)
{
	free(m->key);
	free(m->val);
	memset(m, 0, sizeof(*m));
}

static size_t inomap_slot(const struct inomap *m, uint64_t key)
{
	size_t i = (size_t)(key * 0x9e3779b97f4a7c15ull) & (m->cap - 1);
	while (m->key[i] && m->key[i] != key)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static void inomap_put(struct inomap *m, uint64_t key, uint64_t val)
{
	if (2 * (m->n + 1) > m->cap) {
		struct inomap g = { 0 };
		g.cap = m->cap ? 2 * m->cap : 1024;
		g.key = calloc(g.cap, sizeof(uint64_t));
		g.val = calloc(g.cap, sizeof(uint64_t));
		assert_non_null(g.key);
		assert_non_null(g.val);
		for (size_t i = 0; i < m->cap; i++)
			if (m->key[i])
				inomap_put(&g, m->key[i], m->val[i]);
		inomap_free(m);
		*m = g;
	}
	size_t i = inomap_slot(m, key);
	if (!m->key[i])
		m->n++;
	m->key[i] = key;
	m->val[i] = val;
}

/* 0 if key is absent. */
static uint64_t inomap_get(const struct inomap *m, uint64_t key)
{
	if (!m->cap)
		return 0;
	size_t i = inomap_slot(m, key);
	return m->key[i] ? m->val[i] : 0;
}

void diff_note(struct diff *d, const char *fmt, ...)
{
	va_list ap;
	d->last = (long)d->op;
	va_start(ap, fmt);
	vsnprintf(d->hist[d->op % HISTORY], DESC_MAX, fmt, ap);
	va_end(ap);
}

static void print_server_log(const struct diff *d)
{
	FILE *f = fopen(d->srv.log, "r");
	if (!f)
		return;
	char line[512];
	long n = 0;
	while (fgets(line, sizeof(line), f))
		n++;
	rewind(f);
	long skip = n > 20 ? n - 20 : 0;
	fprintf(stderr, "last lines of the server log %s:\n", d->srv.log);
	for (long i = 0; fgets(line, sizeof(line), f); i++)
		if (i >= skip)
			fprintf(stderr, "  %s%s", line, strchr(line, '\n') ? "" : "\n");
	fclose(f);
}

/* Report the first mismatch of a case: what differed, the seed, the index,
 * and the operations leading up to it. Later calls only return -1. */
int diff_fail(struct diff *d, const char *fmt, ...)
{
	if (d->mismatch)
		return -1;
	d->mismatch = true;
	char msg[2 * DESC_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* The verdict goes to the TAP stream; with the history and the server
	 * log also to stderr, which meson --print-errorlogs shows. */
	char repro[160];
	snprintf(repro, sizeof(repro), "reproduce: MCACHE_DIFF_SEED=%llu MCACHE_DIFF_OPS=%ld "
	         "(the second case runs seed+1: give it seed-1)",
	         (unsigned long long)d->seed, d->last + 1);
	printf("# MISMATCH seed=%llu op=%ld: %s\n# %s\n", (unsigned long long)d->seed, d->last,
	       msg, repro);
	fflush(stdout);
	fprintf(stderr, "MISMATCH seed=%llu op=%ld: %s\n", (unsigned long long)d->seed, d->last, msg);
	fprintf(stderr, "the last operations (index: op):\n");
	long first = d->last >= HISTORY - 1 ? d->last - (HISTORY - 1) : 0;
	for (long i = first; i <= d->last; i++)
		fprintf(stderr, "  %ld: %s\n", i, d->hist[i % HISTORY]);
	fprintf(stderr, "%s\n", repro);
	print_server_log(d);
	return -1;
}

/* ---- results ------------------------------------------------------------ */

/* errno is read after the call whose value is passed has returned. */
struct res res_of(long ret)
{
	struct res r = { ret, ret < 0 ? errno : 0 };
	return r;
}

static const char *res_str(struct res r, char *buf, size_t cap)
{
	if (r.ret >= 0)
		snprintf(buf, cap, "%ld", r.ret);
	else
		snprintf(buf, cap, "-1 %s (%s)", strerrorname_np(r.err) ? strerrorname_np(r.err) : "?",
		         strerror(r.err));
	return buf;
}

/* Both succeeded, or both failed with the same errno. When exact, the
 * success values must be equal too (readlink lengths). */
/* With keep_going, a mismatch where both sides failed (with different errno)
 * is printed once per kind and counted but does not stop the run: a failed
 * call changes nothing on either side, so the trees stay comparable. */
static bool soft_mismatch(struct diff *d, struct res k, struct res m)
{
	if (!d->keep_going || k.ret >= 0 || m.ret >= 0)
		return false;
	char key[96], kb[128], mb[128];
	const char *desc = d->hist[d->op % HISTORY];
	snprintf(key, sizeof(key), "%.*s %d %d", (int)strcspn(desc, " "), desc, k.err, m.err);
	d->soft++;
	for (size_t i = 0; i < d->nsoft_seen; i++)
		if (!strcmp(d->soft_seen[i], key))
			return true;
	d->soft_seen = realloc(d->soft_seen, (d->nsoft_seen + 1) * sizeof(*d->soft_seen));
	assert_non_null(d->soft_seen);
	snprintf(d->soft_seen[d->nsoft_seen++], sizeof(*d->soft_seen), "%s", key);
	printf("# errno mismatch (going on) seed=%llu op=%lu: %s: kernel %s, mcache %s\n",
	       (unsigned long long)d->seed, d->op, desc, res_str(k, kb, sizeof(kb)),
	       res_str(m, mb, sizeof(mb)));
	fprintf(stderr, "errno mismatch (going on) seed=%llu op=%lu: %s: kernel %s, mcache %s\n",
	        (unsigned long long)d->seed, d->op, desc, kb, mb);
	return true;
}

int res_check(struct diff *d, struct res k, struct res m, bool exact)
{
	bool ks = k.ret >= 0, ms = m.ret >= 0;
	if (ks == ms && (ks ? !exact || k.ret == m.ret : k.err == m.err))
		return 0;
	if (soft_mismatch(d, k, m))
		return 0;
	char kb[128], mb[128];
	return diff_fail(d, "%s: kernel %s, mcache %s", d->hist[d->op % HISTORY],
	                 res_str(k, kb, sizeof(kb)), res_str(m, mb, sizeof(mb)));
}

static int ino_check(struct diff *d, const char *what, uint64_t kino, uint64_t mino)
{
	uint64_t m = inomap_get(&d->k2m, kino);
	uint64_t k = inomap_get(&d->m2k, mino);
	if (m && m != mino)
		return diff_fail(d, "%s: kernel ino %llu was mcache ino %llu before, now %llu", what,
		                 (unsigned long long)kino, (unsigned long long)m,
		                 (unsigned long long)mino);
	if (k && k != kino)
		return diff_fail(d, "%s: mcache ino %llu was kernel ino %llu before, now %llu", what,
		                 (unsigned long long)mino, (unsigned long long)k,
		                 (unsigned long long)kino);
	if (!mino)
		return diff_fail(d, "%s: mcache ino is 0", what);
	if (!m) {
		inomap_put(&d->k2m, kino, mino);
		inomap_put(&d->m2k, mino, kino);
	}
	return 0;
}

int attr_check(struct diff *d, const char *what, const struct stat *k, const struct stat *m)
{
	if (k->st_mode != m->st_mode || k->st_nlink != m->st_nlink || k->st_size != m->st_size ||
	    k->st_uid != m->st_uid || k->st_gid != m->st_gid)
		return diff_fail(d,
		                 "%s: kernel mode 0%o nlink %lu size %lld uid %u gid %u, "
		                 "mcache mode 0%o nlink %lu size %lld uid %u gid %u",
		                 what, (unsigned)k->st_mode, (unsigned long)k->st_nlink,
		                 (long long)k->st_size, (unsigned)k->st_uid, (unsigned)k->st_gid,
		                 (unsigned)m->st_mode, (unsigned long)m->st_nlink,
		                 (long long)m->st_size, (unsigned)m->st_uid, (unsigned)m->st_gid);
	return ino_check(d, what, (uint64_t)k->st_ino, (uint64_t)m->st_ino);
}

/* "/" + rel: the mcache side of a kernel path relative to kfd. */
void mpath(const char *rel, char *out, size_t cap)
{
	snprintf(out, cap, "/%s", rel);
}
