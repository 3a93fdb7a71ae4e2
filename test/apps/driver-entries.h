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

/* The entry points of a program's start: cuInit and device 0's primary context. */
struct driver_start {
	CUresult (*init)(unsigned int);
	CUresult (*device_get)(CUdevice *, int);
	CUresult (*ctx_retain)(CUcontext *, CUdevice);
	CUresult (*ctx_set)(CUcontext);
};

/* Fills start, then table by entries[0..n), as driver_entries does; the library's handle. */
static inline void *driver_start_entries(const char *prog, struct driver_start *start,
					 const struct driver_entry *entries, size_t n, void *table)
{
	static const struct driver_entry start_entries[] = {
	    {"cuInit", offsetof(struct driver_start, init)},
	    {"cuDeviceGet", offsetof(struct driver_start, device_get)},
	    {"cuDevicePrimaryCtxRetain", offsetof(struct driver_start, ctx_retain)},
	    {"cuCtxSetCurrent", offsetof(struct driver_start, ctx_set)},
	};

	driver_entries(prog, start_entries, sizeof(start_entries) / sizeof(start_entries[0]),
		       start);
	return driver_entries(prog, entries, n, table);
}

/* cuInit, then device 0's primary context made current; a failure exits as CHECK_CU does. */
static inline void driver_start(const struct driver_start *start)
{
	CUcontext ctx;
	CUdevice dev;

	CHECK_CU(start->init(0));
	CHECK_CU(start->device_get(&dev, 0));
	CHECK_CU(start->ctx_retain(&ctx, dev));
	CHECK_CU(start->ctx_set(ctx));
}

#endif
