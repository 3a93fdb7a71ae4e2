/*
 * The single registration list of tests: X(name) for each TEST(name), grouped by module.
 * Keep each module's tests in its own block.
 */

/* common/log */
X(log_prefix_and_kept_warnings)

/* common/config */

/* scheduler */

/* export */

/* fakecuda: the simulated GPU */

/* end to end */
