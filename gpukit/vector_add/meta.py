"""The chapter's names as plain data (no heavy imports): shared by the benchmark and the views."""

#: the row of ``vector_add(x, y)`` on numba arrays without ``out=`` (the default numba kernel):
#: the result comes from gpukit's pool of device buffers (records before the pool: a fresh
#: allocation on every call)
NO_OUT = "numba.cuda default, no out="
#: the same call with ``out=cuda.device_array(...)`` made on every call: numba's allocation
NO_POOL = "numba.cuda default, out=cuda.device_array(...) per call"
#: the same row in records made before the 16-byte kernel became the default
NO_OUT_BEFORE = "numba.cuda grid-stride, no out="
#: the 16-byte vector kernel through the public API (its default for float32 and float64)
VEC16 = "numba.cuda 16-byte vectors (default)"
#: the same kernel launched as kernel[blocks, threads](...), its arguments typed on every call
VEC16_TYPED = "numba.cuda 16-byte vectors, kernel[...] launch"
#: the public API's numba rows with ``out=``: the target is judged on the default's
NUMBA_TARGET_GOAL = 92.0
