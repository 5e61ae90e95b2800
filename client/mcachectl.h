/* mcachectl.h - what mcachectl.c shares with its command modules: the
 * connection, the --json document and the error and usage messages. */
#ifndef MCACHECTL_H
#define MCACHECTL_H

#include <jansson.h>
#include <stdbool.h>

#include "mcache.h"

#define EXIT_FAIL  1
#define EXIT_USAGE 2

extern const char *prog;        /* "mcachectl", for messages */
extern json_t *json_doc;        /* --json: the array a command fills, or NULL */
extern bool json_list;          /* the command lists things: --json prints [] for none */

/* The connection, made on first use; exits 1 with a message saying what to
 * do when the server cannot be reached. */
mc_client *conn(void);
/* "mcachectl: MESSAGE" and the --help hint on stderr (exit status 2). */
__attribute__((format(printf, 1, 2)))
void usage_error(const char *fmt, ...);
/* "mcachectl: WHAT: strerror(errno)" on stderr; returns EXIT_FAIL. */
int fail(const char *what);
typedef int (*path_fn)(mc_client *c, const char *path);
/* fn on each of argv[first..]: connects, goes on after a failure; exit 2
 * (usage) when there is none, else 1 if any failed, else 0. */
int each_path(int argc, char **argv, path_fn fn, int first);
/* "mcachectl: FMT...: strerror(errno)", as coreutils word errors
 * ("cannot remove '/x': No such file or directory"); returns EXIT_FAIL. */
__attribute__((format(printf, 1, 2)))
int failf(const char *fmt, ...);

#endif
