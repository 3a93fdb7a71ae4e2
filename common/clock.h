/*
 * Clocks. CLOCK_REALTIME in ns is CUPTI's default clock, so every event's time is read with
 * gprof_realtime_ns(), or, for the calls the hooks time, gprof_hook_ns(); timed waits take a
 * deadline on the clock their condition uses.
 */
#ifndef GPROF_CLOCK_H
#define GPROF_CLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/*
 * CLOCK_REALTIME in ns, from the TSC where the kernel's clock source is the TSC (clock.c): a
 * third of clock_gettime()'s cost, within a few ns of it. gprof_clock_init() decides, once, at
 * start-up, by asking gprof_clock_kernel_tsc(); gprof_clock_setup() is that decision given.
 */
bool gprof_clock_kernel_tsc(void);
void gprof_clock_init(void);
void gprof_clock_setup(bool ticks);
uint64_t gprof_hook_ns(void);

static inline uint64_t gprof_clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t gprof_realtime_ns(void)
{
	return gprof_clock_ns(CLOCK_REALTIME);
}

/* A time in ns on some clock as pthread_cond_timedwait() and pthread_timedjoin_np() take it. */
static inline struct timespec gprof_clock_timespec(uint64_t ns)
{
	return (struct timespec){.tv_sec = (time_t)(ns / 1000000000ull),
				 .tv_nsec = (long)(ns % 1000000000ull)};
}

/* ns from now on clock, as a deadline for those waits. */
static inline struct timespec gprof_clock_deadline(clockid_t clock, uint64_t ns)
{
	return gprof_clock_timespec(gprof_clock_ns(clock) + ns);
}

#endif
