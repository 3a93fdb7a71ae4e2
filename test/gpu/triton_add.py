"""GPU suite case 4: a Triton kernel, which Triton launches through the driver API
(cuLaunchKernelEx, found with cuGetProcAddress), so no runtime hook sees it.
Usage: triton_add.py [steps]. Each step: torch.cuda.nvtx.mark("step"), add_kernel launched
three times on 2^20 floats, torch.cuda.synchronize(). Its inputs are made before the loop.
"""
import sys

import torch
import triton
import triton.language as tl

N = 1 << 20
BLOCK = 1024


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    gen = torch.Generator(device="cuda").manual_seed(7)
    x = torch.rand(N, device="cuda", generator=gen)
    y = torch.rand(N, device="cuda", generator=gen)
    out = torch.empty_like(x)
    want = x + y
    grid = (triton.cdiv(N, BLOCK),)
    torch.cuda.synchronize()
    for _ in range(steps):
        torch.cuda.nvtx.mark("step")
        for _ in range(3):
            add_kernel[grid](x, y, out, N, BLOCK=BLOCK)
        torch.cuda.synchronize()
    if not torch.equal(out, want):
        print("triton_add: wrong sums", file=sys.stderr)
        return 1
    print(f"triton_add: {steps} steps ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
