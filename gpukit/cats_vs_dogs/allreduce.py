"""Data parallelism in a few lines: every gradient in one flat buffer, one all-reduce per step.

What ``torch.nn.parallel.DistributedDataParallel`` does, minus its overlap of the exchange with
the backward pass, and minus its cost at start-up: the chapter measured its first construction
in each process (it imports torch's compiler stack) and its per-step bookkeeping, and compared
both with this class in the step breakdown (:mod:`.ddp_steps`).

Each parameter's ``.grad`` is a view into one flat buffer with the parameter's own strides
(``channels_last`` weights keep their layout), so the backward pass accumulates straight into
it. :meth:`AveragedGradients.step` sums the buffer over the processes with a single
``all_reduce``, divides by their number, and calls the wrapped optimiser.
"""

from __future__ import annotations

import torch


# --8<-- [start:averaged]
class AveragedGradients:
    """Wraps an optimiser so that its step uses gradients averaged over the processes.

    ``zero_grad`` zeroes the flat buffer (the views stay in place); ``step``
    all-reduces it and steps. ``exchange=False`` skips the all-reduce: the same step
    without the exchange, which the step breakdown times. Every process must start
    from the same weights (:func:`same_start` makes it so).
    """

    def __init__(self, opt, params, world: int, *, exchange: bool = True):
        params = [p for p in params if p.requires_grad]
        if not params:
            raise ValueError("no parameters to average the gradients of")
        self.opt, self.world, self.exchange = opt, world, exchange
        self.flat = torch.zeros(sum(p.numel() for p in params),
                                device=params[0].device, dtype=params[0].dtype)
        offset = 0
        for p in params:
            if p.dtype != self.flat.dtype:
                raise ValueError(
                    f"parameters of two dtypes: {self.flat.dtype}, {p.dtype}")
            # a dense parameter covers numel() elements in a row: its strides fit
            p.grad = self.flat.as_strided(p.shape, p.stride(), offset)
            offset += p.numel()

    @property
    def param_groups(self):
        return self.opt.param_groups

    def zero_grad(self, set_to_none: bool = True):
        self.flat.zero_()   # never None: backward must keep accumulating into the views

    @torch.no_grad()
    def step(self):
        if self.exchange and self.world > 1:
            import torch.distributed as dist
            dist.all_reduce(self.flat)   # the sum (gloo has no AVG)
            self.flat.div_(self.world)
        self.opt.step()
# --8<-- [end:averaged]

    def state_dict(self) -> dict:
        return self.opt.state_dict()

    def load_state_dict(self, state: dict):
        self.opt.load_state_dict(state)


@torch.no_grad()
def broadcast_flat(tensors, src: int = 0):
    """Every process takes process ``src``'s values of ``tensors`` (the floating-point ones),
    flattened into one broadcast instead of one per tensor."""
    import torch.distributed as dist
    tensors = [t for t in tensors if t.is_floating_point()]
    if not tensors:
        return
    flat = torch.cat([t.reshape(-1).float() for t in tensors])
    dist.broadcast(flat, src)
    for t, v in zip(tensors, flat.split([t.numel() for t in tensors])):
        t.copy_(v.view_as(t))


def same_start(module: torch.nn.Module, src: int = 0):
    """Every process takes process ``src``'s floating-point parameters and buffers, in one broadcast."""
    import torch.distributed as dist
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        broadcast_flat([*module.parameters(), *module.buffers()], src)
