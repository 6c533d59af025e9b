"""Test harness shared by tests/ and the code blocks of docs/.

* No GPU: numba runs kernels on its CUDA simulator (set here, before numba is
  imported), torch runs on the CPU, and tests marked ``gpu`` are skipped with a reason.
* ``GPUKIT_REQUIRE_GPU=1`` (``make test-gpu``): a GPU must be present, and any
  ``gpu`` test that ends up skipped is reported as a failure.
"""

import os

# Under pytest-xdist each worker gets its share of the cores for the thread pools of OpenMP,
# MKL, OpenBLAS, torch and numba (set before any of them is imported, and inherited by the
# examples the tests start). Eight workers of sixteen threads each oversubscribe a 16-core
# machine; on the H200 runner (2026-11-30) the longest training test took 154 s under eight
# such workers, against about 36 s in a serial run (how much of that was the threads and how
# much the shared GPU was not measured; with the limit, the suite's longest test took 50 s).
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _WORKERS > 1:
    _SHARE = str(max(1, (os.cpu_count() or 1) // _WORKERS))
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ.setdefault(_var, _SHARE)

import pytest  # noqa: E402

from gpukit import device  # noqa: E402

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
    # The tests marked slow (a minute or more on two cores) start first, in their order: under
    # pytest-xdist the other workers take the short tests and steal from the end of the queue,
    # so no long test is left to run alone at the end. A module-scoped fixture that slow and
    # short tests share is made twice (once for each group): keep such expensive ones within
    # the slow group.
    items.sort(key=lambda item: "slow" not in item.keywords)
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
