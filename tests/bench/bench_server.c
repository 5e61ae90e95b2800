/* bench_server.c - the mcached of a run: started and stopped with --mcached, memory figures from its stats. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

/* ------------------------------------------------------------------ */
/* JSON key lookup for mc_server_stats(): enough to find a number by a dotted
 * path of object keys ("shm.bytes_used"). */

static const char *js_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

static const char *js_skip_string(const char *p)
{
	if (*p != '"')
		return NULL;
	for (p++; *p; p++) {
		if (*p == '\\') {
			if (!p[1])
				return NULL;
			p++;
		} else if (*p == '"') {
			return p + 1;
		}
	}
	return NULL;
}

static const char *js_skip_value(const char *p)
{
	int depth = 0;

	p = js_ws(p);
	if (*p == '"')
		return js_skip_string(p);
	if (*p != '{' && *p != '[') {
		while (*p && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n')
			p++;
		return p;
	}
	while (*p) {
		if (*p == '"') {
			p = js_skip_string(p);
			if (!p)
				return NULL;
			continue;
		}
		if (*p == '{' || *p == '[')
			depth++;
		else if (*p == '}' || *p == ']') {
			if (--depth == 0)
				return p + 1;
		}
		p++;
	}
	return NULL;
}

/* p at '{': the start of key's value in that object, or NULL. */
static const char *js_find_key(const char *p, const char *key, size_t klen)
{
	p = js_ws(p);
	if (*p != '{')
		return NULL;
	p = js_ws(p + 1);
	while (*p == '"') {
		const char *ks = p + 1, *ke = js_skip_string(p);
		if (!ke)
			return NULL;
		p = js_ws(ke);
		if (*p != ':')
			return NULL;
		p = js_ws(p + 1);
		if ((size_t)(ke - 1 - ks) == klen && memcmp(ks, key, klen) == 0)
			return p;
		p = js_skip_value(p);
		if (!p)
			return NULL;
		p = js_ws(p);
		if (*p == ',')
			p = js_ws(p + 1);
	}
	return NULL;
}

static int js_number(const char *p, double *out)
{
	char *end;
	double v;

	if (!p)
		return -ENOENT;
	errno = 0;
	v = strtod(p, &end);
	if (end == p || errno)
		return -EINVAL;
	*out = v;
	return 0;
}

/* The number at dotted path in doc: nested objects first ("a.b" = {"a":{"b":}}),
 * then a flat key "a.b", then "a_b". 0, or -ENOENT / -EINVAL. */
int stats_lookup(const char *doc, const char *path, double *out)
{
	const char *p = doc, *comp = path;
	char flat[128];
	size_t i;

	for (;;) {
		const char *dot = strchr(comp, '.');
		size_t len = dot ? (size_t)(dot - comp) : strlen(comp);
		p = js_find_key(p, comp, len);
		if (!p || !dot)
			break;
		comp = dot + 1;
	}
	if (p && js_number(p, out) == 0)
		return 0;
	if (js_number(js_find_key(doc, path, strlen(path)), out) == 0)
		return 0;
	snprintf(flat, sizeof(flat), "%s", path);
	for (i = 0; flat[i]; i++)
		if (flat[i] == '.')
			flat[i] = '_';
	return js_number(js_find_key(doc, flat, strlen(flat)), out);
}

void mem_snapshot(mc_client *c, struct memsnap *m)
{
	char *doc;

	memset(m, 0, sizeof(*m));
	if (!c)
		return;
	if (mc_sync(c) < 0)
		fprintf(stderr, "mcbench: mc_sync before reading stats: %s\n", strerror(errno));
	doc = mc_server_stats(c);
	if (!doc) {
		fprintf(stderr, "mcbench: mc_server_stats: %s\n", strerror(errno));
		return;
	}
	if (stats_lookup(doc, "shm.bytes_used", &m->bytes) < 0 ||
	    stats_lookup(doc, "dentries.positive", &m->pos) < 0 ||
	    stats_lookup(doc, "inodes.cached", &m->inodes) < 0)
		fprintf(stderr, "mcbench: server stats lack shm.bytes_used, "
		        "dentries.positive or inodes.cached\n");
	else
		m->ok = true;
	free(doc);
}

/* ------------------------------------------------------------------ */
/* an mcached started for the run (--mcached) */

static pid_t srv_pid;
static char srv_dir[PATH_MAX];
static char srv_sock[PATH_MAX + 16];

int server_start(const char *path, const char **sock)
{
	const char *tmp = getenv("TMPDIR");
	char data[PATH_MAX + 16];
	int64_t deadline;
	int status;

	snprintf(srv_dir, sizeof(srv_dir), "%s/mcbench-srv.XXXXXX", tmp && *tmp ? tmp : "/var/tmp");
	if (!mkdtemp(srv_dir)) {
		fprintf(stderr, "mcbench: mkdtemp %s: %s\n", srv_dir, strerror(errno));
		return -1;
	}
	snprintf(srv_sock, sizeof(srv_sock), "%s/s.sock", srv_dir);
	snprintf(data, sizeof(data), "%s/data", srv_dir);
	fflush(NULL);
	srv_pid = fork();
	if (srv_pid < 0) {
		fprintf(stderr, "mcbench: fork: %s\n", strerror(errno));
		return -1;
	}
	if (srv_pid == 0) {
		/* $MCBENCH_MCACHED_ARGS: more options, split at spaces
		 * ("--cache-size 64M"). */
		char *argv[64] = { (char *)path, "--socket", srv_sock, "--data", data,
		                   "--admin", "none" };
		int argc = 7;
		char *more = getenv("MCBENCH_MCACHED_ARGS");
		more = more ? strdup(more) : NULL;
		for (char *sv, *t = more ? strtok_r(more, " ", &sv) : NULL; t && argc < 63;
		     t = strtok_r(NULL, " ", &sv))
			argv[argc++] = t;
		argv[argc] = NULL;
		execv(path, argv);
		fprintf(stderr, "mcbench: exec %s: %s\n", path, strerror(errno));
		_exit(127);
	}
	deadline = now_ns() + 10 * (int64_t)1000000000;
	while (now_ns() < deadline) {
		mc_client *c = mc_connect(srv_sock);
		if (c) {
			mc_disconnect(c);
			*sock = srv_sock;
			return 0;
		}
		if (waitpid(srv_pid, &status, WNOHANG) == srv_pid) {
			fprintf(stderr, "mcbench: %s exited before accepting connections\n", path);
			srv_pid = 0;
			return -1;
		}
		usleep(20000);
	}
	fprintf(stderr, "mcbench: %s did not accept connections on %s within 10 s\n",
	        path, srv_sock);
	return -1;
}

int server_io(struct server_io *out)
{
	char path[64], line[128];
	struct server_io io = { 0, 0 };
	if (srv_pid <= 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/io", (int)srv_pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "write_bytes:", 12) == 0)
			io.write_bytes = strtoull(line + 12, NULL, 10);
		else if (strncmp(line, "wchar:", 6) == 0)
			io.wchar = strtoull(line + 6, NULL, 10);
	}
	fclose(f);
	*out = io;
	return 0;
}

void server_stop(void)
{
	int status;

	if (srv_pid > 0) {
		kill(srv_pid, SIGTERM);
		waitpid(srv_pid, &status, 0);
		srv_pid = 0;
	}
	if (srv_dir[0]) {
		scratch_remove(srv_dir);
		srv_dir[0] = '\0';
	}
}

void server_quiesce(mc_client *pc)
{
	if (!pc)
		return;
	if (mc_sync(pc) < 0)
		fprintf(stderr, "mcbench: mc_sync before the baseline: %s\n", strerror(errno));
	usleep(QUIESCE_MS * 1000);
}
