"""Trace files for the GPU suite, with the standard library only: load a libgprof or
torch.profiler trace, check a libgprof one against shared/TRACE_FORMAT.md (the rules of
test/util/trace.c), and group GPU work by step through its launch's correlation id.
"""
import collections
import json
import os
import re
import zlib

TOP_KEYS = ["schemaVersion", "deviceProperties", "distributedInfo", "cupti_version",
            "cuda_runtime_version", "cuda_driver_version", "gprof", "displayTimeUnit",
            "baseTimeNanoseconds", "traceEvents", "traceName"]

# The args each X category must carry; only GPU ones may carry "stream".
CAT_ARGS = {
    "kernel": (True, ["queued", "device", "context", "stream", "correlation",
                      "registers per thread", "shared memory", "blocks per SM", "warps per SM",
                      "grid", "block", "est. achieved occupancy %"]),
    "gpu_memcpy": (True, ["device", "context", "stream", "correlation", "bytes",
                          "memory bandwidth (GB/s)"]),
    "gpu_memset": (True, ["device", "context", "stream", "correlation", "bytes",
                          "memory bandwidth (GB/s)"]),
    "cuda_runtime": (False, ["correlation", "cbid"]),
    "cuda_driver": (False, ["correlation", "cbid"]),
    "user_annotation": (False, []),
    "gpu_user_annotation": (False, []),
    "gpu_earlier": (False, ["device", "launched"]),
    "cpu_op": (False, ["External id"]),
    "python_function": (False, ["Python id", "Python parent id", "Python module id"]),
    "cuda_sync": (False, ["cuda_sync_kind", "stream", "device", "context", "correlation"]),
    "overhead": (False, []),
}
META_NAMES = {"process_name", "process_labels", "process_sort_index", "thread_name",
              "thread_sort_index"}
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
LAUNCH_CATS = ("cuda_runtime", "cuda_driver")
STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
TIME_RE = re.compile(r'(?<!\\)"(ts|dur)":\s*([^,}\s]*)')


class TraceError(Exception):
    pass


class Trace:
    """One trace: path, raw text, parsed root and its event list."""

    def __init__(self, path, raw, root):
        self.path, self.raw, self.root = path, raw, root
        self.events = root.get("traceEvents", []) if isinstance(root, dict) else []


def _no_dups(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise TraceError("duplicate key in an object: %r" % keys)
    return dict(pairs)


def gunzip_one(data):
    """One complete gzip member and nothing after it (Perfetto rejects more)."""
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = d.decompress(data) + d.flush()
    if not d.eof:
        raise TraceError("the gzip member is cut short")
    if d.unused_data:
        raise TraceError("%d bytes after the gzip member" % len(d.unused_data))
    return out


def load(path, strict=True):
    """strict: a libgprof trace (UTF-8, no duplicate keys); else any Kineto trace."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        if path.endswith(".gz"):
            data = gunzip_one(data) if strict else zlib.decompress(data, 16 + zlib.MAX_WBITS)
        raw = data.decode("utf-8", "strict" if strict else "replace")
        root = json.loads(raw, object_pairs_hook=_no_dups if strict else None)
    except (ValueError, zlib.error) as e:
        raise TraceError("%s: %s" % (os.path.basename(path), e)) from None
    if not isinstance(root, dict):
        raise TraceError("%s: not a JSON object" % os.path.basename(path))
    return Trace(path, raw, root)


def _raw_problems(t):
    for m in re.finditer(r"\\(.)", t.raw, re.S):
        if m.group(1) not in '"\\nt':
            return "escape \\%s (only \\\" \\\\ \\n \\t are written)" % m.group(1)
    if "\x7f" in t.raw:
        return "raw DEL byte"
    for m in TIME_RE.finditer(t.raw):
        if not re.fullmatch(r"-?\d+\.\d{3}", m.group(2)):
            return "%s %s: not µs with exactly three decimals" % m.groups()
    if not re.search(r'"rank": \d', t.raw):
        return 'rank not written as "rank": N'
    if list(t.root.keys()) != TOP_KEYS:
        return "top-level keys %s, expected %s" % (list(t.root.keys()), TOP_KEYS)
    return None


def _header_problems(t):
    r = t.root
    di, g = r.get("distributedInfo") or {}, r.get("gprof") or {}
    if (r.get("schemaVersion") != 1 or not isinstance(r.get("deviceProperties"), list)
            or r.get("displayTimeUnit") != "ms"
            or not isinstance(r.get("baseTimeNanoseconds"), int)
            or r["baseTimeNanoseconds"] <= 0):
        return "bad schemaVersion, deviceProperties, displayTimeUnit or baseTimeNanoseconds"
    rank, world = di.get("rank"), di.get("world_size")
    if not isinstance(rank, int) or not isinstance(world, int) or not 0 <= rank < world:
        return "distributedInfo rank %r of %r" % (rank, world)
    if (not isinstance(g.get("version"), str) or not isinstance(g.get("window"), int)
            or not isinstance(g.get("records"), dict) or not isinstance(g.get("dropped"), dict)
            or not isinstance(g.get("warnings"), list)):
        return "gprof metadata incomplete"
    if r.get("traceName") != os.path.basename(t.path):
        return "traceName %r is not the file's name" % r.get("traceName")
    if not isinstance(r.get("traceEvents"), list):
        return "traceEvents is not an array"
    return None


def ns(us):
    """µs (as written, three decimals) to whole ns, so ends and starts compare exactly."""
    return int(round(us * 1000))


def _is_id(v):
    return isinstance(v, (int, str)) and not isinstance(v, bool)


def _x_problem(i, ev, spans, streams):
    cat, ts, dur, args = ev.get("cat"), ev.get("ts"), ev.get("dur"), ev.get("args") or {}
    if (not isinstance(cat, str) or not isinstance(ts, (int, float))
            or not isinstance(dur, (int, float)) or not _is_id(ev.get("pid"))
            or not _is_id(ev.get("tid"))):
        return "event %d: X without cat, ts, dur, pid or tid" % i
    if dur < 0:
        return "event %d: negative dur" % i
    if cat not in CAT_ARGS:
        return 'event %d: unknown cat "%s"' % (i, cat)
    gpu, need = CAT_ARGS[cat]
    if not gpu and "stream" in args and cat != "cuda_sync":  # a wait names its stream
        return 'event %d (%s): "stream" on a host event' % (i, cat)
    missing = [a for a in need if a not in args]
    if missing:
        return 'event %d (%s): no args "%s"' % (i, cat, missing[0])
    if ev["name"].startswith("ProfilerStep") and not STEP_RE.match(ev["name"]):
        return 'event %d: step name "%s"' % (i, ev["name"])
    span = (ns(ts), ns(ts) + ns(dur), i)
    spans[(ev["pid"], ev["tid"])].append(span)
    if gpu:
        streams[(ev["pid"], args["stream"])].append(span)
    return None


def _other_problem(i, ev, ph, flows):
    if ph in "sf":
        if (not isinstance(ev.get("id"), int) or not isinstance(ev.get("ts"), (int, float))
                or not _is_id(ev.get("pid")) or not _is_id(ev.get("tid"))
                or ev.get("cat") != "ac2g"):
            return "event %d: flow without id, ts, pid, tid or cat" % i
        if ph == "f" and ev.get("bp") != "e":
            return 'event %d: flow end without "bp": "e"' % i
        flows[ev["id"]].append((ph, ns(ev["ts"]), i))
        return None
    if ph != "M" and (not isinstance(ev.get("ts"), (int, float))
                      or not isinstance(ev.get("pid"), int)):
        return "event %d (%s): no ts or pid" % (i, ph)
    if ph == "i" and (not _is_id(ev.get("tid")) or not isinstance(ev.get("cat"), str)):
        return "event %d: instant without cat or tid" % i
    if (ph == "C" and ev.get("cat") == "gpu_memory"
            and not isinstance((ev.get("args") or {}).get("allocated"), int)):
        return "event %d: gpu_memory without allocated" % i
    if ph == "M" and (ev["name"] not in META_NAMES or not isinstance(ev.get("args"), dict)):
        return 'event %d: bad metadata "%s"' % (i, ev["name"])
    return None


def _nesting_problem(spans):
    for track, items in spans.items():
        stack = []
        for start, end, i in sorted(items, key=lambda s: (s[0], -s[1])):
            while stack and stack[-1][1] <= start:
                stack.pop()
            if stack and end > stack[-1][1]:
                return "events %d and %d overlap on track %s" % (stack[-1][2], i, track)
            stack.append((start, end, i))
    return None


def _stream_problem(streams):
    for stream, items in streams.items():
        items = sorted(items)
        for a, b in zip(items, items[1:]):
            if b[0] < a[1]:
                return "GPU events %d and %d overlap on %s" % (a[2], b[2], stream)
    return None


def _flow_problem(flows):
    for fid, items in flows.items():
        kinds = sorted(items)  # "f" sorts before "s"
        if [k[0] for k in kinds] != ["f", "s"]:
            return "flow id %d is not one s and one f" % fid
        if kinds[0][1] < kinds[1][1]:
            return "flow %d ends before it starts" % fid
    return None


def format_problem(t):
    """The first way t breaks TRACE_FORMAT.md, or None."""
    problem = _raw_problems(t) or _header_problems(t)
    if problem:
        return problem
    spans, streams = collections.defaultdict(list), collections.defaultdict(list)
    flows = collections.defaultdict(list)
    for i, ev in enumerate(t.events):
        if not isinstance(ev, dict) or not isinstance(ev.get("name"), str):
            return "event %d: not an object with a name" % i
        ph = ev.get("ph")
        if not isinstance(ph, str) or len(ph) != 1 or ph not in "XisfCM":
            return 'event %d: ph "%s"' % (i, ph)
        problem = (_x_problem(i, ev, spans, streams) if ph == "X"
                   else _other_problem(i, ev, ph, flows))
        if problem:
            return problem
    return _nesting_problem(spans) or _stream_problem(streams) or _flow_problem(flows)


# ---- queries used by the cases (libgprof and torch.profiler traces alike) ----

def xs(t, cats):
    return [e for e in t.events if e.get("ph") == "X" and e.get("cat") in cats]


def span(e):
    """An X event's [start, end) in ns."""
    return (ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]))


def steps(t):
    """{N: (start ns, end ns)} of the host-side ProfilerStep#N spans."""
    out = {}
    for e in xs(t, ("user_annotation", "cpu_op", "cpu_instant_event")):
        m = STEP_RE.match(e.get("name", ""))
        if m:
            out[int(m.group(1))] = span(e)
    return out


def ranges(t, name):
    """[(start ns, end ns)] of the host-side NVTX ranges named name."""
    return [span(e) for e in xs(t, ("user_annotation",)) if e.get("name") == name]


def within(ts, spans):
    """The key of the span holding ts (µs), or None; spans: {key: (start ns, end ns)}."""
    t_ns = ns(ts)
    for key, (start, end) in spans.items():
        if start <= t_ns < end:
            return key
    return None


def launches(t):
    """{correlation: [launch events]} of the runtime and driver API calls."""
    out = collections.defaultdict(list)
    for e in xs(t, LAUNCH_CATS):
        out[(e.get("args") or {}).get("correlation")].append(e)
    return out


def corr(e):
    return (e.get("args") or {}).get("correlation")


def by_step(t, cats=GPU_CATS, fallback=False):
    """GPU events grouped by the step of their launch: ({step: [events]}, [unlinked events]).
    An event whose launch lies outside every step goes under None. An event without a launch
    event is left out, or with fallback placed by its own start (for a loop that waits for
    its GPU work within each step)."""
    spans, calls = steps(t), launches(t)
    grouped, unlinked = collections.defaultdict(list), []
    for e in xs(t, cats):
        found = calls.get(corr(e))
        if found:
            grouped[within(found[0]["ts"], spans)].append(e)
            continue
        unlinked.append(e)
        if fallback:
            grouped[within(e["ts"], spans)].append(e)
    return grouped, unlinked


def counts(events):
    """Counter of (cat, name) for kernels and (cat, name, bytes) for copies and sets."""
    return collections.Counter(
        (e["cat"], e["name"]) if e["cat"] == "kernel"
        else (e["cat"], e["name"], (e.get("args") or {}).get("bytes")) for e in events)


def link_problem(t):
    """Every GPU event has exactly one launch with its correlation and an s/f flow pair."""
    calls = launches(t)
    flows = collections.Counter((e.get("ph"), e.get("id")) for e in t.events
                                if e.get("cat") == "ac2g")
    for e in xs(t, GPU_CATS):
        c = corr(e)
        if len(calls.get(c, [])) != 1:
            return "%s %r: %d launch events with correlation %r" % (
                e["cat"], e["name"], len(calls.get(c, [])), c)
        if flows[("s", c)] != 1 or flows[("f", c)] != 1:
            return "%s %r: no ac2g flow pair with id %r" % (e["cat"], e["name"], c)
    return None


def trace_files(folder):
    """The finished trace files in folder, and any .partial left behind."""
    names = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
    done = [os.path.join(folder, n) for n in names if n.endswith(".pt.trace.json.gz")
            or n.endswith(".pt.trace.json")]
    partial = [n for n in names if n.endswith(".partial")]
    return done, partial
