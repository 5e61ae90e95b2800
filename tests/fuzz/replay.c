/* replay.c - runs the seed corpora of a libFuzzer target without libFuzzer:
 * every file of every directory named on the command line goes once through
 * LLVMFuzzerTestOneInput, so the plain and sanitizer builds of the suite
 * replay the corpora with any C compiler.
 *
 * Output is TAP, one line per file, in name order within each directory.
 * A file that crashes the target ends the program (the sanitizers or the
 * signal report it; meson counts the test as failed); one that runs longer
 * than REPLAY_ALARM_S seconds is killed by SIGALRM: a hang. Each input is
 * handed over in a buffer of exactly its length, as libFuzzer does, so
 * that under AddressSanitizer a read past its end is reported here too.
 *
 * Usage: fuzz-<target>-replay DIR|FILE...
 */
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define REPLAY_ALARM_S 20
#define REPLAY_MAX_FILE (1u << 20)

#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

struct input {
	char *path;
};

static int cmp_path(const void *a, const void *b)
{
	return strcmp(((const struct input *)a)->path, ((const struct input *)b)->path);
}

/* Append path (a file) or every regular file in path (a directory). */
static int inputs_add(const char *path, struct input **v, size_t *n, size_t *cap)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode)) {
		if (*n == *cap) {
			size_t c = *cap ? *cap * 2 : 64;
			struct input *nv = realloc(*v, c * sizeof(**v));
			if (!nv)
				return -ENOMEM;
			*v = nv;
			*cap = c;
		}
		(*v)[*n].path = strdup(path);
		if (!(*v)[*n].path)
			return -ENOMEM;
		(*n)++;
		return 0;
	}
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	struct dirent *de;
	int err = 0;
	while (!err && (de = readdir(d))) {
		char sub[4096];
		if (de->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		if (stat(sub, &st) == 0 && S_ISREG(st.st_mode))
			err = inputs_add(sub, v, n, cap);
	}
	closedir(d);
	return err;
}

static int file_read(const char *path, uint8_t **out, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -errno;
	uint8_t *buf = malloc(REPLAY_MAX_FILE + 1);
	if (!buf) {
		fclose(f);
		return -ENOMEM;
	}
	size_t n = fread(buf, 1, REPLAY_MAX_FILE + 1, f);
	int err = ferror(f) ? -EIO : n > REPLAY_MAX_FILE ? -EFBIG : 0;
	fclose(f);
	if (err) {
		free(buf);
		return err;
	}
	/* Exactly n bytes (see the top); malloc(0) may give NULL (the caller
	 * then hands over a pointer of its own), under the sanitizers it is a
	 * block of none. */
	uint8_t *exact = malloc(n);
	if (exact)
		memcpy(exact, buf, n);
	free(buf);
	if (!exact && n)
		return -ENOMEM;
	*out = exact;
	*len = n;
	return 0;
}

int main(int argc, char **argv)
{
	struct input *v = NULL;
	size_t n = 0, cap = 0;
	int failed = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s DIR|FILE...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		size_t first = n;
		int err = inputs_add(argv[i], &v, &n, &cap);
		if (err) {
			printf("Bail out! %s: %s\n", argv[i], strerror(-err));
			return 1;
		}
		qsort(v + first, n - first, sizeof(*v), cmp_path);
	}
	if (n == 0) {
		printf("Bail out! no input in the corpus\n");
		return 1;
	}
	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	printf("1..%zu\n", n);
	fflush(stdout);
	for (size_t i = 0; i < n; i++) {
		uint8_t *buf = NULL;
		size_t len = 0;
		int err = file_read(v[i].path, &buf, &len);
		if (err) {
			printf("not ok %zu - %s: %s\n", i + 1, v[i].path, strerror(-err));
			failed = 1;
			continue;
		}
		alarm(REPLAY_ALARM_S);
		static const uint8_t none[1];
		LLVMFuzzerTestOneInput(buf ? buf : none, len);
		alarm(0);
		printf("ok %zu - %s (%zu bytes)\n", i + 1, v[i].path, len);
		fflush(stdout);
		free(buf);
	}
	for (size_t i = 0; i < n; i++)
		free(v[i].path);
	free(v);
	return failed;
}
