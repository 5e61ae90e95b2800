/* mcachectl_fmt.h - how mcachectl reads and writes modes, times, user and
 * group ids, and paths. */
#ifndef MCACHECTL_FMT_H
#define MCACHECTL_FMT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <time.h>

#include <jansson.h>

/* Octal permission bits (at most 07777). 0, or -1 if s is not one. */
int parse_mode(const char *s, mode_t *out);
/* The process's umask, left unchanged. */
mode_t current_umask(void);
/* "drwxr-xr-x" for a mode, as ls -l writes it. */
void mode_string(mode_t m, char out[11]);
/* "regular empty file", "directory"..., as stat(1) names the type. */
const char *type_name(const struct stat *st);
/* Local time "YYYY-MM-DD HH:MM", or with seconds, nanoseconds and zone. */
void format_time(const struct timespec *ts, char *buf, size_t size, bool full);
/* dir + "/" + name in a malloc'd string; NULL when out of memory. */
char *path_join(const char *dir, const char *name);
/* A user (user true) or group name for id, or the number when it has none;
 * the result is in buf or in the passwd/group database's static storage. */
const char *id_name(unsigned long id, bool user, char buf[24]);
/* A user or group by name or number. 0 and *out, or -1 if unknown. */
int parse_id(const char *s, bool user, unsigned long *out);
/* "Uid: (  ID/  name)" as stat(1) prints it (label "Uid" or "Gid"). */
void print_id(const char *label, unsigned long id, bool user);
/* stat -c FORMAT for path: %n %s %b %B %f %a %A %F %h %i %u %U %g %G
 * %X %Y %Z %x %y %z %% as stat(1) expands them ('?' for others), then a
 * newline, on stdout. */
void stat_print_format(const char *fmt, const char *path, const struct stat *st);
/* --json: one entry's attributes as an object ("name", "path", "type",
 * "mode", "mode_string", "ino", "nlink", "uid", "user", "gid", "group",
 * "size", "atime", "mtime", "ctime", and "target" when not NULL); NULL when
 * out of memory. */
json_t *stat_json(const char *name, const char *path, const struct stat *st, const char *target);

#endif
