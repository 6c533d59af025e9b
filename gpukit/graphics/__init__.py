"""Why GPUs exist: a path tracer of the final scene of *Ray Tracing in One Weekend*, on all CPU
cores and on the GPU, with the same random numbers. The two images are not identical (a few
paths take another turn on one backend); :func:`images_agree` holds the one criterion by which
they count as the same picture.

The public API is listed in ``__all__``; importing this package imports numba only when one of
its names is first used.
"""

from gpukit import lazy_api

#: public name -> the module of this package that defines it (imported on first use)
__all__, __getattr__ = lazy_api(__name__, {
    "render": "renderer", "tonemap": "renderer", "images_agree": "renderer", "write_png": "renderer", "BACKENDS": "renderer",
    "final_scene": "scene", "empty_scene": "scene", "camera": "scene", "Scene": "scene"})
