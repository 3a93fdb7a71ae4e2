/*
 * A plugin linked against the CUDA runtime, for local-app: like a Python extension module, it
 * is dlopened RTLD_LOCAL, so its libcudart is not in the global scope.
 */
#include <stdio.h>

#include <cuda_runtime_api.h>

__attribute__((visibility("default"))) int plugin_run(void);
int plugin_run(void)
{
	char host[256] = "plugin";
	void *dev = NULL;
	cudaError_t a, b, c;

	a = cudaMalloc(&dev, sizeof(host));
	b = cudaMemcpy(dev, host, sizeof(host), cudaMemcpyHostToDevice);
	c = cudaFree(dev);
	printf("local-plugin: cudaMalloc %d, cudaMemcpy %d, cudaFree %d\n", (int)a, (int)b, (int)c);
	return a || b || c;
}
