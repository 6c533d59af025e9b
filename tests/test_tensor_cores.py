"""gpukit.tensor_cores: the numerics and the bound, the Triton kernel in Triton's CPU
interpreter, the CUDA C compiled for sm_90a with NVRTC, the dispatcher's refusals, the
command's bad input, the views; on a GPU (``gpu`` tests) every kernel at awkward shapes.
"""

import copy
import json
import math
import subprocess
import sys

import numpy as np
import pytest

from gpukit import pages, proc, results
from gpukit.tensor_cores import meta, numerics
from gpukit.verify import Mismatch
from tests.helpers import ROOT, assert_one_line_error, run_cli, run_in_triton_interpreter

AWKWARD_CPU = [(1, 1, 1), (17, 33, 65), (40, 20, 50), (33, 40, 32)]


# ------------------------------------------------------------------- numerics

def test_unit_roundoffs_follow_the_significand_bits():
    assert numerics.unit_roundoff("bf16") == 2.0**-8
    assert numerics.unit_roundoff("fp16") == numerics.unit_roundoff("tf32") == 2.0**-11
    assert numerics.unit_roundoff("e4m3") == 2.0**-4
    assert numerics.unit_roundoff("e5m2") == 2.0**-3
    with pytest.raises(ValueError, match="unknown precision"):
        numerics.unit_roundoff("fp4")


def test_bound_grows_with_k_and_precision():
    b = [numerics.input_rounding_bound("bf16", k) for k in (16, 1024, 65536)]
    assert b[0] < b[1] < b[2]
    u = 2.0**-8
    assert b[0] == pytest.approx((1 + u) ** 2 * (1 + numerics.gamma(16)) - 1)
    assert numerics.input_rounding_bound("e4m3", 64) > numerics.input_rounding_bound("bf16", 64)
    assert numerics.gamma(2**25) == math.inf


@pytest.mark.parametrize("precision", ["tf32", "bf16", "fp16", "e4m3", "e5m2"])
def test_measured_rounding_error_is_within_the_bound(precision):
    small = numerics.rounding_error(precision, 16)
    large = numerics.rounding_error(precision, 2048)
    for r in (small, large):
        assert 0 < r["max"] <= r["bound"]
        assert r["median"] <= r["max"]
    # relative to |A||W|^T, rounding errors partly cancel: the error falls as K grows
    assert large["max"] < small["max"]


def test_tf32_rounding_keeps_ten_bits_and_rounds_to_nearest():
    x = np.array([1 + 2**-10, 1 + 2**-11, 1 + 3 * 2**-12, 1 + 2**-12], dtype=np.float32)
    got, scale = numerics.round_to(x, "tf32")
    assert scale == 1.0
    # 1 + 2^-11 is a tie: to even (1.0); 1 + 3 * 2^-12 rounds up to 1 + 2^-10
    assert got.tolist() == [1 + 2**-10, 1.0, 1 + 2**-10, 1.0]


def test_fp8_rounding_uses_one_scale_per_tensor():
    x = np.linspace(-3, 5, 101).astype(np.float32)
    got, scale = numerics.round_to(x, "e4m3")
    assert scale == pytest.approx(5 / 448)
    assert got.max() == pytest.approx(5.0)
    assert np.max(np.abs(got - x)) <= 5 * 2.0**-4


def _product(a, w):
    import torch
    return (a.float() @ w.float().T).to(torch.bfloat16)


def test_check_accepts_a_correct_bf16_product_and_rejects_wrong_ones():
    import torch
    g = torch.Generator().manual_seed(0)
    a = torch.randn((17, 65), generator=g).bfloat16()
    w = torch.randn((33, 65), generator=g).bfloat16()
    assert numerics.check_product(_product(a, w), a, w) <= numerics.accumulation_bound(65)
    missing = _product(a[:, :64], w[:, :64])                 # one term of the sum left out
    with pytest.raises(Mismatch, match="exceeds"):
        numerics.check_product(missing, a, w)
    nan = _product(a, w)
    nan[3, 4] = float("nan")
    with pytest.raises(Mismatch, match="NaN"):
        numerics.check_product(nan, a, w)
    with pytest.raises(Mismatch, match="shape"):
        numerics.check_product(_product(a, w)[:, :32], a, w)


def test_accumulation_bound_catches_one_missing_term_up_to_8192():
    for k in (64, 1024, 8192):
        # one missing term of a sum of k terms is about 1/k of |A||W|^T
        assert numerics.accumulation_bound(k) < 1 / k


# ------------------------------------------------------------- Triton on the CPU

def triton_in_interpreter(shapes):
    """Child process (Triton's interpreter on, no GPU): the Triton rung at each shape,
    output poisoned with NaN, checked against float64; returns the errors."""
    import torch

    from gpukit.tensor_cores import check_product, linear
    errors = []
    for i, (m, n, k) in enumerate(shapes):
        g = torch.Generator().manual_seed(i)
        a = torch.randn((m, k), generator=g).bfloat16()
        w = torch.randn((n, k), generator=g).bfloat16()
        c = torch.full((m, n), float("nan"), dtype=torch.bfloat16)
        linear(a, w, kernel="04-triton", out=c)
        errors.append(check_product(c, a, w, what=f"{m}x{n}x{k}"))
    return errors


def test_triton_kernel_in_the_interpreter_at_awkward_shapes():
    errors = run_in_triton_interpreter("tests.test_tensor_cores:triton_in_interpreter",
                                       AWKWARD_CPU)
    assert isinstance(errors, list), errors
    assert len(errors) == len(AWKWARD_CPU)
    assert all(0 <= e <= numerics.accumulation_bound(65) for e in errors)


# ------------------------------------------------------------- CUDA C, compiled

@pytest.fixture(scope="module")
def compiled():
    from gpukit.tensor_cores import nvrtc
    if nvrtc.find_library() is None:
        pytest.skip("libnvrtc not found (pip install nvidia-cuda-nvrtc)")
    return nvrtc.compile_source(options=("-Xptxas=-v",))


def test_cuda_c_compiles_for_hopper_with_the_instructions_each_rung_is_about(compiled):
    ptx = compiled["ptx"]
    for instruction in ("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
                        "ldmatrix.sync.aligned.m8n8.x4", "cp.async.cg.shared.global",
                        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16",
                        "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3",
                        "cp.async.bulk.tensor.2d", "mbarrier.try_wait.parity",
                        "setmaxnreg.inc.sync.aligned.u32"):
        assert instruction in ptx, instruction
    assert len(compiled["cubin"]) > 0


def test_cuda_c_kernels_keep_their_registers(compiled):
    log = compiled["log"]
    frames = [ln for ln in log.splitlines() if "stack frame" in ln]
    assert len(frames) == 3                          # tc_mma, tc_wgmma, tc_wgmma_fp8
    assert all(" 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in ln
               for ln in frames), log


def test_wmma_kernel_compiles_with_the_toolkit_header():
    from gpukit.tensor_cores import nvrtc
    if nvrtc.find_library() is None or not nvrtc.include_dirs():
        pytest.skip("libnvrtc or a CUDA toolkit's <mma.h> (with crt/mma.h) not found")
    ptx = nvrtc.compile_source(wmma=True)["ptx"]
    assert "wmma.mma.sync.aligned.row.col.m16n16k16.f32.bf16.bf16.f32" in ptx \
        or "mma.sync.aligned.row.col.m16n16k16" in ptx


def test_tile_sizes_in_python_match_the_source():
    from gpukit.tensor_cores import cuda_c
    src = (ROOT / "gpukit/tensor_cores/tensor_cores.cu").read_text()
    assert "#define MM_BM 128" in src and "#define MM_BN 256" in src
    assert "#define MM_STAGES 4" in src and "#define WG_STAGES 4" in src
    assert cuda_c.MMA_SMEM == 4 * (128 + 256) * 32 * 2
    assert cuda_c.WG_SMEM <= 227 * 1024


# ---------------------------------------------------------------- dispatcher

def test_linear_refuses_bad_input():
    import torch

    from gpukit.tensor_cores import linear, linear_fp8
    a = torch.randn(4, 8).bfloat16()
    w = torch.randn(3, 8).bfloat16()
    with pytest.raises(ValueError, match="unknown kernel"):
        linear(a, w, kernel="99-fast")
    with pytest.raises(TypeError, match="host memory"):
        linear(a, w, kernel="03-wgmma-tma")
    with pytest.raises(TypeError, match="float32"):
        linear(a.float(), w, kernel="cublas")
    with pytest.raises(ValueError, match="inner dimensions"):
        linear(a, torch.randn(3, 7).bfloat16(), kernel="cublas")
    with pytest.raises(ValueError, match="2-D"):
        linear(a.reshape(2, 2, 8), w, kernel="cublas")
    with pytest.raises(TypeError, match="torch tensor"):
        linear(np.ones((4, 8)), w, kernel="cublas")
    with pytest.raises(TypeError, match="bfloat16"):
        linear_fp8(a, torch.ones(1), w, torch.ones(1), kernel="fp8-triton")


def test_padding_rounds_k_and_n_up_only_where_a_kernel_needs_it():
    import torch

    from gpukit.tensor_cores import kernels
    a = torch.randn(5, 13).bfloat16()
    w = torch.randn(7, 13).bfloat16()
    out, ap, wp, n_padded = kernels._prepare(a, w, "05-gluon", None, torch.bfloat16)
    assert ap.shape == (5, 16) and wp.shape == (7, 16) and n_padded == 8
    assert torch.equal(ap[:, :13], a) and not ap[:, 13:].any()
    out, ap, wp, n_padded = kernels._prepare(a, w, "01-wmma", None, torch.bfloat16)
    assert ap is a and wp is w and n_padded == 7 and out.shape == (5, 7)


def test_importing_the_chapter_imports_no_gpu_library():
    code = ("import sys, gpukit.tensor_cores, gpukit.tensor_cores.views, "
            "gpukit.tensor_cores.card, gpukit.tensor_cores.meta\n"
            "print(sorted(m for m in ('torch', 'cupy', 'triton', 'numba') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# ------------------------------------------------------------------- command

@pytest.mark.parametrize("args, message", [
    (["--kernel", "99-fast"], "unknown kernel"),
    (["--m", "0"], "expected a number > 0"),
    (["--k", "abc"], "expected a whole number"),
])
def test_command_bad_input_is_one_line_and_exit_2(args, message):
    line = assert_one_line_error(run_cli("tensor-cores", *args, env=proc.NO_GPU))
    assert message in line


def test_command_without_a_gpu_is_one_line_and_exit_2():
    line = assert_one_line_error(run_cli("tensor-cores", "--kernel", "cublas",
                                         env=proc.NO_GPU))
    assert "GPU" in line


# --------------------------------------------------------------------- views

def _recorded() -> dict:
    found = results.load("tensor_cores")
    if results.reference_machine() not in found:
        pytest.skip("no results file for the reference machine")
    return found[results.reference_machine()]


@pytest.mark.parametrize("view", ["card", "roofs", "accuracy", "ladder", "checks", "sweep",
                                  "fp8", "sanitizer", "wmma", "mma", "wgmma"])
def test_every_view_renders_from_the_recorded_results(view):
    _recorded()
    text = pages.render("tensor_cores", view)
    assert "Source: `results/" in text


def test_views_show_only_rungs_that_passed_and_targets_judge_failures():
    from gpukit.tensor_cores import views
    data = copy.deepcopy(_recorded())
    gpu = data["gpu"]
    lib = next(r for r in gpu["ladder"] if r["kernel"] == meta.LIBRARY)
    broken = dict(lib, kernel="02-mma-sync", ok=False)
    good = dict(lib, kernel="03-wgmma-tma", ok=True, tflops=0.95 * lib["tflops"])
    gpu["ladder"] = [broken, good] + [r for r in gpu["ladder"]
                                      if r["kernel"] not in ("02-mma-sync", "03-wgmma-tma")]
    gpu["failures"] = {"02-mma-sync": "Mismatch: 17x33x65"}
    record = pages.Record(data)
    table = views.render_ladder("nvidia-h200", record)
    assert "`03-wgmma-tma`" in table and "`02-mma-sync`" not in table
    assert "95.0 %" in table
    text = views.render_wgmma("nvidia-h200", record)
    assert "rung 3" in text and "tc_wgmma" in text and "95.0 % of cuBLAS" in text
    text = views.render_mma("nvidia-h200", record)
    assert "not recorded passing" in text and "rung 2" not in text and "TFLOP/s" not in text
    verdicts = {t.name.split(",")[0]: t for t in views.targets(data)}
    assert verdicts["wgmma + TMA"].met is True
    assert verdicts["mma.sync + ldmatrix + cp.async"].met is False
    assert verdicts["mma.sync + ldmatrix + cp.async"].value == "failed"
    assert verdicts["every kernel: correct at the awkward shapes"].met is False


def test_accuracy_view_shows_every_precision_and_the_bound():
    text = pages.render("tensor_cores", "accuracy")
    for label in ("bf16", "fp8 e4m3", "fp8 e5m2", "tf32", "bound"):
        assert label in text


def test_profiles_view_renders_when_recorded():
    if not results.load("tensor_cores_profiles"):
        pytest.skip("no profiles recorded")
    text = pages.render("tensor_cores_profiles", "profiles")
    assert "tensor pipe active" in text


def test_profile_steps_compare_consecutive_rungs():
    from gpukit.tensor_cores import views

    def row(kernel, ms, pipe, conflicts, stall, hot):
        return {"kernel": kernel, "duration_s": ms / 1e3, "bank_conflicts": conflicts,
                "tensor_metrics": {"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active": pipe},
                "top_stalls": [{"reason": stall, "cycles_per_issue": 2.0}],
                "sass": {"hot": [{"sass": hot}]}, "achieved_occupancy_pct": 12.5,
                "registers_per_thread": 200.0}
    data = pages.Record({"machine": {"gpu": {"name": "Test GPU"}, "date": "2026-12-01"},
                         "gpu": {"rows": [row("01-wmma", 4.0, 20.0, 100.0, "long_scoreboard", "A"),
                                          row("02-mma-sync", 2.0, 40.0, 0.0, "wait", "B"),
                                          row("03-wgmma-tma", 0.5, 80.0, 0.0, "barrier", "X 0x1"),
                                          row("05-gluon", 1.0, 60.0, 0.0, "barrier", "X 0x0")]}})
    steps = views.profile_steps("t", data)
    assert "`01-wmma` → `02-mma-sync`**: 2.0x faster; tensor pipe busy 20 % → 40 %" in steps
    assert "bank conflicts 100 → 0" in steps and "top stall `wait` → `barrier`" in steps
    assert "`05-gluon` against `03-wgmma-tma`**: 2.0x faster for the CUDA C kernel" in steps
    assert "`X 0x0` in `05-gluon`" in steps and "04-triton" not in steps
    assert "40 % of active cycles, with 12.5 %" in views.open_mma("t", data)


def test_profiling_targets_cover_every_rung():
    from gpukit.profiling.targets import TARGETS, TENSOR_CORES
    assert set(TENSOR_CORES) == set(meta.RUNGS) | {"fp8-wgmma-tma"}
    for k in TENSOR_CORES:
        t = TARGETS[f"tensor-cores-{k}"]
        assert t.chapter == "tensor_cores" and t.work()[1] == 2 * t.n ** 3


def test_benchmark_is_registered_after_matmul():
    slugs = [c.slug for c in results.CHAPTERS]
    assert slugs[slugs.index("matmul") + 1] == "tensor_cores"
    assert results.benchmarks()["tensor-cores"][0] == "tensor_cores"
    assert results.benchmarks()["tensor-cores-profiles"][0] == "tensor_cores_profiles"


def test_accuracy_table_covers_every_precision_within_the_bound():
    from gpukit.tensor_cores import measure
    table = numerics.accuracy_table((16, 256))
    assert {r["precision"] for r in table} == {"tf32", "bf16", "fp16", "e4m3", "e5m2"}
    assert all(0 < r["max"] <= r["bound"] for r in table)
    assert measure.summary({"accuracy": {"table": table}}) == ""


# ----------------------------------------------------------------------- GPU

@pytest.mark.gpu
@pytest.mark.parametrize("kernel", list(meta.RUNGS) + [meta.LIBRARY])
def test_every_bf16_kernel_at_awkward_shapes(kernel):
    from gpukit.tensor_cores import measure
    checks = measure.check_kernel(kernel)
    assert len(checks) == len(meta.AWKWARD)


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", list(meta.FP8_KERNELS) + [meta.FP8_LIBRARY])
def test_every_fp8_kernel_at_awkward_shapes(kernel):
    from gpukit.tensor_cores import measure
    checks = measure.check_kernel(kernel, fp8=True)
    assert len(checks) == len(meta.AWKWARD)


@pytest.mark.gpu
def test_kernels_replay_from_a_cuda_graph():
    import torch

    from gpukit.tensor_cores import check_product, linear, measure
    a, w = measure._inputs(256, 256, 256)
    for kernel in list(meta.RUNGS):
        c = measure._poisoned(256, 256)
        measure._timed(lambda: linear(a, w, kernel=kernel, out=c), 2.0 * 256**3, 3,
                       graph=True)
        torch.cuda.synchronize()
        check_product(c, a, w, what=kernel)


@pytest.mark.gpu
def test_command_runs_one_kernel():
    out = run_cli("tensor-cores", "--kernel", "02-mma-sync", "--m", "512", "--n", "384",
                  "--k", "264", "--repeat", "3")
    assert out.returncode == 0, out.stderr
    assert "TFLOP/s" in out.stdout and "error beyond" in out.stdout


def test_results_file_is_valid_json_with_a_machine_record():
    path = ROOT / "results" / "nvidia-h200" / "tensor_cores.json"
    if not path.exists():
        pytest.skip("not recorded")
    data = json.loads(path.read_text())
    assert data["machine"]["gpu"]["name"] and data["schema"] == results.SCHEMA_VERSION
