"""A small transformer training loop on PyTorch's CUDA path, for make test-frameworks.

Usage: train.py [--steps N] [--nvtx] [--workers W] [--torch-profiler FILE]

Before the loop (fixed seed 0): a 2-layer transformer encoder (d_model 64, 4 heads, feed-forward
128) with a linear head of 16 classes, on the GPU; AdamW (lr 1e-3). Each of N steps (default 8):
  - with --nvtx, torch.cuda.nvtx.mark("step") first;
  - a batch: 8 sequences of 32 tokens x 64 features and 8 labels, from a DataLoader of W worker
    processes (fork) when --workers is given, else made on the CPU in the loop; copied to the GPU;
  - forward under torch.autocast("cuda", bfloat16), cross-entropy of the first token's logits,
    zero_grad(set_to_none), backward;
  - a scratch tensor of (step + 1) MiB made and dropped, then torch.cuda.empty_cache(), so that
    the caching allocator calls cudaMalloc and cudaFree inside every step;
  - optimizer.step() (last, as gprof-run --torch-steps ends the step there).
Attention takes PyTorch's default backend on an sm_90 device, cuDNN's (its kernels compiled at run
time by NVRTC and loaded as libraries). With --torch-profiler, the loop runs under
torch.profiler.profile (CPU and CUDA activities, record_shapes, profile_memory, with_modules and
with_stack (which with_modules needs for its module events), the schedule wait=1, warmup=1, active=3,
prof.step() after each step), which writes its trace to FILE. With FRAMEWORKS_MARKS=path, the
realtime clock (ns) of each step's start is appended to path, one per line: right before the NVTX
mark with --nvtx, else before the loop and right after each optimizer.step() (where gprof-run
--torch-steps marks, and torch.profiler's step() begins the next step), so a test can place the simulated GPU's work in steps without libgprof. The kernels do not run on the simulated GPU, so no value is printed: the program prints
"train: N steps, P parameters, loss <dtype>" and exits 0.
"""

import argparse
import os
import time

import torch

BATCH, TOKENS, FEATURES, CLASSES = 8, 32, 64, 16


class Batches(torch.utils.data.Dataset):
    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return (torch.randn(TOKENS, FEATURES, generator=g),
                torch.randint(0, CLASSES, (), generator=g))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--nvtx", action="store_true")
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--torch-profiler", metavar="FILE")
    args = ap.parse_args()
    marks = os.environ.get("FRAMEWORKS_MARKS")

    def note():
        if marks:
            with open(marks, "a") as f:
                f.write("%d\n" % time.time_ns())

    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(FEATURES, 4, 128, batch_first=True, dropout=0.0)
    model = torch.nn.Sequential(torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False),
                                torch.nn.Linear(FEATURES, CLASSES)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loader = None
    if args.workers:
        loader = iter(torch.utils.data.DataLoader(Batches(), batch_size=BATCH,
                                                  num_workers=args.workers,
                                                  multiprocessing_context="fork"))
    loss = None
    prof = None
    if args.torch_profiler:
        from torch.profiler import ProfilerActivity, profile, schedule

        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                       schedule=schedule(wait=1, warmup=1, active=3, repeat=1),
                       record_shapes=True, profile_memory=True, with_modules=True,
                       with_stack=True,
                       on_trace_ready=lambda p: p.export_chrome_trace(args.torch_profiler))
        prof.start()
    if not args.nvtx:
        note()
    for step in range(args.steps):
        if args.nvtx:
            note()
            torch.cuda.nvtx.mark("step")
        if loader:
            x, y = next(loader)
        else:
            g = torch.Generator().manual_seed(step)
            x = torch.randn(BATCH, TOKENS, FEATURES, generator=g)
            y = torch.randint(0, CLASSES, (BATCH,), generator=g)
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x)[:, 0], y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        scratch = torch.empty((step + 1) << 18, device="cuda")
        del scratch
        torch.cuda.empty_cache()
        opt.step()
        if not args.nvtx:
            note()
        if prof:
            prof.step()
    if prof:
        prof.stop()
    torch.cuda.synchronize()
    params = sum(p.numel() for p in model.parameters())
    print("train: %d steps, %d parameters, loss %s" % (args.steps, params, loss.dtype))


if __name__ == "__main__":
    main()
