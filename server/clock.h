/* clock.h - time readings for timestamps and phase timings. */
#ifndef MC_CLOCK_H
#define MC_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_ns(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Monotonic time, for durations. */
static inline uint64_t mono_ns(void) { return clock_ns(CLOCK_MONOTONIC); }
static inline uint64_t mono_us(void) { return mono_ns() / 1000; }
static inline uint64_t mono_ms(void) { return mono_ns() / 1000000; }

#endif
