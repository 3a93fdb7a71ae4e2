/*
 * cuBLAS on NVIDIA's runtime: what a training step's matrix multiplies look like to a profiler.
 * Usage: blas-app [steps] (default 6).
 *
 * Before the loop: 3 cudaMalloc of 256x256 floats, 2 of 256x256 bf16, cublasCreate.
 * Each step: nvtxMarkA("step"); cublasSgemm (fp32, 256x256x256, NN), then cublasGemmEx (bf16
 * inputs, fp32 output and compute, 256x256x256, NN), both on the default stream;
 * cudaDeviceSynchronize. Which kernels run is cuBLAS's choice for the device it finds.
 * Exits 0 if every call succeeded, printing "blas-app: N steps ok".
 */
#include <cstdio>
#include <cstdlib>

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#define N 256

#define APP "blas-app"
#include "check.h"

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 6;
	const float alpha = 1.0f, beta = 0.0f;
	float *a, *b, *c;
	__nv_bfloat16 *ha, *hb;
	cublasHandle_t h;

	CHECK(cudaMalloc(&a, N * N * sizeof(float)));
	CHECK(cudaMalloc(&b, N * N * sizeof(float)));
	CHECK(cudaMalloc(&c, N * N * sizeof(float)));
	CHECK(cudaMalloc(&ha, N * N * sizeof(*ha)));
	CHECK(cudaMalloc(&hb, N * N * sizeof(*hb)));
	CHECK_BLAS(cublasCreate(&h));
	for (int s = 0; s < steps; s++) {
		nvtxMarkA("step");
		CHECK_BLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &alpha, a, N, b, N, &beta, c,
				  N));
		CHECK_BLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &alpha, ha, CUDA_R_16BF, N, hb,
				   CUDA_R_16BF, N, &beta, c, CUDA_R_32F, N, CUBLAS_COMPUTE_32F,
				   CUBLAS_GEMM_DEFAULT));
		CHECK(cudaDeviceSynchronize());
	}
	CHECK_BLAS(cublasDestroy(h));
	cudaFree(a), cudaFree(b), cudaFree(c), cudaFree(ha), cudaFree(hb);
	return STEPS_OK(steps);
}
