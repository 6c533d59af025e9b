"""Test harness shared by tests/ and the code blocks of docs/.

* No GPU: numba runs kernels on its CUDA simulator (set here, before numba is
  imported), torch runs on the CPU, and tests marked ``gpu`` are skipped with a reason.
* ``GPUKIT_REQUIRE_GPU=1`` (``make test-gpu``): a GPU must be present, and any
  ``gpu`` test that ends up skipped is reported as a failure.
"""

import os

import pytest

from gpukit import device

REQUIRE_GPU = os.environ.get("GPUKIT_REQUIRE_GPU") == "1"
if not REQUIRE_GPU:
    device.use_simulator_if_no_gpu()
HAS_GPU = device.has_gpu() and not device.simulator_enabled()


def pytest_configure(config):
    if REQUIRE_GPU and not HAS_GPU:
        raise pytest.UsageError("GPUKIT_REQUIRE_GPU=1 but no usable NVIDIA GPU was found "
                                "(or NUMBA_ENABLE_CUDASIM is set); run `gpukit doctor`")


def pytest_report_header(config):
    if HAS_GPU:
        return f"gpukit: GPU run on {device.driver_gpus()[0]['name']}; gpu tests required: {REQUIRE_GPU}"
    return "gpukit: no GPU; numba kernels run on the CUDA simulator, gpu tests are skipped"


def pytest_collection_modifyitems(config, items):
    if HAS_GPU:
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU (none here); run `make test-gpu` on one")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if REQUIRE_GPU and report.skipped and "gpu" in item.keywords:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"gpu test skipped on a GPU run (GPUKIT_REQUIRE_GPU=1): {reason}"
    return report
