/* harness.c - start and stop a real mcached for integration tests. */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "frame.h"

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

int harness_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(sa.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

static int socket_accepts(const char *path)
{
	int fd = harness_connect(path);
	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

int server_start(struct mc_server *s, const char *const *extra_args)
{
	const char *bin = getenv("MCACHED");
	if (!bin) {
		fprintf(stderr, "harness: $MCACHED is not set\n");
		return -1;
	}
	if (!s->dir[0]) {
		const char *tmp = getenv("TMPDIR");
		snprintf(s->dir, sizeof(s->dir), "%s/mcache-test-XXXXXX", tmp ? tmp : "/tmp");
		if (!mkdtemp(s->dir)) {
			fprintf(stderr, "harness: mkdtemp: %s\n", strerror(errno));
			s->dir[0] = 0;
			return -1;
		}
	}
	snprintf(s->socket, sizeof(s->socket), "%s/mcached.sock", s->dir);
	snprintf(s->data, sizeof(s->data), "%s/data", s->dir);
	snprintf(s->admin, sizeof(s->admin), "%s/admin.sock", s->dir);
	snprintf(s->log, sizeof(s->log), "%s/mcached.log", s->dir);

	char admin_arg[600];
	snprintf(admin_arg, sizeof(admin_arg), "unix:%s", s->admin);
	const char *argv[64];
	int n = 0;
	argv[n++] = bin;
	argv[n++] = "--socket";
	argv[n++] = s->socket;
	argv[n++] = "--data";
	argv[n++] = s->data;
	argv[n++] = "--admin";
	argv[n++] = admin_arg;
	for (int i = 0; extra_args && extra_args[i] && n < 62; i++)
		argv[n++] = extra_args[i];
	argv[n] = NULL;

	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "harness: fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		/* The server must not outlive the test (nor hold its stdout, which
		 * meson waits on). */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		int fd = open(s->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		execv(bin, (char *const *)argv);
		fprintf(stderr, "harness: exec %s: %s\n", bin, strerror(errno));
		_exit(127);
	}
	s->pid = pid;
	for (int i = 0; i < 1000; i++) {
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			fprintf(stderr, "harness: mcached exited early (status %d); see %s\n", st, s->log);
			s->pid = 0;
			return -1;
		}
		if (socket_accepts(s->socket))
			return 0;
		sleep_ms(10);
	}
	fprintf(stderr, "harness: mcached did not accept connections within 10 s\n");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	s->pid = 0;
	return -1;
}

int server_stop(struct mc_server *s, int sig)
{
	if (s->pid <= 0)
		return -1;
	kill(s->pid, sig);
	for (int i = 0; i < 1500; i++) {
		int st;
		pid_t r = waitpid(s->pid, &st, WNOHANG);
		if (r == s->pid) {
			s->pid = 0;
			if (WIFEXITED(st))
				return WEXITSTATUS(st);
			return 128 + WTERMSIG(st);
		}
		sleep_ms(10);
	}
	kill(s->pid, SIGKILL);
	waitpid(s->pid, NULL, 0);
	s->pid = 0;
	return -1;
}

/* The value of the first key named k in document order (preorder), in any
 * object at any depth under v; NULL if none. */
static json_t *json_find(json_t *v, const char *k)
{
	if (json_is_object(v)) {
		const char *name;
		json_t *sub;
		json_object_foreach(v, name, sub) {
			if (strcmp(name, k) == 0)
				return sub;
			json_t *r = json_find(sub, k);
			if (r)
				return r;
		}
	} else if (json_is_array(v)) {
		size_t i;
		json_t *sub;
		json_array_foreach(v, i, sub) {
			json_t *r = json_find(sub, k);
			if (r)
				return r;
		}
	}
	return NULL;
}

int harness_json_u64(const char *json, const char *section, const char *key, uint64_t *out)
{
	char name[64];
	size_t n = strlen(section);
	/* "\"rpc\"" or "rpc" */
	if (n >= 2 && section[0] == '"' && section[n - 1] == '"')
		snprintf(name, sizeof(name), "%.*s", (int)(n - 2), section + 1);
	else
		snprintf(name, sizeof(name), "%s", section);
	json_error_t e;
	json_t *root = json_loads(json, JSON_REJECT_DUPLICATES, &e);
	if (root == NULL) {
		fprintf(stderr, "# invalid statistics JSON (%s at %d)\n", e.text, e.position);
		return -1;
	}
	json_t *obj = json_find(root, name);
	json_t *v = obj ? json_object_get(obj, key) : NULL;
	int rc = -1;
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*out = (uint64_t)json_integer_value(v);
		rc = 0;
	}
	json_decref(root);
	return rc;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st; (void)flag; (void)ftw;
	remove(path);
	return 0;
}

void server_cleanup(struct mc_server *s)
{
	if (s->pid > 0)
		server_stop(s, SIGKILL);
	if (s->dir[0])
		nftw(s->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	s->dir[0] = 0;
}

int server_finish(struct mc_server *s)
{
	int st = server_stop(s, SIGTERM);
	if (st != 0)
		fprintf(stderr, "mcached exited with status %d; its log: %s\n", st, s->log);
	server_cleanup(s);
	return st == 0 ? 0 : -1;
}

mc_client *harness_client(const struct mc_server *s)
{
	mc_client *c = mc_connect(s->socket);
	if (!c)
		fail_msg("mc_connect(%s): %s", s->socket, strerror(errno));
	return c;
}

uint64_t harness_stat_u64(mc_client *c, const char *section, const char *key)
{
	char *js = mc_server_stats(c);
	if (!js)
		fail_msg("mc_server_stats: %s", strerror(errno));
	uint64_t v = 0;
	if (harness_json_u64(js, section, key, &v) != 0)
		fail_msg("no %s %s in the statistics: %s", section, key, js);
	free(js);
	return v;
}

void harness_assert_healthy(const struct mc_server *s)
{
	static unsigned seq;
	int st;
	assert_int_equal(waitpid(s->pid, &st, WNOHANG), 0);
	mc_client *c = mc_connect(s->socket);
	if (!c)
		fail_msg("a well-behaved client cannot connect: %s", strerror(errno));
	char p[64];
	snprintf(p, sizeof(p), "/healthy-%u", ++seq);
	assert_int_equal(mc_mkdir(c, p, 0755), 0);
	struct stat sb;
	assert_int_equal(mc_stat(c, p, &sb), 0);
	assert_true(S_ISDIR(sb.st_mode));
	mc_disconnect(c);
}

/* Every name under path, as lines appended to l; lstat each, walk into
 * directories. */
static void harness_walk(mc_client *c, const char *path, int detail, struct harness_lines *l)
{
	MC_DIR *d = mc_opendir(c, path);
	if (!d)
		fail_msg("opendir %s: %s", path, strerror(errno));
	struct dirent *e;
	char **names = NULL;
	size_t k = 0;
	errno = 0;
	while ((e = mc_readdir(d))) {
		names = realloc(names, (k + 1) * sizeof(*names));
		assert_non_null(names);
		names[k++] = strdup(e->d_name);
	}
	assert_int_equal(errno, 0);
	assert_int_equal(mc_closedir(d), 0);
	for (size_t i = 0; i < k; i++) {
		char child[1024], line[1200];
		struct stat st;
		snprintf(child, sizeof(child), "%s%s%s", path, strcmp(path, "/") ? "/" : "",
		         names[i]);
		if (mc_lstat(c, child, &st) < 0)
			fail_msg("lstat %s: %s", child, strerror(errno));
		if (detail)
			snprintf(line, sizeof(line), "%s %o %ju %jd", child, (unsigned)st.st_mode,
			         (uintmax_t)st.st_ino, (intmax_t)st.st_size);
		else
			snprintf(line, sizeof(line), "%s %o", child,
			         (unsigned)(st.st_mode & S_IFMT));
		l->v = realloc(l->v, (l->n + 1) * sizeof(*l->v));
		assert_non_null(l->v);
		l->v[l->n++] = strdup(line);
		if (S_ISDIR(st.st_mode))
			harness_walk(c, child, detail, l);
		free(names[i]);
	}
	free(names);
}

static int harness_cmp_line(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct harness_lines harness_snapshot(mc_client *c, int detail)
{
	struct harness_lines l = { NULL, 0 };
	harness_walk(c, "/", detail, &l);
	qsort(l.v, l.n, sizeof(*l.v), harness_cmp_line);
	return l;
}

void harness_lines_free(struct harness_lines *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

void harness_assert_same(const struct harness_lines *a, const struct harness_lines *b)
{
	for (size_t i = 0; i < a->n && i < b->n; i++)
		if (strcmp(a->v[i], b->v[i]) != 0)
			fail_msg("line %zu: '%s' against '%s'", i, a->v[i], b->v[i]);
	assert_int_equal(a->n, b->n);
}

Mcache__Response *harness_read_response(int fd, int *err)
{
	uint8_t *payload;
	size_t len;
	int passfd = -1;
	int rc = frame_read(fd, MC_FRAME_MAX, &payload, &len, &passfd);
	if (rc < 0) {
		*err = rc;
		return NULL;
	}
	if (passfd >= 0)
		close(passfd);
	Mcache__Response *rsp = mcache__response__unpack(NULL, len, payload);
	free(payload);
	if (!rsp)
		*err = -EPROTO;
	return rsp;
}

int harness_ctl(const struct mc_server *s, char *out, size_t size, const char *fmt, ...)
{
	char args[1024], cmd[2048];
	const char *ctl = getenv("MCACHECTL");
	va_list ap;

	assert_non_null(ctl);
	assert_true(size > 0);
	va_start(ap, fmt);
	int n = vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	assert_true(n >= 0 && (size_t)n < sizeof(args));
	snprintf(cmd, sizeof(cmd), "'%s' -s '%s' %s 2>&1", ctl, s->socket, args);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	size_t got = fread(out, 1, size - 1, p);
	out[got] = '\0';
	int st = pclose(p);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

struct mc_server harness_srv;

int harness_group_setup(void **state)
{
	(void)state;
	memset(&harness_srv, 0, sizeof(harness_srv));
	return server_start(&harness_srv, NULL) == 0 ? 0 : -1;
}

int harness_group_teardown(void **state)
{
	(void)state;
	return server_finish(&harness_srv);
}
