/*
 * A test program's table of driver entry points, filled as NVIDIA's runtime fills its own:
 * libcuda.so.1 dlopened, each base name asked of cuGetProcAddress_v2 for CUDA 12.0.
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

#endif
