/*
 * A plugin linked against the CUDA runtime and the C++ runtime, for local-app: like a Python
 * extension module, it is dlopened RTLD_LOCAL, so neither library is in the global scope. It
 * copies 256 bytes to the GPU and launches _Z4workPf once.
 */
#include <stdio.h>

#include <cuda_runtime_api.h>

#include "fatbin.h"

static void work_stub(void)
{
}

__attribute__((visibility("default"))) int plugin_run(void);
int plugin_run(void)
{
	char host[256] = "plugin";
	void *dev = NULL;
	static char fatbin[16];
	void **handle = __cudaRegisterFatBinary(fatbin), *args[] = {&dev};
	cudaError_t a, b, c, k;

	__cudaRegisterFunction(handle, (const char *)work_stub, "_Z4workPf", "_Z4workPf", -1, NULL,
			       NULL, NULL, NULL, NULL);
	__cudaRegisterFatBinaryEnd(handle);
	a = cudaMalloc(&dev, sizeof(host));
	b = cudaMemcpy(dev, host, sizeof(host), cudaMemcpyHostToDevice);
	k = cudaLaunchKernel((const void *)work_stub, (dim3){1, 1, 1}, (dim3){32, 1, 1}, args, 0,
			     0);
	if (!k)
		k = cudaDeviceSynchronize();
	c = cudaFree(dev);
	printf("local-plugin: cudaMalloc %d, cudaMemcpy %d, cudaFree %d, launch %d\n", (int)a,
	       (int)b, (int)c, (int)k);
	return a || b || c || k;
}
