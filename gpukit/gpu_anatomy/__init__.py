"""What a GPU is made of: the experiments that show SMs, warps, latency hiding, coalescing and divergence.

The public API is listed in ``__all__``; importing this package imports numba only when one of
its names is first used.
"""

from gpukit import lazy_api

#: public name -> the module of this package that defines it (imported on first use)
__all__, __getattr__ = lazy_api(__name__, {
    "host_facts": "host",
    "fill_random": "kernels", "read_sum": "kernels", "read_sum_dependent": "kernels",
    "read_sum_ilp4": "kernels", "strided_copy": "kernels", "paths_kernel": "kernels",
    "chase": "kernels", "paths_reference": "kernels", "random_cycle": "kernels", "walk": "kernels",
    "occupancy": "kernels", "littles_law": "meta", "PATHS": "meta", "READ_VARIANTS": "meta", "DIVERGENCE_MODES": "meta",
})
