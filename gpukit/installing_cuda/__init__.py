"""The installing-CUDA chapter: its card. The checks themselves are ``gpukit doctor``
(:mod:`gpukit.doctor`), whose recorded report the chapter shows."""
