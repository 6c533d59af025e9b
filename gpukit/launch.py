"""Launching a numba CUDA kernel whose argument types are known in advance.

``kernel[grid, block](*args)`` asks numba's dispatcher, on every call, for the type of each
argument, and on a process's first call of a kernel it types them in Python with
``functools.singledispatch`` before it looks for the compiled code (in memory, then in the
on-disk cache, then by compiling). A caller that has checked its arguments itself (a library's
public function) can name their types once: a :class:`Launcher` finds the compiled kernel for
exactly those types on its first launch and launches it without typing anything afterwards.
On numba's CUDA simulator it falls back to the ordinary launch.

Nothing here imports numba at module level.
"""

from __future__ import annotations

from . import device


def array_type(dtype, ndim: int = 1):
    """numba's type of a C-contiguous device array of ``dtype`` with ``ndim`` dimensions (what
    numba's ``typeof`` answers for such an array)."""
    from numba.cuda import types
    from numba.cuda.np.numpy_support import from_dtype
    return types.Array(from_dtype(dtype), ndim, "C")


class Launcher:
    """A ``cuda.jit`` kernel and the numba types of its arguments, named once.

    ``launcher(griddim, blockdim, args)`` does what ``kernel[griddim, blockdim](*args)`` does
    on the default stream, without typing ``args``: they must have the types named here (the
    caller checks them; other types are not detected). The compiled kernel is found on the first
    launch (in memory, numba's on-disk cache, or by compiling) and kept as the dispatcher's
    ordinary overload, so ``kernel[...]`` calls with such arguments find it too.
    """

    def __init__(self, kernel, argtypes: tuple):
        self.kernel = kernel
        self.argtypes = argtypes
        self.compiled = None                      # numba's compiled kernel, once found
        self._simulated = device.simulator_enabled()

    def __call__(self, griddim, blockdim, args: tuple) -> None:
        config = self.kernel[griddim, blockdim]  # numba keeps each configuration it made
        if self._simulated:
            config(*args)
            return
        compiled = self.compiled
        if compiled is None:
            compiled = self.compiled = self.kernel.compile(self.argtypes)
        compiled.launch(args, config.griddim, config.blockdim, config.stream, config.sharedmem)
