"""A Triton kernel in a loop, for make test-frameworks: Triton compiles it to a cubin and launches
it through the driver API (cuLaunchKernelEx), which no runtime hook sees.

Usage: triton_add.py [--steps N]

Before the loop: x and y, 4096 floats each, and out, on the GPU. Each of N steps (default 6):
torch.cuda.nvtx.mark("step") (the realtime clock in ns appended to FRAMEWORKS_MARKS first, when
set), then add_kernel on a grid of 4 blocks of 1024 elements: out = x + y. Prints
"triton_add: N steps" and exits 0.
"""

import argparse
import os
import time

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    keep = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=keep) + tl.load(y_ptr + offs, mask=keep),
             mask=keep)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=6)
    args = ap.parse_args()
    marks = os.environ.get("FRAMEWORKS_MARKS")
    x = torch.ones(4096, device="cuda")
    y = torch.ones(4096, device="cuda")
    out = torch.empty_like(x)
    for _ in range(args.steps):
        if marks:
            with open(marks, "a") as f:
                f.write("%d\n" % time.time_ns())
        torch.cuda.nvtx.mark("step")
        add_kernel[(4,)](x, y, out, 4096, BLOCK=1024)
    torch.cuda.synchronize()
    print("triton_add: %d steps" % args.steps)


if __name__ == "__main__":
    main()
