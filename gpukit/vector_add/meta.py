"""The chapter's names as plain data (no heavy imports): shared by the benchmark and the views."""

#: the row of ``vector_add(x, y)`` on numba arrays without ``out=``: the result is allocated
#: in device memory on every call
NO_OUT = "numba.cuda grid-stride, no out="
