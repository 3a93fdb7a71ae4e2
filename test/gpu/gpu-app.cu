/*
 * GPU suite cases 1, 2, 8 and 9: a CUDA C program with known work per step, built with
 * -cudart shared (case 1) and with nvcc's default static cudart (case 2). Usage: gpu-app [steps],
 * or gpu-app -q: it only asks how many devices there are, as torchrun's launcher does (case 9).
 *
 * Each step (the figures cases.py expects, derived from this list):
 *   nvtxMarkA("step")
 *   range "upload":   HtoD 64 KiB pageable -> device, async on s1
 *                     HtoD 512 KiB pinned -> device, async on s2
 *   range "compute":  saxpy (grid 1024, block 256) <<<>>> twice on s1
 *                     reduce_sum (grid 64, block 256) through cudaLaunchKernel on s1
 *                     scale<float> (grid 512, block 256) <<<>>> on s2
 *                     scale<double> (grid 256, block 256) through cudaLaunchKernelEx on s2
 *                     memset 256 KiB device, async on s1
 *   range "download": DtoD 768 KiB, async on s2; both streams synchronised
 *                     DtoH 128 KiB device -> pinned, async on s2
 *                     DtoH 48 KiB device -> pageable, cudaMemcpy (legacy stream)
 *                     HtoH 32 KiB pinned -> pinned, async on s1; device synchronised
 * Exits 0 when the last step's results are right (so the kernels really ran); a second
 * argument 0 skips that check (on the simulated GPU kernels do not run).
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#define KIB 1024
#define N_A (1024 * 256) /* saxpy's elements: grid 1024 x block 256 */
#define N_F (512 * 256)	 /* scale<float>'s: grid 512 x 256, 512 KiB */
#define N_D (256 * 256)	 /* scale<double>'s: grid 256 x 256 */
#define N_R (64 * 256)	 /* reduce_sum's: grid 64 x 256 */

__global__ void saxpy(int n, float a, const float *x, float *y)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		y[i] = a * x[i] + y[i];
}

template <typename T> __global__ void scale(T *x, T a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		x[i] *= a;
}

__global__ void reduce_sum(const float *x, float *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		atomicAdd(out, x[i]);
}

#define APP "gpu-app"
#include "../apps/check.h"

struct bufs {
	float *a, *c, *f, *sum, *d2d; /* device */
	double *d;
	float *pin_f, *pin_out, *pin_x, *pin_y; /* pinned host */
	char *page_in, *page_out;		/* pageable host */
	cudaStream_t s1, s2;
};

static void setup(struct bufs *b)
{
	CHECK(cudaMalloc(&b->a, N_A * sizeof(float)));
	CHECK(cudaMalloc(&b->c, 256 * KIB));
	CHECK(cudaMalloc(&b->f, N_F * sizeof(float)));
	CHECK(cudaMalloc(&b->d, N_D * sizeof(double)));
	CHECK(cudaMalloc(&b->sum, sizeof(float)));
	CHECK(cudaMalloc(&b->d2d, 768 * KIB));
	CHECK(cudaMemset(b->a, 0, N_A * sizeof(float)));
	CHECK(cudaMemset(b->d, 0, N_D * sizeof(double)));
	CHECK(cudaMallocHost(&b->pin_f, 512 * KIB));
	CHECK(cudaMallocHost(&b->pin_out, 128 * KIB));
	CHECK(cudaMallocHost(&b->pin_x, 32 * KIB));
	CHECK(cudaMallocHost(&b->pin_y, 32 * KIB));
	b->page_in = (char *)calloc(1, 64 * KIB);
	b->page_out = (char *)calloc(1, 48 * KIB);
	if (!b->page_in || !b->page_out)
		exit(1);
	for (int i = 0; i < N_F; i++)
		b->pin_f[i] = 1.0f;
	CHECK(cudaStreamCreateWithFlags(&b->s1, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&b->s2, cudaStreamNonBlocking));
}

static void compute(struct bufs *b)
{
	int n_r = N_R;
	void *args[] = {&b->a, &b->sum, &n_r};
	cudaLaunchConfig_t cfg = {};

	saxpy<<<N_A / 256, 256, 0, b->s1>>>(N_A, 2.0f, b->a, b->a);
	saxpy<<<N_A / 256, 256, 0, b->s1>>>(N_A, 2.0f, b->a, b->a);
	CHECK(
	    cudaLaunchKernel((const void *)reduce_sum, dim3(N_R / 256), dim3(256), args, 0, b->s1));
	scale<float><<<N_F / 256, 256, 0, b->s2>>>(b->f, 0.5f, N_F);
	cfg.gridDim = dim3(N_D / 256);
	cfg.blockDim = dim3(256);
	cfg.stream = b->s2;
	CHECK(cudaLaunchKernelEx(&cfg, scale<double>, b->d, 2.0, (int)N_D));
	CHECK(cudaGetLastError());
	CHECK(cudaMemsetAsync(b->c, 0, 256 * KIB, b->s1));
}

static void step(struct bufs *b)
{
	nvtxMarkA("step");
	nvtxRangePushA("upload");
	CHECK(cudaMemcpyAsync(b->c, b->page_in, 64 * KIB, cudaMemcpyHostToDevice, b->s1));
	CHECK(cudaMemcpyAsync(b->f, b->pin_f, 512 * KIB, cudaMemcpyHostToDevice, b->s2));
	nvtxRangePop();
	nvtxRangePushA("compute");
	compute(b);
	nvtxRangePop();
	nvtxRangePushA("download");
	CHECK(cudaMemcpyAsync(b->d2d, b->a, 768 * KIB, cudaMemcpyDeviceToDevice, b->s2));
	CHECK(cudaStreamSynchronize(b->s1));
	CHECK(cudaStreamSynchronize(b->s2));
	CHECK(cudaMemcpyAsync(b->pin_out, b->f, 128 * KIB, cudaMemcpyDeviceToHost, b->s2));
	CHECK(cudaMemcpy(b->page_out, b->c, 48 * KIB, cudaMemcpyDeviceToHost));
	CHECK(cudaMemcpyAsync(b->pin_y, b->pin_x, 32 * KIB, cudaMemcpyHostToHost, b->s1));
	CHECK(cudaDeviceSynchronize());
	nvtxRangePop();
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 8, devices = 0;
	bool verify = argc > 2 ? atoi(argv[2]) != 0 : true;
	struct bufs b;

	if (argc > 1 && !strcmp(argv[1], "-q")) {
		CHECK(cudaGetDeviceCount(&devices));
		printf("gpu-app: %d devices\n", devices);
		return 0;
	}
	setup(&b);
	for (int s = 0; s < steps; s++)
		step(&b);
	/* Every step uploads ones, then scale<float> halves them: 0.5 everywhere. */
	for (int i = 0; verify && i < (int)(128 * KIB / sizeof(float)); i++) {
		if (b.pin_out[i] != 0.5f) {
			fprintf(stderr, "gpu-app: element %d is %g, expected 0.5\n", i,
				b.pin_out[i]);
			return 1;
		}
	}
	return STEPS_OK(steps);
}
