"""Puzzle 19, occupancy: a grid-stride saxpy and a launch that fills
every multiprocessor.
"""
from numba import cuda


@cuda.jit
def saxpy(out, x, y, alpha):
    """Any grid covers any n: each thread steps by the grid's size."""
    for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        out[i] = alpha * x[i] + y[i]


def launch(n, sms, max_threads_per_sm, max_threads_per_block):
    """(blocks, threads): enough resident threads to fill every SM,
    no block without work."""
    threads = min(256, max_threads_per_block)
    blocks = min((n + threads - 1) // threads, sms * (max_threads_per_sm // threads))
    return blocks, threads
