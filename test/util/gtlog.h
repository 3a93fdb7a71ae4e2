/*
 * Loaders for what the simulated GPU's tests read: the ground-truth log (FAKEGPU_LOG, one JSON
 * object per line) and the output of test/apps/cupti-dump ("TYPE key=value ..." lines), both
 * as a JSON array of objects, and filters over such arrays.
 */
#ifndef GPROF_TEST_GTLOG_H
#define GPROF_TEST_GTLOG_H

#include <stddef.h>
#include <jansson.h>

/* Every line of a FAKEGPU_LOG file; NULL if the file can't be read or a line is not JSON. */
json_t *gtlog_load(const char *path);

/*
 * Every line of a cupti-dump output: {"type": TYPE, key: value, ...}, values as integers when
 * they are decimal numbers, else strings. NULL if the file can't be read.
 */
json_t *gtlog_load_dump(const char *path);

/*
 * The entries of `log` that have every member of `match`, a JSON object text such as
 * {"type":"gpu","kind":"kernel"} (a new array; json_decref it). NULL if match is not JSON.
 */
json_t *gtlog_filter(json_t *log, const char *match);
/* gtlog_filter's entries sorted by integer member `key`, ascending (stable). */
json_t *gtlog_sorted(json_t *log, const char *match, const char *key);
/* How many entries gtlog_filter would return (0 for bad JSON). */
size_t gtlog_count(json_t *log, const char *match);

/* Integer member `key` of `entry`, or -1 if it is missing or not an integer. */
long long gtlog_int(json_t *entry, const char *key);
/* String member `key` of `entry`, or "" if it is missing or not a string. */
const char *gtlog_str(json_t *entry, const char *key);

#endif
