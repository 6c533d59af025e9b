"""The chapter's names and tables as plain data (no heavy imports): what the kernels,
the benchmark, the views and the card agree on."""

SLUG = "tensor_cores"
TITLE = "Tensor cores: where an H200's FLOPs are"

#: the bf16 ladder, in the order the page climbs it: key -> (label, how it is written)
RUNGS = {
    "01-wmma": ("WMMA fragments", "CUDA C, nvcuda::wmma"),
    "02-mma-sync": ("mma.sync + ldmatrix + cp.async", "CUDA C, inline PTX"),
    "03-wgmma-tma": ("wgmma + TMA, warp-specialised, persistent", "CUDA C, sm_90a"),
    "04-triton": ("Triton tl.dot, autotuned", "Triton"),
    "05-gluon": ("Gluon: wgmma + TMA pipeline", "Triton Gluon"),
}
#: the libraries the rungs are measured against
LIBRARY = "cublas"
LIBRARY_LABEL = "cuBLAS (torch)"

#: fp8 e4m3 paths (per-tensor scales, bf16 out) and the library they are measured against
FP8_KERNELS = {
    "fp8-wgmma-tma": ("wgmma + TMA on e4m3", "CUDA C, sm_90a"),
    "fp8-triton": ("Triton tl.dot on e4m3", "Triton"),
}
FP8_LIBRARY = "cublaslt-fp8"
FP8_LIBRARY_LABEL = "cuBLASLt fp8 (torch._scaled_mm)"

#: precisions of the roofline part: key -> (label, bits of the significand incl. the
#: implicit one, largest finite value)
PRECISIONS = {
    "fp32": ("fp32 (CUDA cores)", 24, 3.4028234663852886e38),
    "tf32": ("tf32", 11, 3.4028234663852886e38),
    "bf16": ("bf16", 8, 3.3895313892515355e38),
    "fp16": ("fp16", 11, 65504.0),
    "e4m3": ("fp8 e4m3", 4, 448.0),
    "e5m2": ("fp8 e5m2", 3, 57344.0),
}

#: awkward shapes (M, N, K) every kernel is checked at; the last ones have K % 8 != 0
AWKWARD = ((1, 1, 1), (17, 33, 65), (1000, 777, 513), (128, 256, 72), (300, 200, 1000))
#: the headline size and the size sweep (n = M = N = K)
HEADLINE = 8192
SWEEP = (256, 512, 1024, 2048, 4096, 8192)
#: at or below this size a timed call is replayed from a CUDA graph: launch-bound sizes
#: (in the first recorded run, calls at 2048 timed one by one were flagged host-bound)
GRAPH_MAX = 2048
#: inner dimensions of the accuracy study
ACCURACY_K = (16, 64, 256, 1024, 4096, 16384)

#: targets of the chapter (fractions of the library in the same run)
TARGETS = {
    "04-triton": 0.95,
    "03-wgmma-tma": 0.90,
    "05-gluon": 0.90,
    "02-mma-sync": 0.60,
}
FP8_TARGET = 0.85
