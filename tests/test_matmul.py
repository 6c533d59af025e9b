"""gpukit.kernels.matmul: every kernel at awkward shapes, bad input, checks, sanitizer, renderers.

Without a GPU the numba kernels run on numba's CUDA simulator and the CUDA C kernels run
in a CPU emulator (tests/cuda_emulator/harness.cpp, built with g++ and AddressSanitizer);
on a GPU the same numba tests run on the device and the `gpu` tests run every CUDA C
kernel through CuPy.
"""

import math
import subprocess
import sys

import numpy as np
import pytest

from gpukit import pages, results
from gpukit.matmul import check_matmul, error_bound
from gpukit.matmul import kernels as mm
from gpukit.matmul import measure as mb
from gpukit.matmul import profile as mprof
from gpukit.matmul import ptxas as mp
from gpukit.matmul import sanitize as ms
from gpukit.matmul import views as mv
from gpukit.verify import Mismatch
from tests.helpers import ROOT, build_cuda_emulator, cpu_results_file, shared_once

SHAPES = [(1, 1, 1), (17, 33, 65), (50, 50, 50)]          # M, N, K
GPU_SHAPES = [(1, 1, 1), (17, 33, 65), (129, 257, 63), (1000, 1000, 1000)]


def inputs(m, n, k, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((m, k), dtype=np.float32),
            rng.standard_normal((k, n), dtype=np.float32))


# ------------------------------------------------------------- numba kernels

@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("kernel", mm.NUMBA_KERNELS)
def test_numba_kernels_match_float64(kernel, shape):
    from numba import cuda
    m, n, k = shape
    a, b = inputs(m, n, k)
    out = cuda.to_device(np.full((m, n), np.nan, np.float32))       # poisoned
    assert mm.matmul(cuda.to_device(a), cuda.to_device(b), kernel=kernel, out=out) is out
    check_matmul(out.copy_to_host(), a, b, what=kernel)


def test_numba_tiled_kernel_takes_strided_views():
    from numba import cuda
    a, b = inputs(40, 36, 70, seed=3)
    big_a = cuda.to_device(np.repeat(a, 2, axis=0))      # rows 0, 2, 4, ... are a
    got = mm.matmul(big_a[::2], cuda.to_device(b), kernel="03-smem-numba")
    check_matmul(got.copy_to_host(), a, b)


@pytest.mark.parametrize("m, n, k", [(0, 5, 3), (4, 0, 3), (0, 0, 0)])
def test_empty_results(m, n, k):
    from numba import cuda
    a, b = inputs(m, n, k)
    got = mm.matmul(cuda.to_device(a), cuda.to_device(b), kernel="03-smem-numba")
    assert got.shape == (m, n)


def test_k_zero_gives_zeros():
    from numba import cuda
    a, b = np.empty((3, 0), np.float32), np.empty((0, 4), np.float32)
    out = cuda.to_device(np.full((3, 4), np.nan, np.float32))
    mm.matmul(cuda.to_device(a), cuda.to_device(b), kernel="02-coalesced-numba", out=out)
    assert np.array_equal(out.copy_to_host(), np.zeros((3, 4), np.float32))


def test_public_name_is_the_function():
    import gpukit.kernels
    assert gpukit.kernels.matmul is mm.matmul        # no submodule shadows it


# -------------------------------------------------------------- bad input

def test_unknown_kernel():
    from numba import cuda
    a = cuda.to_device(np.ones((2, 2), np.float32))
    with pytest.raises(ValueError, match="unknown kernel 'fast'.*08-warptile"):
        mm.matmul(a, a, kernel="fast")


def test_wrong_dtype():
    from numba import cuda
    a = cuda.to_device(np.ones((2, 2), np.float64))
    with pytest.raises(TypeError, match="float64.*float32 only"):
        mm.matmul(a, a, kernel="01-naive-numba")


def test_not_two_dimensional():
    from numba import cuda
    a = cuda.to_device(np.ones(4, np.float32))
    with pytest.raises(ValueError, match="2-D"):
        mm.matmul(a, a, kernel="01-naive-numba")


def test_inner_dimensions_must_match():
    from numba import cuda
    a, b = cuda.to_device(np.ones((2, 3), np.float32)), cuda.to_device(np.ones((4, 2), np.float32))
    with pytest.raises(ValueError, match="inner dimensions differ"):
        mm.matmul(a, b, kernel="03-smem-numba")


def test_host_arrays_are_refused():
    a = np.ones((2, 2), np.float32)
    with pytest.raises(TypeError, match="host memory"):
        mm.matmul(a, a)
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="host memory"):
        mm.matmul(torch.ones(2, 2), torch.ones(2, 2))


def test_wrong_out_shape():
    from numba import cuda
    a = cuda.to_device(np.ones((2, 3), np.float32))
    b = cuda.to_device(np.ones((3, 4), np.float32))
    with pytest.raises(ValueError, match=r"out must be float32 of shape \(2, 4\)"):
        mm.matmul(a, b, kernel="01-naive-numba", out=cuda.device_array((4, 2), np.float32))


# ------------------------------------------------------------ the check itself

def test_check_is_public_and_needs_no_numba():
    code = ("import sys; from gpukit.matmul import check_matmul, error_bound; "
            "print(check_matmul.__module__, 'numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.split() == ["gpukit.matmul.check", "False"], out.stderr


def test_check_catches_nan_and_one_missing_term():
    a, b = inputs(4, 4, 4096, seed=5)
    good = a.astype(np.float64) @ b
    assert check_matmul(good.astype(np.float32), a, b) < error_bound(4096)
    poisoned = good.astype(np.float32)
    poisoned[2, 3] = np.nan
    with pytest.raises(Mismatch, match="NaN"):
        check_matmul(poisoned, a, b)
    missing = good - np.outer(a[:, 0], b[0, :])          # one of 4096 terms left out
    with pytest.raises(Mismatch, match="exceeds"):
        check_matmul(missing.astype(np.float32), a, b)


def test_vector_path_needs_multiples_of_four_and_alignment():
    assert mm.vector_ok(5, 8, 12, (0, 16, 32))
    assert not mm.vector_ok(5, 8, 13, (0, 16, 32))        # K not a multiple of 4
    assert not mm.vector_ok(5, 6, 12, (0, 16, 32))        # N not a multiple of 4
    assert not mm.vector_ok(5, 8, 12, (4, 16, 32))        # misaligned pointer
    assert mm.cuda_c_launch("08-warptile", 5, 8, 12, False)[0] == "mm08_warptile_scalar"
    name, grid, block, extra = mm.cuda_c_launch("07-vectorised", 300, 130, 12, True)
    assert (name, grid, block, extra) == ("mm07_vectorised", (2, 3), (256, 1), (1,))


# ------------------------------------------------- CUDA C kernels: compile + emulate

def test_cuda_source_compiles_with_nvrtc():
    """The CUDA C file compiles with NVRTC, the compiler CuPy's RawModule uses.

    Compiled in a child process: loading NVRTC's libraries into the test process changes
    how torch.save behaves for the rest of the session (seen with cuda-bindings 13).
    """
    pytest.importorskip("cuda.bindings.nvrtc")
    code = """
import sys
from cuda.bindings import nvrtc
src = open(sys.argv[1], "rb").read()
err, prog = nvrtc.nvrtcCreateProgram(src, b"matmul.cu", 0, [], [])
opts = [b"-std=c++17", b"--gpu-architecture=sm_90"]
(result,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
_, size = nvrtc.nvrtcGetProgramLogSize(prog)
log = b" " * (size + 1)  # never the shared one-byte object: NVRTC writes into it
nvrtc.nvrtcGetProgramLog(prog, log)
print(log.decode(errors="replace"))
sys.exit(0 if result == nvrtc.nvrtcResult.NVRTC_SUCCESS else 1)
"""
    proc = subprocess.run([sys.executable, "-c", code, str(mm.SOURCE)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def emulator(tmp_path_factory):
    return shared_once(tmp_path_factory, "matmul-emulator",
                       lambda out: build_cuda_emulator(str(ROOT / "tests/cuda_emulator/harness.cpp"),
                                                       str(out)))


EMU_SHAPES = [(1, 1, 1, False), (17, 33, 65, False), (129, 257, 63, False), (132, 260, 68, True),
              (136, 266, 64, False), (136, 264, 64, True)]   # with blocks away from the edges


@pytest.mark.parametrize("shape", EMU_SHAPES, ids=lambda s: "x".join(map(str, s[:3])) + ("-vec" if s[3] else ""))
@pytest.mark.parametrize("kernel", mm.CUDA_C_KERNELS + tuple(mm.CUDA_C_TUNING))
def test_cuda_c_kernels_in_cpu_emulator(emulator, kernel, shape, tmp_path):
    m, n, k, vec = shape
    if kernel == "04-smem-cuda" and m * n > 10_000:
        m, n = m // 2, n // 2        # 1024 threads a block: keep the emulator quick
    a, b = inputs(m, n, k, seed=m + n + k)
    name, grid, block, _ = mm.cuda_c_launch(kernel, m, n, k, vec)
    a.tofile(tmp_path / "a")
    b.tofile(tmp_path / "b")
    proc = subprocess.run([str(x) for x in (emulator, name, m, n, k, int(vec), *grid, *block,
                                            tmp_path / "a", tmp_path / "b", tmp_path / "c")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]          # AddressSanitizer reports here
    got = np.fromfile(tmp_path / "c", np.float32).reshape(m, n)
    check_matmul(got, a, b, what=f"{kernel} ({name}, emulated)")


# ---------------------------------------------------------------- on the GPU

@pytest.mark.gpu
@pytest.mark.parametrize("shape", GPU_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("kernel", mm.CUDA_C_KERNELS + ("cublas",))
def test_cuda_c_kernels_on_gpu(kernel, shape):
    import cupy
    m, n, k = shape
    a, b = inputs(m, n, k, seed=m)
    out = cupy.full((m, n), cupy.nan, dtype=cupy.float32)
    assert mm.matmul(cupy.asarray(a), cupy.asarray(b), kernel=kernel, out=out) is out
    check_matmul(out.get(), a, b, what=kernel)


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", mm.CUDA_C_KERNELS)
def test_cuda_c_kernels_misaligned_and_strided(kernel):
    import cupy
    m, n, k = 130, 132, 68                       # K and N multiples of 4 ...
    a, b = inputs(m, n, k, seed=7)
    flat = cupy.empty(m * k + 1, dtype=cupy.float32)
    da = flat[1:].reshape(m, k)                  # ... but A starts 4 bytes past alignment
    da[...] = cupy.asarray(a)
    assert da.data.ptr % 16 != 0
    db = cupy.asarray(np.ascontiguousarray(b.T)).T   # column-major view of B
    assert not db.flags.c_contiguous
    got = mm.matmul(da, db, kernel=kernel)
    check_matmul(got.get(), a, b, what=f"{kernel} misaligned")
    # the aligned, contiguous case takes the 16-byte path on the same shape
    check_matmul(mm.matmul(cupy.asarray(a), cupy.asarray(b), kernel=kernel).get(), a, b)


@pytest.mark.gpu
def test_torch_tensors_in_torch_tensor_out():
    torch = pytest.importorskip("torch")
    a, b = inputs(70, 90, 33, seed=2)
    got = mm.matmul(torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda())
    assert isinstance(got, torch.Tensor) and got.is_cuda
    check_matmul(got.cpu().numpy(), a, b)


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", mm.NUMBA_KERNELS)
def test_numba_kernels_on_gpu_with_cupy_arrays(kernel):
    import cupy
    a, b = inputs(129, 257, 63, seed=4)
    got = mm.matmul(cupy.asarray(a), cupy.asarray(b), kernel=kernel)
    assert isinstance(got, cupy.ndarray)
    check_matmul(got.get(), a, b, what=kernel)


@pytest.mark.gpu
@pytest.mark.slow
def test_compute_sanitizer_finds_nothing():
    result = ms.sanitize()
    assert result["sanitizer"], result.get("note")
    for r in result["runs"]:
        assert r["errors"] == 0 and r["ran"] and not r["failed"], (r["command"], r["output_tail"])


# ------------------------------------------------------------ sanitizer driver

def test_sanitizer_missing_is_recorded(monkeypatch):
    monkeypatch.setattr(ms, "find_sanitizer", lambda: None)
    result = ms.sanitize()
    assert result["sanitizer"] is None and "not found" in result["note"]


def test_sanitize_child_refuses_unknown_kernel():
    proc = subprocess.run([sys.executable, "-m", "gpukit.matmul.sanitize",
                           "--sanitize-child", "01-naive-numba"],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2 and "not a CUDA C kernel" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("module, flags", [("sanitize", ["--sanitize", "--sanitize-child"]),
                                           ("ptxas", ["--ptxas"])])
def test_command_lines_ask_for_their_flags(module, flags):
    proc = subprocess.run([sys.executable, "-m", f"gpukit.matmul.{module}"],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert all(flag in proc.stderr for flag in flags), proc.stderr


def test_sanitizer_summaries_are_counted():
    assert ms._count_errors("========= ERROR SUMMARY: 0 errors\n") == 0
    assert ms._count_errors("========= ERROR SUMMARY: 3 errors\n") == 3
    text = "========= RACECHECK SUMMARY: 2 hazards displayed (1 errors, 1 warnings)\n"
    assert ms._count_errors(text) == 2
    assert ms._count_errors("crashed") is None


def test_sanitizer_reports_are_attributed_to_kernels():
    text = """========= Invalid __global__ read of size 16 bytes
=========     at mm08_warptile_scalar+0x1a0 in matmul.cu:300
=========     by thread (3,0,0) in block (1,0,0)
========= Error: Race reported between Write access at mm04_smem+0x90
=========     and Read access at mm04_smem+0x120
========= ERROR SUMMARY: 2 errors
"""
    counts = ms.attribute_errors(text, ["04-smem-cuda", "07-vectorised", "08-warptile"])
    assert counts == {"04-smem-cuda": 1, "07-vectorised": 0, "08-warptile": 1}


def test_ptxas_parser():
    text = """ptxas info    : Compiling entry function 'mm08_warptile' for 'sm_90'
ptxas info    : Function properties for mm08_warptile
    0 bytes stack frame, 4 bytes spill stores, 8 bytes spill loads
ptxas info    : Used 128 registers, used 1 barriers, 32768 bytes smem
"""
    rep = mp.parse_ptxas(text)["mm08_warptile"]
    assert rep == {"arch": "sm_90", "stack_bytes": 0, "spill_stores": 4, "spill_loads": 8,
                   "registers": 128, "shared_bytes": 32768}


def test_committed_ptxas_report_covers_every_kernel_without_spills():
    data = results.load(mp.PTXAS_NAME)[results.reference_machine()]
    for kernel, fn in mv.PTXAS_NAMES.items():
        assert data["cuda_c"][fn]["spill_stores"] == 0, kernel
    assert set(data["numba"]) == set(mm.NUMBA_KERNELS)
    md = pages.render(mp.PTXAS_NAME, "registers")
    assert f"| {data['cuda_c']['mm08_warptile']['registers']} |" in md


# ------------------------------------------------------------------ renderers

def fabricated(gpu_name="NVIDIA Test GPU"):
    rows = [{"name": "cublas", "tflops": 50.0, "median_s": 2.7e-3, "first_call_s": 0.2,
             "max_err": 1e-7, "pct_of_cublas": 100.0}]
    for i, name in enumerate(mm.NUMBA_KERNELS + mm.CUDA_C_KERNELS):
        t = 2.0 + 5 * i
        rows.append({"name": name, "tflops": t, "median_s": 1.0 / t, "first_call_s": 0.5,
                     "max_err": 2e-7, "pct_of_cublas": 2 * t, "registers": 40 + i, "threads": 256,
                     "occupancy": {"warps_per_sm": 16, "occupancy": 0.25}})
    sweep = [{"n": s, "name": k, "tflops": 10.0 + s / 1000, "median_s": 1e-3,
              "pct_of_cublas": 80.0} for s in (512, 1024) for k in ("cublas", "08-warptile")]
    tc = [{"name": "fp32, TF32 off (torch)", "dtype": "float32", "tf32": False, "tflops": 50.0,
           "max_err": 1e-7},
          {"name": "TF32 tensor cores (torch)", "dtype": "float32", "tf32": True, "tflops": 400.0,
           "max_err": 1e-4}]
    cmd = "compute-sanitizer --tool memcheck --error-exitcode 99 python -m x --sanitize-child all"
    san = {"sanitizer": "/usr/bin/compute-sanitizer", "version": "2025.3",
           "shapes": [[67, 129, 35], [68, 132, 36]],
           "runs": [{"kernels": ["04-smem-cuda", "08-warptile"], "tool": tool, "errors": 0,
                     "returncode": 0, "summary": "ERROR SUMMARY: 0 errors",
                     "ran": ["ran a", "ran b"], "failed": [], "command": cmd,
                     "per_kernel": {"04-smem-cuda": {"errors": 0, "verified": 2},
                                    "08-warptile": {"errors": 0, "verified": 2}}}
                    for tool in ("memcheck", "racecheck")]}
    machine = {"date": "2026-01-02T03:04:05+00:00", "slug": "test-gpu",
               "gpu": {"name": gpu_name, "compute_capability": "9.0", "multiprocessors": 100,
                       "sm_clock_mhz": 2000.0},
               "cpu": {"model": "Test CPU", "usable_cpus": 8}, "cuda": {}}
    return machine, {"gpu": {"n": 4096, "flops": 2 * 4096.0**3, "rows": rows, "copy_ceiling_gbs": 4000.0,
                             "failed": [{"name": "broken", "error": "Mismatch: boom"}],
                             "sanitizer": san,
                             "best_kernel": "09-warptile-128x64", "cublas_tf32": "off",
                             "sweep": sweep, "tensor_cores": tc},
                     "cpu": {"n": 4096, "rows": [{"name": "NumPy matmul", "tflops": 1.5,
                                                  "median_s": 0.09}]}}


def _fabricated_tflops(kernel):
    return next(r["tflops"] for r in fabricated()[1]["gpu"]["rows"] if r["name"] == kernel)


@pytest.fixture
def results_root(tmp_path):
    machine, data = fabricated()
    results.save("matmul", data, root=tmp_path, machine=machine)
    return tmp_path


def test_table_renderer(results_root):
    md = pages.render("matmul", "table", root=results_root)
    t = _fabricated_tflops("08-warptile")
    assert "NVIDIA Test GPU" in md and f"| `08-warptile` | {t:.2f} | {2 * t:.1f} % |" in md
    assert "failed: Mismatch: boom" in md and "Measured on" in md


def test_sweep_tensor_core_sanitizer_and_cpu_renderers(results_root):
    sweep = pages.render("matmul", "sweep", root=results_root)
    assert "| 1024 | 11.02 | 11.02 (80.0 %) |" in sweep
    tc = pages.render("matmul", "tensor-cores", root=results_root)
    assert "| TF32 tensor cores (torch) | 400.00 | 8.0x |" in tc
    assert "best hand-written fp32 kernel (`09-warptile-128x64`)" in tc
    san = pages.render("matmul", "sanitizer", root=results_root)
    assert "| `08-warptile` | 0 (2 shapes verified) | 0 (2 shapes verified) |" in san
    assert "memcheck: ERROR SUMMARY: 0 errors" in san and "--sanitize-child all" in san
    assert "NumPy matmul" in pages.render("matmul", "cpu", root=results_root)


def test_roofline_renderer(results_root):
    md = pages.render("matmul", "roofline", root=results_root)
    # compute roof: the FP32 peak of the machine record, 100 SMs x 128 lanes x 2 x 2 GHz = 51.2
    # TFLOP/s, not cuBLAS (50 TFLOP/s in this file); HBM roof: the copy, 4000 GB/s
    assert "100 SMs x 128 FP32 lanes x 2 FLOP x 2,000 MHz = 51.2 TFLOP/s" in md
    assert "4,000 GB/s; they cross at 12.8 FLOP/byte" in md and "up to 683 FLOP/byte" in md
    assert "no bandwidth measured in this results file, so no roof" in md
    assert "cuBLAS in the same run: 50.00 TFLOP/s (98 % of the peak), a measured speed, not a roof" in md
    md = pages.render("matmul", "roofline-kernels", root=results_root)
    # naive: 0.25 FLOP/byte of loads; 4000 GB/s x 0.25 = 1 TFLOP/s if every load came from HBM
    t = _fabricated_tflops("01-naive-numba")
    assert f"| `01-naive-numba` | {t:.2f} | {100 * t / 51.2:.1f} % | 0.25 | {t * 4000:,.0f} | 1.00 (HBM; exceeded" in md
    # 04: 32 x 32 tiles, 8 FLOP/byte from L2, 32 TFLOP/s if from HBM; 0.25 FLOP/byte of shared loads
    t = _fabricated_tflops("04-smem-cuda")
    assert f"| `04-smem-cuda` | {t:.2f} | {100 * t / 51.2:.1f} % | 8.00 | {t * 1000 / 8:,.0f} | 32.00 (HBM) | 0.25 |" in md
    # 08: 32 FLOP/byte x 4000 GB/s = 128 TFLOP/s, above the peak: the peak is the roof there
    t = _fabricated_tflops("08-warptile")
    assert f"| `08-warptile` | {t:.2f} | {100 * t / 51.2:.1f} % | 32.00 | {t * 1000 / 32:,.0f} | 51.20 (the FP32 peak) | 2.00 |" in md
    assert "| `cublas`" not in md and "memory |" not in md


def test_roofline_peak_comes_from_the_machine_record():
    h200 = {"compute_capability": "9.0", "multiprocessors": 132, "sm_clock_mhz": 1980.0}
    assert mv.fp32_peak(h200)["tflops"] == pytest.approx(66.9, abs=0.05)
    a100 = {"compute_capability": "8.0", "multiprocessors": 108, "sm_clock_mhz": 1410.0}
    assert mv.fp32_peak(a100)["tflops"] == pytest.approx(19.5, abs=0.05)
    assert mv.fp32_peak({"compute_capability": "9.0", "multiprocessors": 132}) is None   # no clock
    assert mv.fp32_peak({"compute_capability": "1.0", "multiprocessors": 1, "sm_clock_mhz": 1.0}) is None


def test_roofline_without_a_known_peak_says_so(tmp_path):
    machine, data = fabricated()
    machine["gpu"] = {"name": "NVIDIA Test GPU"}
    results.save("matmul", data, root=tmp_path, machine=machine)
    assert "compute roof**: not known" in pages.render("matmul", "roofline", root=tmp_path)
    assert "% of FP32 peak" in pages.render("matmul", "roofline-kernels", root=tmp_path)
    assert "<svg" in pages.render("matmul", "roofline-plot", root=tmp_path)


def test_roofline_plot_draws_the_measured_roofs(results_root):
    md = pages.render("matmul", "roofline-plot", root=results_root)
    assert md.startswith('<div class="gpukit-plot"') and "<svg" in md
    assert "FP32 peak" in md and "HBM roof" in md and "cuBLAS fp32" in md
    assert "CUDA C kernels" in md and "numba kernels" in md
    # the roofs' values are in the roofline table's heading, next to the plot
    table = pages.render("matmul", "roofline", root=results_root)
    assert "100 SMs x 128 FP32 lanes x 2 FLOP x 2,000 MHz = 51.2 TFLOP/s" in table
    assert "4,000 GB/s" in table and "a measured speed, not a roof" in table


def test_thread_tiles_match_the_block_tiles_and_the_kernels():
    import re
    for kernel, (tm, tn) in mv.THREAD_TILES.items():
        bm, bn = mv.BLOCK_TILES[kernel]
        if kernel in mm.CUDA_C_LAUNCH:
            threads = math.prod(mm.CUDA_C_LAUNCH[kernel][3])
        else:
            threads = mm.THREADS * mm.THREADS
        assert tm * tn * threads == bm * bn, kernel
    # the warp-tiled kernels: a thread owns (WMITER x TM) x (WNITER x TN) outputs
    src = (ROOT / "gpukit" / "matmul" / "matmul.cu").read_text()
    for kernel, (name, *_rest) in mm.CUDA_C_LAUNCH.items():
        m = re.search(rf"WARPTILE_KERNEL\({name}, (.*)\)", src)
        if m:
            *_, wmiter, wniter, tm, tn = (int(v) for v in m.group(1).split(","))
            assert mv.THREAD_TILES[kernel] == (wmiter * tm, wniter * tn), kernel
    assert set(mv.THREAD_TILES) == set(mv.BLOCK_TILES)


def test_block_tiles_match_the_kernels():
    for kernel in ("03-smem-numba", "03b-smem-8x8-numba", "03c-regtile-numba"):
        _fn, (gx, gy), threads = mm.numba_launch(kernel, 1000, 1000)
        assert (gx, gy) == (math.ceil(1000 / mv.BLOCK_TILES[kernel][1]),
                            math.ceil(1000 / mv.BLOCK_TILES[kernel][0]))
    for kernel, (name, bm, bn, *_rest) in mm.CUDA_C_LAUNCH.items():
        assert mv.BLOCK_TILES[kernel] == (bm, bn), kernel


def test_plot_is_inline_svg_with_gpu_date_and_units(results_root):
    md = pages.render("matmul", "plot", root=results_root)
    plot = md.split("</div>")[0]
    assert md.startswith('<div class="gpukit-plot"') and "\n\n" not in plot and "<svg" in plot
    assert "<?xml" not in md
    # labels stay text; the machine and date are in the caption under the plot
    assert "% of cuBLAS fp32" in plot and "04-smem-cuda" in plot
    assert "NVIDIA Test GPU" in md.split("</div>")[1]


def test_cpu_only_results_have_no_gpu_views(tmp_path):
    data = cpu_results_file("gpukit.matmul.measure:run", [64, 2], "matmul", tmp_path)
    assert set(data) - {"process_s"} == {"cpu"} and data["cpu"]["rows"][0]["tflops"] > 0
    with pytest.raises(pages.MissingResults):
        pages.render("matmul", "table", root=tmp_path)


def test_occupancy_from_registers():
    gpu = {"registers_per_multiprocessor": 65536, "max_threads_per_multiprocessor": 2048,
           "shared_memory_per_multiprocessor_bytes": 233472, "max_blocks_per_multiprocessor": 32}
    occ = mb.occupancy(128, 256, 32768, gpu)
    assert occ["blocks_per_sm"] == 2 and occ["warps_per_sm"] == 16 and occ["limited_by"] == "registers"
    assert mb.occupancy(168, 256, 8192, gpu)["blocks_per_sm"] == 1
    assert math.isclose(mb.occupancy(31, 1024, 8192, gpu)["occupancy"], 1.0)


def test_bench_command_prints_every_part(monkeypatch, capsys):
    """`gpukit bench matmul` prints a GPU record (fabricated here) without tripping on it."""
    import argparse

    from gpukit import record
    _, data = fabricated()
    monkeypatch.setattr(results, "resolve", lambda target: (lambda n, repeat: data))
    args = argparse.Namespace(name="matmul", n=None, repeat=3, save=False, force=False)
    assert record._bench(args) == 0
    out = capsys.readouterr().out
    assert "== matmul (gpu), n = 4,096" in out and "08-warptile" in out



def test_small_sweep_sizes_are_timed_back_to_back():
    assert mb.sweep_batch(512) > 1 and mb.sweep_batch(1024) > 1 and mb.sweep_batch(8192) == 1


# ------------------------------------------- kernel 12's shapes, targets, tuning and profile

def test_pipelined_shapes_match_the_source():
    """The Python table of kernel 12's shapes (which sizes its dynamic shared memory) says
    what matmul.cu compiles, and the launch tables agree with it."""
    import re
    src = (ROOT / "gpukit" / "matmul" / "matmul.cu").read_text()
    found = {}
    for m in re.finditer(r"PIPELINED_KERNEL\((\w+), 256, 1, 1,\s*(\d+), (\d+), (\d+), "
                         r"[\d, ]+, (\d+)\)", src):
        found[m.group(1)] = tuple(int(m.group(i)) for i in (2, 3, 4, 5))
    for m in re.finditer(r"PIPELINED_128x256\((\w+), 1, (\d+), (\d+)\)", src):
        found[m.group(1)] = (128, 256, int(m.group(2)), int(m.group(3)))
    table = {**mm.CUDA_C_LAUNCH, **mm.CUDA_C_TUNING}
    assert set(mm.PIPELINED_SHAPES) == {"12-pipelined", *mm.CUDA_C_TUNING}
    for kernel, shape in mm.PIPELINED_SHAPES.items():
        name, bm, bn = table[kernel][:3]
        assert found[name] == shape, kernel
        assert (bm, bn) == shape[:2], kernel
        assert name + "_scalar" == table[kernel][5] and f"{name}_scalar" in src
    assert mm.pipelined_shared_bytes("12-pipelined") == mv.DYNAMIC_SHARED["12-pipelined"]
    assert mm.pipelined_shared_bytes("08-warptile") == 0


def test_regtile_kernel_over_several_blocks_and_tiles():
    """03c with 2 x 2 blocks, partial tiles on both edges and a K that no tile divides."""
    from numba import cuda
    m, n, k = 140, 131, 19
    a, b = inputs(m, n, k, seed=5)
    out = cuda.to_device(np.full((m, n), np.nan, np.float32))
    mm.matmul(cuda.to_device(a), cuda.to_device(b), kernel="03c-regtile-numba", out=out)
    check_matmul(out.copy_to_host(), a, b, what="03c")


def _with(data, **gpu):
    data = {**data, "gpu": {**data["gpu"], **gpu}}
    return data


def test_targets_judge_the_best_numba_and_simt_kernels(tmp_path):
    machine, data = fabricated()
    rows = [{"name": "cublas", "tflops": 50.0, "pct_of_cublas": 100.0},
            {"name": "03b-smem-8x8-numba", "tflops": 12.0, "pct_of_cublas": 24.0},
            {"name": "03c-regtile-numba", "tflops": 30.0, "pct_of_cublas": 60.0},
            {"name": "10-warptile-128x256", "tflops": 44.0, "pct_of_cublas": 88.0},
            {"name": "12-pipelined", "tflops": 45.5, "pct_of_cublas": 91.0}]
    got = mv.targets(pages.Record(_with(data, rows=rows)))
    assert [t.met for t in got] == [True, False]
    assert "60.0 % (`03c-regtile-numba`)" == got[0].value and ">= 50 %" in got[0].goal
    assert "91.0 % (`12-pipelined`)" == got[1].value and ">= 92 %" in got[1].goal
    rows[4]["pct_of_cublas"] = 92.0
    assert mv.targets(pages.Record(_with(data, rows=rows)))[1].met is True
    only_cublas = mv.targets(pages.Record(_with(data, rows=rows[:1])))
    assert [t.met for t in only_cublas] == [None, None]
    assert pages.TARGETS["matmul"] is mv.targets


def test_tuning_view_with_and_without_a_record(tmp_path):
    machine, data = fabricated()
    results.save("matmul", data, root=tmp_path, machine=machine)
    assert "Not recorded yet" in pages.render("matmul", "tuning", root=tmp_path)
    tuning = [{"name": "12-pipelined", "block_tile": [128, 256], "bk": 16, "stages": 3,
               "tflops": 45.0, "pct_of_cublas": 90.0},
              {"name": "12b-pipelined-2stage", "block_tile": [128, 256], "bk": 16,
               "stages": 2, "tflops": 46.0, "pct_of_cublas": 92.0},
              {"name": "12e-pipelined-256x128", "block_tile": [256, 128], "bk": 16,
               "stages": 2, "error": "Mismatch: boom"}]
    results.save("matmul", _with(data, tuning=tuning), root=tmp_path, machine=machine)
    md = pages.render("matmul", "tuning", root=tmp_path)
    assert "`12b-pipelined-2stage` was the fastest" in md
    assert "| `12-pipelined` | 128 x 256 | 16 | 3 | 45.00 | 90.0 % |" in md
    assert "failed: Mismatch: boom" in md


def _metrics(inst, ffma_threads, issue, **stalls):
    m = {"smsp__inst_executed.sum": inst,
         "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": ffma_threads,
         "smsp__issue_active.avg.pct_of_peak_sustained_active": issue,
         "sm__warps_active.avg.pct_of_peak_sustained_active": 12.5,
         "gpu__time_duration.sum": 3e-3,
         "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": 5.0,
         "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": 7.0}
    for k, v in stalls.items():
        m[f"smsp__average_warps_issue_stalled_{k}_per_issue_active.ratio"] = v
    return m


def test_profile_summary_counts_ffma_per_warp_instruction():
    s = mprof.summarise(_metrics(1000.0, 32 * 900.0, 80.0, barrier=0.1, not_selected=0.9))
    assert math.isclose(s["ffma_share"], 0.9) and s["issue_active_pct"] == 80.0
    assert list(s["stalls"]) == ["not_selected", "barrier"] and s["bank_conflicts"] == 12.0
    assert mprof.summarise({})["ffma_share"] is None


def test_profile_view(tmp_path):
    machine, data = fabricated()
    results.save("matmul", data, root=tmp_path, machine=machine)
    assert "Not recorded yet" in pages.render("matmul", "profile", root=tmp_path)
    prof = {"n": 4096, "ncu": "2025.3", "command": "ncu --metrics x python -m gpukit.proc y",
            "kernels": [{"name": "10-warptile-128x256",
                         **mprof.summarise(_metrics(1000.0, 32 * 850.0, 79.0))},
                        {"name": "12-pipelined",
                         **mprof.summarise(_metrics(1000.0, 32 * 900.0, 80.0, wait=0.2))},
                        {"name": "cublas", "error": "no cuBLAS kernel was profiled"}]}
    results.save("matmul", {**data, "profile": prof}, root=tmp_path, machine=machine)
    md = pages.render("matmul", "profile", root=tmp_path)
    # 90 % FFMA x 80 % issue = 72 % of the peak; cuBLAS at 50 of 51.2 TFLOP/s = 98 %
    assert "| `12-pipelined` | 3.00 ms | 90.0 % | 80.0 | 72.0 % | 12.5 | wait (0.20) | 12 |" in md
    assert "not profiled: no cuBLAS kernel" in md and "98 % of the FP32 peak" in md
    assert ("The new rungs raise the share of FFMA among the instructions they execute: "
            "`12-pipelined` from 85.0 % (`10-warptile-128x256`) to 90.0 %, with issue "
            "active at 80 % of cycles against 79 %.") in md


def test_profile_pairs_agree():
    assert mv.PROFILE_PAIRS == mprof.PAIRS


def test_profile_regex_names_each_kernel():
    rx = mprof._regex(mprof.PROFILED)
    assert rx.split("|") == ["smem_kernel", "_regtile", "mm10_warptile_128x256$",
                             "mm12_pipelined$"]


@pytest.mark.parametrize("argv", [["--n", "x"], ["--n", "0"], ["--bogus"]])
def test_profile_command_refuses_bad_input(argv):
    proc = subprocess.run([sys.executable, "-m", "gpukit.matmul.profile", *argv],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
