"""A training loop on the stand-in torch: train.py ITERATIONS [OPTIMIZERS [MARKS]].

Iteration k runs the forward pass (cudaMalloc of (k + 1) * 4096 bytes, a cudaMemcpy of
(k + 1) * 256 bytes to the device, cudaFree), then each optimizer j steps (a cudaMemset of
(k + 1) * 128 + j bytes). Nothing in it marks steps, unless MARKS is "marks": then each
iteration begins with torch.cuda.nvtx.mark("step").
"""
import sys

import torch

iterations = int(sys.argv[1])
optimizers = [torch.optim.SGD(j) for j in range(int(sys.argv[2]) if len(sys.argv) > 2 else 1)]
marks = len(sys.argv) > 3 and sys.argv[3] == "marks"
for k in range(iterations):
    if marks:
        torch.cuda.nvtx.mark("step")
    if torch._C.lib.tool_forward(k) != 0:
        sys.exit("forward failed")
    for opt in optimizers:
        opt.step()
print("train.py: %d iterations x %d optimizers ok" % (iterations, len(optimizers)))
