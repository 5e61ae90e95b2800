/* mcachectl_fmt.c - how mcachectl reads and writes modes, times, user and
 * group ids, and paths (see mcachectl_fmt.h). */
#include "mcachectl_fmt.h"

#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int parse_mode(const char *s, mode_t *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 8);
	if (!*s || *end || errno || v > 07777)
		return -1;
	*out = (mode_t)v;
	return 0;
}

mode_t current_umask(void)
{
	mode_t m = umask(0);
	umask(m);
	return m;
}

void mode_string(mode_t m, char out[11])
{
	char t = '?';
	switch (m & S_IFMT) {
	case S_IFREG: t = '-'; break;
	case S_IFDIR: t = 'd'; break;
	case S_IFLNK: t = 'l'; break;
	case S_IFCHR: t = 'c'; break;
	case S_IFBLK: t = 'b'; break;
	case S_IFIFO: t = 'p'; break;
	case S_IFSOCK: t = 's'; break;
	}
	out[0] = t;
	out[1] = m & S_IRUSR ? 'r' : '-';
	out[2] = m & S_IWUSR ? 'w' : '-';
	out[3] = m & S_ISUID ? (m & S_IXUSR ? 's' : 'S') : (m & S_IXUSR ? 'x' : '-');
	out[4] = m & S_IRGRP ? 'r' : '-';
	out[5] = m & S_IWGRP ? 'w' : '-';
	out[6] = m & S_ISGID ? (m & S_IXGRP ? 's' : 'S') : (m & S_IXGRP ? 'x' : '-');
	out[7] = m & S_IROTH ? 'r' : '-';
	out[8] = m & S_IWOTH ? 'w' : '-';
	out[9] = m & S_ISVTX ? (m & S_IXOTH ? 't' : 'T') : (m & S_IXOTH ? 'x' : '-');
	out[10] = 0;
}

const char *type_name(const struct stat *st)
{
	switch (st->st_mode & S_IFMT) {
	case S_IFREG: return st->st_size ? "regular file" : "regular empty file";
	case S_IFDIR: return "directory";
	case S_IFLNK: return "symbolic link";
	case S_IFCHR: return "character special file";
	case S_IFBLK: return "block special file";
	case S_IFIFO: return "fifo";
	case S_IFSOCK: return "socket";
	}
	return "weird file";
}

void format_time(const struct timespec *ts, char *buf, size_t size, bool full)
{
	struct tm tm;
	time_t t = ts->tv_sec;
	if (!localtime_r(&t, &tm)) {
		snprintf(buf, size, "%lld", (long long)t);
		return;
	}
	if (!full) {
		strftime(buf, size, "%Y-%m-%d %H:%M", &tm);
		return;
	}
	char a[64], z[16];
	strftime(a, sizeof(a), "%Y-%m-%d %H:%M:%S", &tm);
	strftime(z, sizeof(z), "%z", &tm);
	snprintf(buf, size, "%s.%09ld %s", a, ts->tv_nsec, z);
}

/* dir + "/" + name into a malloc'd string (NULL on ENOMEM). */
char *path_join(const char *dir, const char *name)
{
	size_t dl = strlen(dir);
	bool slash = dl > 0 && dir[dl - 1] == '/';
	size_t n = dl + !slash + strlen(name) + 1;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s%s%s", dir, slash ? "" : "/", name);
	return p;
}

/* A user or group name, or the number when it has none. */
const char *id_name(unsigned long id, bool user, char buf[24])
{
	if (user) {
		struct passwd *pw = getpwuid((uid_t)id);
		if (pw)
			return pw->pw_name;
	} else {
		struct group *gr = getgrgid((gid_t)id);
		if (gr)
			return gr->gr_name;
	}
	snprintf(buf, 24, "%lu", id);
	return buf;
}

/* A user or group by name or number. */
int parse_id(const char *s, bool user, unsigned long *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (*s && !*end && !errno && v < 0xffffffffUL) {
		*out = v;
		return 0;
	}
	if (user) {
		struct passwd *pw = getpwnam(s);
		if (pw) {
			*out = pw->pw_uid;
			return 0;
		}
	} else {
		struct group *gr = getgrnam(s);
		if (gr) {
			*out = gr->gr_gid;
			return 0;
		}
	}
	return -1;
}


/* One %-directive of stat -c. */
static void stat_directive(char d, const char *path, const struct stat *st)
{
	char buf[96], ub[24];
	switch (d) {
	case 'n': fputs(path, stdout); break;
	case 's': printf("%jd", (intmax_t)st->st_size); break;
	case 'b': printf("%jd", (intmax_t)st->st_blocks); break;
	case 'B': fputs("512", stdout); break;
	case 'f': printf("%x", (unsigned)st->st_mode); break;
	case 'a': printf("%o", (unsigned)(st->st_mode & 07777)); break;
	case 'A': mode_string(st->st_mode, buf); fputs(buf, stdout); break;
	case 'F': fputs(type_name(st), stdout); break;
	case 'h': printf("%ju", (uintmax_t)st->st_nlink); break;
	case 'i': printf("%ju", (uintmax_t)st->st_ino); break;
	case 'u': printf("%ju", (uintmax_t)st->st_uid); break;
	case 'U': fputs(id_name(st->st_uid, true, ub), stdout); break;
	case 'g': printf("%ju", (uintmax_t)st->st_gid); break;
	case 'G': fputs(id_name(st->st_gid, false, ub), stdout); break;
	case 'X': printf("%jd", (intmax_t)st->st_atim.tv_sec); break;
	case 'Y': printf("%jd", (intmax_t)st->st_mtim.tv_sec); break;
	case 'Z': printf("%jd", (intmax_t)st->st_ctim.tv_sec); break;
	case 'x': format_time(&st->st_atim, buf, sizeof(buf), true); fputs(buf, stdout); break;
	case 'y': format_time(&st->st_mtim, buf, sizeof(buf), true); fputs(buf, stdout); break;
	case 'z': format_time(&st->st_ctim, buf, sizeof(buf), true); fputs(buf, stdout); break;
	case '%': putchar('%'); break;
	default: putchar('?'); break;
	}
}

void stat_print_format(const char *fmt, const char *path, const struct stat *st)
{
	for (const char *p = fmt; *p; p++) {
		if (*p != '%') {
			putchar(*p);
		} else if (p[1] == '\0') {
			putchar('%');
		} else {
			stat_directive(p[1], path, st);
			p++;
		}
	}
	putchar('\n');
}

void print_id(const char *label, unsigned long id, bool user)
{
	const char *name = NULL;
	if (user) {
		struct passwd *pw = getpwuid((uid_t)id);
		name = pw ? pw->pw_name : NULL;
	} else {
		struct group *gr = getgrgid((gid_t)id);
		name = gr ? gr->gr_name : NULL;
	}
	printf("%s: (%5lu/%8s)", label, id, name ? name : "UNKNOWN");
}

json_t *stat_json(const char *name, const char *path, const struct stat *st, const char *target)
{
	char mode[11], ub[24], gb[24], at[96], mt[96], ct[96];
	mode_string(st->st_mode, mode);
	format_time(&st->st_atim, at, sizeof(at), true);
	format_time(&st->st_mtim, mt, sizeof(mt), true);
	format_time(&st->st_ctim, ct, sizeof(ct), true);
	json_t *o = json_pack("{s:s,s:s,s:s,s:i,s:s,s:I,s:I,s:I,s:s,s:I,s:s,s:I,s:s,s:s,s:s}",
	                      "name", name, "path", path, "type", type_name(st),
	                      "mode", (int)(st->st_mode & 07777), "mode_string", mode,
	                      "ino", (json_int_t)st->st_ino, "nlink", (json_int_t)st->st_nlink,
	                      "uid", (json_int_t)st->st_uid, "user", id_name(st->st_uid, true, ub),
	                      "gid", (json_int_t)st->st_gid, "group", id_name(st->st_gid, false, gb),
	                      "size", (json_int_t)st->st_size, "atime", at, "mtime", mt, "ctime", ct);
	if (o && target && json_object_set_new(o, "target", json_string(target)) != 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}
