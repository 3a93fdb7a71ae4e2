"""gprof-run --torch-steps and --torch: PyTorch in libgprof's traces, with no code change.

gprof-run (or libgprof itself, under GPROF_TORCH) puts this folder first on PYTHONPATH, so
Python runs this file at start-up. It imports nothing of torch: it waits for the program to
import torch.optim.optimizer, then registers a global optimizer step post hook that calls
torch.cuda.nvtx.mark(<step marker>) after every step of the first optimizer that steps (one
mark per iteration with several optimizers). The marker is GPROF_STEP_MARKER, "step" by
default, as libgprof reads it. Before each mark it tells libgprof (gprof_torch_marks, through
ctypes) that the mark is the hook's: once the program marks steps itself, only its marks count.

Under GPROF_TORCH=on (gprof-run --torch) the same hook also switches PyTorch's profiler in
NVTX mode on while libgprof records or is about to (it asks libgprof's gprof_torch_wanted
through ctypes at start and before each mark) and off again when not: each operator is then an
NVTX range that libgprof turns into a cpu_op event, with input sizes unless
GPROF_TORCH_SHAPES=0; global module forward hooks push an NVTX range "nn.Module: <class>_<n>"
around each module's forward, which libgprof writes as a python_function event. Outside
windows all of it is off, so the program runs as without it. Last, this file runs the
sitecustomize it hides on sys.path, if there is one.
"""

import atexit
import importlib.machinery
import importlib.util
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
    wants them."""

    def __init__(self):
        self.shapes = os.environ.get("GPROF_TORCH_SHAPES", "1") != "0"
        self.on = False
        self.pending_off = False  # switched off at the next module call
        self.hooks = []
        self.names = None  # module -> "nn.Module: <class>_<n>", numbered as torch.profiler
        self.exit_hooked = False
        self.memory = None  # the allocator's totals per device when its history began
        self.wanted = _libgprof("gprof_torch_wanted")
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
            want = bool(self.wanted())
            if want:
                self.pending_off = False
                if not self.on:
                    self._on()
            elif self.on:
                self._memory_end()
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
        self._memory_begin()
        if not self.exit_hooked:
            # PyTorch complains at exit about a mode left on
            atexit.register(self._off)
            self.exit_hooked = True

    def _pre(self, module, args):
        if self.pending_off:
            self._off()
            return
        name = self.names.get(module)
        if name is None:
            cls = type(module).__name__
            n = self.per_class.get(cls, 0)
            self.per_class[cls] = n + 1
            name = self.names[module] = "nn.Module: %s_%d" % (cls, n)
        self.push(name)

    def _post(self, module, args, output):
        self.pop()

    MEMORY_ENTRIES = 1 << 18  # the allocator's history kept, at most (about 100 bytes each)

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

    def _memory_end(self):
        """Hands libgprof the allocations and frees since _memory_begin, with their totals
        after each, as torch.profiler's profile_memory reports them; stops the history."""
        import torch

        if self.memory is None:
            return
        base, self.memory = self.memory, None
        try:
            traces = torch.cuda.memory._snapshot()["device_traces"]
            torch.cuda.memory._record_memory_history(None)
        except Exception as e:
            _warn("tensor memory is not recorded: %s" % e)
            return
        if any(len(t) >= self.MEMORY_ENTRIES for t in traces):
            _warn("tensor memory: more than %d allocations and frees in the window, the "
                  "allocator kept the last ones: its totals are not known and nothing is "
                  "written" % self.MEMORY_ENTRIES)
            return
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

    def _off(self):
        self.pending_off = False
        self._memory_end()
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
        # before the mark, which libgprof counts when optimizer.step's range ends
        self.operators.update()
        if self.tell_backend:
            self.backend()
        try:
            if self.mark is None:
                from torch.cuda import nvtx  # torch is imported by now

                self.mark = nvtx.mark
            if self.mine:
                self.mine()
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
