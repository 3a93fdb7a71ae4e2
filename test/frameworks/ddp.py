"""Data-parallel training on two ranks, for make test-frameworks.

Usage: ddp.py [--steps N] [--backend gloo|nccl], started once per rank with RANK, WORLD_SIZE,
MASTER_ADDR and MASTER_PORT set (as torchrun sets them).

Before the loop (seed 0, the same on every rank): init_process_group(backend, gloo by default;
nccl on the simulated GPU needs the simulated libnccl.so.2 preloaded); a 2-layer MLP
(64 -> 128 -> 16) on the GPU wrapped in DistributedDataParallel; SGD (lr 0.01). Each of N steps
(default 8): torch.cuda.nvtx.mark("step") (the realtime clock in ns appended to FRAMEWORKS_MARKS
first, when set); a batch of 32 x 64 made on the CPU from the step and the rank, copied to the
GPU; forward, cross-entropy, backward (DDP all-reduces the gradients through the backend), step. Prints
"ddp: rank R of W, N steps" and exits 0.
"""

import argparse
import os
import time

import torch
import torch.distributed as dist


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--backend", default="gloo")
    args = ap.parse_args()
    marks = os.environ.get("FRAMEWORKS_MARKS")
    dist.init_process_group(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, 16)).cuda()
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[0])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    for step in range(args.steps):
        if marks:
            with open(marks, "a") as f:
                f.write("%d\n" % time.time_ns())
        torch.cuda.nvtx.mark("step")
        g = torch.Generator().manual_seed(step * world + rank)
        x = torch.randn(32, 64, generator=g).cuda()
        y = torch.randint(0, 16, (32,), generator=g).cuda()
        loss = torch.nn.functional.cross_entropy(ddp(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    dist.destroy_process_group()
    print("ddp: rank %d of %d, %d steps" % (rank, world, args.steps))


if __name__ == "__main__":
    main()
