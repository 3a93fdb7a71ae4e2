"""GPU suite cases 6 and 7: a small transformer trained with AdamW under bf16 autocast, fixed
seed, torch.cuda.nvtx.mark("step") at the top of every iteration. The same loop runs under
libgprof (the runner sets LD_PRELOAD), under torch.profiler (--profiler torch, prof.step() at the
end of every iteration, so both number iteration i as step i), or both in one process.

Each iteration copies a fresh pinned batch of tokens to the GPU (one HtoD copy) and reads the
loss back with .item() (one 4-byte DtoH copy). Before the loop the GPU is kept busy for about a
second so its clocks are up when steps are timed. The last line printed is
"train-result <json>" with the iteration times and losses.
"""
import argparse
import json
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, DIM, HEADS, LAYERS, FF = 8192, 1024, 16, 4, 4096
BATCH, SEQ = 8, 512


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DIM)
        layer = nn.TransformerEncoderLayer(DIM, HEADS, FF, dropout=0.0, batch_first=True,
                                           norm_first=True)
        self.body = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        self.head = nn.Linear(DIM, VOCAB)

    def forward(self, tokens):
        return self.head(self.body(self.emb(tokens)))


def parse_schedule(text):
    """'skip_first=5,wait=1,...' as torch.profiler.schedule's keyword arguments."""
    return {k: int(v) for k, v in (item.split("=") for item in text.split(","))}


def start_profiler(args):
    from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

    prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                   schedule=schedule(**parse_schedule(args.schedule)),
                   on_trace_ready=tensorboard_trace_handler(args.trace_dir, worker_name="torch"))
    prof.start()
    return prof


def warm_gpu(seconds=1.0):
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for _ in range(20):
            a = (a @ a).clamp_(-1, 1)
        torch.cuda.synchronize()


class Loop:
    def __init__(self):
        torch.manual_seed(1234)
        self.model = Net().cuda()
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-4)
        self.gen = torch.Generator().manual_seed(4321)
        self.times, self.losses = [], []

    def iteration(self, prof):
        t0 = time.perf_counter()
        torch.cuda.nvtx.mark("step")
        batch = torch.randint(VOCAB, (BATCH, SEQ + 1), generator=self.gen).pin_memory()
        batch = batch.cuda(non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = self.model(batch[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, VOCAB), batch[:, 1:].reshape(-1))
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        self.losses.append(loss.item())
        if prof:
            prof.step()
        self.times.append((time.perf_counter() - t0) * 1e3)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=14)
    ap.add_argument("--profiler", choices=["none", "torch"], default="none")
    ap.add_argument("--profile-from", choices=["start", "late"], default="late",
                    help="start: torch.profiler before any CUDA call; late: just before the "
                    "loop, after the model, --pre-iters iterations and the warm-up")
    ap.add_argument("--pre-iters", type=int, default=0,
                    help="iterations before the warm-up, outside torch.profiler")
    ap.add_argument("--schedule", default="skip_first=5,wait=1,warmup=1,active=5,repeat=1")
    ap.add_argument("--trace-dir", default="torch_traces")
    args = ap.parse_args()

    prof = None
    if args.profiler == "torch" and args.profile_from == "start":
        prof = start_profiler(args)
    loop = Loop()
    for _ in range(args.pre_iters):
        loop.iteration(None)
    warm_gpu()
    if args.profiler == "torch" and not prof:
        prof = start_profiler(args)
    first = len(loop.times)
    for _ in range(args.iters):
        loop.iteration(prof)
    if prof:
        prof.stop()
    torch.cuda.synchronize()
    result = {"iter_ms": loop.times[first:], "losses": loop.losses[first:],
              "torch": torch.__version__}
    print("train-result " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
