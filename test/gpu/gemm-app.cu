/*
 * GPU suite case 3: cuBLAS GEMMs, whose kernels are launched from inside libcublas where no hook
 * sees them. Usage: gemm-app [steps]. Each step: nvtxMarkA("step"); in an NVTX range "fp32" two
 * cublasSgemm; in a range "bf16" two cublasGemmEx with bf16 inputs and output and fp32 compute;
 * all M = N = K = 1024 on one stream, synchronised at the end of the step.
 */
#include <cstdio>
#include <cstdlib>

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#define DIM 1024

#define APP "gemm-app"
#include "../apps/check.h"

template <typename T> __global__ void fill(T *x, float v, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		x[i] = (T)v;
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 8, n = DIM * DIM;
	float *a, *b, *c, alpha = 1.0f, beta = 0.0f, host = 0;
	__nv_bfloat16 *ab, *bb, *cb;
	cublasHandle_t h;
	cudaStream_t s;

	CHECK(cudaMalloc(&a, n * sizeof(float)));
	CHECK(cudaMalloc(&b, n * sizeof(float)));
	CHECK(cudaMalloc(&c, n * sizeof(float)));
	CHECK(cudaMalloc(&ab, n * sizeof(__nv_bfloat16)));
	CHECK(cudaMalloc(&bb, n * sizeof(__nv_bfloat16)));
	CHECK(cudaMalloc(&cb, n * sizeof(__nv_bfloat16)));
	CHECK(cudaStreamCreate(&s));
	fill<float><<<n / 256, 256, 0, s>>>(a, 1.0f, n);
	fill<float><<<n / 256, 256, 0, s>>>(b, 0.5f, n);
	fill<__nv_bfloat16><<<n / 256, 256, 0, s>>>(ab, 1.0f, n);
	fill<__nv_bfloat16><<<n / 256, 256, 0, s>>>(bb, 0.5f, n);
	CHECK_BLAS(cublasCreate(&h));
	CHECK_BLAS(cublasSetStream(h, s));
	for (int st = 0; st < steps; st++) {
		nvtxMarkA("step");
		nvtxRangePushA("fp32");
		for (int i = 0; i < 2; i++)
			CHECK_BLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, DIM, DIM, DIM, &alpha,
					       a, DIM, b, DIM, &beta, c, DIM));
		nvtxRangePop();
		nvtxRangePushA("bf16");
		for (int i = 0; i < 2; i++)
			CHECK_BLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, DIM, DIM, DIM, &alpha,
						ab, CUDA_R_16BF, DIM, bb, CUDA_R_16BF, DIM, &beta,
						cb, CUDA_R_16BF, DIM, CUBLAS_COMPUTE_32F,
						CUBLAS_GEMM_DEFAULT));
		nvtxRangePop();
		CHECK(cudaStreamSynchronize(s));
	}
	/* Every element of c is a sum of DIM products 1 * 0.5. */
	CHECK(cudaMemcpy(&host, c, sizeof(float), cudaMemcpyDeviceToHost));
	if (host != 0.5f * DIM) {
		fprintf(stderr, "gemm-app: c[0] is %g, expected %g\n", host, 0.5f * DIM);
		return 1;
	}
	CHECK_BLAS(cublasDestroy(h));
	return STEPS_OK(steps);
}
