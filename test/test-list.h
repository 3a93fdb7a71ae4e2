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
X(fakecupti_conformance_real_walk)
X(fakecupti_conformance_faults)
X(fakecupti_conformance_results)
X(fakecupti_conformance_exports)
X(fakecupti_only_enabled_kinds)
X(fakecupti_disable_stops_records)
X(fakecupti_buffer_full_completes_on_worker)
X(fakecupti_buffer_max_records)
X(fakecupti_flush_period)
X(fakecupti_flush_all)
X(fakecupti_buffer_zeroed)
X(fakecupti_no_buffer_drops_counted)
X(fakecupti_per_thread_buffers)
X(fakecupti_concurrent_emit)
X(fakecupti_fault_drop_every)
X(fakecupti_fault_zero_ts_every)
X(fakecupti_fault_unknown_kind_every)
X(fakecupti_fault_subscribe_taken)
X(fakecupti_fault_enable_fail)
X(fakecupti_external_correlation)
X(fakecupti_second_subscriber)
X(fakecupti_callbacks)
X(fakecupti_attributes)
X(fakecupti_timestamp_version_errors)
X(fakecupti_finalize)
X(fakecupti_device_and_context_ids)

/* fakecuda: runtime */
X(fakecuda_exports)
X(fakecuda_stream_order_and_duration)
X(fakecuda_streams_concurrency_and_legacy)
X(fakecuda_synchronize_waits)
X(fakecuda_cost_model)
X(fakecuda_malloc_fault_and_last_error)
X(fakecuda_launch_errors)
X(fakecuda_error_strings_match_real)
X(fakecuda_devices)
X(fakecuda_log_escapes_names)
X(fakecuda_nvcc_app)
X(fakecuda_nvcc_app_per_thread_stream)
X(fakecuda_rt_app_threads)
X(fakecuda_drv_app)
X(fakecuda_injection_at_cuinit)

/* end to end */
