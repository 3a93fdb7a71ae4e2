/*
 * A test program's table of driver entry points, filled as NVIDIA's runtime fills its own:
 * libcuda.so.1 dlopened, each base name asked of cuGetProcAddress_v2 for CUDA 12.0. The
 * program defines APP and includes check.h first.
 */
#ifndef TEST_APPS_DRIVER_ENTRIES_H
#define TEST_APPS_DRIVER_ENTRIES_H

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda.h>

/* Which base name fills the pointer at offset in the table. */
struct driver_entry {
	const char *name;
	size_t offset;
};

#define DRIVER_ENTRY(table, name, member)                 \
	{                                                 \
		name, offsetof(__typeof__(table), member) \
	}

/* Fills table by entries[0..n); the library's handle. Exits 1 with a line of prog's if it can't. */
static inline void *driver_entries(const char *prog, const struct driver_entry *entries, size_t n,
				   void *table)
{
	CUresult (*get_proc)(const char *, void **, int, cuuint64_t,
			     CUdriverProcAddressQueryResult *);
	CUdriverProcAddressQueryResult status;
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

	*(void **)&get_proc = lib ? dlsym(lib, "cuGetProcAddress_v2") : NULL;
	if (!get_proc) {
		fprintf(stderr, "%s: %s\n", prog, lib ? "no cuGetProcAddress_v2" : dlerror());
		exit(1);
	}
	for (size_t i = 0; i < n; i++) {
		CUresult err =
		    get_proc(entries[i].name, (void **)((char *)table + entries[i].offset), 12000,
			     CU_GET_PROC_ADDRESS_DEFAULT, &status);

		if (err != CUDA_SUCCESS) {
			fprintf(stderr, "%s: %s: error %d\n", prog, entries[i].name, (int)err);
			exit(1);
		}
	}
	return lib;
}

/*
 * The entry points every such program uses: its start (cuInit and device 0's primary context),
 * a module's kernels found by name and launched, and the context's synchronisation.
 */
struct driver {
	CUresult (*init)(unsigned int);
	CUresult (*device_get)(CUdevice *, int);
	CUresult (*ctx_retain)(CUcontext *, CUdevice);
	CUresult (*ctx_set)(CUcontext);
	CUresult (*module_load)(CUmodule *, const void *);
	CUresult (*module_get_function)(CUfunction *, CUmodule, const char *);
	CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			   unsigned, CUstream, void **, void **);
	CUresult (*launch_ex)(const CUlaunchConfig *, CUfunction, void **, void **);
	CUresult (*sync)(void);
};
static struct driver drv;

/*
 * Fills drv, then the program's own table by entries[0..n), as driver_entries does; the
 * library's handle.
 */
static inline void *driver_resolve(const char *prog, const struct driver_entry *entries, size_t n,
				   void *table)
{
#define DRV(name, member)                             \
	{                                             \
		name, offsetof(struct driver, member) \
	}
	static const struct driver_entry drv_entries[] = {
	    DRV("cuInit", init),
	    DRV("cuDeviceGet", device_get),
	    DRV("cuDevicePrimaryCtxRetain", ctx_retain),
	    DRV("cuCtxSetCurrent", ctx_set),
	    DRV("cuModuleLoadData", module_load),
	    DRV("cuModuleGetFunction", module_get_function),
	    DRV("cuLaunchKernel", launch),
	    DRV("cuLaunchKernelEx", launch_ex),
	    DRV("cuCtxSynchronize", sync),
	};
#undef DRV

	driver_entries(prog, drv_entries, sizeof(drv_entries) / sizeof(drv_entries[0]), &drv);
	return driver_entries(prog, entries, n, table);
}

/* cuInit, then device 0's primary context made current; a failure exits as CHECK_CU does. */
static inline void driver_start(void)
{
	CUcontext ctx;
	CUdevice dev;

	CHECK_CU(drv.init(0));
	CHECK_CU(drv.device_get(&dev, 0));
	CHECK_CU(drv.ctx_retain(&ctx, dev));
	CHECK_CU(drv.ctx_set(ctx));
}

#endif
