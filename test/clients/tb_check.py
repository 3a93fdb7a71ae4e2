"""
TensorBoard's PyTorch profiler plugin (torch-tb-profiler) on libgprof's traces, its figures
against the simulated GPU's ground truth:

    tb_check.py DIR TRACE GTLOG [TRACE GTLOG ...]

The plugin's run loader builds the run from DIR as `tensorboard --logdir DIR` does; it must say
nothing at warning level or above. Its times are microseconds as the trace writes them. When
the ranks called NCCL (test/apps/nccl-app), its distributed view is checked too.
"""

import logging
import sys

from gt import Checks, Window, demangled, union

US = 1000


class Complaints(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.seen = []

    def emit(self, record):
        self.seen.append(record.getMessage())


def check_profile(c, p, w):
    who = f"worker {p.worker}"
    c.equal(f"{who} views", [v.display_name for v in p.views],
            ["Overview", "Operator", "Kernel", "Trace"] + (["Memory"] if w.memory else []))

    # memory view: the GPU's peak of the allocations in the window
    if w.memory:
        peaks = {f"{dev.name}{i}": v for (dev, i), v in p.memory_snapshot.get_peak_memory().items()}
        c.equal(f"{who} memory view peak bytes", peaks.get("CUDA0"), max(w.memory))

    # overview: one row per recorded step, the time kernels ran within each (overlaps once)
    # adding up to that within the steps (a kernel running past the last one is cut there)
    rows = p.overview["steps"]["rows"]
    c.equal(f"{who} steps", [int(r[0]) for r in rows], w.steps)
    within = union((max(w.begin, k["start"]), min(w.end, k["end"])) for k in w.compute_kernels
                   if k["end"] > w.begin and k["start"] < w.end)
    c.close(f"{who} kernel us within the steps", round(sum(r[1] for r in rows), 3),
            within / US, 0.001 * len(w.kernels))
    totals = w.kernel_totals()

    # kernel view: the total time of each kernel name
    pie = {demangled(row[0]): row[1] for row in p.kernel_pie["total"]["rows"]}
    c.equal(f"{who} kernel names", sorted(pie), sorted(totals))
    for name, (n, ns) in totals.items():
        c.close(f"{who} {name} us", pie.get(name, -1), ns / US, 0.001 * n)

    # trace view: the plugin serves the file itself
    c.equal(f"{who} trace file", p.trace_file_path.split("/")[-1], w.path.split("/")[-1])


# The operator each NCCL collective is (PyTorch's names), and ncclDataType_t's element sizes.
NCCL_OPS = {"ncclAllReduce": "nccl:all_reduce", "ncclBroadcast": "nccl:broadcast",
            "ncclReduce": "nccl:reduce", "ncclAllGather": "nccl:all_gather",
            "ncclReduceScatter": "nccl:reduce_scatter"}
NCCL_SIZES = [1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1]


def comm_span(ns, key=None):
    """The plugin's reckoning of collectives: the union of their calls and their kernels. The
    trace's span of a call is the hook's, which holds the library's own and lies within the
    room around it (key "room"): the figure lies between the two unions."""
    return union([n[key] if key else (n["start"], n["end"]) for n in ns] +
                 [(k["start"], k["end"]) for n in ns for k in n["kernels"]])


def check_comm_span(c, name, got, ns):
    tol = 0.001 * (len(ns) + sum(len(n["kernels"]) for n in ns))
    c.between(name, round(got, 3), round(comm_span(ns) / US - tol, 3),
              round(comm_span(ns, "room") / US + tol, 3))


def check_distributed(c, run, windows, parsed):
    """The distributed view: each worker's communication against its ground truth."""
    dist = [p for (worker, _), p in run.profiles.items() if worker == "All"]
    c.equal("distributed views", [[v.display_name for v in p.views] for p in dist],
            [["Distributed"]])
    if len(dist) != 1:
        return
    ops_table, wait = dist[0].comm_ops["data"], dist[0].steps_to_wait["data"]
    workers = {w.path.split("/")[-1].split(".")[0]: w for w in windows}
    c.equal("workers with communication", sorted(ops_table), sorted(workers))
    for worker, w in sorted(workers.items()):
        who = f"worker {worker}"
        by_op = {}
        for n in w.collectives:
            by_op.setdefault(NCCL_OPS[n["name"]], []).append(n)
        # communication ops table: calls, bytes (count x element size), and latency: the union
        # of the calls' spans and their kernels' (how the plugin reckons it)
        rows = {row[0]: row for row in ops_table.get(worker, {}).get("rows", [])}
        c.equal(f"{who} communication ops", sorted(rows), sorted(by_op))
        for op, ns in sorted(by_op.items()):
            row = rows.get(op, [op, 0, 0, 0, 0])
            c.equal(f"{who} {op} calls", row[1], len(ns))
            c.equal(f"{who} {op} bytes", row[2],
                    sum(n["count"] * NCCL_SIZES[n["datatype"]] for n in ns))
            check_comm_span(c, f"{who} {op} total latency us", row[4], ns)
        nodes = parsed.get(worker, [])
        for step in w.steps:
            ns = [n for n in w.collectives if n["step"] == step]
            # the view's synchronizing + data transfer time of the step, reckoned as above
            got = wait.get(str(step), {}).get(worker, [0, 0])
            check_comm_span(c, f"{who} step {step} communication us", sum(got), ns)
            # the kernels the plugin tied to the step's collectives (a node's first range is
            # its operator's span, the rest its kernels): exactly the collectives' kernels
            mine = [node for node in nodes if node.step_name == str(step)]
            c.equal(f"{who} step {step} communication nodes",
                    [node.name for node in mine], [NCCL_OPS[n["name"]] for n in ns])
            got = sum(e - b for node in mine for b, e in node.kernel_ranges[1:])
            want = sum(k["end"] - k["start"] for n in ns for k in n["kernels"])
            c.close(f"{who} step {step} communication kernel us", round(got, 3), want / US,
                    0.001 * sum(len(n["kernels"]) for n in ns))


def capture_distributed(parsed):
    """Keeps each worker's communication nodes, which the distributed view is made from."""
    from torch_tb_profiler.profiler import run_generator

    generator = run_generator.DistributedRunGenerator
    init = generator.__init__

    def keep(self, all_profile_data, span):
        for data in all_profile_data:
            parsed[data.worker] = data.comm_node_list
        init(self, all_profile_data, span)

    generator.__init__ = keep


class InProcess:
    """The loader's worker process, run here so that what it logs reaches this process."""

    def __init__(self, target, args):
        self.target, self.args = target, args

    def start(self):
        self.target(*self.args)


def main():
    from torch_tb_profiler.io.cache import Cache
    from torch_tb_profiler.profiler import loader
    from torch_tb_profiler.profiler.loader import RunLoader

    loader.Process = InProcess
    parsed = {}
    capture_distributed(parsed)

    trace_dir, pairs = sys.argv[1], sys.argv[2:]
    windows = [Window(pairs[i], pairs[i + 1]) for i in range(0, len(pairs), 2)]
    complaints = Complaints()
    logging.getLogger().addHandler(complaints)
    logging.getLogger().setLevel(logging.INFO)
    c = Checks("TensorBoard plugin")
    run = RunLoader("gprof", trace_dir, Cache()).load()
    c.equal("warnings and errors while loading", complaints.seen, [])
    by_worker = {w.path.split("/")[-1].split(".")[0]: w for w in windows}
    c.equal("workers", sorted(worker for worker, _ in run.profiles if worker != "All"),
            sorted(by_worker))
    for (worker, _), p in run.profiles.items():
        if worker in by_worker:
            check_profile(c, p, by_worker[worker])
    if any(w.collectives for w in windows):
        check_distributed(c, run, windows, parsed)
    c.done(windows)


if __name__ == "__main__":
    main()
