"""Stand-in torch.optim."""
from torch.optim.optimizer import SGD, Optimizer  # noqa: F401
