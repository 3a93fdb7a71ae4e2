"""A CUDA graph of PyTorch's (torch.cuda.graph), captured and replayed, for make test-frameworks.

Usage: graph.py [--steps N]

Before the loop: x and w, 256 x 256 floats on the GPU; three warm-up iterations of
relu(x @ w) on a side stream, then the same captured into a torch.cuda.CUDAGraph. Each of N
steps (default 6): torch.cuda.nvtx.mark("step") (the realtime clock in ns appended to
FRAMEWORKS_MARKS first, when set), one replay of the graph. Prints "graph: N replays" and
exits 0.
"""

import argparse
import os
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=6)
    args = ap.parse_args()
    marks = os.environ.get("FRAMEWORKS_MARKS")
    x = torch.randn(256, 256, device="cuda")
    w = torch.randn(256, 256, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            y = torch.relu(x @ w)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = torch.relu(x @ w)
    for _ in range(args.steps):
        if marks:
            with open(marks, "a") as f:
                f.write("%d\n" % time.time_ns())
        torch.cuda.nvtx.mark("step")
        g.replay()
    torch.cuda.synchronize()
    print("graph: %d replays of %s" % (args.steps, tuple(y.shape)))


if __name__ == "__main__":
    main()
