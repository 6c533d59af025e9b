"""Launching a numba CUDA kernel whose argument types are known in advance.

``kernel[grid, block](*args)`` asks numba's dispatcher, on every call, for the type of each
argument, and on a process's first call of a kernel it types them in Python with
``functools.singledispatch`` before it looks for the compiled code (in memory, then in the
on-disk cache, then by compiling). A caller that already knows the types (a library whose
public function has checked its arguments) can name them once: :func:`resolved` finds the
compiled kernel for exactly those types, once per process, and :func:`launch` launches it with
no typing at all. On numba's CUDA simulator both fall back to the ordinary launch.

Nothing here imports numba at module level.
"""

from __future__ import annotations

from . import device

_RESOLVED: dict = {}


def array_type(dtype, ndim: int = 1):
    """numba's type of a C-contiguous device array of ``dtype`` with ``ndim`` dimensions (what
    numba's ``typeof`` answers for such an array)."""
    from numba.cuda import types
    from numba.cuda.np.numpy_support import from_dtype
    return types.Array(from_dtype(dtype), ndim, "C")


def resolved(kernel, argtypes: tuple):
    """The compiled overload of ``kernel`` (a ``cuda.jit`` dispatcher) for ``argtypes`` (numba
    types), found once per process: from memory, numba's on-disk cache, or by compiling.

    The dispatcher keeps it as an ordinary overload, so ``kernel[grid, block](*args)`` with
    arguments of these types finds it too.
    """
    key = (kernel, argtypes)
    found = _RESOLVED.get(key)
    if found is None:
        found = _RESOLVED[key] = kernel.compile(argtypes)
    return found


def launch(kernel, argtypes: tuple, griddim, blockdim, args: tuple) -> None:
    """Launch ``kernel`` on ``args``, whose numba types the caller has checked are ``argtypes``,
    on the default stream; the same as ``kernel[griddim, blockdim](*args)`` without typing the
    arguments. Passing arguments of other types is the caller's error, not detected here."""
    config = kernel[griddim, blockdim]        # numba keeps each configuration it has made
    if device.simulator_enabled():
        config(*args)
        return
    resolved(kernel, argtypes).launch(args, config.griddim, config.blockdim, config.stream,
                                      config.sharedmem)


def is_resolved(kernel, argtypes: tuple) -> bool:
    """True when :func:`resolved` has found ``kernel``'s overload for ``argtypes`` in this
    process (what a test checks to know the typed path is not the one taken)."""
    return (kernel, argtypes) in _RESOLVED
