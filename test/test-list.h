/*
 * The single registration list of tests: X(name) for each TEST(name), grouped by module.
 * Keep each module's tests in its own block.
 */

/* common/log */
X(log_prefix_and_kept_warnings)

/* common/config */
X(config_defaults)
X(config_schedule_forms)
X(config_activity_forms)
X(config_value_forms)
X(config_rejects)
X(config_rejects_too_long)
X(config_process_environment)
X(config_file_good)
X(config_file_env_overrides)
X(config_file_bad_values)
X(config_file_unreadable)
X(config_file_malformed)
X(config_disable_silences)
X(config_hostile_values)
X(config_unknown_variable_warns)
X(config_schedule_str)
X(config_print_table)
X(config_readme_table)

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
