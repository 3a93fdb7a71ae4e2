"""A stand-in for the few parts of PyTorch that gprof-run --torch-steps touches (tests only).

torch._C loads the test library named by TOOLS_TEST_LIB (test/apps/tool-steps.c), whose
tool_mark calls nvtxMarkA as torch.cuda.nvtx.mark does, and whose other functions do CUDA work
on the simulated GPU.
"""
from torch import _C, cuda, optim  # noqa: F401 (torch imports these too)
