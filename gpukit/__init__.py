"""gpukit: the library behind the GPU Survival Kit.

Importing ``gpukit`` is cheap: numba, CuPy and torch are imported only by the
functions that need them, so the package works (and says plainly what is
missing) on a machine without a GPU.
"""

__version__ = "0.1.0"

__all__ = ["__version__", "lazy_api"]


def lazy_api(package: str, api: dict[str, str]):
    """A chapter package's public names, each imported from its module on first use.

    ``api`` maps a public name to the module of ``package`` that defines it. Returns
    ``(__all__, __getattr__)`` for the package's ``__init__``: importing the package then
    imports numba, CuPy or torch only when a name that needs them is first used.
    """
    import importlib

    def __getattr__(name):
        if name in api:
            return getattr(importlib.import_module(f"{package}.{api[name]}"), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return sorted(api), __getattr__
