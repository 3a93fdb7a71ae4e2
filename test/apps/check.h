/*
 * Checks for the test apps, C and nvcc alike; define APP, the app's name, first.
 * CHECK(call): a CUDA runtime call that fails prints "<APP>: <call>: <error>" on stderr, the
 * runtime's words, and exits CHECK_EXIT (1 unless the app defines it). An app whose output the
 * tests compare with and without libgprof defines CHECK_ON_STDOUT first: then the line goes to
 * stdout with the error's number, exit 2.
 * CHECK_IS(call, want): a call of any other library (driver, cuBLAS, NCCL) that returns other
 * than want prints "<APP>: <call>: error <number>" on stderr and exits 1. CHECK_CU and
 * CHECK_BLAS are CHECK_IS of the driver's and cuBLAS's success.
 * return STEPS_OK(steps) ends a run that went well with the line the tests look for.
 */
#ifndef GPROF_TEST_APPS_CHECK_H
#define GPROF_TEST_APPS_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#ifdef CHECK_ON_STDOUT
#define CHECK_FAILED(call, err) (printf(APP ": %s: %d\n", call, (int)(err)), exit(2))
#else
#ifndef CHECK_EXIT
#define CHECK_EXIT 1
#endif
#define CHECK_FAILED(call, err) \
	(fprintf(stderr, APP ": %s: %s\n", call, cudaGetErrorString(err)), exit(CHECK_EXIT))
#endif

#define CHECK(call)                                \
	do {                                       \
		cudaError_t err_ = (call);         \
		if (err_ != cudaSuccess)           \
			CHECK_FAILED(#call, err_); \
	} while (0)

#define CHECK_IS(call, want)                                                  \
	do {                                                                  \
		int err_ = (int)(call);                                       \
		if (err_ != (int)(want)) {                                    \
			fprintf(stderr, APP ": %s: error %d\n", #call, err_); \
			exit(1);                                              \
		}                                                             \
	} while (0)

#define STEPS_OK(steps) (printf(APP ": %d steps ok\n", (steps)), 0)

#define CHECK_CU(call)	 CHECK_IS(call, CUDA_SUCCESS)
#define CHECK_BLAS(call) CHECK_IS(call, CUBLAS_STATUS_SUCCESS)

#endif
