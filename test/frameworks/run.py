"""make test-frameworks: real PyTorch and Triton on the simulated GPU, under libgprof.

Runs each case's program with and without libgprof on NVIDIA's runtime (PyTorch's wheel) over
the simulated driver, and checks libgprof's trace against the driver's ground-truth log
(FAKEGPU_LOG) and the program's own step times (FRAMEWORKS_MARKS), never against libgprof.
Usage: run.py PYTHON BUILD [text...]: the cases whose names hold one of the texts (all by
default); prints one line per check and "N passed, N failed" last.
"""

import collections
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "clients"))
from gt import demangled, load_trace  # noqa: E402

PYTHON, BUILD = sys.argv[1], os.path.abspath(sys.argv[2])
SRC = os.path.abspath(os.path.join(HERE, "..", ".."))
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
LAUNCH_CATS = ("cuda_runtime", "cuda_driver")
RECORDED = [2, 3, 4]  # the default schedule's steps


class Case:
    """One program run twice (without and with libgprof) and the checks on what it left."""

    def __init__(self, name):
        self.name, self.passed, self.failed = name, 0, 0

    def check(self, what, ok, detail=""):
        print("%s %s: %s%s" % ("ok  " if ok else "FAIL", self.name, what,
                               " (%s)" % detail if detail else ""))
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        return ok


def simulated_env(tmp, extra):
    env = dict(os.environ)
    for k in [k for k in env if k.startswith(("GPROF_", "FAKEGPU_"))]:
        del env[k]
    env.update({
        # the simulated driver; PyTorch brings NVIDIA's runtime, cuBLAS and cuDNN
        "LD_LIBRARY_PATH": os.path.join(BUILD, "fakecuda", "driver"),
        "FAKEGPU_LOG": os.path.join(tmp, "gt.jsonl"),
        "FRAMEWORKS_MARKS": os.path.join(tmp, "marks"),
        "GPROF_OUTPUT": os.path.join(tmp, "traces"),
        "GPROF_CUPTI_LIB": os.path.join(BUILD, "fakecuda", "libcupti.so.13"),
        "PYTHONHASHSEED": "0",
    })
    env.update(extra)
    return env


def run(argv, tmp, extra=None, preload=True, wrap=None):
    """Runs argv in tmp; returns (completed process, seconds, ground truth, marks, traces)."""
    os.makedirs(tmp)
    env = simulated_env(tmp, extra or {})
    if preload and not wrap:
        env["LD_PRELOAD"] = os.path.join(BUILD, "libgprof.so")
    t0 = time.monotonic()
    p = subprocess.run((wrap or []) + argv, env=env, capture_output=True, text=True,
                       timeout=600)
    secs = time.monotonic() - t0
    gt = []
    # no log: the program never ran (a wrapper refused); check_trace shows its stderr
    if os.path.exists(env["FAKEGPU_LOG"]):
        with open(env["FAKEGPU_LOG"]) as f:
            gt = [json.loads(line) for line in f]
    marks = []
    if os.path.exists(env["FRAMEWORKS_MARKS"]):
        with open(env["FRAMEWORKS_MARKS"]) as f:
            marks = [int(line) for line in f]
    traces = sorted(glob.glob(os.path.join(env["GPROF_OUTPUT"], "*.pt.trace.json.gz")))
    return p, secs, gt, marks, traces


def op_key(cat, name, nbytes):
    """What identifies a GPU operation for the per-step comparison."""
    return (cat, demangled(name)) if cat == "kernel" else (cat, nbytes)


def gt_steps(gt, marks):
    """Per recorded step, the GPU operations of the API calls the program made in it."""
    calls = {g["corr"]: g for g in gt if g["type"] == "api"}
    cats = {"kernel": "kernel", "memcpy": "gpu_memcpy", "memset": "gpu_memset"}
    out = {k: collections.Counter() for k in RECORDED}
    for g in gt:
        if g["type"] != "gpu" or g["corr"] not in calls:
            continue
        start = calls[g["corr"]]["start"]
        for k in RECORDED:
            if marks[k] <= start < marks[k + 1]:
                out[k][op_key(cats[g["kind"]], g.get("name", ""), g.get("bytes"))] += 1
    return out


def trace_steps(trace):
    """Per ProfilerStep#k of the trace, the GPU operations whose launch lies in it."""
    ev = trace["traceEvents"]
    steps = {int(e["name"].split("#")[1]): (e["ts"], e["ts"] + e["dur"]) for e in ev
             if e.get("name", "").startswith("ProfilerStep#") and
             e.get("cat") == "user_annotation"}
    launch = {e["args"]["correlation"]: e["ts"] for e in ev
              if e.get("cat") in LAUNCH_CATS and "correlation" in e.get("args", {})}
    out = {k: collections.Counter() for k in steps}
    for e in ev:
        if e.get("cat") not in GPU_CATS:
            continue
        ts = launch.get(e["args"]["correlation"])
        for k, (b, end) in steps.items():
            if ts is not None and b <= ts < end:
                out[k][op_key(e["cat"], e["name"], e["args"].get("bytes"))] += 1
    return steps, out


def in_use(gt, ns):
    return sum(g["bytes"] if g["op"] == "alloc" else -g["bytes"] for g in gt
               if g["type"] == "memory" and g["memory_kind"] == "device" and g["time"] <= ns)


def check_trace(c, plain, profiled, counters_at_least=len(RECORDED) + 1, marks_slack_ms=5.0):
    """The promises every case shares: same output, one trace, its steps' work = ground truth."""
    p0, secs0, _, _, _ = plain
    p, secs, gt, marks, traces = profiled
    print("info %s: process %.2f s without libgprof, %.2f s with it" % (c.name, secs0, secs))
    ok = p.returncode == p0.returncode == 0
    c.check("exit status as without libgprof", ok,
            "%d, %d%s" % (p0.returncode, p.returncode, "" if ok else "; " + p.stderr[-300:]))
    c.check("stdout as without libgprof", p.stdout == p0.stdout, repr(p.stdout))
    if not c.check("one trace", len(traces) == 1, str(traces)):
        return None
    trace = load_trace(traces[0])
    base = trace["baseTimeNanoseconds"]
    steps, got = trace_steps(trace)
    c.check("the scheduled steps", sorted(steps) == RECORDED, str(sorted(steps)))
    if len(marks) <= RECORDED[-1] + 1:
        c.check("the program's step times", False, "%d marks" % len(marks))
        return trace
    off = [abs(base + steps[k][0] * 1000 - marks[k]) / 1e6 for k in RECORDED if k in steps]
    c.check("steps begin at the program's marks", off and max(off) < marks_slack_ms,
            "%.3f ms at most" % max(off or [0]))
    want = gt_steps(gt, marks)
    print("info %s: step %d's ground truth: %s" % (c.name, RECORDED[0], dict(collections.Counter(
        key[0] for key in want[RECORDED[0]].elements()))))
    for k in RECORDED:
        missing, extra = want[k] - got.get(k, {}), got.get(k, collections.Counter()) - want[k]
        c.check("step %d: kernels, copies and memsets = ground truth" % k,
                not missing and not extra and want[k],
                "%d operations; missing %s; extra %s" % (sum(want[k].values()),
                                                         dict(missing), dict(extra)))
    ev = trace["traceEvents"]
    launches = {e["args"]["correlation"] for e in ev
                if e.get("cat") in LAUNCH_CATS and "correlation" in e.get("args", {})}
    gpu = [e for e in ev if e.get("cat") in GPU_CATS]
    unlinked = [e["name"][:60] for e in gpu if e["args"]["correlation"] not in launches]
    c.check("every GPU operation has its launch", not unlinked and gpu,
            "%d of %d without: %s" % (len(unlinked), len(gpu), unlinked[:3]))
    unnamed = {e["name"] for e in ev if e.get("cat") in LAUNCH_CATS and "Api#" in e["name"]}
    c.check("every API call named", not unnamed, str(sorted(unnamed)[:5]))
    counters = [e for e in ev if e.get("cat") == "gpu_memory"]
    wrong = [(e["args"]["allocated"], in_use(gt, base + round(e["ts"] * 1000)))
             for e in counters
             if e["args"]["allocated"] != in_use(gt, base + round(e["ts"] * 1000))]
    c.check("device memory counter = the allocator's cudaMalloc/cudaFree",
            len(counters) >= counters_at_least and not wrong,
            "%d counter events, wrong (trace, ground truth): %s" % (len(counters), wrong[:3]))
    lines = [line for line in p.stderr.splitlines() if line.startswith("gprof:") and
             not line.startswith(("gprof: trace written", "gprof:   ", "gprof: this run wrote"))]
    c.check("no gprof warning", not lines, "; ".join(lines)[:300])
    return trace


def train(nvtx_args):
    return [PYTHON, os.path.join(HERE, "train.py")] + nvtx_args


def case_nvtx(tmp):
    """1: the loop with NVTX step marks under LD_PRELOAD."""
    c = Case("train_nvtx")
    argv = train(["--nvtx"])
    check_trace(c, run(argv, tmp + "/plain", preload=False), run(argv, tmp + "/gprof"))
    return c


def mean_step_ms(marks):
    """The program's mean step time over the recorded steps, from its own clock."""
    return sum(marks[k + 1] - marks[k] for k in RECORDED) / len(RECORDED) / 1e6


def case_torch_profiler(tmp):
    """3: the same loop under torch.profiler (Kineto on the simulated CUPTI), side by side."""
    c = Case("torch_profiler_side_by_side")
    argv = train(["--nvtx"])
    kineto_json = os.path.join(tmp, "kineto", "trace.json")
    plain = run(argv, tmp + "/plain", preload=False)
    gprof = run(argv, tmp + "/gprof")
    # torch's libcupti.so.13 is the simulated one: the same name, loaded first
    kineto = run(argv + ["--torch-profiler", kineto_json], tmp + "/kineto", preload=False,
                 extra={"LD_PRELOAD": os.path.join(BUILD, "fakecuda", "libcupti.so.13")})
    ours = check_trace(c, plain, gprof)
    k = kineto[0]
    ok = k.returncode == 0 and os.path.exists(kineto_json)
    if not c.check("torch.profiler's run ends well", ok, "" if ok else k.stderr[-300:]) or not ours:
        return c
    with open(kineto_json) as f:
        theirs = json.load(f)
    k_steps, k_ops = trace_steps(theirs)
    _, g_ops = trace_steps(ours)
    want = gt_steps(kineto[2], kineto[3])
    c.check("torch.profiler records the same steps", sorted(k_steps) == RECORDED,
            str(sorted(k_steps)))
    for step in RECORDED:
        a, b = k_ops.get(step, collections.Counter()), g_ops.get(step, collections.Counter())
        c.check("step %d: torch.profiler's kernels and copies = its run's ground truth" % step,
                a == want[step] and a, "%d operations" % sum(a.values()))
        c.check("step %d: the same kernels (names, counts) and copies as libgprof's" % step,
                a == b and a, "%d vs %d; only torch.profiler's: %s; only libgprof's: %s" % (
                    sum(a.values()), sum(b.values()), dict(a - b), dict(b - a)))
    base = mean_step_ms(plain[3])
    print("info %s: mean step %.2f ms without a profiler, %.2f ms (x%.2f) with libgprof, "
          "%.2f ms (x%.2f) with torch.profiler" % (
              c.name, base, mean_step_ms(gprof[3]), mean_step_ms(gprof[3]) / base,
              mean_step_ms(kineto[3]), mean_step_ms(kineto[3]) / base))
    return c


def case_same_process(tmp):
    """4: torch.profiler and libgprof in one process: libgprof hands CUPTI over, in one line."""
    c = Case("torch_profiler_same_process")
    argv = train(["--nvtx"])
    kineto_json = os.path.join(tmp, "both", "trace.json")
    plain = run(argv, tmp + "/plain", preload=False)
    # libgprof first, as LD_PRELOAD puts it before any library the program loads
    both = run(argv + ["--torch-profiler", kineto_json], tmp + "/both", preload=False,
               extra={"LD_PRELOAD": os.path.join(BUILD, "libgprof.so") + " " +
                      os.path.join(BUILD, "fakecuda", "libcupti.so.13")})
    p, _, gt, marks, traces = both
    c.check("exit status and stdout as without a profiler",
            p.returncode == plain[0].returncode == 0 and p.stdout == plain[0].stdout,
            "%d: %r" % (p.returncode, p.stdout))
    lines = [line for line in p.stderr.splitlines() if line.startswith("gprof:") and
             not line.startswith(("gprof: trace written", "gprof:   "))]
    c.check("libgprof says in one line that it handed CUPTI over",
            len(lines) == 1 and "handed it over" in lines[0], "; ".join(lines)[:300])
    c.check("libgprof's trace of the host side", len(traces) == 1 and
            sorted(trace_steps(load_trace(traces[0]))[0]) == RECORDED, str(traces))
    if not c.check("torch.profiler wrote its trace", os.path.exists(kineto_json)):
        return c
    with open(kineto_json) as f:
        steps, ops = trace_steps(json.load(f))
    want = gt_steps(gt, marks)
    for k in RECORDED:
        c.check("step %d: torch.profiler's kernels and copies = ground truth" % k,
                ops.get(k) == want[k] and want[k], "%d operations" % sum(want[k].values()))
    return c


HTA_CHECK = """
import sys
from hta.trace_analysis import TraceAnalysis
a = TraceAnalysis(trace_dir=sys.argv[1], include_last_profiler_step=True)
print(sorted(a.t.get_ranks()))
"""


def two_ranks(tmp, backend, torch="steps"):
    """Two ranks of ddp.py (RANK/WORLD_SIZE by hand), one folder: one file each, one HTA run;
    GPROF_TORCH=steps (or torch), so that the start-up hook names the process group's backend
    (ddp.py marks its steps itself: they count, not the hook's)."""
    c = Case("two_ranks_" + backend + ("_torch" if torch == "on" else ""))
    traces_dir = os.path.join(tmp, "traces")
    argv = [PYTHON, os.path.join(HERE, "ddp.py"), "--backend", backend]
    preload = [os.path.join(BUILD, "libgprof.so")]
    if backend == "nccl":  # the simulated libnccl.so.2 where the wheel's would be
        preload.append(os.path.join(BUILD, "fakecuda", "libnccl.so.2"))
    procs, envs = [], []
    for rank in range(2):
        os.makedirs(os.path.join(tmp, "rank%d" % rank))
        env = simulated_env(os.path.join(tmp, "rank%d" % rank), {
            "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "2",
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(29400 + os.getpid() % 500 + (backend == "nccl") +
                               2 * (torch == "on")),
            "GPROF_OUTPUT": traces_dir, "LD_PRELOAD": ":".join(preload),
            # the start-up hook tells libgprof the process group's backend
            "GPROF_TORCH": torch})
        envs.append(env)
        procs.append(subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=600) for p in procs]
    for rank, p in enumerate(procs):
        ok = p.returncode == 0 and outs[rank][0] == "ddp: rank %d of 2, 8 steps\n" % rank
        c.check("rank %d ends well" % rank, ok, "" if ok else outs[rank][1][-300:])
    paths = sorted(glob.glob(os.path.join(traces_dir, "*.pt.trace.json.gz")))
    if not c.check("one trace per rank in the folder", len(paths) == 2, str(paths)):
        return c
    for path in paths:
        trace = load_trace(path)
        info = trace.get("distributedInfo", {})
        rank = info.get("rank")
        c.check("distributedInfo of rank %s" % rank, rank in (0, 1) and
                info.get("world_size") == 2 and info.get("backend") == backend, str(info))
        with open(envs[rank]["FAKEGPU_LOG"]) as f:
            gt = [json.loads(line) for line in f]
        with open(envs[rank]["FRAMEWORKS_MARKS"]) as f:
            marks = [int(line) for line in f]
        want, (_, got) = gt_steps(gt, marks), trace_steps(trace)
        for k in RECORDED:
            c.check("rank %d step %d: kernels and copies = its ground truth" % (rank, k),
                    got.get(k) == want[k] and want[k], "%d operations" % sum(want[k].values()))
        if torch == "on":
            check_comms(c, rank, trace, gt, marks, backend)
    hta = os.path.join(BUILD, "clients-venv", "env", "bin", "python")
    if not os.path.exists(hta):
        print("info %s: no HTA (make test-clients installs it): one HTA run not checked" % c.name)
        return c
    p = subprocess.run([hta, "-c", HTA_CHECK, traces_dir], capture_output=True, text=True,
                       timeout=600)
    ok = p.stdout.strip() == "[0, 1]"
    c.check("HTA loads the folder as one run of ranks 0 and 1", ok,
            p.stdout.strip() if ok else (p.stdout + p.stderr[-300:]).strip())
    if torch == "on":
        check_distributed_view(c, traces_dir, envs, tmp)
    elif backend == "nccl":
        # the client tier's checks of HTA's and TensorBoard's views, on both ranks
        by_rank = sorted((load_trace(p)["distributedInfo"]["rank"], p) for p in paths)
        pairs = [x for rank, path in by_rank for x in (path, envs[rank]["FAKEGPU_LOG"])]
        for script in ("hta_check.py", "tb_check.py"):
            p = subprocess.run([hta, script, traces_dir] + pairs, capture_output=True,
                               text=True, timeout=600, cwd=os.path.join(HERE, "..", "clients"))
            lines = p.stdout.splitlines()
            fails = [line for line in lines if line.startswith("FAIL")]
            c.check("%s: every check of the two ranks" % script, p.returncode == 0,
                    "; ".join(fails)[:300] or p.stderr[-300:] if p.returncode else
                    "%d checks" % sum(line.startswith("ok") for line in lines))
    return c


# ddp.py's gradients: one bucket of Linear(64, 128) and Linear(128, 16), all-reduced a step
DDP_GRADIENTS = 64 * 128 + 128 + 128 * 16 + 16


def all_reduces(gt, marks):
    """The element counts the recorded steps all-reduce: the simulated NCCL's log, or over
    gloo (no GPU log) ddp.py's one bucket a step."""
    first, end = marks[RECORDED[0]], marks[RECORDED[-1] + 1]
    nccl = sorted(g["count"] for g in gt if g["type"] == "nccl" and
                  g["name"] == "ncclAllReduce" and first <= g["start"] < end)
    return nccl or [DDP_GRADIENTS] * len(RECORDED)


def check_comms(c, rank, trace, gt, marks, backend):
    """Each all-reduce of the recorded steps is an event as torch.profiler writes it: over NCCL
    a record_param_comms with its element count, dtype, rank and group; over gloo (which has
    none) its gloo:all_reduce scope with the tensor's sizes and type."""
    first, end = marks[RECORDED[0]], marks[RECORDED[-1] + 1]
    base = trace["baseTimeNanoseconds"]
    calls = all_reduces(gt, marks)
    if backend == "nccl":
        comms = [e["args"] for e in trace["traceEvents"] if e.get("name") == "record_param_comms"
                 and e["args"].get("Collective name") == "allreduce" and
                 first <= base + e["ts"] * 1000 < end]
        counts = [a.get("In msg nelems") for a in comms]
        want = {"dtype": "Float", "Rank": rank, "Group size": 2,
                "Process Group Ranks": "[0, 1]", "Process Group Description": "default_pg"}
    else:
        comms = [e["args"] for e in trace["traceEvents"] if e.get("name") == "gloo:all_reduce"
                 and e.get("cat") == "user_annotation" and first <= base + e["ts"] * 1000 < end]
        counts = [(a.get("Input Dims") or [[0]])[0][0] for a in comms]
        want = {"Input type": ["float"]}
    c.check("rank %d: each all-reduce an event with torch.profiler's arguments" % rank,
            sorted(counts) == calls and all(a.get(k) == v for a in comms for k, v in want.items()),
            "all-reduces %s; events %s" % (calls, [json.dumps(a)[:300] for a in comms[:1]]))


def check_distributed_view(c, traces_dir, envs, tmp):
    """TensorBoard's Distributed view on the two ranks: each one's all-reduces, their calls
    and bytes."""
    v = views(traces_dir, tmp + "/views")
    if v is None:
        print("info %s: no client tier (make test-clients installs it): views not checked" %
              c.name)
        return
    want = []
    for env in envs:
        with open(env["FAKEGPU_LOG"]) as f:
            gt = [json.loads(line) for line in f]
        with open(env["FRAMEWORKS_MARKS"]) as f:
            calls = all_reduces(gt, [int(line) for line in f])
        want.append([len(calls), 4 * sum(calls)])
    got = sorted([ops.get(n) for n in ("nccl:all_reduce", "gloo:all_reduce") if n in ops]
                 for ops in v.get("comm_ops", {}).values())
    # the plugin leaves the view out when the ranks' traces hold different collectives
    held = [collections.Counter(e["name"] for e in load_trace(path)["traceEvents"]
                                if e.get("cat") == "user_annotation" and
                                e.get("name", "").startswith(("nccl:", "gloo:")))
            for path in sorted(glob.glob(os.path.join(traces_dir, "*.pt.trace.json.gz")))]
    c.check("TensorBoard's Distributed view: each rank's all-reduces, calls and bytes",
            got == sorted([w] for w in want), "%s vs %s; the ranks' collectives: %s" % (
                got, sorted(want), held))
    c.check("HTA's communication/computation overlap: a row for each rank",
            v.get("comm_comp_ranks") == 2, str(v.get("comm_comp_ranks")))


def case_two_ranks(tmp):
    """6: two ranks over gloo."""
    return two_ranks(tmp, "gloo")


def case_two_ranks_nccl(tmp):
    """11: two ranks over NCCL: the simulated libnccl.so.2 preloaded, where the wheel's would be
    (which does not run on the simulated driver)."""
    return two_ranks(tmp, "nccl")


def case_two_ranks_torch(tmp):
    """12: case 6 under GPROF_TORCH=on: collectives as torch.profiler writes them."""
    return two_ranks(tmp, "gloo", "on")


def case_two_ranks_nccl_torch(tmp):
    """13: case 11 under GPROF_TORCH=on."""
    return two_ranks(tmp, "nccl", "on")


def case_torch_steps(tmp):
    """2: the same loop without marks under gprof-run --torch-steps."""
    c = Case("train_torch_steps")
    argv = train([])
    wrap = [os.path.join(SRC, "scripts", "gprof-run"), "--lib",
            os.path.join(BUILD, "libgprof.so"), "--torch-steps", "--"]
    check_trace(c, run(argv, tmp + "/plain", preload=False), run(argv, tmp + "/gprof", wrap=wrap))
    return c


def steps_of(trace):
    """ProfilerStep#k -> (start, end) of the trace."""
    return {int(e["name"].split("#")[1]): (e["ts"], e["ts"] + e["dur"])
            for e in trace["traceEvents"] if e.get("name", "").startswith("ProfilerStep#")}


def op_events(trace):
    """Per ProfilerStep#k, the operators (cpu_op, and PyTorch's record_function scopes) in it."""
    ev = trace["traceEvents"]
    steps = [e for e in ev if e.get("name", "").startswith("ProfilerStep#")]
    out = {}
    for s in steps:
        out[int(s["name"].split("#")[1])] = [
            e for e in ev if e.get("ph") == "X" and s["ts"] <= e["ts"] < s["ts"] + s["dur"] and
            (e.get("cat") == "cpu_op" or e.get("cat") == "user_annotation" and
             "Record function id" in e.get("args", {}) and
             not e["name"].startswith("ProfilerStep#"))]
    return out


def attributed(trace):
    """Each GPU operation (name) with the name of its operator: its External id, or its launch's."""
    ev = trace["traceEvents"]
    ops = {e["args"]["External id"]: e["name"] for e in ev
           if e.get("cat") in ("cpu_op", "user_annotation") and "External id" in e.get("args", {})}
    launch = {e["args"].get("correlation"): e["args"].get("External id") for e in ev
              if e.get("cat") in LAUNCH_CATS}
    return collections.Counter(
        (e["name"], ops.get(e["args"].get("External id") or launch.get(e["args"]["correlation"])))
        for e in ev if e.get("cat") in GPU_CATS)


def inputs(e):
    """An operator's name and inputs as record_shapes writes them."""
    a = e["args"]
    return e["name"], json.dumps([a.get("Input Dims"), a.get("Input type"), a.get("Input Strides"),
                                  a.get("Concrete Inputs")])


def views(trace_path, tmp):
    """The client tier's TensorBoard views and HTA aten analysis (views.py) of one trace, or
    of a folder of ranks' traces; None without the client tier."""
    python = os.path.join(BUILD, "clients-venv", "env", "bin", "python")
    if not os.path.exists(python):
        return None
    if not os.path.isdir(trace_path):
        os.makedirs(tmp)
        os.symlink(trace_path, os.path.join(tmp, "worker.pt.trace.json" +
                                            (".gz" if trace_path.endswith(".gz") else "")))
        trace_path = tmp
    p = subprocess.run([python, os.path.join(HERE, "views.py"), trace_path],
                       capture_output=True, text=True, timeout=600)
    return json.loads(p.stdout) if p.returncode == 0 else {"error": p.stderr[-300:]}


def case_torch_operators(tmp):
    """8: gprof-run --torch beside torch.profiler with the same content, same loop, same GPU."""
    c = Case("torch_operators")
    argv = train([])
    wrap = [os.path.join(SRC, "scripts", "gprof-run"), "--lib",
            os.path.join(BUILD, "libgprof.so"), "--torch", "--"]
    kineto_json = os.path.join(tmp, "kineto", "trace.json")
    plain = run(argv, tmp + "/plain", preload=False)
    gprof = run(argv, tmp + "/gprof", wrap=wrap)
    kineto = run(argv + ["--torch-profiler", kineto_json], tmp + "/kineto", preload=False,
                 extra={"LD_PRELOAD": os.path.join(BUILD, "fakecuda", "libcupti.so.13")})
    ours = check_trace(c, plain, gprof)
    if not c.check("torch.profiler's run ends well", kineto[0].returncode == 0 and
                   os.path.exists(kineto_json), kineto[0].stderr[-300:]) or not ours:
        return c
    with open(kineto_json) as f:
        theirs = json.load(f)
    a, b = op_events(theirs), op_events(ours)
    for k in RECORDED:
        def multiset(events, key):
            return collections.Counter(key(e) for e in events)

        def diff(key):
            x, y = multiset(a.get(k, []), key), multiset(b.get(k, []), key)
            return x, y, "%d vs %d; only torch.profiler's: %s; only libgprof's: %s" % (
                sum(x.values()), sum(y.values()), list((x - y).items())[:3],
                list((y - x).items())[:3])

        x, y, why = diff(lambda e: (e["cat"], e["name"]))
        c.check("step %d: the same operators as torch.profiler's (names, categories)" % k,
                x == y and x, why)
        x, y, why = diff(inputs)
        c.check("step %d: the same inputs as torch.profiler's record_shapes (sizes, types, "
                "strides, values)" % k,
                x == y, why)
        x, y, why = diff(lambda e: (e["name"], e["args"].get("Sequence number", -1) >= 0,
                                    e["args"].get("Fwd thread id", 0) > 0))
        c.check("step %d: sequence numbers and backward operators as torch.profiler's" % k,
                x == y, why)
    for k in RECORDED:
        x, y = [collections.Counter(
            e["name"] for e in t["traceEvents"] if e.get("cat") == "python_function" and
            e["name"].startswith("nn.Module: ") and s[0] <= e["ts"] < s[1])
            for t, s in ((theirs, steps_of(theirs)[k]), (ours, steps_of(ours)[k]))]
        c.check("step %d: the same modules as torch.profiler's (with_modules)" % k, x == y and x,
                "%d vs %d; only torch.profiler's: %s; only libgprof's: %s" % (
                    sum(x.values()), sum(y.values()), list((x - y).items())[:3],
                    list((y - x).items())[:3]))
    for k in RECORDED:
        x, y = [[(e["args"]["Bytes"], e["args"]["Total Allocated"], e["args"]["Total Reserved"])
                 for e in t["traceEvents"] if e.get("name") == "[memory]" and
                 e["args"].get("Device Type") == 1 and s[0] <= e["ts"] < s[1]]
                for t, s in ((theirs, steps_of(theirs)[k]), (ours, steps_of(ours)[k]))]
        # frees on the autograd thread and the main thread may be told in either order
        same = sum((collections.Counter(x) & collections.Counter(y)).values())
        c.check("step %d: the same GPU tensor allocations and frees as torch.profiler's "
                "(profile_memory: bytes; peaks allocated and reserved; >= 95%% of the "
                "totals after each)" % k,
                x and sorted(v[0] for v in x) == sorted(v[0] for v in y) and
                max(v[1] for v in x) == max(v[1] for v in y) and
                max(v[2] for v in x) == max(v[2] for v in y) and same >= 0.95 * len(x),
                "%d vs %d, %d the same; peak allocated %s vs %s; only "
                "torch.profiler's: %s; only libgprof's: %s" % (
                    len(x), len(y), same, max((v[1] for v in x), default=None),
                    max((v[1] for v in y), default=None),
                    sorted(set(x) - set(y))[:3], sorted(set(y) - set(x))[:3]))
    x, y = attributed(theirs), attributed(ours)
    same = sum((x & y).values())
    c.check("each GPU operation tied to the operator torch.profiler ties it to (>= 99%)",
            same >= 0.99 * sum(x.values()) and sum(x.values()) == sum(y.values()),
            "%d of %d; only libgprof's: %s" % (same, sum(x.values()), list((y - x).items())[:3]))
    flows = [sum(1 for e in t["traceEvents"] if e.get("cat") == "fwdbwd" and e["ph"] == "f" and
                 any(o["ts"] == e["ts"] for o in sum(op_events(t).values(), [])))
             for t in (theirs, ours)]
    c.check("forward -> backward links as torch.profiler's", flows[0] == flows[1] and flows[0],
            "%d vs %d" % tuple(flows))
    mine = views(gprof[4][0], tmp + "/views-gprof")
    if mine is None:
        print("info %s: no client tier (make test-clients installs it): views not checked" %
              c.name)
        return c
    other = views(kineto_json, tmp + "/views-kineto")
    c.check("TensorBoard's Operator view: the same operators and calls as on torch.profiler's",
            mine.get("operators") and mine.get("operators") == other.get("operators"),
            "%s vs %s" % (str(mine)[:200], str(other)[:200]))
    c.check("TensorBoard's Module view: the same modules and occurrences as on torch.profiler's",
            mine.get("modules") and mine.get("modules") == other.get("modules"),
            "%s vs %s" % (str(mine.get("modules"))[:200], str(other.get("modules"))[:200]))
    gpu_peaks = [{d: v for d, v in (m.get("memory_peaks") or {}).items() if d.startswith("CUDA")}
                 for m in (mine, other)]
    c.check("TensorBoard's Memory view: the same GPU peak as on torch.profiler's",
            gpu_peaks[0] and gpu_peaks[0] == gpu_peaks[1],
            "%s vs %s" % (mine.get("memory_peaks"), other.get("memory_peaks")))
    c.check("HTA's aten operator analysis works on it", isinstance(mine.get("aten_kernels"), int)
            and mine["aten_kernels"] > 0, str(mine.get("aten_kernels")))
    base = mean_step_ms(plain[3])
    print("info %s: mean step %.2f ms without a profiler, %.2f ms (x%.2f) with libgprof "
          "--torch, %.2f ms (x%.2f) with torch.profiler (record_shapes, profile_memory, "
          "with_modules, with_stack)" % (
              c.name, base, mean_step_ms(gprof[3]), mean_step_ms(gprof[3]) / base,
              mean_step_ms(kineto[3]), mean_step_ms(kineto[3]) / base))
    return c


def case_torch_back_to_back(tmp):
    """14: --torch with windows one right after the other (no wait or warmup between): each
    window's operators carry their inputs, and its tensor memory is in its own file."""
    c = Case("torch_back_to_back")
    wrap = [os.path.join(SRC, "scripts", "gprof-run"), "--lib",
            os.path.join(BUILD, "libgprof.so"), "--torch", "--"]
    p = run(train(["--steps", "8"]), tmp, wrap=wrap, extra={
        "GPROF_SCHEDULE": "skip_first=2,wait=0,warmup=0,active=2,repeat=2"})[::4]
    if not c.check("two traces", p[0].returncode == 0 and len(p[1]) == 2,
                   "%s; %s" % (p[1], p[0].stderr[-300:])):
        return c
    for path in p[1]:
        ev = load_trace(path)["traceEvents"]
        ops = [e for e in ev if e.get("cat") == "cpu_op" and e["name"].startswith("aten::")]
        typed = [e for e in ops if "Input type" in e["args"]]
        memory = [e for e in ev if e.get("name") == "[memory]"]
        c.check("%s: its operators' inputs and its tensor memory" % os.path.basename(path),
                ops and len(typed) >= 0.9 * len(ops) and memory,
                "%d of %d operators with their types; %d [memory] events" % (
                    len(typed), len(ops), len(memory)))
    return c


def check_script(c, tmp, script):
    """A program here that allocates before its loop (the counter's one event is the window's
    start), run without and with libgprof: its trace, checked."""
    argv = [PYTHON, os.path.join(HERE, script)]
    return check_trace(c, run(argv, tmp + "/plain", preload=False), run(argv, tmp + "/gprof"),
                       counters_at_least=1)


def case_triton(tmp):
    """5: a Triton kernel, launched by the driver API, named and linked."""
    c = Case("triton")
    trace = check_script(c, tmp, "triton_add.py")
    if trace:
        names = collections.Counter(e["name"] for e in trace["traceEvents"]
                                    if e.get("cat") == "kernel")
        c.check("add_kernel once per recorded step", names == {"add_kernel": 3}, str(names))
        launch = [e["name"] for e in trace["traceEvents"] if e.get("cat") == "cuda_driver"
                  and e["name"].startswith("cuLaunchKernel")]
        c.check("its launches are driver calls", len(launch) == 3, str(launch))
    return c


def case_dataloader(tmp):
    """7: a DataLoader with 2 forked workers: they write nothing; the main process is unaffected."""
    c = Case("dataloader_workers")
    argv = train(["--nvtx", "--workers", "2"])
    check_trace(c, run(argv, tmp + "/plain", preload=False), run(argv, tmp + "/gprof"))
    return c


def pools_reported(gt, since, ns):
    """What the pools' latest reported operations in [since, ns] said they hold; None: none."""
    latest = {}
    for g in gt:
        if "pool" not in g or not since <= g["time"] <= ns or \
                (g["type"] == "pool" and g["op"] == "release"):
            continue
        if g["pool"] not in latest or g["time"] >= latest[g["pool"]]["time"]:
            latest[g["pool"]] = g
    if not latest:
        return None
    return sum(g["pool_reserved"] if g["type"] == "memory" else g["reserved"]
               for g in latest.values())


def case_malloc_async(tmp):
    """8: the loop on PyTorch's cudaMallocAsync backend: its pools' allocations and reserve."""
    c = Case("train_cuda_malloc_async")
    argv, env = train(["--nvtx"]), {"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"}
    profiled = run(argv, tmp + "/gprof", env)
    trace = check_trace(c, run(argv, tmp + "/plain", env, preload=False), profiled)
    if trace:
        gt, base = profiled[2], trace["baseTimeNanoseconds"]
        points = [e for e in trace["traceEvents"] if e.get("cat") == "gpu_memory"]
        since = base + round(points[0]["ts"] * 1000) if points else 0
        wrong = [(e["args"].get("pool reserved"), want) for e in points
                 for want in [pools_reported(gt, since, base + round(e["ts"] * 1000))]
                 if e["args"].get("pool reserved") != want]
        pooled = [e for e in points if e["args"].get("pool reserved")]
        c.check("pool reserved = what the pools' latest operations reported",
                pooled and not wrong, "%d of %d with pools; wrong (trace, ground truth): %s"
                % (len(pooled), len(points), wrong[:3]))
        c.check("the summary names the pools' peak",
                "stream-ordered pools: peak" in profiled[0].stderr, profiled[0].stderr[-300:])
    return c


def case_cuda_graph(tmp):
    """10: torch.cuda.graph capture and replay: each replay's kernels, linked to cudaGraphLaunch."""
    c = Case("cuda_graph")
    trace = check_script(c, tmp, "graph.py")
    if trace:
        ev = trace["traceEvents"]
        calls = {e["args"]["correlation"]: e["name"] for e in ev
                 if e.get("cat") in LAUNCH_CATS and "correlation" in e.get("args", {})}
        by = collections.Counter(calls.get(e["args"]["correlation"]) for e in ev
                                 if e.get("cat") == "kernel")
        c.check("every kernel is a replay's, linked to cudaGraphLaunch",
                list(by) == ["cudaGraphLaunch"] and by["cudaGraphLaunch"] >= 3, str(dict(by)))
    return c


CASES = {"train_nvtx": case_nvtx, "train_torch_steps": case_torch_steps,
         "torch_profiler_side_by_side": case_torch_profiler,
         "torch_profiler_same_process": case_same_process,
         "triton": case_triton, "two_ranks_gloo": case_two_ranks,
         "dataloader_workers": case_dataloader, "torch_operators": case_torch_operators,
         "train_cuda_malloc_async": case_malloc_async, "cuda_graph": case_cuda_graph,
         "two_ranks_nccl": case_two_ranks_nccl, "two_ranks_gloo_torch": case_two_ranks_torch,
         "two_ranks_nccl_torch": case_two_ranks_nccl_torch,
         "torch_back_to_back": case_torch_back_to_back}


def main():
    chosen = [n for n in CASES if not sys.argv[3:] or any(t in n for t in sys.argv[3:])]
    passed = failed = 0
    keep = os.environ.get("FRAMEWORKS_KEEP")  # a folder: each case's files stay there
    with tempfile.TemporaryDirectory(prefix="gprof-frameworks-") as tmp:
        for name in chosen:
            c = CASES[name](os.path.join(keep or tmp, name))
            passed += c.passed
            failed += c.failed
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
