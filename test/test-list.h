/*
 * The single registration list of tests: X(name) for each TEST(name), grouped by module.
 * Keep each module's tests in its own block.
 */

/* common/log */
X(log_prefix_and_kept_warnings)

/* common/config */

/* scheduler */
X(sched_action_table)
X(sched_stepper_scenarios)
X(sched_stepper_repeat0_many_steps)
X(sched_stepper_threads)
X(sched_stepper_time_never_runs_backwards)
X(sched_stepper_phase_order)
X(sched_marker_match)

/* export */

/* fakecuda: the simulated GPU */

/* end to end */
