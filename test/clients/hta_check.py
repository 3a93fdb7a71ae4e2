"""
Holistic Trace Analysis on libgprof's traces, its figures against the simulated GPU's ground
truth:

    hta_check.py DIR TRACE GTLOG [TRACE GTLOG ...]
    hta_check.py --critical-path DIR TRACE GTLOG [TRACE GTLOG ...]
    hta_check.py --diff DIR_A TRACE_A GTLOG_A DIR_B TRACE_B GTLOG_B

DIR holds one trace per rank (the TRACE files); each GTLOG is the FAKEGPU_LOG of that rank's
process. --critical-path checks HTA's critical path alone (traces with cuda_sync events, which
its temporal breakdown counts as GPU time). --diff runs TraceDiff from run A to run B over the
steps each recorded. HTA reads times as whole microseconds (it rounds ns-resolution events, "Rounding down
ns resolution events": a start up, an end down), so a figure may differ by up to 2 us per
event it adds up.
"""

import logging
import sys
import tempfile
import warnings

from gt import Checks, Window, demangled, union

warnings.simplefilter("ignore")
from hta.trace_analysis import TraceAnalysis  # noqa: E402

US = 1000


def peak_rate(ops, rounded):
    """The highest sum of GB/s of concurrent operations; rounded: on HTA's whole microseconds."""
    def span(o):
        if not rounded:
            return o["start"], o["end"]
        return -(-o["start"] // US) * US, o["end"] // US * US

    edges = []
    for o in ops:
        b, e = span(o)
        if e > b:
            rate = o["bytes"] / (o["end"] - o["start"])
            edges += [(b, rate), (e, -rate)]
    rate = peak = 0
    for _, d in sorted(edges):
        rate += d
        peak = max(peak, rate)
    return peak


def check_rank(c, a, w):
    r = w.rank
    ops = w.ops

    # kernel breakdown: per kernel name, total time; NCCL's kernels are communication
    # every kernel by name (by default HTA keeps the 10 longest, with 80% of the time)
    _, metrics = a.get_gpu_kernel_breakdown(visualize=False, duration_ratio=1.0, num_kernels=10**6)
    for kind, kernels in (("COMPUTATION", w.compute_kernels), ("COMMUNICATION", w.comm_kernels)):
        mine = metrics[(metrics["rank"] == r) & (metrics["kernel_type"] == kind)]
        totals = w.kernel_totals(kernels)
        c.equal(f"rank {r} {kind.lower()} kernel names", sorted(map(demangled, mine["name"])),
                sorted(totals))
        for _, row in mine.iterrows():
            n, ns = totals.get(demangled(row["name"]), (0, 0))
            c.close(f"rank {r} {row['name']} total us", row["sum (us)"], ns / US, n)

    # temporal breakdown: the GPU's time split into compute, other GPU work and idle
    tb = a.get_temporal_breakdown(visualize=False)
    row = tb[tb["rank"] == r].iloc[0]
    span = max(o["end"] for o in ops) - min(o["start"] for o in ops)
    busy = union((o["start"], o["end"]) for o in ops)
    compute = union((k["start"], k["end"]) for k in w.compute_kernels)
    c.close(f"rank {r} span us", row["kernel_time(us)"], span / US, 2)
    c.close(f"rank {r} compute us", row["compute_time(us)"], compute / US, len(w.kernels))
    c.close(f"rank {r} non-compute us", row["non_compute_time(us)"], (busy - compute) / US,
            2 * len(ops))
    c.close(f"rank {r} idle us", row["idle_time(us)"], (span - busy) / US, 2 * len(ops))

    # idle time per stream: the gaps between a stream's operations
    idle = a.get_idle_time_breakdown(ranks=[r], visualize=False)[0]
    for stream, sops in w.streams().items():
        gaps = sum(max(0, b["start"] - a_["end"]) for a_, b in zip(sops, sops[1:]))
        got = idle[idle["stream"] == stream]["idle_time"].sum()
        c.close(f"rank {r} stream {stream} idle us", got, gaps / US, 2 * len(sops))

    # launch statistics: each launch's GPU time and its delay from the call's end, for the
    # runtime's calls (HTA knows no driver launch: NCCL's are not in them)
    launched = [o for o in ops if w.call_of[o["corr"]]["domain"] == "runtime"]
    stats = a.get_cuda_kernel_launch_stats(ranks=[r], visualize=False)[r]
    c.equal(f"rank {r} launches", sorted(stats["correlation"]),
            sorted(o["corr"] for o in launched))
    by_corr = {o["corr"]: o for o in ops}
    worst_dur = worst_delay = 0
    for _, row in stats.iterrows():
        op = by_corr[row["correlation"]]
        call = w.call_of[row["correlation"]]
        worst_dur = max(worst_dur, abs(row["gpu_duration"] - (op["end"] - op["start"]) / US))
        # an operation that starts before its call returns has no delay
        delay = max(0, op["start"] - call["end"]) / US
        worst_delay = max(worst_delay, abs(row["launch_delay"] - delay))
    c.close(f"rank {r} largest gpu_duration error us", worst_dur, 0, 2)
    c.close(f"rank {r} largest launch_delay error us", worst_delay, 0, 2)

    # queue length: operations launched on a stream and not finished, at its worst
    q = a.get_queue_length_summary(ranks=[r])
    for stream, sops in w.streams().items():
        events = sorted([(w.call_of[o["corr"]]["end"], 1) for o in sops] +
                        [(o["end"], -1) for o in sops])
        depth = worst = 0
        for _, d in events:
            depth += d
            worst = max(worst, depth)
        got = q.loc[(r, stream), ("queue_length", "max")]
        c.close(f"rank {r} stream {stream} max queue length", got, worst, 1)

    # communication/computation overlap: the share of communication kernel time during which
    # compute kernels ran too
    if w.comm_kernels:
        ov = a.get_comm_comp_overlap(visualize=False)
        comm = [(k["start"], k["end"]) for k in w.comm_kernels]
        both = union(comm) + union((k["start"], k["end"]) for k in w.compute_kernels) - \
            union(comm + [(k["start"], k["end"]) for k in w.compute_kernels])
        c.close(f"rank {r} comm/comp overlap %",
                ov[ov["rank"] == r]["comp_comm_overlap_pctg"].iloc[0],
                round(100 * both / union(comm), 2), 200 * len(w.kernels) * US / union(comm))

    # memory bandwidth: each kind's highest GB/s, concurrent operations adding up
    bw = a.get_memory_bw_summary(ranks=[r])
    for name in sorted({n for (rank, n) in bw.index if rank == r} if bw is not None else ()):
        kind = name.split()[-1] if name.startswith("Memcpy") else None
        sel = [o for o in ops if (o["kind"] == "memcpy" and o.get("copy_kind") == kind) or
               (kind is None and o["kind"] == "memset")]
        c.equal(f"rank {r} {name} in the ground truth", bool(sel), True)
        got = bw.loc[(r, name), ("memory_bw_gbps", "max")]
        # copies that overlap by less than HTA's rounding may or may not add up there
        peaks = [peak_rate(sel, rounded) for rounded in (False, True)]
        near = min(peaks, key=lambda p: abs(p - got))
        c.close(f"rank {r} {name} max GB/s", got, round(near, 4), 0.02 * near)

    # frequent kernel sequences within each step
    with tempfile.TemporaryDirectory() as out:
        seq = a.get_frequent_cuda_kernel_sequences(operator_name="ProfilerStep", output_dir=out,
                                                   rank=r, min_pattern_len=2)
    print(f"info rank {r}: frequent kernel sequences under ProfilerStep: {len(seq)} rows")


class Said(logging.Handler):
    """What HTA logs, kept."""

    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def check_critical_path(c, a, w):
    """HTA's critical path over the window's steps, which it builds from cuda_sync events: no
    word of their absence, and each stream sync the ground truth has in the window waits (a
    GPU -> CPU sync edge) on its stream's work, and no other call does. HTA leaves out calls
    (and the work of calls) that its rounding to whole microseconds leaves without duration,
    and the work of calls made before the window."""
    from hta.analyzers.critical_path_analysis import CPEdgeType

    said = Said()
    logging.getLogger().addHandler(said)
    try:
        cp, ok = a.critical_path_analysis(rank=w.rank, annotation="ProfilerStep",
                                          instance_id=(0, len(w.steps) - 1))
    finally:
        logging.getLogger().removeHandler(said)
    c.equal(f"rank {w.rank} critical path found", ok, True)
    c.equal(f"rank {w.rank} critical path without a word on missing syncs",
            [m for m in said.lines if "Synchronization" in m], [])
    df = a.t.get_trace(w.rank)
    waited = set()
    for _, _, d in cp.edges(data=True):
        e = d["object"]
        src, dst = cp.node_list[e.begin], cp.node_list[e.end]
        if e.type == CPEdgeType.SYNC_DEPENDENCY and df.loc[src.ev_idx, "stream"] >= 0 and \
                df.loc[dst.ev_idx, "stream"] < 0:
            waited.add(int(df.loc[dst.ev_idx, "correlation"]))
    calls = {g["corr"]: g for g in w.calls}

    def lasts(corr):
        g = calls[corr]
        return g["end"] // US > -(-g["start"] // US)

    syncs = {s["corr"] for s in w.syncs if s["kind"] == "stream" and lasts(s["corr"]) and
             any(o["stream"] == s["stream"] and o["end"] <= s["end"] and lasts(o["corr"])
                 for o in w.ops)}
    c.equal(f"rank {w.rank} calls that wait on the GPU", sorted(waited), sorted(syncs))


def check_one_clock(c, a, windows):
    """HTA lines ranks up by their raw ts: each rank's first GPU operation is as far from rank
    0's as the ground truth says (HTA rounds each start up to the us)."""
    first = {}
    for w in windows:
        df = a.t.get_trace(w.rank)
        first[w.rank] = (df[df["stream"] >= 0]["ts"].min(), min(o["start"] for o in w.ops))
    r0 = min(first)
    for r in sorted(first):
        c.close(f"rank {r}'s first GPU operation after rank {r0}'s, us",
                first[r][0] - first[r0][0], (first[r][1] - first[r0][1]) / US, 2)


def check_diff(argv):
    from hta.trace_diff import DeviceType, TraceDiff

    (dir_a, trace_a, gt_a, dir_b, trace_b, gt_b) = argv
    wa, wb = Window(trace_a, gt_a), Window(trace_b, gt_b)
    c = Checks("HTA TraceDiff")
    d = TraceDiff.compare_traces(dir_a, dir_b, control_iteration=wa.steps,
                                 test_iteration=wb.steps, device_type=DeviceType.GPU)
    ta, tb = wa.kernel_totals(wa.iteration_kernels()), wb.kernel_totals(wb.iteration_kernels())
    names = {demangled(n): n for n in d.index}
    for name in sorted(set(ta) | set(tb)):
        (na, nsa), (nb, nsb) = ta.get(name, (0, 0)), tb.get(name, (0, 0))
        row = d.loc[names[name]]
        c.equal(f"{name} counts A, B", (row["Control_counts"], row["Test_counts"]), (na, nb))
        c.close(f"{name} duration change us", row["diff_duration"], (nsb - nsa) / US, na + nb)
    c.done((wa, wb))


def main():
    if sys.argv[1] == "--diff":
        return check_diff(sys.argv[2:])
    critical = sys.argv[1] == "--critical-path"
    trace_dir, pairs = sys.argv[1 + critical], sys.argv[2 + critical:]
    windows = [Window(pairs[i], pairs[i + 1]) for i in range(0, len(pairs), 2)]
    c = Checks("HTA")
    a = TraceAnalysis(trace_dir=trace_dir, include_last_profiler_step=True)
    c.equal("ranks", sorted(a.t.get_ranks()), sorted(w.rank for w in windows))
    for w in windows:
        (check_critical_path if critical else check_rank)(c, a, w)
    if not critical:
        check_one_clock(c, a, windows)
    c.done(windows)


if __name__ == "__main__":
    main()
