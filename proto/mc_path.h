/* mc_path.h - the path and permission rules that the server's namespace
 * (server/walk.c) and the client's shared-memory walk (client/shmview.c)
 * must apply identically: splitting a path into components, and Linux's
 * generic_permission(). */
#ifndef MC_PATH_H
#define MC_PATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#define MC_MAY_EXEC  1
#define MC_MAY_WRITE 2
#define MC_MAY_READ  4

/* What the last component of a path is. */
enum mc_last { MC_LAST_NORM, MC_LAST_ROOT, MC_LAST_DOT, MC_LAST_DOTDOT };

struct mc_comp {
	const char *name;
	size_t len;
	bool last;       /* nothing but slashes follows */
	bool slash;      /* the last component was followed by slashes */
};

/* The next component of the path at *p (before end), skipping slashes.
 * false when only slashes were left. */
static inline bool mc_path_next(const char **p, const char *end, struct mc_comp *c)
{
	const char *s = *p;
	while (s < end && *s == '/')
		s++;
	if (s == end)
		return false;
	const char *e = memchr(s, '/', (size_t)(end - s));
	if (!e)
		e = end;
	const char *q = e;
	while (q < end && *q == '/')
		q++;
	c->name = s;
	c->len = (size_t)(e - s);
	c->last = q == end;
	c->slash = e < end;
	*p = e;
	return true;
}

static inline enum mc_last mc_comp_type(const char *name, size_t len)
{
	if (len == 1 && name[0] == '.')
		return MC_LAST_DOT;
	if (len == 2 && name[0] == '.' && name[1] == '.')
		return MC_LAST_DOTDOT;
	return MC_LAST_NORM;
}

static inline bool mc_in_group(uint32_t gid, const uint32_t *groups, int ngroups, uint32_t g)
{
	if (gid == g)
		return true;
	for (int i = 0; i < ngroups; i++)
		if (groups[i] == g)
			return true;
	return false;
}

/* generic_permission(): may (uid, gid, groups) access an inode of mode,
 * owner and group with mask (MC_MAY_*)? Root passes reads and writes, and
 * exec where any exec bit is set or on a directory. 0 or -EACCES (13). */
static inline int mc_permission(uint32_t uid, uint32_t gid, const uint32_t *groups, int ngroups,
                                uint32_t mode, uint32_t owner, uint32_t group, int mask)
{
	if (uid == 0) {
		if (!(mask & MC_MAY_EXEC) || S_ISDIR(mode) || (mode & 0111))
			return 0;
		return -13;
	}
	unsigned bits;
	if (uid == owner)
		bits = (mode >> 6) & 7;
	else if (mc_in_group(gid, groups, ngroups, group))
		bits = (mode >> 3) & 7;
	else
		bits = mode & 7;
	return ((unsigned)mask & ~bits) ? -13 : 0;
}

#endif
