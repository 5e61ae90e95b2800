/* diff_gen.c - what the differential test generates (see test-diff.c for
 * the rules): names from a small universe, plain and decorated paths,
 * relative downward-only symlink targets, and modes for mkdir, creat and
 * chmod. */
#include "diff.h"

static const char *const all_names[] = { "a", "b", "c", "d", "e", "f" };

/* ---- path generation ------------------------------------------------------ */

const char *rand_name(struct diff *d)
{
	return all_names[rng_below(&d->rng, d->nnames)];
}

void append(char *out, size_t cap, const char *s)
{
	size_t n = strlen(out);
	if (n + 1 < cap)
		snprintf(out + n, cap - n, "%s", s);
}

/* A plain path: 1..4 normal components, or an existing kernel path
 * (sometimes with one more name). Never ".", "..", or a trailing slash. */
void gen_plain(struct diff *d, char *out, size_t cap)
{
	out[0] = 0;
	if (d->nsnap && rng_pct(&d->rng, 50)) {
		snprintf(out, cap, "%s", d->snap[rng_below(&d->rng, (unsigned)d->nsnap)]);
		if (strlen(out) < 200 && rng_pct(&d->rng, 40)) {
			append(out, cap, "/");
			append(out, cap, rand_name(d));
		}
		return;
	}
	unsigned r = rng_below(&d->rng, 100);
	unsigned depth = r < 40 ? 1 : r < 70 ? 2 : r < 88 ? 3 : 4;
	for (unsigned i = 0; i < depth; i++) {
		if (i)
			append(out, cap, "/");
		append(out, cap, rand_name(d));
	}
}

/* A path for any operation but rmtree: a plain path, sometimes decorated with
 * "./", "x/../", "//", a trailing slash, or a last component "." or "..". */
void gen_path(struct diff *d, char *out, size_t cap)
{
	char plain[REL_MAX];
	gen_plain(d, plain, sizeof(plain));
	if (!rng_pct(&d->rng, 25)) {
		snprintf(out, cap, "%s", plain);
		return;
	}
	/* Rebuild component by component, decorating one place. */
	out[0] = 0;
	unsigned kind = rng_below(&d->rng, 6);
	char *save = NULL;
	char *comp = strtok_r(plain, "/", &save);
	bool first = true;
	for (; comp; comp = strtok_r(NULL, "/", &save)) {
		if (!first)
			append(out, cap, kind == 2 && rng_pct(&d->rng, 50) ? "//" : "/");
		if (kind == 0 && rng_pct(&d->rng, 40))
			append(out, cap, "./");
		if (kind == 1 && rng_pct(&d->rng, 40)) {
			/* "x/.." right after a normal component keeps rule 2. */
			append(out, cap, rand_name(d));
			append(out, cap, "/../");
		}
		append(out, cap, comp);
		first = false;
	}
	if (kind == 3)
		append(out, cap, "/");
	else if (kind == 4)
		append(out, cap, "/.");
	else if (kind == 5)
		append(out, cap, rng_pct(&d->rng, 50) ? "/.." : "/./");
}

/* A relative, downward-only symlink target (rule 1). */
void gen_target(struct diff *d, char *out, size_t cap)
{
	out[0] = 0;
	if (rng_pct(&d->rng, 10))
		append(out, cap, "./");
	unsigned depth = 1 + rng_below(&d->rng, 3);
	for (unsigned i = 0; i < depth; i++) {
		if (i)
			append(out, cap, "/");
		append(out, cap, rand_name(d));
	}
	if (rng_pct(&d->rng, 8))
		append(out, cap, "/");
}

mode_t gen_dir_mode(struct diff *d)
{
	static const mode_t m[] = { 0755, 0700, 0777, 01777, 0750, 0711 };
	return m[rng_below(&d->rng, sizeof(m) / sizeof(m[0]))];
}

mode_t gen_file_mode(struct diff *d)
{
	static const mode_t m[] = { 0644, 0600, 0755, 0444, 0640, 0777 };
	return m[rng_below(&d->rng, sizeof(m) / sizeof(m[0]))];
}

/* chmod modes: as root anything goes (root passes permission checks on both
 * sides); otherwise keep the owner's rwx so the tree stays walkable. */
mode_t gen_chmod_mode(struct diff *d)
{
	static const mode_t root_m[] = { 0755, 0700, 0644, 0000, 0444, 01777, 0600, 0555, 04755 };
	static const mode_t user_m[] = { 0755, 0700, 0777, 01777, 0750, 0711 };
	if (geteuid() == 0)
		return root_m[rng_below(&d->rng, sizeof(root_m) / sizeof(root_m[0]))];
	return user_m[rng_below(&d->rng, sizeof(user_m) / sizeof(user_m[0]))];
}
