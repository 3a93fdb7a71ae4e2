/*
 * CHECK(call) for the nvcc test apps: a CUDA runtime call that fails prints "<APP>: <call>:
 * <error>" on stderr and returns 1 from the function (main). Define APP, the app's name, first.
 */
#ifndef GPROF_TEST_APPS_CHECK_CUH
#define GPROF_TEST_APPS_CHECK_CUH

#include <cstdio>

#define CHECK(call)                                                                                \
	do {                                                                                       \
		cudaError_t err_ = (call);                                                         \
		if (err_ != cudaSuccess) {                                                         \
			fprintf(stderr, APP ": %s: %s\n", #call, cudaGetErrorString(err_));        \
			return 1;                                                                  \
		}                                                                                  \
	} while (0)

#endif
