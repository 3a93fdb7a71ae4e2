"""gprof-run --torch-steps: marks libgprof's steps in an unmodified PyTorch program.

gprof-run puts this folder first on PYTHONPATH, so Python runs this file at start-up. It imports
nothing of torch: it waits for the program to import torch.optim.optimizer, then registers a
global optimizer step post hook that calls torch.cuda.nvtx.mark(<step marker>) after every
step of the first optimizer that steps (one mark per iteration with several optimizers). The
marker is GPROF_STEP_MARKER, "step" by default, as libgprof reads it. Last, it runs the
sitecustomize this one hides on sys.path, if there is one.
"""

import importlib.machinery
import importlib.util
import os
import sys
import weakref

_HERE = os.path.dirname(os.path.abspath(__file__))
_MODULE = "torch.optim.optimizer"


def _warn(text):
    sys.stderr.write("gprof: --torch-steps: %s\n" % text)


class _StepMarker:
    """The global post hook: hook(optimizer, args, kwargs) after each optimizer step."""

    def __init__(self):
        self.marker = os.environ.get("GPROF_STEP_MARKER") or "step"
        self.owner = None  # weak reference to the optimizer whose steps are marked
        self.mark = None
        self.broken = False

    def __call__(self, optimizer, args, kwargs):
        # The first optimizer to step owns the steps; once it is gone, the next one does.
        if self.owner is None or self.owner() is None:
            self.owner = weakref.ref(optimizer)
        if self.owner() is not optimizer or self.broken:
            return
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
    path = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
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
