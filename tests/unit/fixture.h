/* fixture.h - the temporary-directory helpers the unit test fixtures share
 * (header only: each test program is one source file). */
#ifndef MC_TEST_FIXTURE_H
#define MC_TEST_FIXTURE_H

#include <ftw.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

/* The mkdtemp template "$TMPDIR/name-XXXXXX" (/tmp when TMPDIR is unset or
 * empty) into buf. */
static inline void fixture_template(char *buf, size_t size, const char *name)
{
	const char *base = getenv("TMPDIR");
	snprintf(buf, size, "%s/%s-XXXXXX", base && *base ? base : "/tmp", name);
}

static inline int fixture_rm_one(const char *path, const struct stat *st, int flag,
                                 struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

/* Remove dir and everything under it (errors ignored). */
static inline void fixture_rmtree(const char *dir)
{
	nftw(dir, fixture_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

#endif
