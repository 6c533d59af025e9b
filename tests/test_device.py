"""gpukit.device: detection that does not import numba, slugs, CPU facts."""

import os
import subprocess
import sys

from gpukit import device


def test_slugify():
    assert device.slugify("NVIDIA H200") == "nvidia-h200"
    assert device.slugify("NVIDIA GeForce RTX 4090") == "nvidia-geforce-rtx-4090"
    assert device.slugify("!!!") == "unknown"


def test_cpu_info():
    info = device.cpu_info()
    assert info["usable_cpus"] >= 1
    assert isinstance(info["simd"], list)


def test_hidden_gpus_count_as_none(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert device.has_gpu() is False
    assert device.gpu_slug().startswith("cpu-")


def test_importing_gpukit_does_not_import_numba():
    code = ("import sys, gpukit, gpukit.device, gpukit.bench, gpukit.kernels, gpukit.cli; "
            "print('numba' in sys.modules, 'torch' in sys.modules, 'cupy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False", "False"]


def test_simulator_switch_in_fresh_process():
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["CUDA_VISIBLE_DEVICES"] = ""  # no GPU, whatever the machine has
    code = ("from gpukit import device; s = device.use_simulator_if_no_gpu(); "
            "from numba import cuda; print(s, cuda.simulator_enabled if hasattr(cuda, 'simulator_enabled') "
            "else type(cuda).__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.startswith("True")


def test_fp32_lanes_and_peak_from_the_machine_record():
    assert device.fp32_lanes_per_sm("7.5") == 64 and device.fp32_lanes_per_sm("8.0") == 64
    assert device.fp32_lanes_per_sm("8.6") == 128 and device.fp32_lanes_per_sm("9.0") == 128
    assert device.fp32_lanes_per_sm("5.2") is None and device.fp32_lanes_per_sm(None) is None
    h200 = {"compute_capability": "9.0", "multiprocessors": 132, "sm_clock_mhz": 1980.0}
    assert abs(device.fp32_peak(h200)["tflops"] - 66.9) < 0.05
