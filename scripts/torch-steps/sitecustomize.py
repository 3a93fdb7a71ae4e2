"""gprof-run --torch-steps and --torch: PyTorch in libgprof's traces, with no code change.

gprof-run (or libgprof itself, under GPROF_TORCH) puts this folder first on PYTHONPATH, so
Python runs this file at start-up. It imports nothing of torch: it waits for the program to
import torch.optim.optimizer, then registers a global optimizer step post hook that calls
torch.cuda.nvtx.mark(<step marker>) after every step of the first optimizer that steps (one
mark per iteration with several optimizers). The marker is GPROF_STEP_MARKER, "step" by
default, as libgprof reads it. Before each mark it tells libgprof (gprof_torch_marks, through
ctypes) that the mark is the hook's: once the program marks steps itself, only its marks count.
The hook's first mark ends step 0, the first iteration, as torch.profiler counts steps.

Under GPROF_TORCH=on (gprof-run --torch) the same hook also runs PyTorch's own profiler
(torch.profiler's recorder: CPU activities, record_shapes unless GPROF_TORCH_SHAPES is 0,
profile_memory) while libgprof records or is about to (it asks libgprof's gprof_torch_wanted
through ctypes at start and before each mark), and global module forward hooks push an NVTX range
"nn.Module: <class>_<n>" around each module's forward, which libgprof writes as a
python_function event. PyTorch's profiler keeps the operators and tensor memory in memory, as
under torch.profiler; its CUPTI calls are libgprof's (gprof_torch_kineto, preload/kineto.c), so
libgprof keeps recording the GPU and ties each operator's GPU work to it. libgprof holds the
window past its last marker (gprof_torch_hold) until the hook hands over what PyTorch's profiler
kept, at the next module call outside every operator (out of the step's time) or at exit.
Outside windows all of it is off, so the program runs as without it. Last, this file runs the
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
    """PyTorch's own profiler (torch.profiler's recorder, CPU activities only) and modules'
    forwards as NVTX ranges, on while libgprof wants them; what the profiler kept of the
    window (operators' names and inputs, tensor memory) is handed to libgprof after the
    window's last step."""

    def __init__(self):
        self.shapes = os.environ.get("GPROF_TORCH_SHAPES", "1") != "0"
        self.on = False  # the module hooks (and the profiler, unless stopping says otherwise)
        self.recording = False  # PyTorch's profiler records
        self.stopping = False  # it stops at the next module call outside every operator
        self.restart = False  # and starts again there (the next window begins at once)
        self.held = False  # libgprof holds the window until its operators come
        self.hooks = []
        self.names = None  # module -> "nn.Module: <class>_<n>", numbered as torch.profiler
        self.exit_hooked = False
        self.wanted = _libgprof("gprof_torch_wanted")
        self.hold, self.release = _libgprof("gprof_torch_hold"), _libgprof("gprof_torch_release")
        self.claim, self.open_ops = (_libgprof("gprof_torch_kineto"),
                                     _libgprof("gprof_torch_kineto_open"))
        self.broken = os.environ.get("GPROF_TORCH") != "on"
        if not self.broken and not self.wanted:
            self._fail("libgprof is not loaded in this process (LD_PRELOAD)")

    PROGRAMS = ("the program runs PyTorch's profiler itself (torch.profiler): use --torch-steps "
                "beside it")

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
        """On while the step the next marker begins records (libgprof says). Called inside
        optimizer.step's own scope: PyTorch's profiler stops at the next module call, and
        starts again there for a window that begins at once when no operator it saw begin is
        open."""
        if self.broken:
            return
        try:
            want = self.wanted()
            if self.recording and not self.stopping and (want & 2 or not want & 1):
                self.stopping = True  # the window ends with this step
                self.held = bool(self.hold())
            if want & 1:
                if not self.on:
                    self._on()
                elif self.stopping or not self.recording:
                    self.restart = True  # the next window begins at once
            elif self.on:
                self.stopping, self.restart = True, False
        except Exception as e:  # never stop training
            self._fail("PyTorch's profiler failed (%s)" % e)

    def _on(self):
        import weakref

        from torch.cuda import nvtx
        from torch.nn.modules import module

        if not self._record():
            return
        self.on = True
        self.push, self.pop = nvtx.range_push, nvtx.range_pop
        self.names, self.per_class = weakref.WeakKeyDictionary(), {}
        self.hooks = [module.register_module_forward_pre_hook(self._pre),
                      module.register_module_forward_hook(self._post, always_call=True)]
        if not self.exit_hooked:
            atexit.register(self._off)
            self.exit_hooked = True

    def _record(self):
        """torch.profiler's recorder with record_shapes and profile_memory, CPU only, its
        CUPTI calls libgprof's; False when it cannot start (said once)."""
        import torch.autograd as ag
        from torch._C._profiler import _ExperimentalConfig
        from torch.profiler import ProfilerActivity

        if ag._profiler_enabled() or not self.claim():
            self._fail(self.PROGRAMS)
            return False
        config = ag.ProfilerConfig(ag.ProfilerState.KINETO, self.shapes, True, False, False,
                                   False, _ExperimentalConfig())
        ag._prepare_profiler(config, {ProfilerActivity.CPU})
        ag._enable_profiler(config, {ProfilerActivity.CPU})
        self.recording = True
        return True

    def _pre(self, module, args):
        if self.stopping:
            self._stop()
            if not self.on:
                return
        # Not while an operator it saw begin is open: that one's end would reach the new
        # profiler with the old one's records.
        if self.restart and not self.open_ops():
            self.restart = False
            try:
                self._record()
            except Exception as e:
                self._fail("PyTorch's profiler failed (%s)" % e)
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
        """PyTorch's profiler stops; what it kept of a held window goes to libgprof, which
        releases it; unless a window began at once (restart), the module hooks go."""
        import torch.autograd as ag

        self.stopping = False
        try:
            if self.recording:
                self.recording = False
                if not ag._profiler_enabled():  # the program's own stopped ours
                    raise RuntimeError(self.PROGRAMS)
                result = ag._disable_profiler()
                if self.held:
                    self._hand(result)
        except Exception as e:
            self._fail(str(e) if str(e) == self.PROGRAMS else "PyTorch's profiler failed (%s)" % e)
        finally:
            if self.held:
                self.held = False
                self.release()
        if self.restart and not self.broken:
            return
        for h in self.hooks:
            h.remove()
        self.hooks, self.on = [], False

    def _hand(self, result):
        """The window's operators (with their links to forward operators) and tensor memory,
        from PyTorch's profiler's own trace, for libgprof (export/opargs.c)."""
        import ctypes
        import json
        import tempfile

        fd, path = tempfile.mkstemp(prefix="gprof-torch-", suffix=".json")
        os.close(fd)
        try:
            result.save(path)
            with open(path) as f:
                trace = json.load(f)
        finally:
            os.unlink(path)
        base = int(trace.get("baseTimeNanoseconds", 0))
        ops, at, flows, memory = [], {}, {}, _libgprof("gprof_torch_memory")
        memory.argtypes = [ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int64, ctypes.c_uint64,
                           ctypes.c_uint64, ctypes.c_int]
        for e in trace.get("traceEvents", ()):
            cat, args = e.get("cat"), e.get("args", {})
            ts = base + round(e.get("ts", 0) * 1000)
            if cat in ("cpu_op", "user_annotation") and e.get("ph") == "X":
                kid = args.pop("External id", 0)
                args.pop("Ev Idx", None)
                op = [kid, int(cat == "user_annotation"), e.get("name", ""), args, ts,
                      round(e.get("dur", 0) * 1000), int(e.get("tid", 0)), 0]
                at[(op[6], ts)] = op
                if kid:
                    ops.append(op)
            elif cat == "fwdbwd":
                flows.setdefault(e.get("id"), {})[e.get("ph")] = (int(e.get("tid", 0)), ts)
            elif cat == "cpu_instant_event" and e.get("name") == "[memory]":
                kind = args.get("Device Type")
                if kind in (0, 1):
                    memory(ts, args.get("Addr", 0), args.get("Bytes", 0),
                           max(args.get("Total Allocated", 0), 0),
                           max(args.get("Total Reserved", 0), 0),
                           args.get("Device Id", 0) if kind == 1 else -1)
        for flow in flows.values():
            fwd, bwd = at.get(flow.get("s")), at.get(flow.get("f"))
            if fwd and bwd:
                bwd[7] = fwd[0]
        text = json.dumps(ops, separators=(",", ":")).encode()
        give = _libgprof("gprof_torch_ops")
        give.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        give(text, len(text))

    def _off(self):
        """At exit: PyTorch complains about a profiler left on."""
        if self.on:
            self.restart = False
            self._stop()


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
