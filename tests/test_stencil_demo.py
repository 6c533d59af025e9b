"""The 3-point average: the kernel at awkward sizes on the simulator, bad input, the views."""

import numpy as np
import pytest

from gpukit import device, pages, results
from tests.helpers import run_without_gpu


def kernel_errors(sizes: list[int]) -> list[float]:
    """Run in a fresh process on the simulator: the largest error of the kernel per size."""
    from gpukit.stencil_demo import average3, average3_cpu
    errs = []
    for n in sizes:
        x = np.random.default_rng(n).random(n, dtype=np.float32)
        got = average3(x).copy_to_host()
        errs.append(float(np.max(np.abs(got - average3_cpu(x)))) if n else 0.0)
    return errs


def test_kernel_matches_numpy_at_awkward_sizes():
    # one element, the two ends only, a block and a bit, two partly filled blocks
    sizes = [1, 2, 3, 257, 300]
    errs = run_without_gpu("tests.test_stencil_demo:kernel_errors", sizes)
    assert errs == pytest.approx([0.0] * len(sizes), abs=1e-6)


def test_cpu_reference_averages_neighbours_and_copies_the_ends():
    from gpukit.stencil_demo import average3_cpu
    x = np.array([3, 0, 6, 9], dtype=np.float32)
    assert average3_cpu(x).tolist() == [3.0, 3.0, 5.0, 9.0]


@pytest.mark.parametrize("x, error", [
    (np.zeros((2, 2), dtype=np.float32), ValueError),
    (np.zeros(4, dtype=np.float64), TypeError),
])
def test_bad_input_is_refused(x, error):
    from gpukit.stencil_demo import average3_cpu
    with pytest.raises(error):
        average3_cpu(x)


def _write_record(root, parts, monkeypatch):
    monkeypatch.setenv("GPUKIT_REFERENCE", "ref-box")
    results.save("stencil_demo", parts, root=root,
                 machine={**device.machine_record(), "slug": "ref-box"})


def test_views_render_a_small_cpu_run(tmp_path, monkeypatch):
    from gpukit.stencil_demo import measure
    parts = measure.run(1000, 3)
    assert set(parts) == {"cpu"} and parts["cpu"]["rows"][0]["gbs"] > 0
    _write_record(tmp_path, parts, monkeypatch)
    table = pages.render("stencil_demo", "table", root=tmp_path)
    assert "NumPy 3-point average" in table and "GB/s" in table


def test_card_reads_the_gpu_and_cpu_rows(tmp_path, monkeypatch):
    row = {"name": "x", "median_s": 1e-3, "gbs": 400.0}
    parts = {"gpu": {"n": 1000, "rows": [dict(row, gbs=800.0)]},
             "cpu": {"n": 1000, "rows": [row]}}
    _write_record(tmp_path, parts, monkeypatch)
    card = pages.render("stencil_demo", "card", root=tmp_path)
    assert "800 GB/s" in card and "400 GB/s" in card and "2.0x" in card
