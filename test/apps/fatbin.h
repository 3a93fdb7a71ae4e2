/*
 * What nvcc's generated code calls to register kernels, for test programs written in C that
 * register host stubs by hand (the simulated runtime names kernels by deviceFun).
 */
#ifndef GPROF_TEST_APPS_FATBIN_H
#define GPROF_TEST_APPS_FATBIN_H

#include <cuda_runtime_api.h>

void **__cudaRegisterFatBinary(void *fatCubin);
void __cudaRegisterFatBinaryEnd(void **handle);
void __cudaRegisterFunction(void **handle, const char *hostFun, char *deviceFun,
			    const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid,
			    dim3 *bDim, dim3 *gDim, int *wSize);

#endif
