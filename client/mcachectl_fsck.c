/* mcachectl_fsck.c - `mcachectl fsck` (mcachectl_fsck.h). Both ways of
 * checking give the same JSON report (server/fsck.h): the server's through
 * mc_server_fsck, the offline one from fsck_offline linked in from the
 * server's modules; one printer reads it. */
#include "mcachectl_fsck.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsck.h"
#include "mcache.h"

#define FSCK_EXIT_CLEAN    0
#define FSCK_EXIT_PROBLEMS 1
#define FSCK_EXIT_ERROR    2

/* The report of the store in dir, as JSON; NULL with errno set. */
static char *fsck_offline_json(const char *dir)
{
	struct fsck_report rep = {0};
	int err = fsck_offline(dir, &rep);
	char *js = err ? NULL : fsck_report_json(&rep);
	fsck_report_free(&rep);
	if (!js)
		errno = err ? -err : ENOMEM;
	return js;
}

static const char *fsck_errmsg(int err, bool offline)
{
	if (offline && err == EBUSY)
		return "the data directory is in use by a running mcached "
		       "(check through it: mcachectl fsck)";
	if (offline && err == EINVAL)
		return "not an mcache data directory";
	if (offline && err == ENOENT)
		return "no store there (no data.mdb)";
	if (!offline && err == EPERM)
		return "only root and the server's own user may run the check";
	return strerror(err);
}

/* Print the report in text; the exit status it stands for. */
static int fsck_print(const char *text, const char *prog)
{
	json_error_t jerr;
	json_t *doc = json_loads(text, 0, &jerr), *probs, *checked;
	if (!doc || !json_is_array(probs = json_object_get(doc, "problems")) ||
	    !json_is_object(checked = json_object_get(doc, "checked"))) {
		fprintf(stderr, "%s: fsck: the report does not parse: %s\n", prog, jerr.text);
		json_decref(doc);
		return FSCK_EXIT_ERROR;
	}
	size_t i;
	json_t *p;
	json_array_foreach(probs, i, p) {
		const char *name = json_string_value(json_object_get(p, "name"));
		printf("%s ino %" JSON_INTEGER_FORMAT "%s%s: %s\n",
		       json_string_value(json_object_get(p, "kind")),
		       json_integer_value(json_object_get(p, "ino")), name ? " name " : "",
		       name ? name : "", json_string_value(json_object_get(p, "detail")));
	}
	json_int_t dropped = json_integer_value(json_object_get(doc, "dropped"));
	json_int_t n = (json_int_t)json_array_size(probs) + dropped;
	printf("checked %" JSON_INTEGER_FORMAT " inodes, %" JSON_INTEGER_FORMAT " dentries, %"
	       JSON_INTEGER_FORMAT " extents", json_integer_value(json_object_get(checked, "inodes")),
	       json_integer_value(json_object_get(checked, "dentries")),
	       json_integer_value(json_object_get(checked, "extents")));
	json_int_t ci = json_integer_value(json_object_get(checked, "cached_inodes"));
	json_int_t cd = json_integer_value(json_object_get(checked, "cached_dentries"));
	json_int_t cx = json_integer_value(json_object_get(checked, "cached_dirs"));
	if (ci || cd || cx)
		printf("; cache: %" JSON_INTEGER_FORMAT " inodes, %" JSON_INTEGER_FORMAT " dentries, %"
		       JSON_INTEGER_FORMAT " complete directories", ci, cd, cx);
	if (n == 0)
		printf(": clean\n");
	else
		printf(": %" JSON_INTEGER_FORMAT " problem%s%s\n", n, n == 1 ? "" : "s",
		       dropped ? " (only the first ones listed)" : "");
	json_decref(doc);
	return n == 0 ? FSCK_EXIT_CLEAN : FSCK_EXIT_PROBLEMS;
}

int fsck_command(int argc, char **argv, const char *sock, bool json, const char *prog)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "offline", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	const char *dir = NULL;
	int opt;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		if (opt == 'j') {
			json = true;
		} else if (opt == 'o') {
			dir = optarg;
		} else {
			fprintf(stderr, "%s: fsck: unknown option '%s' or missing argument\n"
			        "Usage: %s fsck [--json] [--offline DATA_DIR]\n", prog,
			        argv[optind - 1], prog);
			return FSCK_EXIT_ERROR;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "%s: fsck: too many arguments\n"
		        "Usage: %s fsck [--json] [--offline DATA_DIR]\n", prog, prog);
		return FSCK_EXIT_ERROR;
	}

	char *text;
	if (dir) {
		text = fsck_offline_json(dir);
	} else {
		mc_client *c = mc_connect(sock);
		text = c ? mc_server_fsck(c) : NULL;
		int err = errno;
		mc_disconnect(c);
		errno = err;
	}
	if (!text) {
		fprintf(stderr, "%s: fsck: %s: %s\n", prog, dir ? dir : "server",
		        fsck_errmsg(errno, dir != NULL));
		return FSCK_EXIT_ERROR;
	}
	int rc;
	if (json) {
		json_t *doc = json_loads(text, 0, NULL);
		rc = !doc ? FSCK_EXIT_ERROR
		     : json_is_true(json_object_get(doc, "clean")) ? FSCK_EXIT_CLEAN
		     : FSCK_EXIT_PROBLEMS;
		json_decref(doc);
		if (puts(text) == EOF)
			rc = FSCK_EXIT_ERROR;
	} else {
		rc = fsck_print(text, prog);
	}
	free(text);
	return rc;
}
