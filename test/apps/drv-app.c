/*
 * The Triton pattern: dlopen libcuda.so.1, find every entry point through cuGetProcAddress,
 * load a module, get functions by name and launch them. Usage: drv-app [steps] (default 3).
 *
 * cuInit, device 0's primary context, one module, two functions; cuMemAlloc 2 x 4 KiB and one
 * cuMemcpyHtoD of 4 KiB. Each step: cuLaunchKernel(triton_poi_fused_add_0, grid 8, block 128)
 * and cuLaunchKernelEx(triton_red_fused_sum_1, grid 4, block 64, 256 B shared), default stream.
 * Then cuMemcpyDtoH of 4 KiB, cuCtxSynchronize, cuMemFree x2, cuModuleUnload. Exits 0 if the
 * bytes came back unchanged.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#define APP "drv-app"
#include "check.h"
#include "driver-entries.h"

#define BYTES 4096

/* The PTX a Triton-style program would load; the simulation never reads it. */
static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
			  ".visible .entry triton_poi_fused_add_0()\n{\n\tret;\n}\n"
			  ".visible .entry triton_red_fused_sum_1()\n{\n\tret;\n}\n";

static struct {
	CUresult (*module_unload)(CUmodule);
	CUresult (*mem_alloc)(CUdeviceptr *, size_t);
	CUresult (*mem_free)(CUdeviceptr);
	CUresult (*htod)(CUdeviceptr, const void *, size_t);
	CUresult (*dtoh)(void *, CUdeviceptr, size_t);
} cu;

static const struct driver_entry entries[] = {
    DRIVER_ENTRY(cu, "cuModuleUnload", module_unload),
    DRIVER_ENTRY(cu, "cuMemAlloc", mem_alloc),
    DRIVER_ENTRY(cu, "cuMemFree", mem_free),
    DRIVER_ENTRY(cu, "cuMemcpyHtoD", htod),
    DRIVER_ENTRY(cu, "cuMemcpyDtoH", dtoh),
};

static void resolve(void)
{
	driver_resolve("drv-app", entries, sizeof(entries) / sizeof(entries[0]), &cu);
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 3;
	static char in[BYTES], out[BYTES];
	CUdeviceptr a, b;
	CUfunction add, sum;
	CUmodule mod;
	int n = BYTES / 4;
	void *args[] = {&a, &b, &n};
	CUlaunchConfig config = {.gridDimX = 4,
				 .gridDimY = 1,
				 .gridDimZ = 1,
				 .blockDimX = 64,
				 .blockDimY = 1,
				 .blockDimZ = 1,
				 .sharedMemBytes = 256};

	resolve();
	driver_start();
	CHECK_CU(drv.module_load(&mod, ptx));
	CHECK_CU(drv.module_get_function(&add, mod, "triton_poi_fused_add_0"));
	CHECK_CU(drv.module_get_function(&sum, mod, "triton_red_fused_sum_1"));
	CHECK_CU(cu.mem_alloc(&a, BYTES));
	CHECK_CU(cu.mem_alloc(&b, BYTES));
	for (int i = 0; i < BYTES; i++)
		in[i] = (char)i;
	CHECK_CU(cu.htod(a, in, BYTES));
	for (int s = 0; s < steps; s++) {
		CHECK_CU(drv.launch(add, 8, 1, 1, 128, 1, 1, 0, NULL, args, NULL));
		CHECK_CU(drv.launch_ex(&config, sum, args, NULL));
	}
	CHECK_CU(cu.dtoh(out, a, BYTES));
	CHECK_CU(drv.sync());
	CHECK_CU(cu.mem_free(a));
	CHECK_CU(cu.mem_free(b));
	CHECK_CU(cu.module_unload(mod));
	if (memcmp(in, out, BYTES)) {
		fprintf(stderr, "drv-app: bytes differ after the round trip\n");
		return 1;
	}
	return STEPS_OK(steps);
}
