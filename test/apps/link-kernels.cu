/*
 * Device code for link-app, built by nvcc at build time into a cubin (link-kernels.cubin), not
 * into a program: the kernels `link_scale` (extern "C") and `link_sum` (C++: _Z8link_sumPKfPfi)
 * and the variable `table` (300 floats, 1200 bytes). link-more.cu holds the PTX side.
 */

__device__ float table[300];

extern "C" __global__ void link_scale(float *p, float s)
{
	p[threadIdx.x] *= s * table[threadIdx.x];
}

__global__ void link_sum(const float *p, float *out, int n)
{
	float sum = 0;

	for (int i = threadIdx.x; i < n; i += blockDim.x)
		sum += p[i];
	atomicAdd(out, sum);
}
