/* bench_args.h - the benchmarks' reading of a count on the command line
 * (mcbench, warmbench, extbench). */
#ifndef MC_BENCH_ARGS_H
#define MC_BENCH_ARGS_H

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

/* s as an integer in min..max (decimal, or 1e6-style): 0 and *out,
 * -EINVAL (not a number), -ERANGE (out of bounds). */
static inline int bench_parse_ulong(const char *s, unsigned long min, unsigned long max,
                                    unsigned long *out)
{
	char *end;
	unsigned long v;
	double d;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (*end == 'e' || *end == 'E' || *end == '.') {
		/* accept 1e6 */
		errno = 0;
		d = strtod(s, &end);
		if (errno || *end || d < 0 || d > (double)ULONG_MAX || d != (double)(unsigned long)d)
			return -EINVAL;
		v = (unsigned long)d;
	} else if (errno || *end || s[0] == '-' || s[0] == '\0') {
		return -EINVAL;
	}
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

/* Option opt's value v for program prog, in 1..max, or exit 2 with a
 * message. */
static inline unsigned long bench_count_arg(const char *prog, const char *opt, const char *v,
                                            unsigned long max)
{
	unsigned long n;
	if (bench_parse_ulong(v, 1, max, &n) < 0) {
		if (max == ULONG_MAX)
			fprintf(stderr, "%s: %s wants a positive integer, not '%s'\n", prog, opt, v);
		else
			fprintf(stderr, "%s: %s wants an integer in 1..%lu, not '%s'\n", prog, opt,
			        max, v);
		exit(2);
	}
	return n;
}

#endif
