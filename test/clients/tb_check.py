"""
TensorBoard's PyTorch profiler plugin (torch-tb-profiler) on libgprof's traces, its figures
against the simulated GPU's ground truth:

    tb_check.py DIR TRACE GTLOG [TRACE GTLOG ...]

The plugin's run loader builds the run from DIR as `tensorboard --logdir DIR` does; it must say
nothing at warning level or above. Its times are microseconds as the trace writes them.
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
    within = union((max(w.begin, k["start"]), min(w.end, k["end"])) for k in w.kernels
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

    trace_dir, pairs = sys.argv[1], sys.argv[2:]
    windows = [Window(pairs[i], pairs[i + 1]) for i in range(0, len(pairs), 2)]
    complaints = Complaints()
    logging.getLogger().addHandler(complaints)
    logging.getLogger().setLevel(logging.INFO)
    c = Checks("TensorBoard plugin")
    run = RunLoader("gprof", trace_dir, Cache()).load()
    c.equal("warnings and errors while loading", complaints.seen, [])
    by_worker = {w.path.split("/")[-1].split(".")[0]: w for w in windows}
    c.equal("workers", sorted(worker for worker, _ in run.profiles), sorted(by_worker))
    for (worker, _), p in run.profiles.items():
        if worker in by_worker:
            check_profile(c, p, by_worker[worker])
    c.done()


if __name__ == "__main__":
    main()
