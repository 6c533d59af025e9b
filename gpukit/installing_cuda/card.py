"""The three takeaways of the card at the top of the chapter, from the reference machine's
recorded ``gpukit doctor`` report (what it teaches and what to read first are in the front
matter of its page)."""

from __future__ import annotations

import re

from gpukit import pages


def _cuda(text: str, word: str) -> str | None:
    """The version after ``word`` in a check's detail, e.g. "runtime CUDA 13.2"."""
    m = re.search(rf"{word} CUDA (\d+\.\d+)", text)
    return m.group(1) if m else None


@pages.card_renderer("doctor")
def card(data: dict) -> str:
    checks = data["checks"]
    passed = sum(1 for c in checks if c["status"] == "pass")
    smi = data.get("commands", {}).get("nvidia-smi", "")
    driver = re.search(r"Driver Version: (\S+)", smi)
    cuda = re.search(r"CUDA Version: (\S+)", smi)
    takeaways = []
    if driver and cuda:
        takeaways.append(f"`nvidia-smi` reports driver {driver.group(1)} and \"CUDA Version: "
                         f"{cuda.group(1)}\": the newest CUDA that driver runs, not a toolkit "
                         "you installed.")
    cupy = next((c["detail"] for c in checks if c["name"].startswith("CuPy runtime")), "")
    rt, drv = _cuda(cupy, "runtime"), _cuda(cupy, "driver")
    if rt and drv and rt != drv:
        takeaways.append(f"CuPy ran on a CUDA {rt} runtime with a driver for CUDA {drv}: a "
                         "newer minor release than the driver is allowed.")
    takeaways.append(f"`gpukit doctor` checked {len(checks)} layers, up to kernels that ran in "
                     f"numba, CuPy and torch: {passed} of {len(checks)} passed.")
    return pages.takeaways(takeaways, source=f"recorded on {pages.plot_title(data)}")
