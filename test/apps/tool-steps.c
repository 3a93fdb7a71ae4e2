/*
 * The native part of the stand-in torch (test/stand-ins/torch, loaded with ctypes): an NVTX
 * mark as torch.cuda.nvtx.mark makes it, and CUDA work that says which iteration made it.
 */
#include <stddef.h>

#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>

#define UPDATE_BYTES (64 << 10)
#define TOOL_API     __attribute__((visibility("default")))

TOOL_API int tool_init(void);
TOOL_API int tool_mark(const char *msg);
TOOL_API int tool_forward(int k);
TOOL_API int tool_update(int k, int j);

static void *update_buf; /* device memory that every update sets */

/* One cudaMalloc of UPDATE_BYTES, at import (before any step). */
int tool_init(void)
{
	return cudaMalloc(&update_buf, UPDATE_BYTES) == cudaSuccess ? 0 : -1;
}

int tool_mark(const char *msg)
{
	nvtxMarkA(msg);
	return 0;
}

/* Iteration k's forward pass: cudaMalloc((k+1) * 4096), cudaMemcpy((k+1) * 256, HtoD), cudaFree. */
int tool_forward(int k)
{
	static char host[64 << 10];
	size_t n = (size_t)k + 1;
	void *dev = NULL;
	int err;

	if (n * 256 > sizeof(host))
		return -1;
	err = cudaMalloc(&dev, n * 4096) != cudaSuccess;
	err = err || cudaMemcpy(dev, host, n * 256, cudaMemcpyHostToDevice) != cudaSuccess;
	if (dev)
		err = cudaFree(dev) != cudaSuccess || err;
	return err ? -1 : 0;
}

/* Iteration k's update by optimizer j (0..127): cudaMemset of (k+1) * 128 + j bytes. */
int tool_update(int k, int j)
{
	size_t bytes = ((size_t)k + 1) * 128 + (size_t)j;

	if (j < 0 || j > 127 || bytes > UPDATE_BYTES)
		return -1;
	return cudaMemset(update_buf, j, bytes) == cudaSuccess ? 0 : -1;
}
