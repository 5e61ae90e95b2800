/* diff_ops.c - the operations of the differential test (see test-diff.c):
 * each picks its paths and modes, applies the call to the kernel directory
 * and to mcache, and compares the results and what they reveal. */
#include "diff.h"

/* ---- operations ----------------------------------------------------------- */

int op_mkdir(struct diff *d)
{
	char p[REL_MAX], mp[REL_MAX + 2];
	gen_path(d, p, sizeof(p));
	mode_t mode = gen_dir_mode(d);
	mpath(p, mp, sizeof(mp));
	diff_note(d, "mkdir \"%s\" 0%o", p, (unsigned)mode);
	struct res k = res_of(mkdirat(d->kfd, p, mode));
	struct res m = res_of(mc_mkdir(d->mc, mp, mode));
	return res_check(d, k, m, false);
}

int op_rmdir(struct diff *d)
{
	char p[REL_MAX], mp[REL_MAX + 2];
	gen_path(d, p, sizeof(p));
	mpath(p, mp, sizeof(mp));
	diff_note(d, "rmdir \"%s\"", p);
	struct res k = res_of(unlinkat(d->kfd, p, AT_REMOVEDIR));
	struct res m = res_of(mc_rmdir(d->mc, mp));
	return res_check(d, k, m, false);
}

int op_unlink(struct diff *d)
{
	char p[REL_MAX], mp[REL_MAX + 2];
	gen_path(d, p, sizeof(p));
	mpath(p, mp, sizeof(mp));
	diff_note(d, "unlink \"%s\"", p);
	struct res k = res_of(unlinkat(d->kfd, p, 0));
	struct res m = res_of(mc_unlink(d->mc, mp));
	return res_check(d, k, m, false);
}

/* Open on both sides with the same flags; on success compare fstat of the
 * two descriptors, then close both. */
static int open_both(struct diff *d, const char *p, int flags, mode_t mode, bool use_creat)
{
	char mp[REL_MAX + 2];
	mpath(p, mp, sizeof(mp));
	struct res k = res_of(openat(d->kfd, p, flags | O_CLOEXEC, mode));
	struct res m = res_of(use_creat ? mc_creat(d->mc, mp, mode) : mc_open(d->mc, mp, flags, mode));
	int rc = res_check(d, k, m, false);
	if (rc == 0 && k.ret >= 0) {
		struct stat ks, ms;
		assert_int_equal(fstat((int)k.ret, &ks), 0);
		if (mc_fstat(d->mc, (int)m.ret, &ms) < 0)
			rc = diff_fail(d, "%s: mc_fstat on the new descriptor: %s",
			               d->hist[d->op % HISTORY], strerror(errno));
		else
			rc = attr_check(d, d->hist[d->op % HISTORY], &ks, &ms);
	}
	if (k.ret >= 0)
		close((int)k.ret);
	if (m.ret >= 0 && mc_close(d->mc, (int)m.ret) < 0)
		rc = diff_fail(d, "%s: mc_close: %s", d->hist[d->op % HISTORY], strerror(errno));
	return rc;
}

int op_creat(struct diff *d)
{
	char p[REL_MAX];
	gen_path(d, p, sizeof(p));
	mode_t mode = gen_file_mode(d);
	if (rng_pct(&d->rng, 50)) {
		diff_note(d, "creat \"%s\" 0%o", p, (unsigned)mode);
		return open_both(d, p, O_CREAT | O_WRONLY | O_TRUNC, mode, true);
	}
	diff_note(d, "open \"%s\" O_CREAT|O_EXCL|O_WRONLY 0%o", p, (unsigned)mode);
	return open_both(d, p, O_CREAT | O_EXCL | O_WRONLY, mode, false);
}

int op_open(struct diff *d)
{
	static const int acc[] = { O_RDONLY, O_WRONLY, O_RDWR };
	char p[REL_MAX], fl[128];
	gen_path(d, p, sizeof(p));
	int a = acc[rng_below(&d->rng, 3)];
	int flags = a;
	/* O_CREAT|O_DIRECTORY is EINVAL on Linux >= 6.4 and not before: never
	 * generated. O_TRUNC only with write access (O_RDONLY|O_TRUNC is
	 * unspecified). O_EXCL only with O_CREAT. */
	if (rng_pct(&d->rng, 35)) {
		flags |= O_CREAT;
		if (rng_pct(&d->rng, 50))
			flags |= O_EXCL;
	} else if (rng_pct(&d->rng, 30)) {
		flags |= O_DIRECTORY;
	}
	if (a != O_RDONLY && rng_pct(&d->rng, 25))
		flags |= O_TRUNC;
	if (rng_pct(&d->rng, 25))
		flags |= O_NOFOLLOW;
	mode_t mode = gen_file_mode(d);
	snprintf(fl, sizeof(fl), "%s%s%s%s%s%s", a == O_RDONLY ? "O_RDONLY" : a == O_WRONLY ? "O_WRONLY" : "O_RDWR",
	         flags & O_CREAT ? "|O_CREAT" : "", flags & O_EXCL ? "|O_EXCL" : "",
	         flags & O_TRUNC ? "|O_TRUNC" : "", flags & O_DIRECTORY ? "|O_DIRECTORY" : "",
	         flags & O_NOFOLLOW ? "|O_NOFOLLOW" : "");
	diff_note(d, "open \"%s\" %s 0%o", p, fl, (unsigned)mode);
	return open_both(d, p, flags, mode, false);
}

int op_rename(struct diff *d)
{
	char p[REL_MAX], q[REL_MAX], mp[REL_MAX + 2], mq[REL_MAX + 2];
	gen_path(d, p, sizeof(p));
	unsigned r = rng_below(&d->rng, 100);
	if (r < 20) {
		/* into its own subtree */
		snprintf(q, sizeof(q), "%s", p);
		append(q, sizeof(q), "/");
		append(q, sizeof(q), rand_name(d));
	} else if (r < 27) {
		snprintf(q, sizeof(q), "%s", p);  /* onto itself */
	} else {
		gen_path(d, q, sizeof(q));
	}
	mpath(p, mp, sizeof(mp));
	mpath(q, mq, sizeof(mq));
	diff_note(d, "rename \"%s\" \"%s\"", p, q);
	struct res k = res_of(renameat(d->kfd, p, d->kfd, q));
	struct res m = res_of(mc_rename(d->mc, mp, mq));
	return res_check(d, k, m, false);
}

int op_link(struct diff *d)
{
	char p[REL_MAX], q[REL_MAX], mp[REL_MAX + 2], mq[REL_MAX + 2];
	gen_path(d, p, sizeof(p));
	gen_path(d, q, sizeof(q));
	mpath(p, mp, sizeof(mp));
	mpath(q, mq, sizeof(mq));
	diff_note(d, "link \"%s\" \"%s\"", p, q);
	/* link(2) does not follow a symlink at oldpath; linkat without
	 * AT_SYMLINK_FOLLOW is the same. */
	struct res k = res_of(linkat(d->kfd, p, d->kfd, q, 0));
	struct res m = res_of(mc_link(d->mc, mp, mq));
	return res_check(d, k, m, false);
}

int op_symlink(struct diff *d)
{
	char t[REL_MAX], p[REL_MAX], mp[REL_MAX + 2];
	gen_target(d, t, sizeof(t));
	gen_path(d, p, sizeof(p));
	mpath(p, mp, sizeof(mp));
	diff_note(d, "symlink \"%s\" -> \"%s\"", p, t);
	struct res k = res_of(symlinkat(t, d->kfd, p));
	struct res m = res_of(mc_symlink(d->mc, t, mp));
	return res_check(d, k, m, false);
}

int op_stat(struct diff *d, bool follow)
{
	char p[REL_MAX], mp[REL_MAX + 2];
	gen_path(d, p, sizeof(p));
	mpath(p, mp, sizeof(mp));
	diff_note(d, "%s \"%s\"", follow ? "stat" : "lstat", p);
	struct stat ks, ms;
	struct res k = res_of(fstatat(d->kfd, p, &ks, follow ? 0 : AT_SYMLINK_NOFOLLOW));
	struct res m = res_of(follow ? mc_stat(d->mc, mp, &ms) : mc_lstat(d->mc, mp, &ms));
	if (res_check(d, k, m, false) < 0)
		return -1;
	if (k.ret < 0)
		return 0;
	return attr_check(d, d->hist[d->op % HISTORY], &ks, &ms);
}

int op_readlink(struct diff *d)
{
	char p[REL_MAX], mp[REL_MAX + 2], kb[4096], mb[4096];
	gen_path(d, p, sizeof(p));
	mpath(p, mp, sizeof(mp));
	size_t size = rng_pct(&d->rng, 15) ? 1 + rng_below(&d->rng, 3) : sizeof(kb);
	diff_note(d, "readlink \"%s\" bufsize %zu", p, size);
	struct res k = res_of(readlinkat(d->kfd, p, kb, size));
	struct res m = res_of(mc_readlink(d->mc, mp, mb, size));
	if (res_check(d, k, m, true) < 0)
		return -1;
	if (k.ret > 0 && memcmp(kb, mb, (size_t)k.ret) != 0)
		return diff_fail(d, "%s: kernel \"%.*s\", mcache \"%.*s\"", d->hist[d->op % HISTORY],
		                 (int)k.ret, kb, (int)m.ret, mb);
	return 0;
}

int op_chmod(struct diff *d)
{
	char p[REL_MAX], mp[REL_MAX + 2];
	gen_path(d, p, sizeof(p));
	mpath(p, mp, sizeof(mp));
	mode_t mode = gen_chmod_mode(d);
	diff_note(d, "chmod \"%s\" 0%o", p, (unsigned)mode);
	struct res k = res_of(fchmodat(d->kfd, p, mode, 0));
	struct res m = res_of(mc_chmod(d->mc, mp, mode));
	return res_check(d, k, m, false);
}

int op_truncate(struct diff *d)
{
	static const off_t sizes[] = { 0, 1, 7, 100, 4096, 100000, -1 };
	char p[REL_MAX], mp[REL_MAX + 2];
	gen_path(d, p, sizeof(p));
	mpath(p, mp, sizeof(mp));
	off_t len = sizes[rng_below(&d->rng, sizeof(sizes) / sizeof(sizes[0]))];
	diff_note(d, "truncate \"%s\" %lld", p, (long long)len);
	/* truncate(2) has no *at form: use the absolute kernel path. */
	char kp[sizeof(d->kdir) + REL_MAX + 2];
	snprintf(kp, sizeof(kp), "%s/%s", d->kdir, p);
	struct res k = res_of(truncate(kp, len));
	struct res m = res_of(mc_truncate(d->mc, mp, len));
	return res_check(d, k, m, false);
}

/* Kernel side of mc_rmtree: lstat the path; unlink a non-directory, or
 * empty a directory depth first and remove it. 0 or -1 with errno. */
static int krmtree(int at, const char *path)
{
	struct stat st;
	if (fstatat(at, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(at, path, 0);
	int fd = openat(at, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	DIR *dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return -1;
	}
	char **names = NULL;
	size_t n = 0;
	struct dirent *de;
	while ((de = readdir(dir))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		names = realloc(names, (n + 1) * sizeof(*names));
		assert_non_null(names);
		names[n] = strdup(de->d_name);
		assert_non_null(names[n]);
		n++;
	}
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		if (rc == 0 && krmtree(dirfd(dir), names[i]) < 0)
			rc = -1;
		free(names[i]);
	}
	free(names);
	int saved = errno;
	closedir(dir);
	errno = saved;
	if (rc < 0)
		return -1;
	return unlinkat(at, path, AT_REMOVEDIR);
}

int op_rmtree(struct diff *d)
{
	char p[REL_MAX], mp[REL_MAX + 2];
	gen_plain(d, p, sizeof(p));
	mpath(p, mp, sizeof(mp));
	diff_note(d, "rmtree \"%s\"", p);
	struct res k = res_of(krmtree(d->kfd, p));
	struct res m = res_of(mc_rmtree(d->mc, mp));
	return res_check(d, k, m, false);
}
