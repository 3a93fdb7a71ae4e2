/*
 * The hooks' clock: CLOCK_REALTIME in ns from one unordered TSC read.
 *
 * clock_gettime() reads the TSC with a fence (rdtscp or lfence; rdtsc), which costs about twice
 * what the read itself does, and a hook that times a call reads the clock twice. Where the
 * kernel's own clock source is the TSC (constant rate, the same on every CPU), a tick count
 * converts to CLOCK_REALTIME by a line through two points: the last calibration (a TSC reading
 * and CLOCK_REALTIME at it) and a rate, ns per tick, measured on CLOCK_MONOTONIC (which the
 * kernel slews like CLOCK_REALTIME but never steps) over a span of at least 16 times the
 * calibration's age. The first call past that age calibrates again (a few clock reads), so the
 * line follows the kernel's slewing; the error is the calibration pair's (a few ns) plus the
 * rate's over at most 10 ms. Elsewhere, and until a rate exists, it is clock_gettime().
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "common/compiler.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#define read_ticks() __rdtsc()
#else
#define read_ticks() 0ull
#endif

#define AGE_MAX_NS   10000000ull /* calibrate at least every 10 ms of use */
#define SPAN_PER_AGE 16		 /* the rate's span, in calibration ages */

/*
 * The line: base_ticks and base_ns are a calibration pair, mult is ns per tick in 32.32 fixed
 * point (0: no rate yet) and age_ticks when the next calibration is due. seq is odd while the
 * one calibrating thread writes them (a sequence lock, whose readers read clock_gettime() rather
 * than wait).
 */
static struct {
	uint64_t seq, base_ticks, base_ns, mult, age_ticks;
} line;

/*
 * Where the rate is measured from: a TSC reading and CLOCK_MONOTONIC at it, and the next such
 * point, which takes its place once it is 16 ages of 10 ms old (so the rate's span stays 160 to
 * 320 ms, and slewing shows). The four are the calibrating thread's.
 */
static uint64_t from_ticks, from_ns, next_ticks, next_ns;
static bool use_ticks;
static int calibrating;

/*
 * A TSC reading and clock's ns at it: halfway between the two readings around clock's, the
 * closest of three tries; false when even those were far apart (the thread was interrupted).
 */
static bool pair(clockid_t clock, uint64_t *ticks, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < 3; i++) {
		uint64_t before = read_ticks(), t = gprof_clock_ns(clock), after = read_ticks();

		if (after - before < best) {
			best = after - before;
			*ticks = before + best / 2;
			*ns = t;
		}
	}
	return best < 100000;
}

/* A new calibration pair and rate for the line, unless another thread is taking one. */
static void calibrate(void)
{
	uint64_t ticks, real, mono_ticks, mono, mult = 0, age = 0, seq;

	if (__atomic_exchange_n(&calibrating, 1, __ATOMIC_ACQUIRE))
		return;
	seq = __atomic_load_n(&line.seq, __ATOMIC_RELAXED);
	if (!pair(CLOCK_REALTIME, &ticks, &real) || !pair(CLOCK_MONOTONIC, &mono_ticks, &mono))
		goto out;
	if (mono_ticks > from_ticks && mono > from_ns) {
		uint64_t span = mono - from_ns, due = span / SPAN_PER_AGE;

		mult = (uint64_t)(((unsigned __int128)span << 32) / (mono_ticks - from_ticks));
		due = due < AGE_MAX_NS ? due : AGE_MAX_NS;
		age = mult ? (uint64_t)(((unsigned __int128)due << 32) / mult) : 0;
	}
	if (mono - next_ns >= SPAN_PER_AGE * AGE_MAX_NS) {
		from_ticks = next_ticks, from_ns = next_ns;
		next_ticks = mono_ticks, next_ns = mono;
	}
	/* release stores, so no reader sees one of them with the old, even seq */
	__atomic_store_n(&line.seq, seq + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&line.base_ticks, ticks, __ATOMIC_RELEASE);
	__atomic_store_n(&line.base_ns, real, __ATOMIC_RELEASE);
	__atomic_store_n(&line.mult, age ? mult : 0, __ATOMIC_RELEASE);
	__atomic_store_n(&line.age_ticks, age, __ATOMIC_RELEASE);
	__atomic_store_n(&line.seq, seq + 2, __ATOMIC_RELEASE);
out:
	__atomic_store_n(&calibrating, 0, __ATOMIC_RELEASE);
}

void gprof_clock_setup(bool ticks)
{
	use_ticks = ticks && read_ticks() != 0 && pair(CLOCK_MONOTONIC, &from_ticks, &from_ns);
	next_ticks = from_ticks, next_ns = from_ns;
	__atomic_store_n(&line.age_ticks, 0, __ATOMIC_RELAXED);
}

bool gprof_clock_kernel_tsc(void)
{
	char source[16] = "";
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");

	if (f) {
		if (!fgets(source, sizeof(source), f))
			source[0] = 0;
		fclose(f);
	}
	return !strcmp(source, "tsc\n");
}

void gprof_clock_init(void)
{
	gprof_clock_setup(gprof_clock_kernel_tsc());
}

/* The line is stale, or has no rate yet: clock_gettime(), calibrating on the way. */
static __attribute__((noinline)) uint64_t slow_ns(void)
{
	calibrate();
	return gprof_realtime_ns();
}

uint64_t gprof_hook_ns(void)
{
	uint64_t seq, base_ticks, base_ns, mult, age, ticks;

	if (!use_ticks)
		return gprof_realtime_ns();
	ticks = read_ticks();
	/* acquire loads, so the second load of seq comes after them */
	seq = __atomic_load_n(&line.seq, __ATOMIC_ACQUIRE);
	base_ticks = __atomic_load_n(&line.base_ticks, __ATOMIC_ACQUIRE);
	base_ns = __atomic_load_n(&line.base_ns, __ATOMIC_ACQUIRE);
	mult = __atomic_load_n(&line.mult, __ATOMIC_ACQUIRE);
	age = __atomic_load_n(&line.age_ticks, __ATOMIC_ACQUIRE);
	/*
	 * A calibration is being written: the kernel's clock rather than a retry. Hundreds of
	 * threads retrying kept a descheduled writer from finishing (for good under TSan).
	 */
	if (unlikely((seq & 1) || seq != __atomic_load_n(&line.seq, __ATOMIC_RELAXED)))
		return gprof_realtime_ns();
	/* a reading before the base (another thread calibrated meanwhile) is stale too */
	if (unlikely(ticks - base_ticks >= age))
		return slow_ns();
	return base_ns + (uint64_t)(((unsigned __int128)(ticks - base_ticks) * mult) >> 32);
}
