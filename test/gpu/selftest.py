#!/usr/bin/env python3
"""Checks the GPU suite's own checks without a GPU (make test-gpu-sim): gpu-app's trace from the
simulated GPU passes them, and each damaged copy of it fails them. Usage: selftest.py FOLDER
(the folder of that one trace, e.g. build/gpu-sim/case-1/traces).
"""
import collections
import copy
import gzip
import json
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases  # noqa: E402
import compare  # noqa: E402
import gtrace  # noqa: E402


class SimCtx:
    sim, gpu = True, None


def first(t, pred):
    return next(e for e in t.events if pred(e))


def kernel(name):
    return lambda e: e.get("cat") == "kernel" and e["name"].startswith(name)


def drop(t, pred):
    t.events.remove(first(t, pred))


def same_stream_as(t, src, dst):
    first(t, kernel(dst))["args"]["stream"] = first(t, kernel(src))["args"]["stream"]


def launch_of(t, name):
    c = gtrace.corr(first(t, kernel(name)))
    return first(t, lambda e: e.get("cat") == "cuda_runtime" and gtrace.corr(e) == c)


def overlap(t):
    """The second saxpy of a step starts inside the first."""
    a, b = [e for e in t.events if kernel("saxpy")(e)][:2]
    b["ts"] = a["ts"] + a["dur"] / 2


# Damage to the parsed trace, each of which check_app or format_problem must catch.
EVENT_DAMAGE = {
    "a kernel missing": lambda t: drop(t, kernel("reduce_sum")),
    "a kernel renamed": lambda t: first(t, kernel("saxpy")).update(name="saxpy(int)"),
    "a copy's bytes": lambda t: first(t, lambda e: e.get("cat") == "gpu_memcpy")["args"].update(
        bytes=1),
    "a kernel's correlation": lambda t: first(t, kernel("saxpy"))["args"].update(
        correlation=987654321),
    "a kernel on the other stream": lambda t: same_stream_as(t, "saxpy", "void scale<double>"),
    "the entry point": lambda t: launch_of(t, "reduce_sum")["args"].update(
        api="__cudaLaunchKernel"),
    "the launch name": lambda t: launch_of(t, "void scale<double>").update(
        name="cudaLaunchKernel"),
    "the grid": lambda t: first(t, kernel("saxpy"))["args"].update(grid=[1, 1, 1]),
    "a step missing": lambda t: drop(t, lambda e: e.get("name") == "ProfilerStep#3"),
    "an NVTX range missing": lambda t: drop(t, lambda e: e.get("name") == "compute"),
    "a step mark missing": lambda t: drop(t, lambda e: e.get("ph") == "i"),
    "a record count": lambda t: t.root["gprof"]["records"].update(kernel=1),
    "CUPTI not in use": lambda t: t.root["gprof"]["cupti"].update(status="not used: x"),
    "dropped records": lambda t: t.root["gprof"]["dropped"].update(cupti=2),
    "a flow end missing": lambda t: drop(t, lambda e: e.get("ph") == "f"),
    "two kernels overlap": overlap,
    "a host event with a stream": lambda t: launch_of(t, "saxpy")["args"].update(stream=7),
    "a step name": lambda t: first(t, lambda e: e.get("name") == "ProfilerStep#2").update(
        name="ProfilerStep#2a"),
    "traceName": lambda t: t.root.update(traceName="x.pt.trace.json.gz"),
}

# Damage to the text, which format_problem must catch.
TEXT_DAMAGE = {
    "rank without its space": lambda s: s.replace('"rank": ', '"rank":', 1),
    "ts with two decimals": lambda s: re.sub(r'("ts":\d+\.\d\d)\d', r"\1", s, count=1),
    "a \\u escape": lambda s: s.replace('"name":"compute"', '"name":"comp\\u0075te"', 1),
    "top-level keys reordered": lambda s: s.replace('"displayTimeUnit": "ms",', "", 1).replace(
        '"traceName"', '"displayTimeUnit": "ms", "traceName"', 1),
    "a duplicate key": lambda s: s.replace('"name":"compute"', '"name":"compute","name":"x"', 1),
}


def caught_event_damage(base, name, damage):
    t = gtrace.Trace(base.path, base.raw, copy.deepcopy(base.root))
    damage(t)
    try:
        cases.check_app(SimCtx, t)
    except cases.Fail:
        return True
    return gtrace.format_problem(t) is not None


def caught_text_damage(base, name, damage):
    raw = damage(base.raw)
    assert raw != base.raw, name
    try:
        root = json.loads(raw, object_pairs_hook=gtrace._no_dups)
    except gtrace.TraceError:
        return True
    return gtrace.format_problem(gtrace.Trace(base.path, raw, root)) is not None


def compare_problems(base, edit):
    """compare.compare of the trace against a copy of it changed by edit."""
    other = gtrace.Trace(base.path, base.raw, copy.deepcopy(base.root))
    edit(other)
    ours, ref = compare.Profile(other, (2, 3, 4)), compare.Profile(base, (2, 3, 4))
    return compare.compare(ours, ref, 0.05)[0]


def scale_durs(t, factor, name="saxpy"):
    for e in t.events:
        if kernel(name)(e):
            e["dur"] *= factor


def compare_checks(base):
    """(what, passed) for the comparison of case 6."""
    return [
        ("a trace against itself agrees", not compare_problems(base, lambda t: None)),
        ("durations 3% longer agree", not compare_problems(base, lambda t: scale_durs(t, 1.03))),
        ("durations 10% longer differ", bool(compare_problems(base,
                                                              lambda t: scale_durs(t, 1.1)))),
        ("a kernel missing differs", bool(compare_problems(
            base, lambda t: drop(t, kernel("reduce_sum"))))),
        ("a copy's bytes differ", bool(compare_problems(base, EVENT_DAMAGE["a copy's bytes"]))),
    ]


def gzip_checks(path):
    with open(path, "rb") as f:
        data = f.read()
    try:
        gtrace.gunzip_one(data + gzip.compress(b" "))
        two_members = False
    except gtrace.TraceError:
        two_members = True
    try:
        gtrace.gunzip_one(data[: len(data) // 2])
        cut = False
    except gtrace.TraceError:
        cut = True
    return [("a second gzip member is refused", two_members), ("a cut file is refused", cut)]


def main():
    files, _ = gtrace.trace_files(sys.argv[1])
    base = cases.checked(files[0])
    results = [("the undamaged trace passes", cases.check_app(SimCtx, base) is not None)]
    results += [("caught: " + n, caught_event_damage(base, n, d)) for n, d in EVENT_DAMAGE.items()]
    results += [("caught: " + n, caught_text_damage(base, n, d)) for n, d in TEXT_DAMAGE.items()]
    results += compare_checks(base) + gzip_checks(files[0])
    bad = [what for what, ok in results if not ok]
    for what in bad:
        print("selftest: FAILED: %s" % what)
    print("selftest: %d of %d checks of the checks passed" % (len(results) - len(bad),
                                                              len(results)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
