"""Cases 6 and 7: the GPU work of chosen steps in two traces of the same training loop (one
from libgprof, one from torch.profiler), compared step by step. Work belongs to the step in
which it was launched. Kernel names are compared exactly as written, with no normalisation:
both profilers demangle CUPTI's names with the C++ runtime's __cxa_demangle.
"""
import collections
import json
import statistics

import gtrace


class Profile:
    """Per step: kernel names counted, copies and sets counted by (cat, name, bytes); kernel
    durations (µs) by name over all the steps; GPU events without a launch event."""

    def __init__(self, t, active, fallback=False):
        grouped, self.unlinked = gtrace.by_step(t, fallback=fallback)
        self.missing_steps = sorted(set(active) - set(gtrace.steps(t)))
        self.kernels, self.copies = {}, {}
        self.durs = collections.defaultdict(list)
        for s in active:
            events = grouped.get(s, [])
            self.kernels[s] = collections.Counter(e["name"] for e in events
                                                  if e["cat"] == "kernel")
            self.copies[s] = gtrace.counts(e for e in events if e["cat"] != "kernel")
            for e in events:
                if e["cat"] == "kernel":
                    self.durs[e["name"]].append(e["dur"])

    def total_kernels(self):
        return sum(sum(c.values()) for c in self.kernels.values())


def diff(ours, ref, labels=("ours", "reference"), limit=4):
    """'key: ours N, reference M' for the first keys whose counts differ."""
    keys = sorted(set(ours) | set(ref), key=str)
    out = ["%s: %s %d, %s %d" % (k, labels[0], ours[k], labels[1], ref[k]) for k in keys
           if ours[k] != ref[k]]
    more = " (and %d more)" % (len(out) - limit) if len(out) > limit else ""
    return "; ".join(out[:limit]) + more


def median_ratios(ours, ref):
    """[(relative difference, name, our median, reference median)], worst first."""
    out = []
    for name in sorted(set(ours.durs) & set(ref.durs)):
        a, b = statistics.median(ours.durs[name]), statistics.median(ref.durs[name])
        rel = abs(a - b) / b if b > 0 else (0.0 if a == b else float("inf"))
        out.append((rel, name, a, b))
    return sorted(out, reverse=True)


def compare(ours, ref, tolerance=None):
    """Problems (empty when the two agree) and the median ratios. tolerance: the largest
    relative difference of per-kernel median durations, or None to leave durations out."""
    problems = []
    for name, p in (("ours", ours), ("reference", ref)):
        if p.missing_steps:
            problems.append("%s has no ProfilerStep#%s" % (name, p.missing_steps))
    for s in sorted(ours.kernels):
        if ours.kernels[s] != ref.kernels.get(s):
            problems.append("step %d kernels differ: %s"
                            % (s, diff(ours.kernels[s], ref.kernels.get(s, collections.Counter()))))
        if ours.copies[s] != ref.copies.get(s):
            problems.append("step %d copies differ: %s"
                            % (s, diff(ours.copies[s], ref.copies.get(s, collections.Counter()))))
    ratios = median_ratios(ours, ref) if tolerance is not None else []
    bad = [r for r in ratios if r[0] > tolerance]
    if bad:
        shown = "; ".join("%s: %.3f vs %.3f us (%.1f%%)" % (n[:80], a, b, 100 * rel)
                          for rel, n, a, b in bad[:3])
        problems.append("%d of %d kernels' median durations differ by more than %g%%: %s"
                        % (len(bad), len(ratios), 100 * tolerance, shown))
    return problems, ratios


def dump(path, ours, ref, problems, ratios):
    """Both profiles, the problems and the median ratios, as JSON for a closer look."""
    side = lambda p: {"kernels": {s: dict(c) for s, c in p.kernels.items()},  # noqa: E731
                      "copies": {s: {str(k): n for k, n in c.items()}
                                 for s, c in p.copies.items()},
                      "unlinked": len(p.unlinked), "missing_steps": p.missing_steps}
    with open(path, "w") as fh:
        json.dump({"problems": problems, "ours": side(ours), "reference": side(ref),
                   "median_ratios": ratios}, fh, indent=1)
