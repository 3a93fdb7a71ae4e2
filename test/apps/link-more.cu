/*
 * Device code for link-app, built by nvcc at build time into PTX (link-more.ptx): the kernel
 * `link_grid_sync` (extern "C"), which synchronises its whole grid and so must be launched
 * cooperatively, and the variable `hits` (an int, 4 bytes).
 */
#include <cooperative_groups.h>

__device__ int hits;

extern "C" __global__ void link_grid_sync(int *p)
{
	atomicAdd(&hits, 1);
	cooperative_groups::this_grid().sync();
	p[blockIdx.x] = hits;
}
