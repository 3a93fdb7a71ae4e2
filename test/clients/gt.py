"""
What the simulated GPU really did in a libgprof window, from its ground-truth log (FAKEGPU_LOG):
the client checks compare HTA's and TensorBoard's figures with these, never with libgprof's.

The window is the span of the trace's steps (the program's step markers); the GPU work that
belongs to it is what the runtime calls made in that span launched, matched by correlation id in
the log itself.
"""

import functools
import gzip
import json
import subprocess

US = 1000  # ns


@functools.lru_cache(maxsize=None)
def demangled(name):
    """A kernel's name as c++filt gives it (libgprof demangles when the C++ runtime is loaded)."""
    try:
        out = subprocess.run(["c++filt", name], capture_output=True, text=True, check=True)
        return out.stdout.strip() or name
    except (OSError, subprocess.CalledProcessError):
        return name


def load_trace(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


class Window:
    """The GPU operations of one process's window, in ns of CLOCK_REALTIME."""

    def __init__(self, trace_path, gt_path):
        trace = load_trace(trace_path)
        base = trace["baseTimeNanoseconds"]
        steps = [e for e in trace["traceEvents"] if e.get("name", "").startswith("ProfilerStep#")]
        if not steps:
            raise SystemExit(f"FAIL: {trace_path}: no steps")
        self.path = trace_path
        self.base = base
        self.rank = trace.get("distributedInfo", {}).get("rank", 0)
        self.steps = sorted(int(e["name"].split("#")[1]) for e in steps)
        self.begin = base + round(min(e["ts"] for e in steps) * 1000)
        self.end = base + round(max(e["ts"] + e["dur"] for e in steps) * 1000)
        with open(gt_path) as f:
            log = [json.loads(line) for line in f]
        traced = {e["args"]["correlation"] for e in trace["traceEvents"]
                  if "correlation" in e.get("args", {})}
        gpu_traced = {e["args"]["correlation"] for e in trace["traceEvents"]
                      if e.get("cat") in GPU_CATS and "correlation" in e.get("args", {})}
        calls = [g for g in log if g["type"] == "api"]  # runtime and driver (NCCL's launches)
        ops = [g for g in log if g["type"] == "gpu"]
        inside = {g["corr"] for g in calls if self.begin <= g["start"] and g["end"] <= self.end}
        outside = {g["corr"] for g in calls if g["end"] < self.begin or g["start"] > self.end}
        # a call across the window's edge is the trace's to place: count it where the trace does
        self.calls = [g for g in calls if g["corr"] in inside or
                      (g["corr"] not in outside and g["corr"] in traced)]
        for op in ops:
            if op["corr"] in inside and op["corr"] not in gpu_traced:
                raise SystemExit(f"FAIL: {trace_path}: no {op['name']} of call {op['corr']}, "
                                 "made inside the window")
            if op["corr"] in outside and op["corr"] in gpu_traced:
                raise SystemExit(f"FAIL: {trace_path}: {op['name']} of call {op['corr']}, "
                                 "made outside the window, is in it")
        self.gpu_traced = gpu_traced
        self.gprof = trace.get("gprof", {})
        self.host_traced = {e["args"]["correlation"] for e in trace["traceEvents"]
                            if e.get("cat") not in GPU_CATS and
                            "correlation" in e.get("args", {})}
        corrs = {g["corr"] for g in self.calls}
        self.ops = [g for g in ops if g["corr"] in corrs]
        self.syncs = [g for g in log if g["type"] == "sync" and g["corr"] in corrs]
        self.kernels = [g for g in self.ops if g["kind"] == "kernel"]
        self.call_of = {g["corr"]: g for g in self.calls}
        self.step_spans = sorted((int(e["name"].split("#")[1]), base + round(e["ts"] * 1000),
                                  base + round((e["ts"] + e["dur"]) * 1000)) for e in steps)
        # the simulated libnccl's calls that made launches of the window, each with its
        # kernels ("kernels"), the step it was called in ("step") and the room around it on its
        # thread ("room": from the end of the thread's call before to the start of the one
        # after, where a profiler's span of the call must lie); their kernels are the
        # communication kernels, the rest compute
        self.collectives = []
        for n in (g for g in log if g["type"] == "nccl"):
            made = {g["corr"] for g in self.calls if g["tid"] == n["tid"] and
                    n["start"] <= g["start"] and g["end"] <= n["end"]}
            if made:
                n["kernels"] = [k for k in self.kernels if k["corr"] in made]
                n["step"] = next((s for s, b, e in self.step_spans if b <= n["start"] < e), None)
                n["room"] = room(log, n)
                self.collectives.append(n)
        comm = {k["corr"] for n in self.collectives for k in n["kernels"]}
        self.comm_kernels = [k for k in self.kernels if k["corr"] in comm]
        self.compute_kernels = [k for k in self.kernels if k["corr"] not in comm]
        # device memory in use after each allocation and free the window saw
        in_use, self.memory = 0, []
        for g in sorted((g for g in log if g["type"] == "memory" and
                         g["memory_kind"] == "device"), key=lambda g: g["time"]):
            in_use += g["bytes"] if g["op"] == "alloc" else -g["bytes"]
            if self.begin <= g["time"] < self.end:
                self.memory.append(in_use)

    def iteration_kernels(self):
        """The kernels HTA gives an iteration: their call's start, rounded up to the us as HTA
        reads times, lies in a step's span as HTA rounds it (start up, end down). A call made
        in the first or last microsecond of a step may fall between two."""
        def us_up(ns):
            return -(-(ns - self.base) // US)

        spans = [(us_up(b), (e - self.base) // US) for _, b, e in self.step_spans]
        return [k for k in self.kernels
                if any(b <= us_up(self.call_of[k["corr"]]["start"]) < e for b, e in spans)]

    def kernel_totals(self, kernels=None):
        """demangled name -> (count, total ns) of the window's kernels (or of `kernels`)."""
        out = {}
        for k in self.kernels if kernels is None else kernels:
            n, t = out.get(demangled(k["name"]), (0, 0))
            out[demangled(k["name"])] = (n + 1, t + k["end"] - k["start"])
        return out

    def streams(self):
        """stream -> its operations by start."""
        out = {}
        for op in self.ops:
            out.setdefault(op["stream"], []).append(op)
        for ops in out.values():
            ops.sort(key=lambda o: o["start"])
        return out


def room(log, call):
    """(end of the thread's last call before `call`, start of its next one after)."""
    mine = [g for g in log if g["type"] in ("api", "nccl") and g["pid"] == call["pid"] and
            g["tid"] == call["tid"]]
    before = [g["end"] for g in mine if g["end"] <= call["start"]]
    after = [g["start"] for g in mine if g["start"] >= call["end"]]
    return max(before, default=call["start"]), min(after, default=call["end"])


def union(intervals):
    """Length of the union of (begin, end) pairs."""
    total, cur_b, cur_e = 0, None, None
    for b, e in sorted(intervals):
        if cur_e is None or b > cur_e:
            if cur_e is not None:
                total += cur_e - cur_b
            cur_b, cur_e = b, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_b
    return total


def explain(w):
    """For a failed check: the window's edges, and its calls that made GPU work of which the
    trace lacks a side, or that cross an edge (times in us from the window's start)."""
    def us(t):
        return f"{(t - w.begin) / US:.3f}"

    lines = [f"window of {w.path}: rank {w.rank}, steps {w.steps}, {len(w.calls)} calls, "
             f"0 to {us(w.end)} us; dropped {w.gprof.get('dropped')}, warnings "
             f"{w.gprof.get('warnings')}"]
    gpu = {g["corr"] for g in w.ops}
    for g in w.calls:
        host, work = g["corr"] in w.host_traced, g["corr"] in w.gpu_traced
        edge = g["start"] < w.begin or g["end"] > w.end
        if edge or g["corr"] in gpu and not (host and work):
            lines.append(f"  call {g['corr']} {g.get('name', '?')} tid {g.get('tid')}: "
                         f"{us(g['start'])} to {us(g['end'])} us; in the trace: "
                         f"{'host' if host else 'no host'}, "
                         f"{'GPU work' if work else 'no GPU work'}")
    return "\n".join(lines)


class Checks:
    """Collects failures; each check says what it compared."""

    def __init__(self, what):
        self.what = what
        self.failed = []

    def close(self, name, got, want, tol):
        ok = abs(got - want) <= tol
        print(f"{'ok  ' if ok else 'FAIL'} {self.what}: {name}: {got} (ground truth {want}, +-{tol})")
        if not ok:
            self.failed.append(name)

    def between(self, name, got, lo, hi):
        ok = lo <= got <= hi
        print(f"{'ok  ' if ok else 'FAIL'} {self.what}: {name}: {got} (ground truth {lo} to {hi})")
        if not ok:
            self.failed.append(name)

    def equal(self, name, got, want):
        ok = got == want
        print(f"{'ok  ' if ok else 'FAIL'} {self.what}: {name}: {got!r} (ground truth {want!r})")
        if not ok:
            self.failed.append(name)

    def done(self, windows=()):
        if self.failed:
            for w in windows:
                print(explain(w))
            raise SystemExit(f"FAIL: {self.what}: {', '.join(self.failed)}")
