/*
 * Inside the fake libcuda.so.1: what its driver-API files share. Every entry point is one traced
 * call (DRV_CALL ... fakecuda_api_exit), which is untraced when NVIDIA's runtime makes it inside
 * one of its own calls (fakecuda_call.nested).
 */
#ifndef FAKECUDA_DRIVER_H
#define FAKECUDA_DRIVER_H

#pragma GCC visibility push(default)
#include <cuda.h>
CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode);
CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph);
CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *phGraphExec, CUgraph hGraph,
					   CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams);
CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream);
CUresult cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream);
/* cuStreamGetCaptureInfo before 12.3, without edge data (driver-extra.c). */
CUresult capture_info_v2(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
			 cuuint64_t *id_out, CUgraph *graph_out,
			 const CUgraphNode **dependencies_out,
			 size_t *numDependencies_out) __asm__("cuStreamGetCaptureInfo_v2");
/* Before 11.3: the status and id only. */
CUresult capture_info_v1(CUstream hStream, CUstreamCaptureStatus *captureStatus,
			 cuuint64_t *id) __asm__("cuStreamGetCaptureInfo");
/* The linker's CUDA 5.5 forms, under the plain names (cuda.h's are the _v2 ones; driver-link.c). */
CUresult link_create_v1(unsigned int numOptions, CUjit_option *options, void **optionValues,
			CUlinkState *stateOut) __asm__("cuLinkCreate");
CUresult link_add_data_v1(CUlinkState state, CUjitInputType type, void *data, size_t size,
			  const char *name, unsigned int numOptions, CUjit_option *options,
			  void **optionValues) __asm__("cuLinkAddData");
CUresult link_add_file_v1(CUlinkState state, CUjitInputType type, const char *path,
			  unsigned int numOptions, CUjit_option *options,
			  void **optionValues) __asm__("cuLinkAddFile");
#pragma GCC visibility pop

#include "test/fakecuda/sim.h"

/*
 * A CUmodule, and a CUlibrary, which is its own module here: the image it was loaded from, and
 * the copy it holds of an image read from a file (freed with it), else NULL.
 */
struct fakecuda_module {
	const void *image;
	void *owned;
};

/*
 * A new module of `image`, which it owns if `owned`, else holds a copy of when it is a cubin or
 * PTX (fakecuda_image_size); NULL when out of memory.
 */
struct fakecuda_module *fakecuda_module_new(const void *image, bool owned);
void fakecuda_module_free(struct fakecuda_module *module);
/* The bytes of a file, in memory of malloc (*size of them); NULL when it cannot be read. */
void *fakecuda_read_file(const char *path, size_t *size);

/* ---- what an image holds (fatbin.c) ---- */

enum fakecuda_image_kind {
	FAKECUDA_IMAGE_UNKNOWN,
	FAKECUDA_IMAGE_CUBIN,
	FAKECUDA_IMAGE_PTX,
	FAKECUDA_IMAGE_FATBIN,
};

enum fakecuda_image_symbol {
	FAKECUDA_IMAGE_KERNEL,	 /* an entry function */
	FAKECUDA_IMAGE_VARIABLE, /* a __device__ or __constant__ variable, of `size` bytes */
};

/* Called for each symbol of an image (`name` is not NUL-terminated); true stops the walk. */
typedef bool (*fakecuda_image_symbol_fn)(void *arg, enum fakecuda_image_symbol kind,
					 const char *name, size_t name_len, uint64_t size);

/*
 * Walks the symbols of a loaded image (a fatbin, nvcc's wrapper of one, a cubin or PTX); with
 * fn NULL, only says what it is.
 */
enum fakecuda_image_kind fakecuda_image_each(const void *image, fakecuda_image_symbol_fn fn,
					     void *arg);
/* The same for `len` bytes of a linker input of CUjitInputType `type` (cubin, PTX, fatbin). */
enum fakecuda_image_kind fakecuda_image_data_each(int type, const void *data, size_t len,
						  fakecuda_image_symbol_fn fn, void *arg);
/* The size of __device__ variable `name` in a loaded image; 0 when not known. */
size_t fakecuda_image_symbol_size(const void *image, const char *name);
/*
 * The bytes of a cubin or PTX image; 0 for others. A module keeps a copy of such an image, as
 * the real driver does: a program may free its buffer once it is loaded (a JIT compiler's
 * output, the linker's after cuLinkDestroy). Fatbins stay where the runtime registered them.
 */
size_t fakecuda_image_size(const void *image);
/* Whether a cubin or PTX image has kernel `name` (1 or 0); -1 for other images (not looked in). */
int fakecuda_image_has_kernel(const void *image, const char *name);

#define DRV_CBID(fn)	    CUPTI_DRIVER_TRACE_CBID_##fn
#define CUDA_VERSION_NUMBER 13000

/*
 * Opens the traced call `c` of driver entry point `fn` (its cbid, name and *_params struct,
 * whose members are the remaining arguments).
 */
#define DRV_CALL(fn, ...)               \
	fn##_params p_ = {__VA_ARGS__}; \
	struct fakecuda_call c;         \
	fakecuda_drv_enter(&c, DRV_CBID(fn), #fn, &p_, NULL, DRV_CALLER)

/*
 * Entry point `fn` and its per-thread-default-stream form fn##_ptsz, both of parameters `decl`:
 * each is the traced call of `result`, an expression that may use `per_thread`; the remaining
 * arguments are the members of their *_params structs.
 */
#define DRV_PAIR(fn, decl, result, ...) DRV_PAIR_AS(fn, _ptsz, decl, result, __VA_ARGS__)
/* The same where the per-thread form is fn##_ptds (synchronous copies and memsets). */
#define DRV_PAIR_AS(fn, suffix, decl, result, ...)          \
	CUresult fn decl                                    \
	{                                                   \
		const bool per_thread = false;              \
		(void)per_thread;                           \
		DRV_CALL(fn, __VA_ARGS__);                  \
		return fakecuda_api_exit(&c, result, NULL); \
	}                                                   \
	CUresult fn##suffix decl                            \
	{                                                   \
		const bool per_thread = true;               \
		(void)per_thread;                           \
		DRV_CALL(fn##suffix, __VA_ARGS__);          \
		return fakecuda_api_exit(&c, result, NULL); \
	}

/*
 * Entry point `fn(type *out)` that, once the driver is initialised, writes `value` to *out
 * (CUDA_ERROR_INVALID_VALUE when out is NULL).
 */
#define DRV_GET(fn, type, value)                                                          \
	CUresult fn(type *out)                                                            \
	{                                                                                 \
		DRV_CALL(fn, out);                                                        \
		CUresult err = out ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE; \
		if (!err)                                                                 \
			*out = (value);                                                   \
		return fakecuda_api_exit(&c, err, NULL);                                  \
	}

/* Where the entry point (the function this is written in) returns to. */
#define DRV_CALLER __builtin_return_address(0)

/*
 * Opens a driver call made from `caller`: untraced when that code is NVIDIA's runtime (the
 * object that asked for its export tables), as CUPTI reports only the runtime's own calls.
 */
void fakecuda_drv_enter(struct fakecuda_call *c, CUpti_CallbackId cbid, const char *name,
			const void *params, const char *symbol, const void *caller);
/* Notes that `caller`'s object holds a CUDA runtime (driver-exports.c). */
void fakecuda_drv_runtime_seen(const void *caller);

/* CUDA_SUCCESS once cuInit has run, else CUDA_ERROR_NOT_INITIALIZED. */
CUresult fakecuda_drv_need_init(void);
/* A negative errno of the simulation as a CUresult. */
CUresult fakecuda_drv_error(int err);
/*
 * The rest of cuModuleLoadData's and cuLibraryLoadData's call c: a module of image (not
 * copied) in *module, or in *library when module is NULL (both NULL: invalid).
 */
CUresult fakecuda_drv_load_data(struct fakecuda_call *c, const void *image, CUmodule *module,
				CUlibrary *library);
/*
 * The rest of cuModuleUnload's and cuLibraryUnload's call c: frees module or library m (its
 * kernels stay valid for the process's life, as the simulation keeps every kernel).
 */
CUresult fakecuda_drv_unload(struct fakecuda_call *c, void *m);
/*
 * The rest of cuModuleGetFunction's and cuLibraryGetKernel's call c: kernel `name` of module or
 * library m in *func, or in *kernel when func is NULL, named by what the program asked for. A
 * cubin or PTX image has the kernels it declares (else CUDA_ERROR_NOT_FOUND); any other image
 * (a fatbin, bytes the simulation cannot read) every name.
 */
CUresult fakecuda_drv_get_kernel(struct fakecuda_call *c, void *m, const char *name,
				 CUfunction *func, CUkernel *kernel);

/*
 * The per-thread-default-stream forms, which cuda.h declares only to programs built for them;
 * the simulated driver exports them all, as the real one does.
 */
#pragma GCC visibility push(default)
#define FAKECUDA_COPY_DECL(name, dst_t, src_t) CUresult name(dst_t dst, src_t src, size_t n)
#define FAKECUDA_ACOPY_DECL(name, dst_t, src_t) \
	CUresult name(dst_t dst, src_t src, size_t n, CUstream s)
FAKECUDA_COPY_DECL(cuMemcpyHtoD_v2_ptds, CUdeviceptr, const void *);
FAKECUDA_COPY_DECL(cuMemcpyDtoH_v2_ptds, void *, CUdeviceptr);
FAKECUDA_COPY_DECL(cuMemcpyDtoD_v2_ptds, CUdeviceptr, CUdeviceptr);
FAKECUDA_COPY_DECL(cuMemcpy_ptds, CUdeviceptr, CUdeviceptr);
FAKECUDA_ACOPY_DECL(cuMemcpyHtoDAsync_v2_ptsz, CUdeviceptr, const void *);
FAKECUDA_ACOPY_DECL(cuMemcpyDtoHAsync_v2_ptsz, void *, CUdeviceptr);
FAKECUDA_ACOPY_DECL(cuMemcpyDtoDAsync_v2_ptsz, CUdeviceptr, CUdeviceptr);
FAKECUDA_ACOPY_DECL(cuMemcpyAsync_ptsz, CUdeviceptr, CUdeviceptr);
CUresult cuMemsetD8_v2_ptds(CUdeviceptr d, unsigned char v, size_t n);
CUresult cuMemsetD32_v2_ptds(CUdeviceptr d, unsigned int v, size_t n);
CUresult cuMemsetD8Async_ptsz(CUdeviceptr d, unsigned char v, size_t n, CUstream s);
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
				      CUstream hStream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
CUresult cuMemsetD32Async_ptsz(CUdeviceptr d, unsigned int v, size_t n, CUstream s);
CUresult cuStreamSynchronize_ptsz(CUstream hStream);
CUresult cuStreamQuery_ptsz(CUstream hStream);
CUresult cuStreamGetFlags_ptsz(CUstream hStream, unsigned int *flags);
CUresult cuStreamGetId_ptsz(CUstream hStream, unsigned long long *streamId);
CUresult cuStreamGetCtx_ptsz(CUstream hStream, CUcontext *pctx);
CUresult cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus);
CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
					cuuint64_t *id_out, CUgraph *graph_out,
					const CUgraphNode **dependencies_out,
					const CUgraphEdgeData **edgeData_out,
					size_t *numDependencies_out);
CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags);
CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream);
CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream, unsigned int flags);
CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
			     unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
			     unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
			     void **kernelParams, void **extra);
CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
			       void **extra);
CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
					unsigned int gridDimZ, unsigned int blockDimX,
					unsigned int blockDimY, unsigned int blockDimZ,
					unsigned int sharedMemBytes, CUstream hStream,
					void **kernelParams);
#pragma GCC visibility pop

#endif
