"""The GPU suite's cases (issue #8). Each runs a program under libgprof and checks its trace
against figures derived from the program's source (the comment atop each program lists them),
or against torch.profiler's trace of the same loop. A case returns a one-line summary, or
raises Fail or Skip. The runner (run.py) gives each case a context and a fresh folder.
"""
import collections
import os
import re
import statistics

import compare
import gtrace
from gtrace import corr


class Fail(Exception):
    pass


class Skip(Exception):
    pass


def expect(cond, msg, *args):
    if not cond:
        raise Fail(msg % args if args else msg)


def one_trace(folder):
    """The single finished libgprof trace in folder, loaded and format-checked."""
    files, partial = gtrace.trace_files(folder)
    expect(not partial, "left as .partial: %s", partial)
    expect(len(files) == 1, "%d trace files in %s, expected 1", len(files), folder)
    return checked(files[0])


def checked(path):
    try:
        t = gtrace.load(path)
    except gtrace.TraceError as e:
        raise Fail("unreadable trace: %s" % e) from None
    problem = gtrace.format_problem(t)
    expect(not problem, "%s breaks TRACE_FORMAT.md: %s", os.path.basename(path), problem)
    return t


def check_window(t, active):
    """CUPTI in use, the steps the schedule names, nothing dropped, every GPU event linked."""
    g = t.root["gprof"]
    status = (g.get("cupti") or {}).get("status")
    expect(status == "in use", "CUPTI not in use: %r", g.get("cupti"))
    expect(sorted(gtrace.steps(t)) == list(active), "steps %s, expected %s",
           sorted(gtrace.steps(t)), list(active))
    expect(sum(g["dropped"].values()) == 0, "records dropped: %s", g["dropped"])
    problem = gtrace.link_problem(t)
    expect(not problem, "%s", problem)
    grouped, _ = gtrace.by_step(t)
    expect(not grouped.get(None), "%d GPU events launched outside the steps",
           len(grouped.get(None, [])))
    return grouped


def expect_counts(got, want, what):
    expect(got == want, "%s: %s", what, compare.diff(got, want, ("got", "expected")))


# ---- cases 1, 2 and 8: gpu-app.cu ----

APP_STEPS = 8
APP_ACTIVE = (2, 3, 4)  # DESIGN.md's default schedule wait=1,warmup=1,active=3
# Per kernel: launches per step, the entry point (args.api), grid x, stream. nvcc's <<<>>> goes
# through __cudaLaunchKernel, which NVIDIA's 13.0 runtime reports to CUPTI as cudaLaunchKernel
# (cbid 211), and CUPTI's record is what the trace holds (test/fakecuda/cudart.c, issue #13).
APP_KERNELS = {
    "saxpy(int, float, float const*, float*)": (2, "cudaLaunchKernel", 1024, "s1"),
    "reduce_sum(float const*, float*, int)": (1, "cudaLaunchKernel", 64, "s1"),
    "void scale<float>(float*, float, int)": (1, "cudaLaunchKernel", 512, "s2"),
    "void scale<double>(double*, double, int)": (1, "cudaLaunchKernelExC", 256, "s2"),
}
# Per (cat, name, bytes), once per step: the call that queued it and its stream.
APP_COPIES = {
    ("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 64 << 10): ("cudaMemcpyAsync", "s1"),
    ("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 512 << 10): ("cudaMemcpyAsync", "s2"),
    ("gpu_memcpy", "Memcpy DtoD (Device -> Device)", 768 << 10): ("cudaMemcpyAsync", "s2"),
    ("gpu_memcpy", "Memcpy DtoH (Device -> Pinned)", 128 << 10): ("cudaMemcpyAsync", "s2"),
    ("gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", 48 << 10): ("cudaMemcpy", "legacy"),
    ("gpu_memcpy", "Memcpy HtoH (Pinned -> Pinned)", 32 << 10): ("cudaMemcpyAsync", "s1"),
    ("gpu_memset", "Memset (Device)", 256 << 10): ("cudaMemsetAsync", "s1"),
}
# Whether CUDA runs a pinned-to-pinned copy on the GPU (and CUPTI records it) is not documented:
# 0 or 1 per step is accepted, the same in every step. Pin it to 1 once a GPU run has shown it.
APP_MAYBE = ("gpu_memcpy", "Memcpy HtoH (Pinned -> Pinned)", 32 << 10)
# TRACE_FORMAT.md: host events carry the public name; the entry point goes in args.api.
PUBLIC_NAME = {"__cudaLaunchKernel": "cudaLaunchKernel", "cudaLaunchKernel": "cudaLaunchKernel",
               "cudaLaunchKernelExC": "cudaLaunchKernelExC"}


def check_app_counts(grouped):
    """The GPU work of each step; returns how many HtoH copies each step had (0 or 1)."""
    want = collections.Counter({("kernel", k): v[0] for k, v in APP_KERNELS.items()})
    want.update({k: 1 for k in APP_COPIES if k != APP_MAYBE})
    maybe = set()
    for s in APP_ACTIVE:
        got = gtrace.counts(grouped.get(s, []))
        maybe.add(got.pop(APP_MAYBE, 0))
        expect_counts(got, want, "step %d" % s)
    expect(maybe in ({0}, {1}), "HtoH copies per step: %s, expected 0 or 1 in every step", maybe)
    return maybe.pop()


def check_app_calls(t):
    """Each GPU event's launching call and stream, as gpu-app.cu makes them."""
    calls, streams = gtrace.launches(t), collections.defaultdict(set)
    for e in gtrace.xs(t, gtrace.GPU_CATS):
        call, args = calls[corr(e)][0], e["args"]
        key = e["name"] if e["cat"] == "kernel" else (e["cat"], e["name"], args["bytes"])
        expect(key in APP_KERNELS or key in APP_COPIES, "unexpected %s", key)
        if e["cat"] == "kernel":
            _, api, grid, label = APP_KERNELS[key]
            got = (call["name"], call["args"].get("api"), args["grid"], args["block"])
            want = (PUBLIC_NAME[api], api, [grid, 1, 1], [256, 1, 1])
            expect(e["dur"] > 0, "%s ran for %s us", e["name"], e["dur"])
        else:
            name, label = APP_COPIES[key]
            got, want = call["name"], name
        expect(got == want, "%s: launched as %s, expected %s", e["name"], got, want)
        streams[label].add(args["stream"])
    expect(all(len(ids) == 1 for ids in streams.values()), "streams: %s", dict(streams))
    ids = [next(iter(v)) for v in streams.values()]
    expect(len(set(ids)) == 3, "s1, s2 and the legacy stream share ids: %s", dict(streams))


def check_app_nvtx(t):
    """In each step: one "step" mark at its start, one range each of upload, compute, download."""
    marks = [gtrace.ns(e["ts"]) for e in t.events if e.get("ph") == "i" and e.get("name") == "step"]
    for s, span in gtrace.steps(t).items():
        inside = [m for m in marks if span[0] <= m < span[1]]
        expect(inside == [span[0]], "step %d: marks at %s ns, expected one at %d", s, inside,
               span[0])
        for name in ("upload", "compute", "download"):
            n = len([r for r in gtrace.ranges(t, name) if span[0] <= r[0] and r[1] <= span[1]])
            expect(n == 1, "step %d: %d NVTX ranges '%s', expected 1", s, n, name)


def check_device(ctx, t, static):
    """deviceProperties against nvidia-smi. libgprof asks the CUDA runtime it finds in the
    process for them, so a program with a static runtime (case 2) may have none."""
    props = t.root["deviceProperties"]
    if static and not props:
        return "; no deviceProperties (static runtime)"
    expect(len(props) >= 1, "no deviceProperties")
    name, mib = props[0].get("name"), props[0].get("totalGlobalMem", 0) / 2**20
    expect(name == ctx.gpu["name"], "deviceProperties name %r, nvidia-smi says %r", name,
           ctx.gpu["name"])
    expect(abs(mib - ctx.gpu["mib"]) <= 64, "totalGlobalMem %.0f MiB, nvidia-smi says %d MiB",
           mib, ctx.gpu["mib"])
    return "; deviceProperties match nvidia-smi"


def check_app(ctx, t, static=False):
    htoh = check_app_counts(check_window(t, APP_ACTIVE))
    check_app_calls(t)
    check_app_nvtx(t)
    records = t.root["gprof"]["records"]
    for cat, kind in (("kernel", "kernel"), ("gpu_memcpy", "memcpy"), ("gpu_memset", "memset")):
        n = len(gtrace.xs(t, (cat,)))
        expect(records.get(kind) == n, "gprof.records.%s is %s, the trace has %d", kind,
               records.get(kind), n)
    device = check_device(ctx, t, static) if not ctx.sim else ""
    n = collections.Counter(e["cat"] for e in gtrace.xs(t, gtrace.GPU_CATS))
    return "steps 2-4: %d kernels, %d copies, %d memsets as expected (HtoH pinned copy %s)%s" % (
        n["kernel"], n["gpu_memcpy"], n["gpu_memset"], "recorded" if htoh else "not on the GPU",
        device)


def run_app(ctx, cd, prog, static=False):
    exe = ctx.build(prog)
    out = os.path.join(cd, "traces")
    argv = [exe, str(APP_STEPS)] + (["0"] if ctx.sim else [])
    r = ctx.run(cd, "app", argv, ctx.gprof_env(out))
    expect(r.rc == 0, "%s exited %s: %s", prog, r.rc, r.tail())
    return check_app(ctx, one_trace(out), static)


def case_shared(ctx, cd):
    return run_app(ctx, cd, "gpu-app")


def case_static(ctx, cd):
    return run_app(ctx, cd, "gpu-app-static", static=True)


def case_ranks(ctx, cd):
    exe, out = ctx.build("gpu-app"), os.path.join(cd, "traces")
    argv = [exe, str(APP_STEPS)] + (["0"] if ctx.sim else [])
    procs = [ctx.start(cd, "rank%d" % r, argv, ctx.gprof_env(out, RANK=str(r), WORLD_SIZE="2"))
             for r in (0, 1)]
    for r, p in enumerate(procs):
        res = p.wait()
        expect(res.rc == 0, "rank %d exited %s: %s", r, res.rc, res.tail())
    files, partial = gtrace.trace_files(out)
    expect(not partial and len(files) == 2, "files %s, partial %s: expected one per rank",
           [os.path.basename(f) for f in files], partial)
    by_pid = {}
    for f in files:
        m = re.fullmatch(r".+_(\d+)\.\d+\.pt\.trace\.json\.gz", os.path.basename(f))
        expect(m, "file name %s", os.path.basename(f))
        by_pid[int(m.group(1))] = f
    expect(set(by_pid) == {p.pid for p in procs}, "files of pids %s, ranks ran as %s",
           sorted(by_pid), [p.pid for p in procs])
    for rank, p in enumerate(procs):
        t = checked(by_pid[p.pid])
        check_app(ctx, t)
        di = t.root["distributedInfo"]
        hta = re.search(r'"rank":\s+(\d+)', t.raw)  # how HTA reads the rank
        expect((di.get("rank"), di.get("world_size")) == (rank, 2) and int(hta.group(1)) == rank,
               "rank %d's file: distributedInfo %s", rank, di)
    return "one file per rank, distributedInfo rank 0 and 1 of 2, each complete"


# ---- case 3: gemm-app.cu ----

GEMM_RE = re.compile(r"gemm|nvjet|xmma|cutlass", re.I)  # cuBLAS's GEMM kernel families


def gemm_split(t, step_span, kernels):
    """The step's kernels as {range name: Counter of names} by where their launch lies."""
    calls, split = gtrace.launches(t), {}
    for name in ("fp32", "bf16"):
        spans = [r for r in gtrace.ranges(t, name) if step_span[0] <= r[0] < step_span[1]]
        expect(len(spans) == 1, "%d NVTX ranges '%s' in a step", len(spans), name)
        start, end = spans[0]
        split[name] = collections.Counter(e["name"] for e in kernels
                                          if start <= gtrace.ns(calls[corr(e)][0]["ts"]) < end)
    return split


def case_cublas(ctx, cd):
    exe, out = ctx.build("gemm-app"), os.path.join(cd, "traces")
    r = ctx.run(cd, "app", [exe, str(APP_STEPS)], ctx.gprof_env(out))
    expect(r.rc == 0, "gemm-app exited %s: %s", r.rc, r.tail())
    t = one_trace(out)
    grouped, spans, first = check_window(t, APP_ACTIVE), gtrace.steps(t), None
    for s in APP_ACTIVE:
        kernels = [e for e in grouped.get(s, []) if e["cat"] == "kernel"]
        split = gemm_split(t, spans[s], kernels)
        n32, n16 = sum(split["fp32"].values()), sum(split["bf16"].values())
        expect(n32 + n16 == len(kernels), "step %d: kernels outside the GEMM ranges", s)
        expect(n32 >= 2 and n16 >= 2, "step %d: %d fp32 and %d bf16 kernels for 2 GEMMs each",
               s, n32, n16)
        for name, c in split.items():
            expect(any(GEMM_RE.search(k) for k in c), "step %d: no GEMM kernel in %s: %s", s,
                   name, list(c))
        shared = {k for k in split["fp32"] if GEMM_RE.search(k)} & set(split["bf16"])
        expect(not shared, "step %d: fp32 and bf16 GEMMs ran the same kernels %s", s, shared)
        first = first or split
        expect(split == first, "step %d differs from step 2: %s", s, split)
    return "per step: fp32 %s; bf16 %s" % (dict(first["fp32"]), dict(first["bf16"]))


# ---- case 4: triton_add.py ----

def case_triton(ctx, cd):
    ctx.need_python("torch", "triton")
    out = os.path.join(cd, "traces")
    r = ctx.run(cd, "app", [ctx.python, ctx.script("triton_add.py"), str(APP_STEPS)],
                ctx.gprof_env(out), timeout=300)
    expect(r.rc == 0, "triton_add.py exited %s: %s", r.rc, r.tail())
    t = one_trace(out)
    grouped, calls = check_window(t, APP_ACTIVE), gtrace.launches(t)
    for s in APP_ACTIVE:
        expect_counts(gtrace.counts(grouped.get(s, [])),
                      collections.Counter({("kernel", "add_kernel"): 3}), "step %d" % s)
    for e in gtrace.xs(t, ("kernel",)):
        call = calls[corr(e)][0]
        expect(call["cat"] == "cuda_driver" and call["name"].startswith("cuLaunchKernel"),
               "add_kernel launched by %s %s", call["cat"], call["name"])
    return "steps 2-4: 3 add_kernel each, launched by %s" % call["name"]


# ---- case 5: graph-app.cu ----

GRAPH_KERNELS = {"stage_a(float*, int)": 2, "void stage_b<float>(float*, float, int)": 2,
                 "stage_c(float*, int)": 2}


def case_launcher(ctx, cd):
    """Why nothing was recorded comes from a process that did GPU work only: gpu-app with a
    step marker it never makes says "never marked a step"; counting the devices alone, as
    torchrun's launcher does, makes no context (CUPTI's CONTEXT_CREATED) and says no such line."""
    exe, out = ctx.build("gpu-app"), os.path.join(cd, "traces")
    env = ctx.gprof_env(out, GPROF_STEP_MARKER="nomark")
    r = ctx.run(cd, "nomark", [exe, "2"] + (["0"] if ctx.sim else []), env)
    expect(r.rc == 0 and "never marked a step ('nomark')" in r.err,
           "no step marked: exited %s: %s", r.rc, r.tail())
    r = ctx.run(cd, "count", [exe, "-q"], env)
    expect(r.rc == 0 and "nothing was recorded" not in r.err, "counting devices: exited %s: %s",
           r.rc, r.tail())
    return "a program that never marks says so; one that only counts devices does not"


def case_graph(ctx, cd):
    exe, out = ctx.build("graph-app"), os.path.join(cd, "traces")
    r = ctx.run(cd, "app", [exe, str(APP_STEPS)], ctx.gprof_env(out))
    expect(r.rc == 0, "graph-app exited %s: %s", r.rc, r.tail())
    t = one_trace(out)
    grouped, calls = check_window(t, APP_ACTIVE), gtrace.launches(t)
    want = collections.Counter({("kernel", k): n for k, n in GRAPH_KERNELS.items()})
    for s in APP_ACTIVE:
        events = grouped.get(s, [])
        expect_counts(gtrace.counts(events), want, "step %d" % s)
        per_launch = collections.defaultdict(list)
        for e in events:
            per_launch[corr(e)].append(e["name"])
            expect(calls[corr(e)][0]["name"] == "cudaGraphLaunch", "%s launched by %s",
                   e["name"], calls[corr(e)][0]["name"])
        expect(sorted(map(sorted, per_launch.values())) == [sorted(GRAPH_KERNELS)] * 2,
               "step %d: kernels per cudaGraphLaunch %s", s, dict(per_launch))
    return "steps 2-4: 2 replays of 3 kernels each, linked to cudaGraphLaunch"


# ---- cases 6 and 7: train.py ----

SCHEDULE = "skip_first=5,wait=1,warmup=1,active=5,repeat=1"
TRAIN_ACTIVE = range(7, 12)
TOLERANCE = 0.05


def train(ctx, cd, tag, env, *args):
    """Runs train.py; its result line (iteration times, losses) and the run."""
    r = ctx.run(cd, tag, [ctx.python, ctx.script("train.py")] + list(args), env, timeout=400)
    result = ctx.result_line(r, "train-result ")
    expect(r.rc == 0 and result, "train.py (%s) exited %s: %s", tag, r.rc, r.tail())
    return result, r


def torch_reference(ctx, cd):
    """torch.profiler's trace of the loop, made once per run of the suite."""
    if "torch_ref" not in ctx.cache:
        out = os.path.join(cd, "torch")
        result, _ = train(ctx, cd, "torch", ctx.env(), "--profiler", "torch", "--trace-dir",
                          out, "--schedule", SCHEDULE)
        files, _ = gtrace.trace_files(out)
        expect(len(files) == 1, "torch.profiler wrote %d traces", len(files))
        ctx.cache["torch_ref"] = (gtrace.load(files[0], strict=False), result)
    return ctx.cache["torch_ref"]


def step_ms(result):
    return statistics.median(result["iter_ms"][s] for s in TRAIN_ACTIVE)


def case_torch(ctx, cd):
    ctx.need_python("torch")
    base, _ = train(ctx, cd, "none", ctx.env())
    ours_res, _ = train(ctx, cd, "gprof", ctx.gprof_env(os.path.join(cd, "gprof"),
                                                         GPROF_SCHEDULE=SCHEDULE))
    ref_trace, ref_res = torch_reference(ctx, cd)
    t = one_trace(os.path.join(cd, "gprof"))
    check_window(t, TRAIN_ACTIVE)
    ours = compare.Profile(t, TRAIN_ACTIVE)
    ref = compare.Profile(ref_trace, TRAIN_ACTIVE, fallback=True)
    problems, ratios = compare.compare(ours, ref, TOLERANCE)
    compare.dump(os.path.join(cd, "compare.json"), ours, ref, problems, ratios)
    expect(not problems, "%s", " | ".join(problems))
    return ("%d kernels of %d names equal per step, medians within %.1f%%, copies equal "
            "(reference: %d without launch); median step ms: none %.2f, libgprof %.2f, "
            "torch.profiler %.2f" % (ours.total_kernels(), len(ours.durs),
                                     100 * ratios[0][0] if ratios else 0, len(ref.unlinked),
                                     step_ms(base), step_ms(ours_res), step_ms(ref_res)))


def both_problems(ctx, cd, r, tdir, gdir):
    """What case 7 asks, each failure said: libgprof fell back, torch.profiler's trace is as in
    a process of its own, libgprof's traces are well formed and say CUPTI was not used."""
    problems, lines = [], [line for line in r.err.splitlines() if line.startswith("gprof:")]
    if not any("GPU activity is not recorded" in line for line in lines):
        problems.append("libgprof did not say it fell back; its lines: %s" % lines[:4])
    files, _ = gtrace.trace_files(tdir)
    if len(files) != 1:
        return problems + ["torch.profiler wrote %d traces" % len(files)], 0
    theirs = compare.Profile(gtrace.load(files[0], strict=False), TRAIN_ACTIVE, fallback=True)
    ref = compare.Profile(torch_reference(ctx, cd)[0], TRAIN_ACTIVE, fallback=True)
    intact, _ = compare.compare(theirs, ref)
    compare.dump(os.path.join(cd, "compare.json"), theirs, ref, intact, [])
    problems += ["torch.profiler's trace is not intact: " + p for p in intact]
    for f in gtrace.trace_files(gdir)[0]:
        try:
            status = (checked(f).root["gprof"].get("cupti") or {}).get("status", "")
        except Fail as e:
            status = str(e)
        if not status.startswith("not used"):
            problems.append("libgprof's %s: CUPTI %r" % (os.path.basename(f), status))
    return problems, theirs.total_kernels()


def case_both(ctx, cd, start):
    """torch.profiler inside a process that libgprof is preloaded into."""
    ctx.need_python("torch")
    gdir, tdir = os.path.join(cd, "gprof"), os.path.join(cd, "torch")
    args = ["--profiler", "torch", "--trace-dir", tdir, "--schedule", SCHEDULE]
    args += ["--profile-from", "start"] if start else ["--profile-from", "late", "--pre-iters",
                                                       "3"]
    _, r = train(ctx, cd, "both", ctx.gprof_env(gdir, GPROF_SCHEDULE=SCHEDULE), *args)
    problems, n = both_problems(ctx, cd, r, tdir, gdir)
    expect(not problems, "job finished, but %s", " | ".join(problems))
    return "job finished; libgprof fell back (%d host-only traces); torch.profiler's %d " \
           "kernels match its own run" % (len(gtrace.trace_files(gdir)[0]), n)


def case_both_start(ctx, cd):
    return case_both(ctx, cd, True)


def case_both_late(ctx, cd):
    return case_both(ctx, cd, False)
