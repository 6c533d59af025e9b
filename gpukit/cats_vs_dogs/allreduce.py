"""Data parallelism in a few lines: every gradient in one flat buffer, averaged over processes.

:class:`AveragedGradients` does what ``torch.nn.parallel.DistributedDataParallel`` does, minus
its overlap of the exchange with the backward pass and minus its cost at start-up: one
all-reduce of the whole buffer after backward. :class:`OverlappedGradients` adds the overlap:
the buffer is cut into buckets, and each bucket's all-reduce starts, asynchronously, as soon as
backward has written every gradient in it. The step breakdown (:mod:`.ddp_steps`) times both
against DDP in the same run.

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


# --8<-- [start:overlapped]
class OverlappedGradients(AveragedGradients):
    """:class:`AveragedGradients` whose all-reduce overlaps the backward pass.

    The flat buffer is cut into buckets of about ``bucket_mb`` MB, from its end (the
    last layers, whose gradients backward writes first). A hook on each parameter
    counts the gradients written into its bucket; a full bucket's all-reduce starts
    at once, asynchronously. ``step`` waits for every bucket, divides and steps.
    """

    def __init__(self, opt, params, world: int, *, bucket_mb: float = 25.0,
                 exchange: bool = True):
        params = [p for p in params if p.requires_grad]
        super().__init__(opt, params, world, exchange=exchange)
        cap = max(1, int(bucket_mb * 2**20) // self.flat.element_size())
        self.bucket_of, sizes, self.counts = {}, [], []
        for p in reversed(params):
            if not sizes or (sizes[-1] and sizes[-1] + p.numel() > cap):
                sizes.append(0)
                self.counts.append(0)
            self.bucket_of[p] = len(sizes) - 1
            sizes[-1] += p.numel()
            self.counts[-1] += 1
        ends = [self.flat.numel() - sum(sizes[:k]) for k in range(len(sizes))]
        self.buckets = [self.flat[e - n:e] for e, n in zip(ends, sizes)]
        self.hooks = [p.register_post_accumulate_grad_hook(self._written)
                      for p in params] if exchange and world > 1 else []
        self._reset()

    def _reset(self):
        self.left, self.works = list(self.counts), [None] * len(self.buckets)

    def _written(self, p):
        b = self.bucket_of[p]
        if self.works[b] is not None:
            raise RuntimeError("a second backward before step: one backward per step")
        self.left[b] -= 1
        if self.left[b] == 0:
            import torch.distributed as dist
            self.works[b] = dist.all_reduce(self.buckets[b], async_op=True)

    def zero_grad(self, set_to_none: bool = True):
        self._wait(rest=False)
        self._reset()
        self.flat.zero_()

    def _wait(self, rest: bool = True):
        import torch.distributed as dist
        for b, work in enumerate(self.works):
            if work is None and rest and self.hooks:
                # a bucket with a parameter that got no gradient: exchanged last, in order
                work = self.works[b] = dist.all_reduce(self.buckets[b], async_op=True)
            if work is not None:
                work.wait()

    @torch.no_grad()
    def step(self):
        if self.hooks:
            self._wait()
            self.flat.div_(self.world)
        self._reset()
        self.opt.step()

    def remove(self):
        """Takes the hooks off the parameters (another exchange may follow)."""
        for h in self.hooks:
            h.remove()
        self.hooks = []
# --8<-- [end:overlapped]


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
