"""Stand-in torch.optim.optimizer: the global step post hooks, called as PyTorch calls them
(hook(optimizer, args, kwargs) after every step), and an optimizer whose step does CUDA work."""
from torch import _C

_global_post_hooks = []


def register_optimizer_step_post_hook(hook):
    _global_post_hooks.append(hook)


class Optimizer:
    def __init__(self, index):
        self.index = index  # which optimizer of the loop, from 0
        self.steps = 0

    def step(self, closure=None):
        # The update of iteration k by optimizer j: a memset of (k + 1) * 128 + j bytes.
        if _C.lib.tool_update(self.steps, self.index) != 0:
            raise RuntimeError("tool_update failed")
        self.steps += 1
        for hook in list(_global_post_hooks):
            hook(self, (closure,), {})


class SGD(Optimizer):
    pass
