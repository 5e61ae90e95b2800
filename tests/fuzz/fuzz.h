/* fuzz.h - what every libFuzzer target of tests/fuzz shares: the entry
 * point libFuzzer (or replay.c) calls, and the check that reports a broken
 * invariant by aborting, so both drivers stop with the input. */
#ifndef MC_FUZZ_H
#define MC_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define fz_check(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond); \
		abort(); \
	} \
} while (0)

#endif
