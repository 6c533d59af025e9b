"""The card at the top of the chapter: what it teaches and three measured takeaways."""

from __future__ import annotations

from gpukit import pages
from gpukit.pages import fmt_num

from .measure import NAME
from .views import _at, _best_cpu_row, _ratio

LEARN = [
    "where a GPU starts to beat the CPU, for a memory-bound and a compute-bound computation, "
    "from a thousand to a billion elements",
    "why a CPU is not sequential: cores and SIMD lanes, and how NumPy and numba use them",
    "how to predict the GPU's advantage from a few hardware numbers: units, lanes, clock, bandwidth",
    "why an often-quoted \"100x\" speed-up usually means the CPU side was not tried properly",
]


def _from(data: dict, work: str, backend: str) -> str:
    size = data[work]["crossover"].get(backend)
    return f"from {size:,} elements" if size else f"at none of the sizes tried (up to {data[work]['n']:,})"


@pages.card_renderer(NAME)
def card(data: dict) -> str:
    sax, pol, hw = data["saxpy"], data["poly"], data["hardware"]
    cpu, gpu = hw["cpu"], hw["gpu"]
    cores = cpu["cores_used"]
    over_cores, size = _ratio(pol, "numba-parallel", "gpu-kernel")
    over_python, py_size = _ratio(pol, "python", "gpu-kernel")
    top_s = max(r["size"] for r in sax["rows"])
    top_p = max(r["size"] for r in pol["rows"])
    kernel_p = _at(pol, "gpu-kernel", top_p)["gflops"]
    bandwidth = _at(sax, "gpu-kernel", top_s)["gbs"] / _best_cpu_row(sax, top_s)["gbs"]
    takeaways = [
        f"Memory-bound SAXPY: the GPU kernel alone beats all {cores} CPU cores "
        f"{_from(data, 'saxpy', 'gpu-kernel')}; counting the copies to and from the GPU (even from "
        f"pinned memory), it wins {_from(data, 'saxpy', 'gpu-pinned')}.",
        f"Compute-bound polynomial: the GPU kernel wins {_from(data, 'poly', 'gpu-kernel')} and is "
        f"{fmt_num(over_cores, 0)}x faster than all {cores} cores at {size:,}; set against a pure "
        f"Python loop (at {py_size:,}) it looks {fmt_num(over_python, 0)}x faster.",
        f"Peak FP32 predicts a {fmt_num(gpu['peak_tflops'] * 1e3 / cpu['peak_gflops_1fma'], 0)}x lead "
        f"({gpu['sms']} SMs x {gpu['fp32_lanes_per_sm']} lanes against {cores} cores x {cpu['fp32_lanes']} "
        f"lanes); the CUDA C polynomial kernel reaches {fmt_num(kernel_p / _best_cpu_row(pol, top_p)['gflops'], 0)}x, "
        f"at {100 * kernel_p / (gpu['peak_tflops'] * 1e3):.1f} % of its peak. Bandwidth-bound SAXPY gets "
        f"{fmt_num(bandwidth, 0)}x.",
    ]
    return pages.card(LEARN, ["Python and NumPy"], takeaways,
                      source=f"measured on {pages.plot_title(data)}")
