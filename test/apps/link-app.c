/*
 * Code linked and loaded at run time, as cuDNN's runtime-compiled engines and JIT compilers do.
 * Usage: link-app CUBIN PTX FATBIN: link-kernels.cubin, link-more.ptx and symbol-app.fatbin of
 * the build (their sources say what they hold).
 *
 * dlopens libcuda.so.1; cuInit and device 0's primary context. Entry points from
 * cuGetProcAddress_v2 at 12000 (the _v2 linker), except a second linker found by dlsym under the
 * plain names (the CUDA 5.5 forms, which cuDNN asks for).
 * 1. cuLinkCreate_v2; cuLinkAddData of the cubin and of the PTX; cuLinkAddFile of the fatbin;
 *    cuLinkComplete; cuModuleLoadData of the linked image; cuLinkDestroy (the module outlives
 *    it). cuModuleGetFunction of link_scale, _Z8link_sumPKfPfi, link_grid_sync and _Z5touchi
 *    (symbol-app's kernel), and of "not_linked", which must be CUDA_ERROR_NOT_FOUND.
 *    cuModuleGetGlobal of table, hits, counter and big: their sizes are printed.
 *    Launches, legacy stream: cuLaunchKernel(link_scale, grid 4, block 128);
 *    cuLaunchKernel(_Z8link_sumPKfPfi, grid 2, block 64, 512 B shared);
 *    cuLaunchCooperativeKernel(link_grid_sync, grid 8, block 256);
 *    cuLaunchKernelEx(_Z5touchi, grid 1, block 32) with CU_LAUNCH_ATTRIBUTE_COOPERATIVE 1.
 * 2. cuLinkCreate (5.5 form); cuLinkAddData of the PTX alone; cuLinkComplete; cuModuleLoadData;
 *    cuLinkDestroy; cuModuleGetFunction(link_grid_sync) and of link_scale (not linked this time:
 *    must be CUDA_ERROR_NOT_FOUND).
 * 3. cuLibraryLoadFromFile of the cubin; cuLibraryGetKernel(link_scale), launched with
 *    cuLaunchKernel(grid 1, block 32); cuLibraryGetKernel(link_grid_sync), which is in the PTX
 *    only, must be CUDA_ERROR_NOT_FOUND.
 * cuCtxSynchronize; prints "link-app: table T bytes, hits H bytes, counter C bytes, big B bytes"
 * and exits 0. Any other result: one line on stderr, exit 1.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#define APP "link-app"
#include "check.h"
#include "driver-entries.h"

static struct {
	CUresult (*link_create)(unsigned int, CUjit_option *, void **, CUlinkState *);
	CUresult (*link_add_data)(CUlinkState, CUjitInputType, void *, size_t, const char *,
				  unsigned int, CUjit_option *, void **);
	CUresult (*link_add_file)(CUlinkState, CUjitInputType, const char *, unsigned int,
				  CUjit_option *, void **);
	CUresult (*link_complete)(CUlinkState, void **, size_t *);
	CUresult (*link_destroy)(CUlinkState);
	CUresult (*module_get_global)(CUdeviceptr *, size_t *, CUmodule, const char *);
	CUresult (*library_load_file)(CUlibrary *, const char *, CUjit_option *, void **,
				      unsigned int, CUlibraryOption *, void **, unsigned int);
	CUresult (*library_get_kernel)(CUkernel *, CUlibrary, const char *);
	CUresult (*launch_cooperative)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
				       unsigned, unsigned, CUstream, void **);
	/* the CUDA 5.5 linker, by dlsym */
	CUresult (*link_create_v1)(unsigned int, CUjit_option *, void **, CUlinkState *);
	CUresult (*link_add_data_v1)(CUlinkState, CUjitInputType, void *, size_t, const char *,
				     unsigned int, CUjit_option *, void **);
} cu;

static const struct driver_entry entries[] = {
    DRIVER_ENTRY(cu, "cuLinkCreate", link_create),
    DRIVER_ENTRY(cu, "cuLinkAddData", link_add_data),
    DRIVER_ENTRY(cu, "cuLinkAddFile", link_add_file),
    DRIVER_ENTRY(cu, "cuLinkComplete", link_complete),
    DRIVER_ENTRY(cu, "cuLinkDestroy", link_destroy),
    DRIVER_ENTRY(cu, "cuModuleGetGlobal", module_get_global),
    DRIVER_ENTRY(cu, "cuLibraryLoadFromFile", library_load_file),
    DRIVER_ENTRY(cu, "cuLibraryGetKernel", library_get_kernel),
    DRIVER_ENTRY(cu, "cuLaunchCooperativeKernel", launch_cooperative),
};

static void resolve(void)
{
	void *lib = driver_resolve("link-app", entries, sizeof(entries) / sizeof(entries[0]), &cu);

	*(void **)&cu.link_create_v1 = dlsym(lib, "cuLinkCreate");
	*(void **)&cu.link_add_data_v1 = dlsym(lib, "cuLinkAddData");
	if (!cu.link_create_v1 || !cu.link_add_data_v1) {
		fprintf(stderr, "link-app: libcuda.so.1 lacks an entry point\n");
		exit(1);
	}
}

/* A file's bytes and a NUL (PTX is a string). */
static char *slurp(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	char *data;
	long len;

	if (!f || fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) ||
	    !(data = calloc(1, (size_t)len + 1)) || fread(data, 1, (size_t)len, f) != (size_t)len) {
		fprintf(stderr, "link-app: cannot read %s\n", path);
		exit(1);
	}
	fclose(f);
	*size = (size_t)len;
	return data;
}

static size_t global_size(CUmodule mod, const char *name)
{
	CUdeviceptr ptr;
	size_t bytes = 0;

	CHECK_CU(cu.module_get_global(&ptr, &bytes, mod, name));
	return bytes;
}

int main(int argc, char **argv)
{
	CUfunction scale, sum, grid_sync, touch, f;
	size_t cubin_size, ptx_size, linked_size;
	CUlaunchAttribute cooperative = {.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE,
					 .value.cooperative = 1};
	CUlaunchConfig config = {.gridDimX = 1,
				 .gridDimY = 1,
				 .gridDimZ = 1,
				 .blockDimX = 32,
				 .blockDimY = 1,
				 .blockDimZ = 1,
				 .attrs = &cooperative,
				 .numAttrs = 1};
	char *cubin, *ptx;
	CUmodule mod, ptx_mod;
	CUlinkState link;
	CUlibrary lib;
	CUkernel kernel;
	void *linked;

	if (argc != 4) {
		fprintf(stderr, "usage: link-app CUBIN PTX FATBIN\n");
		return 2;
	}
	resolve();
	cubin = slurp(argv[1], &cubin_size);
	ptx = slurp(argv[2], &ptx_size);
	driver_start();

	/* 1. three inputs */
	CHECK_CU(cu.link_create(0, NULL, NULL, &link));
	CHECK_CU(cu.link_add_data(link, CU_JIT_INPUT_CUBIN, cubin, cubin_size, "link-kernels.cubin",
				  0, NULL, NULL));
	CHECK_CU(cu.link_add_data(link, CU_JIT_INPUT_PTX, ptx, ptx_size + 1, "link-more.ptx", 0,
				  NULL, NULL));
	CHECK_CU(cu.link_add_file(link, CU_JIT_INPUT_FATBINARY, argv[3], 0, NULL, NULL));
	CHECK_CU(cu.link_complete(link, &linked, &linked_size));
	CHECK_CU(drv.module_load(&mod, linked));
	CHECK_CU(cu.link_destroy(link));
	CHECK_CU(drv.module_get_function(&scale, mod, "link_scale"));
	CHECK_CU(drv.module_get_function(&sum, mod, "_Z8link_sumPKfPfi"));
	CHECK_CU(drv.module_get_function(&grid_sync, mod, "link_grid_sync"));
	CHECK_CU(drv.module_get_function(&touch, mod, "_Z5touchi"));
	CHECK_IS(drv.module_get_function(&f, mod, "not_linked"), CUDA_ERROR_NOT_FOUND);
	CHECK_CU(drv.launch(scale, 4, 1, 1, 128, 1, 1, 0, NULL, NULL, NULL));
	CHECK_CU(drv.launch(sum, 2, 1, 1, 64, 1, 1, 512, NULL, NULL, NULL));
	CHECK_CU(cu.launch_cooperative(grid_sync, 8, 1, 1, 256, 1, 1, 0, NULL, NULL));
	CHECK_CU(drv.launch_ex(&config, touch, NULL, NULL));

	/* 2. the PTX alone, through the CUDA 5.5 forms */
	CHECK_CU(cu.link_create_v1(0, NULL, NULL, &link));
	CHECK_CU(cu.link_add_data_v1(link, CU_JIT_INPUT_PTX, ptx, ptx_size + 1, "link-more.ptx", 0,
				     NULL, NULL));
	CHECK_CU(cu.link_complete(link, &linked, &linked_size));
	CHECK_CU(drv.module_load(&ptx_mod, linked));
	CHECK_CU(cu.link_destroy(link));
	CHECK_CU(drv.module_get_function(&f, ptx_mod, "link_grid_sync"));
	CHECK_IS(drv.module_get_function(&f, ptx_mod, "link_scale"), CUDA_ERROR_NOT_FOUND);

	/* 3. the cubin as a library, from its file */
	CHECK_CU(cu.library_load_file(&lib, argv[1], NULL, NULL, 0, NULL, NULL, 0));
	CHECK_CU(cu.library_get_kernel(&kernel, lib, "link_scale"));
	CHECK_CU(drv.launch((CUfunction)kernel, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
	CHECK_IS(cu.library_get_kernel(&kernel, lib, "link_grid_sync"), CUDA_ERROR_NOT_FOUND);

	CHECK_CU(drv.sync());
	printf("link-app: table %zu bytes, hits %zu bytes, counter %zu bytes, big %zu bytes\n",
	       global_size(mod, "table"), global_size(mod, "hits"), global_size(mod, "counter"),
	       global_size(mod, "big"));
	free(cubin);
	free(ptx);
	return 0;
}
