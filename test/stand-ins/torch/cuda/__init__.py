"""Stand-in torch.cuda: only nvtx."""
from torch.cuda import nvtx  # noqa: F401
