"""gprof-run --torch-steps and --torch: PyTorch in libgprof's traces, with no code change.

gprof-run (or libgprof itself, under GPROF_TORCH) puts this folder first on PYTHONPATH, so
Python runs this file at start-up. It imports nothing of torch: it waits for the program to
import torch.optim.optimizer, then registers a global optimizer step post hook that calls
torch.cuda.nvtx.mark(<step marker>) after every step of the first optimizer that steps (one
mark per iteration with several optimizers). The marker is GPROF_STEP_MARKER, "step" by
default, as libgprof reads it. Before each mark it tells libgprof (gprof_torch_marks, through
ctypes) that the mark is the hook's: once the program marks steps itself, only its marks count.
The hook's first mark ends step 0, the first iteration, as torch.profiler counts steps.

Under GPROF_TORCH=on (gprof-run --torch) the same hook also switches PyTorch's profiler in
NVTX mode on while libgprof records or is about to (it asks libgprof's gprof_torch_wanted
through ctypes at start and before each mark) and off again when not: each operator is then an
NVTX range that libgprof turns into a cpu_op event; global module forward hooks push an NVTX
range "nn.Module: <class>_<n>" around each module's forward, which libgprof writes as a
python_function event. In the same steps the caching allocator's history and (unless
GPROF_TORCH_SHAPES is 0 or sizes) PyTorch's execution trace observer record what NVTX does not
carry: tensor memory, operators' input types, strides and values, collectives' arguments. libgprof
holds the window past its last marker (gprof_torch_hold) until the hook hands both over, at the
next module call (out of the step's time) or at exit. Outside windows all of it is off, so the
program runs as without it. Last, this file runs the sitecustomize it hides on sys.path, if
there is one.
"""

import atexit
import importlib.machinery
import importlib.util
import math
import os
import sys
import weakref

_HERE = os.path.dirname(os.path.realpath(__file__))
_MODULE = "torch.optim.optimizer"


def _warn(text):
    who = "--torch" if os.environ.get("GPROF_TORCH") == "on" else "--torch-steps"
    sys.stderr.write("gprof: %s: %s\n" % (who, text))


def _libgprof(name):
    """A function of the libgprof preloaded in this process, through ctypes; None without it."""
    try:
        import ctypes

        return getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None


class _Operators:
    """PyTorch's profiler in NVTX mode, and modules' forwards as NVTX ranges, on while libgprof
    wants them; with the recorders of what NVTX does not carry (tensor memory, operators'
    inputs), whose records are handed to libgprof after the window's last step."""

    def __init__(self):
        shapes = os.environ.get("GPROF_TORCH_SHAPES", "1")
        self.shapes = shapes != "0"  # NVTX's sizes
        self.types = shapes not in ("0", "sizes")  # the rest of record_shapes' inputs
        self.on = False
        self.pending_off = False  # switched off at the next module call
        self.hooks = []
        self.names = None  # module -> "nn.Module: <class>_<n>", numbered as torch.profiler
        self.exit_hooked = False
        self.memory = None  # the allocator's totals per device when its history began
        self.inputs = None  # the execution trace observer's file while it records
        self.kept = None  # (memory, inputs) of a window, until handed over
        self.c10_level = None
        self.wanted = _libgprof("gprof_torch_wanted")
        self.hold, self.release = _libgprof("gprof_torch_hold"), _libgprof("gprof_torch_release")
        self.open_ops = _libgprof("gprof_torch_open_ops")
        self.restart = False  # the recorders wait for a module call outside every operator
        self.broken = os.environ.get("GPROF_TORCH") != "on"
        if not self.broken and not self.wanted:
            self._fail("libgprof is not loaded in this process (LD_PRELOAD)")

    def _fail(self, why):
        self.broken = True
        _warn("operators are not recorded: %s" % why)

    def start(self):
        """The first look, at the program's first module call: not here, inside torch's own
        import, and not before the program has set CUDA up (and forked its workers)."""
        if self.broken:
            return

        def first(*args):
            handle.remove()
            self.update()

        try:
            from torch.nn.modules import module  # imported before torch.optim

            handle = module.register_module_forward_pre_hook(first)
        except Exception as e:  # never stop the program
            self._fail("this torch has no global module hooks (%s)" % e)

    def update(self):
        """On while the step the next marker begins records (libgprof says)."""
        if self.broken:
            return
        try:
            want = self.wanted()
            if self.on and (want & 2 or not want & 1):
                self._stop()  # the window ends with this step
            if want & 1:
                self.pending_off = False
                if not self.on:
                    self._on()
                else:  # the next window begins at once: its recorders at a module call
                    self.restart = True
            elif self.on:
                # Not here, inside optimizer.step's own range: its end would find the mode
                # off and PyTorch would complain. At the next module call instead, which is
                # outside every operator.
                self.pending_off = True
        except Exception as e:  # never stop training
            self._fail("PyTorch's NVTX profiler mode failed (%s)" % e)

    def _on(self):
        import weakref

        import torch.autograd as ag  # torch is imported by now
        from torch._C._profiler import _ExperimentalConfig
        from torch.cuda import nvtx
        from torch.nn.modules import module

        # what torch.autograd.profiler.emit_nvtx(record_shapes=...) enables, without its
        # synchronisation of the GPU
        ag._enable_profiler(ag.ProfilerConfig(
            ag.ProfilerState.NVTX, self.shapes, False, False, False, False,
            _ExperimentalConfig()), set())
        self.on = True
        self.push, self.pop = nvtx.range_push, nvtx.range_pop
        self.names, self.per_class = weakref.WeakKeyDictionary(), {}
        self.hooks = [module.register_module_forward_pre_hook(self._pre),
                      module.register_module_forward_hook(self._post, always_call=True)]
        self._recorders_begin()
        if not self.exit_hooked:
            # PyTorch complains at exit about a mode left on
            atexit.register(self._off)
            self.exit_hooked = True

    def _recorders_begin(self):
        if self.memory is None:
            self._memory_begin()
        if self.inputs is None:
            self._inputs_begin()

    def _pre(self, module, args):
        if self.pending_off:
            self._off()
            return
        if self.kept is not None:  # a window ended, and the next began at once
            self.hand()
        # PyTorch's execution trace observer crashes the program when it starts again while
        # an operator it saw begin is open: at a module call with none open
        if self.restart and not self.open_ops():
            self.restart = False
            self._recorders_begin()
        name = self.names.get(module)
        if name is None:
            cls = type(module).__name__
            n = self.per_class.get(cls, 0)
            self.per_class[cls] = n + 1
            name = self.names[module] = "nn.Module: %s_%d" % (cls, n)
        self.push(name)

    def _post(self, module, args, output):
        self.pop()

    def _stop(self):
        """The window's last step ends: libgprof holds the window, the recorders stop; what
        they kept waits for hand(), at the next module call (out of the step's time, as the
        mode's switching off) or at exit."""
        if self.memory is None and self.inputs is None:
            return
        held = self.hold()
        self.kept = self._memory_take(), self._inputs_take()
        if not held:  # no window to hand them to (libgprof's exit came first)
            self.kept, path = None, self.kept[1]
            if path:
                os.unlink(path)

    def hand(self):
        """Hands libgprof the held window's tensor memory and operators' inputs; releases it."""
        if self.kept is None:
            return
        (memory, inputs), self.kept = self.kept, None
        try:
            self._memory_hand(memory)
            self._inputs_hand(inputs)
        finally:
            self.release()

    MEMORY_ENTRIES = 1 << 18  # the allocator's history kept, at most (about 100 bytes each)
    HELD_OPS = 1 << 18  # a window's operators libgprof keeps for their inputs (export.h)

    def _memory_begin(self):
        """The caching allocator's history of tensor allocations and frees, from now."""
        import torch

        try:
            torch.cuda.memory._record_memory_history(
                "all", context=None, stacks="python", max_entries=self.MEMORY_ENTRIES,
                clear_history=True)
            self.memory = [(torch.cuda.memory_allocated(d), torch.cuda.memory_reserved(d))
                           for d in range(torch.cuda.device_count())]
            self.push_memory = _libgprof("gprof_torch_memory")
            import ctypes

            self.push_memory.argtypes = [ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int64,
                                         ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int]
        except Exception as e:
            self.memory = None
            _warn("tensor memory is not recorded: %s" % e)

    def _memory_take(self):
        """The allocations and frees since _memory_begin, with the totals then; stops the
        history."""
        import torch

        if self.memory is None:
            return None
        base, self.memory = self.memory, None
        try:
            traces = torch.cuda.memory._snapshot()["device_traces"]
            torch.cuda.memory._record_memory_history(None)
        except Exception as e:
            _warn("tensor memory is not recorded: %s" % e)
            return None
        if any(len(t) >= self.MEMORY_ENTRIES for t in traces):
            _warn("tensor memory: more than %d allocations and frees in the window, the "
                  "allocator kept the last ones: its totals are not known and nothing is "
                  "written" % self.MEMORY_ENTRIES)
            return None
        return base, traces

    def _memory_hand(self, kept):
        """Each allocation and free, with the allocator's totals after it, as torch.profiler's
        profile_memory reports them."""
        if kept is None:
            return
        base, traces = kept
        for device, trace in enumerate(traces[:len(base)]):
            allocated, reserved = base[device]
            for i, e in enumerate(trace):
                action, addr = e["action"], e["addr"]
                size = e["size"]
                if action in ("segment_alloc", "segment_map"):
                    reserved += size
                    continue
                if action in ("segment_free", "segment_unmap"):
                    reserved -= size
                    continue
                size = (size + 511) // 512 * 512  # the allocator's blocks: 512-byte units
                if action == "alloc":
                    allocated += size
                elif action == "free_requested":
                    # PyTorch reports a free when it is asked for: with the block returned at
                    # once (free_completed next), or still in use by other streams (later)
                    nxt = trace[i + 1] if i + 1 < len(trace) else {}
                    if nxt.get("action") == "free_completed" and nxt.get("addr") == addr:
                        allocated -= size
                        nxt["reported"] = True
                    size = -size
                elif action == "free_completed" and not e.get("reported"):
                    allocated -= size
                    continue
                else:
                    continue
                self.push_memory(e["time_us"] * 1000, addr, size, max(allocated, 0),
                                 max(reserved, 0), device)

    def _quiet(self, call):
        """call() with PyTorch's C++ warnings off: its execution trace observer logs each
        start and stop ("Enabling Execution Trace Observer"), which the program never asked
        for."""
        import ctypes

        import torch

        if self.c10_level is None:
            try:
                self.c10_level = ctypes.c_int.in_dll(ctypes.CDLL(os.path.join(
                    os.path.dirname(torch.__file__), "lib", "libc10.so")),
                    "FLAGS_caffe2_log_level")
            except (OSError, ValueError):
                self.c10_level = False
        old = self.c10_level.value if self.c10_level else None
        if old is not None:
            self.c10_level.value = max(old, 2)  # errors only
        try:
            return call()
        finally:
            if old is not None:
                self.c10_level.value = old

    def _inputs_begin(self):
        """PyTorch's execution trace observer, for what torch.profiler's record_shapes writes
        and NVTX does not carry: input types, strides and values, collectives' arguments."""
        if not self.types:
            return
        try:
            import tempfile

            from torch._C import _profiler as p

            fd, path = tempfile.mkstemp(prefix="gprof-inputs-", suffix=".json")
            os.close(fd)
            if not p._add_execution_trace_observer(path):
                os.unlink(path)
                raise RuntimeError("PyTorch's execution trace observer did not start")
            self.inputs = path
            self._quiet(p._enable_execution_trace_observer)
        except Exception as e:
            self._inputs_fail(e)

    def _inputs_fail(self, why):
        self.types = False  # not tried again
        _warn("operators' input types, strides and values are not recorded: %s" % why)

    def _inputs_take(self):
        if self.inputs is None:
            return None
        path, self.inputs = self.inputs, None
        try:
            from torch._C import _profiler as p

            self._quiet(p._disable_execution_trace_observer)
            p._remove_execution_trace_observer()
            return path
        except Exception as e:
            self._inputs_fail(e)
            os.unlink(path)
            return None

    def _inputs_hand(self, path):
        if path is None:
            return
        try:
            import collections
            import ctypes
            import json

            # the last ones, as many as libgprof keeps of a window's operators
            pairs = collections.deque(maxlen=self.HELD_OPS)
            for node in _et_nodes(path):
                attrs = {a["name"]: a["value"] for a in node.get("attrs", ())}
                args = _kineto_inputs(node, attrs)
                if attrs.get("rf_id") and args:
                    pairs.append([attrs["rf_id"], args])
            text = json.dumps(list(pairs), separators=(",", ":")).encode()
            give = _libgprof("gprof_torch_inputs")
            give.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
            give(text, len(text))
        except Exception as e:
            self._inputs_fail(e)
        finally:
            os.unlink(path)

    def _off(self):
        self.pending_off = self.restart = False
        self._stop()
        self.hand()
        if not self.on:
            return
        for h in self.hooks:
            h.remove()
        self.hooks = []
        try:
            import torch.autograd as ag

            ag._disable_profiler()
            self.on = False
        except Exception as e:
            self._fail("PyTorch's NVTX profiler mode failed (%s)" % e)


def _et_nodes(path, chunk=1 << 20):
    """The nodes of an execution trace file, one at a time: its "nodes" array is read a chunk
    at a time, so a long window's file is never all in memory."""
    import json

    decode = json.JSONDecoder().raw_decode
    with open(path) as f:
        text, i = "", -1
        while i < 0:
            more = f.read(chunk)
            if not more:
                raise ValueError("no nodes in the execution trace")
            text += more
            i = text.find("[", text.find('"nodes"')) if '"nodes"' in text else -1
        i += 1
        while True:
            while i < len(text) and text[i] in " \t\r\n,":
                i += 1
            try:
                if i < len(text) and text[i] == "]":
                    return
                node, i = decode(text, i)
                yield node
            except ValueError:  # the chunk ends inside a node (or the file, broken, does)
                more = f.read(chunk)
                if not more:
                    raise
                text, i = text[i:] + more, 0


def _scalar(v):
    """A scalar input as torch.profiler's "Concrete Inputs" writes it (c10's IValue printing:
    a whole double as "2.", another with 17 significant digits)."""
    if isinstance(v, (bool, int)):
        return str(v)
    if isinstance(v, float):
        if math.isfinite(v) and abs(v) < 1e10 and v == int(v):
            return "-0." if v == 0 and math.copysign(1, v) < 0 else "%d." % int(v)
        return "%.17g" % v
    return ""


_SCALARS = ("Int", "Double", "Bool")


def _kineto_input(kind, value, dims, strides):
    """One input of an execution trace node as torch.profiler's record_shapes writes it:
    (Input type, Input Dims, Input Strides, Concrete Inputs)."""
    if kind.startswith("Tensor(") and kind != "Tensor(nullptr (uninitialized))":
        return kind[7:-1], dims, strides, ""
    if kind.startswith("GenericList["):
        items = [x for x in kind[12:-1].split(",") if x]
        if any(x.startswith("Tensor(") for x in items):
            return "TensorList", dims, strides, ""
        if all(x in _SCALARS for x in items) and isinstance(value, list):
            return "ScalarList", [], [], "[%s]" % ", ".join(_scalar(x) for x in value)
    elif kind in _SCALARS:
        return "Scalar", [], [], _scalar(value)
    return "", [], [], ""


# A collective's arguments (record_param_comms): the execution trace's name, torch.profiler's
_COMMS = (("collective_name", "Collective name"), ("dtype", "dtype"),
          ("in_msg_nelems", "In msg nelems"), ("out_msg_nelems", "Out msg nelems"),
          ("in_split_size", "In split size"), ("out_split_size", "Out split size"),
          ("global_rank_start", "Global rank start"),
          ("global_rank_stride", "Global rank stride"), ("pg_name", "Process Group Name"),
          ("pg_desc", "Process Group Description"), ("pg_size", "Group size"))


def _group_ranks(attrs):
    """The process group's ranks as torch.profiler writes them, "[0, 1]"."""
    dist = sys.modules.get("torch.distributed")
    try:
        for group, name in dist.distributed_c10d._world.pg_names.items():
            if name == attrs["pg_name"]:
                return str(dist.get_process_group_ranks(group))
    except Exception:
        pass
    return str([attrs["global_rank_start"] + i * attrs["global_rank_stride"]
                for i in range(attrs["pg_size"])])


def _kineto_inputs(node, attrs):
    """An execution trace node's inputs (and a collective's arguments) as torch.profiler's
    record_shapes writes them in its operator's args; {} for an operator without inputs."""
    ins = node.get("inputs", {})
    cols = list(zip(*[_kineto_input(*x) for x in zip(
        ins.get("types", ()), ins.get("values", ()), ins.get("shapes", ()),
        ins.get("strides", ()))]))
    if not cols:
        return {}
    args = {"Input type": cols[0], "Input Dims": cols[1], "Input Strides": cols[2],
            "Concrete Inputs": cols[3]}
    if "collective_name" in attrs:
        args.update((theirs, attrs[ours]) for ours, theirs in _COMMS if ours in attrs)
        try:
            args["Process Group Ranks"] = _group_ranks(attrs)
            args["Rank"] = sys.modules["torch.distributed"].get_rank()
        except Exception:
            pass
    return args


class _StepMarker:
    """The global post hook: hook(optimizer, args, kwargs) after each optimizer step."""

    def __init__(self):
        self.marker = os.environ.get("GPROF_STEP_MARKER") or "step"
        self.owner = None  # weak reference to the optimizer whose steps are marked
        self.mark = None
        self.broken = False
        self.operators = _Operators()
        self.operators.start()
        # tells libgprof the next mark is this hook's: a program that marks steps itself wins
        self.mine = _libgprof("gprof_torch_marks")
        self.tell_backend = _libgprof("gprof_torch_backend")

    def backend(self):
        """The default process group's backend (torch.distributed.get_backend()), told to
        libgprof once it exists, for the trace's distributedInfo as Kineto writes it."""
        dist = sys.modules.get("torch.distributed")  # not imported here if the program did not
        try:
            if dist is None or not dist.is_available() or not dist.is_initialized():
                return
            self.tell_backend(str(dist.get_backend()).encode())
        except Exception:  # a hook must never stop training
            pass
        self.tell_backend = None

    def __call__(self, optimizer, args, kwargs):
        # The first optimizer to step owns the steps; once it is gone, the next one does.
        if self.owner is None or self.owner() is None:
            self.owner = weakref.ref(optimizer)
        if self.owner() is not optimizer or self.broken:
            return
        # first, as the first one's numbering of the steps is libgprof's from here
        if self.mine:
            self.mine()
        # before the mark, which libgprof counts when optimizer.step's range ends
        self.operators.update()
        if self.tell_backend:
            self.backend()
        try:
            if self.mark is None:
                from torch.cuda import nvtx  # torch is imported by now

                self.mark = nvtx.mark
            self.mark(self.marker)
        except Exception as e:  # a hook must never stop training
            self.broken = True
            _warn("torch.cuda.nvtx.mark failed (%s); steps are not marked" % e)


def _register(module):
    register = getattr(module, "register_optimizer_step_post_hook", None)
    if register is None:
        _warn("this torch has no global optimizer step hook (torch 2.0 or later has it); "
              "steps are not marked")
        return
    register(_StepMarker())


class _Loader:
    """The real loader of torch.optim.optimizer, which registers the hook once it has run."""

    def __init__(self, real):
        self.real = real

    def create_module(self, spec):
        return self.real.create_module(spec)

    def exec_module(self, module):
        module.__loader__ = self.real
        if module.__spec__ is not None:
            module.__spec__.loader = self.real
        self.real.exec_module(module)
        _register(module)

    def __getattr__(self, name):
        return getattr(self.real, name)


class _Finder:
    """Waits on sys.meta_path for torch.optim.optimizer; every other import passes by."""

    def find_spec(self, name, path, target=None):
        if name != _MODULE:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find else None
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader)
                return spec
        return None


def _chain():
    """Runs the sitecustomize that Python would have run without this one."""
    path = [p for p in sys.path if os.path.realpath(p or ".") != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


# libgprof, at the exit of a process that marked no step, tells a Python this hook never ran in
# (python -E or -I ignores PYTHONPATH) by this variable, which gprof-run sets to "requested".
os.environ["GPROF_TORCH_STEPS"] = "hooked %d" % os.getpid()
if _MODULE in sys.modules:
    _register(sys.modules[_MODULE])
else:
    sys.meta_path.insert(0, _Finder())
_chain()
