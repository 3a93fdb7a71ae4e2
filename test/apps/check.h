/*
 * CHECK(call) for the C test apps whose output the tests compare with and without libgprof: a
 * CUDA runtime call that fails prints "<APP>: <call>: <error number>" on stdout and exits 2.
 * Define APP, the app's name, first.
 */
#ifndef GPROF_TEST_APPS_CHECK_H
#define GPROF_TEST_APPS_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                 \
	do {                                                        \
		cudaError_t err_ = (call);                          \
		if (err_ != cudaSuccess) {                          \
			printf(APP ": %s: %d\n", #call, (int)err_); \
			exit(2);                                    \
		}                                                   \
	} while (0)

#endif
