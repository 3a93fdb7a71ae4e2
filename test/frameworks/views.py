"""The PyTorch views of the client tier's readers on one trace, for run.py (clients venv).

Usage: views.py DIR: DIR holds one trace (or one per rank). Prints one JSON object: TensorBoard's
plugin's Operator view ("operators": name -> calls), Module view ("modules": "parent/child"
paths -> occurrences), Memory view ("memory_peaks": device -> peak bytes), the view names
("views") of one trace, the Distributed view's communication operations of several ("comm_ops":
worker -> operator -> [calls, bytes]), and of HTA's analyses the aten operators'
("aten_kernels": the rows of get_aten_op_kernels_and_delay) and the communication/computation
overlap ("comm_comp_ranks": its rows, one a rank), or the error each raised.
"""

import json
import logging
import sys


def tensorboard(trace_dir):
    from torch_tb_profiler.io.cache import Cache
    from torch_tb_profiler.profiler import loader
    from torch_tb_profiler.profiler.loader import RunLoader

    class InProcess:
        def __init__(self, target, args):
            self.target, self.args = target, args

        def start(self):
            self.target(*self.args)

    loader.Process = InProcess
    run = RunLoader("views", trace_dir, Cache()).load()
    out = {"views": [], "operators": {}, "modules": {}, "comm_ops": {}}
    for (worker, _), p in run.profiles.items():
        if worker == "All":
            out["comm_ops"] = {w: {r[0]: r[1:3] for r in t.get("rows", [])}
                               for w, t in p.comm_ops["data"].items()}
            continue
        if out["views"]:
            continue
        rows = p.operation_table_by_name["data"]
        modules = {}

        def walk(stats, path):
            for m in stats or []:
                modules[path + m.name] = m.occurences
                walk(m.children, path + m.name + "/")

        walk(p.module_stats, "")
        peaks = {}
        if p.memory_snapshot:
            peaks = {"%s%s" % (dev.name, i): v
                     for (dev, i), v in p.memory_snapshot.get_peak_memory().items()}
        out.update({"views": [v.display_name for v in p.views], "modules": modules,
                    "memory_peaks": peaks, "operators": {r["name"]: r["calls"] for r in rows}})
    return out


def hta(trace_dir, out):
    from hta.trace_analysis import TraceAnalysis

    a = TraceAnalysis(trace_dir=trace_dir)
    for key, rows in (("aten_kernels", lambda: sum(
            len(df) for df in a.get_aten_op_kernels_and_delay().values())),
                      ("comm_comp_ranks", lambda: len(a.get_comm_comp_overlap(
                          visualize=False)))):
        try:
            out[key] = rows()
        except Exception as e:  # what a user would see instead of the table
            out[key] = "%s: %s" % (type(e).__name__, e)


def main():
    logging.disable(logging.WARNING)
    out = tensorboard(sys.argv[1])
    hta(sys.argv[1], out)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
