/* torch.profiler.schedule as a pure function of the step number. */
#include "scheduler/scheduler.h"

/*
 * Where a step falls after the skip_first steps: its cycle and its position in the cycle.
 * False for a skipped step. Counts are unsigned, so a cycle's length (at most 3 * UINT_MAX)
 * fits in 64 bits, and comparing the quotient with repeat is the integer form of torch's
 * `step / num_steps >= repeat`. The caller makes sure active > 0.
 */
static bool locate(const struct gprof_schedule *sched, uint64_t step, uint64_t *cycle,
		   uint64_t *pos)
{
	uint64_t len = (uint64_t)sched->wait + sched->warmup + sched->active;

	if (step < sched->skip_first)
		return false;
	step -= sched->skip_first;
	*cycle = step / len;
	*pos = step % len;
	return true;
}

static bool past_last_cycle(const struct gprof_schedule *sched, uint64_t cycle)
{
	return sched->repeat > 0 && cycle >= sched->repeat;
}

enum gprof_sched_action gprof_sched_action(const struct gprof_schedule *sched, uint64_t step)
{
	uint64_t cycle, pos;

	if (sched->all)
		return GPROF_SCHED_RECORD;
	if (sched->active == 0 || !locate(sched, step, &cycle, &pos))
		return GPROF_SCHED_NONE;
	if (past_last_cycle(sched, cycle) || pos < sched->wait)
		return GPROF_SCHED_NONE;
	if (pos < (uint64_t)sched->wait + sched->warmup)
		return GPROF_SCHED_WARMUP;
	if (pos + 1 < (uint64_t)sched->wait + sched->warmup + sched->active)
		return GPROF_SCHED_RECORD;
	return GPROF_SCHED_RECORD_AND_SAVE;
}

enum gprof_sched_phase gprof_sched_phase(const struct gprof_schedule *sched, uint64_t step)
{
	static const enum gprof_sched_phase of_action[] = {
	    [GPROF_SCHED_NONE] = GPROF_PHASE_WAIT,
	    [GPROF_SCHED_WARMUP] = GPROF_PHASE_WARMUP,
	    [GPROF_SCHED_RECORD] = GPROF_PHASE_ACTIVE,
	    [GPROF_SCHED_RECORD_AND_SAVE] = GPROF_PHASE_ACTIVE,
	};
	enum gprof_sched_action action = gprof_sched_action(sched, step);
	uint64_t cycle, pos;

	if (action != GPROF_SCHED_NONE)
		return of_action[action];
	if (sched->active == 0)
		return GPROF_PHASE_DONE;
	if (locate(sched, step, &cycle, &pos) && past_last_cycle(sched, cycle))
		return GPROF_PHASE_DONE;
	return GPROF_PHASE_WAIT;
}
