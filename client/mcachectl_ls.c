/* mcachectl_ls.c - mcachectl ls and stat: the commands that print entries
 * and their attributes, as ls(1) and stat(1) do, or as --json objects. */
#include "mcachectl_ls.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mcachectl.h"
#include "mcachectl_fmt.h"

/* --json: append the attributes of path (listed as name) to json_doc. */
static void json_entry(mc_client *c, const char *name, const char *path, const struct stat *st)
{
	char target[4096];
	const char *t = NULL;
	if (S_ISLNK(st->st_mode)) {
		ssize_t n = mc_readlink(c, path, target, sizeof(target) - 1);
		if (n >= 0) {
			target[n] = '\0';
			t = target;
		}
	}
	json_t *o = stat_json(name, path, st, t);
	if (o == NULL || json_array_append_new(json_doc, o) != 0) {
		fprintf(stderr, "%s: %s\n", prog, strerror(ENOMEM));
		exit(EXIT_FAIL);
	}
}


static void ls_long(mc_client *c, const char *path, const char *name, const struct stat *st)
{
	char mode[11], when[64], ub[24], gb[24];
	mode_string(st->st_mode, mode);
	format_time(&st->st_mtim, when, sizeof(when), false);
	printf("%s %3ju %-8s %-8s %10jd %s %s", mode, (uintmax_t)st->st_nlink,
	       id_name(st->st_uid, true, ub), id_name(st->st_gid, false, gb),
	       (intmax_t)st->st_size, when, name);
	if (S_ISLNK(st->st_mode)) {
		char target[4096];
		ssize_t n = mc_readlink(c, path, target, sizeof(target));
		if (n >= 0)
			printf(" -> %.*s", (int)n, target);
	}
	putchar('\n');
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool ls_long_fmt, ls_all, ls_self, ls_recursive;

/* path/name, malloc'd; NULL after reporting ENOMEM against path. */
static char *ls_join(const char *path, const char *name)
{
	char *p = path_join(path, name);
	if (!p) {
		errno = ENOMEM;
		fail(path);
	}
	return p;
}

/* List the open directory d (closed here) at path; with -R, then each
 * subdirectory, under a "PATH:" heading as ls -R writes them. */
static int ls_dir(mc_client *c, const char *path, MC_DIR *d, bool heading)
{
	char **names = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	struct dirent *e;
	struct stat st;
	if (heading && !json_doc)
		printf("%s:\n", path);
	errno = 0;
	/* -a: the dot entries too, which the namespace does not store. */
	for (int dots = ls_all ? 2 : 0; dots > 0; dots--) {
		if (n == cap) {
			cap = 64;
			names = malloc(cap * sizeof(*names));
			if (!names)
				break;
		}
		names[n] = strdup(dots == 2 ? "." : "..");
		if (names[n])
			n++;
	}
	while ((e = mc_readdir(d))) {
		if (!ls_all && e->d_name[0] == '.')
			continue;   /* hidden, as ls hides them */
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			char **p = realloc(names, cap * sizeof(*p));
			if (!p) {
				errno = ENOMEM;
				break;
			}
			names = p;
		}
		if (!(names[n] = strdup(e->d_name))) {
			errno = ENOMEM;
			break;
		}
		n++;
	}
	if (errno)
		rc = failf("reading directory '%s'", path);
	mc_closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), cmp_str);
	if (ls_long_fmt && rc == 0 && !json_doc)
		printf("total 0\n");   /* no data blocks: mcache holds metadata */
	for (size_t i = 0; i < n; i++) {
		if (!ls_long_fmt && !json_doc) {
			printf("%s\n", names[i]);
			continue;
		}
		char *p = ls_join(path, names[i]);
		if (!p) {
			rc = EXIT_FAIL;
			break;
		}
		if (mc_lstat(c, p, &st) < 0)
			rc = failf("cannot access '%s'", p); /* removed meanwhile */
		else if (json_doc)
			json_entry(c, names[i], p, &st);
		else
			ls_long(c, p, names[i], &st);
		free(p);
	}
	for (size_t i = 0; i < n && ls_recursive; i++) {
		if (!strcmp(names[i], ".") || !strcmp(names[i], ".."))
			continue;
		char *p = ls_join(path, names[i]);
		if (!p) {
			rc = EXIT_FAIL;
			break;
		}
		if (mc_lstat(c, p, &st) == 0 && S_ISDIR(st.st_mode)) {
			MC_DIR *sub = mc_opendir(c, p);
			if (!json_doc)
				putchar('\n');
			if (!sub)
				rc = failf("cannot open directory '%s'", p);
			else if (ls_dir(c, p, sub, true) != 0)
				rc = EXIT_FAIL;
		}
		free(p);
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return rc;
}

int cmd_ls(int argc, char **argv)
{
	int opt;
	json_list = true;
	optind = 1;
	while ((opt = getopt(argc, argv, "+ladR")) != -1) {
		switch (opt) {
		case 'l': ls_long_fmt = true; break;
		case 'a': ls_all = true; break;
		case 'd': ls_self = true; break;
		case 'R': ls_recursive = true; break;
		default:
			usage_error("ls: invalid option -- '%c'", optopt);
			return EXIT_USAGE;
		}
	}
	if (argc - optind > 1) {
		usage_error("ls: too many arguments");
		return EXIT_USAGE;
	}
	const char *path = optind < argc ? argv[optind] : "/";
	mc_client *c = conn();

	struct stat st;
	MC_DIR *d = ls_self ? NULL : mc_opendir(c, path);
	if (!d) {
		/* As ls: exit 2 for a PATH it cannot reach or open (serious
		 * trouble), 1 for trouble below it. */
		int err = errno;
		if (mc_lstat(c, path, &st) < 0) {
			failf("cannot access '%s'", path);
			return EXIT_USAGE;
		}
		if (!ls_self && err != ENOTDIR) {
			errno = err;
			failf("cannot open directory '%s'", path);
			return EXIT_USAGE;
		}
		/* Not a directory, or -d: list the thing itself, as ls does. */
		if (json_doc)
			json_entry(c, path, path, &st);
		else if (ls_long_fmt)
			ls_long(c, path, path, &st);
		else
			printf("%s\n", path);
		return 0;
	}
	return ls_dir(c, path, d, ls_recursive);
}

static const char *stat_format;   /* stat -c FORMAT, or NULL */

static int stat_one(mc_client *c, const char *path)
{
	struct stat st;
	char mode[11], t[96];
	if (mc_lstat(c, path, &st) < 0)
		return failf("cannot stat '%s'", path);
	if (json_doc) {
		json_entry(c, path, path, &st);
		return 0;
	}
	if (stat_format) {
		stat_print_format(stat_format, path, &st);
		return 0;
	}
	printf("  File: %s", path);
	if (S_ISLNK(st.st_mode)) {
		char target[4096];
		ssize_t n = mc_readlink(c, path, target, sizeof(target));
		if (n >= 0)
			printf(" -> %.*s", (int)n, target);
	}
	printf("\n  Size: %-15jd Blocks: %-10jd IO Block: %-6ld %s\n", (intmax_t)st.st_size,
	       (intmax_t)st.st_blocks, (long)st.st_blksize, type_name(&st));
	printf("Device: %jxh/%jud\tInode: %-11ju Links: %ju\n", (uintmax_t)st.st_dev,
	       (uintmax_t)st.st_dev, (uintmax_t)st.st_ino, (uintmax_t)st.st_nlink);
	mode_string(st.st_mode, mode);
	printf("Access: (%04o/%s)  ", (unsigned)(st.st_mode & 07777), mode);
	print_id("Uid", (unsigned long)st.st_uid, true);
	printf("   ");
	print_id("Gid", (unsigned long)st.st_gid, false);
	putchar('\n');
	format_time(&st.st_atim, t, sizeof(t), true);
	printf("Access: %s\n", t);
	format_time(&st.st_mtim, t, sizeof(t), true);
	printf("Modify: %s\n", t);
	format_time(&st.st_ctim, t, sizeof(t), true);
	printf("Change: %s\n", t);
	return 0;
}

int cmd_stat(int argc, char **argv)
{
	int opt;
	optind = 1;
	while ((opt = getopt(argc, argv, "+c:")) != -1) {
		if (opt != 'c') {
			usage_error("stat: invalid option -- '%c' or missing FORMAT", optopt);
			return EXIT_USAGE;
		}
		stat_format = optarg;
	}
	return each_path(argc, argv, stat_one, optind);
}
