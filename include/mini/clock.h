/* The monotonic clock, in the units callers want.  One copy for every
 * program (the static init keeps its own: it links libc only). */
#ifndef MINI_CLOCK_H
#define MINI_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds, milliseconds, and seconds. */
int64_t mini_mono_ns(void);
static inline int64_t mini_mono_ms(void) { return mini_mono_ns() / 1000000; }
static inline double mini_mono_s(void) { return (double)mini_mono_ns() / 1e9; }
/* Seconds from `since` (a CLOCK_MONOTONIC reading) to now. */
double mini_elapsed_s(const struct timespec *since);

#endif
