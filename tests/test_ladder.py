"""The ladder chapter: one softmax at every level, right at awkward shapes, and its tables.

Without a GPU: PyTorch on the CPU, the numba kernel on the CUDA simulator, Triton in its
interpreter, and the CUDA C kernels of ladder.cu in a CPU emulator (each CUDA thread a
std::thread, warp shuffles through a per-warp barrier, AddressSanitizer on every access),
plus an NVRTC compile for sm_90. CuPy, torch.compile on the GPU and JAX need the GPU run.
"""

import subprocess
import sys

import numpy as np
import pytest

from gpukit import pages, results
from gpukit.ladder import levels as L
from gpukit.ladder import measure as LM
from gpukit.ladder import views as LV
from gpukit.verify import Mismatch
from tests.helpers import ROOT, assert_one_line_error, build_cuda_emulator, run_without_gpu, shared_once

# 1 x 1; C smaller than a warp; C odd; C one more than a warp; C a multiple of 4 but not of
# a block's float4 width; and more rows than columns
SHAPES = [(1, 1), (3, 7), (2, 31), (4, 33), (2, 300), (9, 4)]


def large_inputs(rows=3, cols=37):
    """Rows near 10,000: exp(scale * x + bias) overflows float32 unless the row max is subtracted.

    x = 10000 + k/8, scale 0.5 and bias = j/4 are exact in float32, and so is scale * x + bias,
    so the only rounding left is in exp and the sum, which RTOL covers.
    """
    rng = np.random.default_rng(7)
    x = (10000 + rng.integers(-64, 64, size=(rows, cols)) / 8).astype(np.float32)
    bias = (rng.integers(-8, 8, size=cols) / 4).astype(np.float32)
    return x, np.float32(0.5), bias


# ------------------------------------------------------------------ reference and check

def test_reference_is_a_softmax_and_the_large_rows_really_overflow():
    x, scale, bias = L.make_inputs(5, 19, seed=3)
    ref = L.reference(x, scale, bias)
    assert np.allclose(ref.sum(axis=1), 1.0) and (ref > 0).all()
    assert np.argmax(ref[0]) == np.argmax(scale * x[0] + bias)
    xl, sl, bl = large_inputs()
    with np.errstate(over="ignore"):
        assert np.isinf(np.exp(sl * xl + bl)).all()          # the naive formula fails here
    assert np.isfinite(L.reference(xl, sl, bl)).all()


def test_check_catches_nan_wrong_values_and_bad_shapes():
    x, scale, bias = L.make_inputs(4, 10)
    good = L.reference(x, scale, bias).astype(np.float32)
    assert L.check(good, x, scale, bias) < L.RTOL
    poisoned = good.copy()
    poisoned[3, 9] = np.nan                                  # one element never written
    with pytest.raises(Mismatch, match="NaN"):
        L.check(poisoned, x, scale, bias)
    swapped = good[:, ::-1].copy()                           # rows still sum to 1
    with pytest.raises(Mismatch, match="relative error"):
        L.check(swapped, x, scale, bias)
    with pytest.raises(Mismatch, match="sums"):
        L.check(good * 1.01, x, scale, bias)
    with pytest.raises(Mismatch, match="shape"):
        L.check(good[:3], x, scale, bias)


@pytest.mark.parametrize("bias_shape, x_shape", [((9,), (4, 10)), ((4, 10), (4, 10)), ((10,), (40,))])
def test_bad_shapes_are_refused(bias_shape, x_shape):
    x, bias = np.zeros(x_shape, np.float32), np.zeros(bias_shape, np.float32)
    with pytest.raises(ValueError):
        L._check_shapes(x, bias)
    with pytest.raises(ValueError, match="out has shape"):
        L._check_shapes(np.zeros((4, 10), np.float32), np.zeros(10, np.float32), np.zeros((4, 9)))


# ------------------------------------------------------------------ the CPU-runnable levels

def _run_level(level, x, scale, bias):
    call, result, _ = L.prepare(level, x, scale, bias, gpu=False)
    call()
    return L.check(result(), x, scale, bias, what=level)


def check_cpu_level(level):
    """Runs in a child that sees no GPU: the Triton interpreter and the numba simulator are
    switched on there, and never leak into the other tests' process."""
    L._libraries(level, gpu=False)        # simulator / Triton interpreter where needed
    for rows, cols in SHAPES:
        x, scale, bias = L.make_inputs(rows, cols, seed=rows * 100 + cols)
        _run_level(level, x, scale, bias)
    _run_level(level, *large_inputs())
    return "ok"


@pytest.mark.parametrize("level", ["torch-eager", "torch-softmax", "numba-cuda", "triton"])
def test_cpu_levels_at_awkward_shapes_and_large_values(level):
    assert run_without_gpu("tests.test_ladder:check_cpu_level", level) == "ok"


def test_numba_kernel_with_more_threads_than_columns_and_odd_counts():
    L._libraries("numba-cuda", gpu=False)
    from numba import cuda
    x, scale, bias = L.make_inputs(2, 5, seed=1)
    out = cuda.to_device(np.full(x.shape, np.nan, np.float32))
    L.softmax_numba(cuda.to_device(x), scale, cuda.to_device(bias), out, threads=64)
    L.check(out, x, scale, bias)
    with pytest.raises(ValueError, match="bias"):
        L.softmax_numba(x, scale, bias[:4], out)


def test_triton_refuses_bad_bias():
    import torch
    x = torch.zeros(3, 8)
    with pytest.raises(ValueError, match="bias"):
        L.softmax_triton(x, 1.0, torch.zeros(7), torch.empty_like(x))


# ------------------------------------------------------------------ lines of code

def test_count_loc_skips_blanks_comments_and_docstrings():
    lines = ['def f(x):', '    """One line."""', '    # a comment', '', '    return x  # note',
             '// c comment', '    """', '    many', '    lines', '    """', 'int a = 1; // ok']
    assert L.count_loc(lines) == 3


def test_sections_and_every_level_has_code():
    with pytest.raises(KeyError):
        L.section(L.CU_SOURCE, "no-such-section")
    counts = {level: L.level_loc(level) for level in L.LEVELS}
    assert all(n > 0 for n in counts.values()), counts
    assert counts["torch-softmax"] < counts["torch-eager"] < counts["triton"] < counts["cuda-c"]
    assert counts["torch-compile"] > counts["torch-eager"]     # the eager code plus the wrapper


# ------------------------------------------------------------------ CUDA C on the CPU

@pytest.mark.parametrize("cols", [1, 3, 4, 31, 32, 33, 132, 300, 999, 1000, 4096, 16384, 32768, 40000])
def test_cuda_c_config_covers_the_row(cols):
    name, block = L.cuda_c_config(cols)
    assert block % 32 == 0 and 32 <= block <= 1024
    if "regs" in name:
        vec = int(name.split(",")[1].rstrip(">"))
        assert cols % 4 == 0 and vec in (1, 2, 4, 8) and 4 * vec * block >= cols
        assert f"<{block}," in name
    else:
        assert name == f"softmax_rows_loop<{block}>"
    assert "loop" in L.cuda_c_config(cols, aligned=False)[0]


HARNESS = r"""
#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <math.h>
#include <memory>
#include <string>
#include <thread>
#include <vector>

struct dim3 { unsigned x = 1, y = 1, z = 1; };
struct alignas(16) float4 { float x, y, z, w; };
static inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
thread_local dim3 threadIdx;
dim3 blockIdx, blockDim;
std::barrier<>* g_block = nullptr;
std::vector<std::unique_ptr<std::barrier<>>> g_warps;
float g_lanes[1024];

static inline float __int_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
// every lane publishes its value, the warp meets, each lane reads its partner's, the warp meets
static inline float __shfl_xor_sync(unsigned, float v, int offset) {
    const unsigned t = threadIdx.x;
    std::barrier<>& warp = *g_warps[t / 32];
    g_lanes[t] = v;
    warp.arrive_and_wait();
    const float r = g_lanes[t ^ offset];
    warp.arrive_and_wait();
    return r;
}
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__
#define __launch_bounds__(...)
#define __shared__ static
#define __syncthreads() g_block->arrive_and_wait()

#include LADDER_CU

using K = void (*)(const float*, const float*, float, float*, int);
static K pick(const std::string& n) {
    if (n == "softmax_rows_regs<32, 1>") return softmax_rows_regs<32, 1>;
    if (n == "softmax_rows_regs<32, 2>") return softmax_rows_regs<32, 2>;
    if (n == "softmax_rows_regs<32, 4>") return softmax_rows_regs<32, 4>;
    if (n == "softmax_rows_regs<64, 4>") return softmax_rows_regs<64, 4>;
    if (n == "softmax_rows_loop<32>") return softmax_rows_loop<32>;
    if (n == "softmax_rows_loop<64>") return softmax_rows_loop<64>;
    if (n == "softmax_rows_loop<128>") return softmax_rows_loop<128>;
    if (n == "softmax_rows_loop<256>") return softmax_rows_loop<256>;
    std::fprintf(stderr, "no instance %s in the harness\n", n.c_str());
    std::exit(3);
}

static float* load(const char* path, size_t n) {
    void* p = nullptr;
    if (posix_memalign(&p, 16, n * sizeof(float) ? n * sizeof(float) : 1)) std::exit(4);
    FILE* f = std::fopen(path, "rb");
    if (!f || std::fread(p, sizeof(float), n, f) != n) std::exit(5);
    std::fclose(f);
    return static_cast<float*>(p);
}

// usage: harness NAME BLOCK ROWS COLS SCALE x.bin bias.bin y.bin
int main(int argc, char** argv) {
    if (argc != 9) return 2;
    K kernel = pick(argv[1]);
    const int block = std::atoi(argv[2]), rows = std::atoi(argv[3]), cols = std::atoi(argv[4]);
    const float scale = std::strtof(argv[5], nullptr);
    float* x = load(argv[6], (size_t)rows * cols);
    float* bias = load(argv[7], cols);
    float* y = nullptr;
    if (posix_memalign((void**)&y, 16, (size_t)rows * cols * sizeof(float))) return 4;
    for (size_t i = 0; i < (size_t)rows * cols; ++i) y[i] = NAN;   // poison
    blockDim.x = block;
    for (int w = 0; w < block / 32; ++w) g_warps.push_back(std::make_unique<std::barrier<>>(32));
    std::barrier<> bar(block);
    g_block = &bar;
    for (int r = 0; r < rows; ++r) {   // blocks one after another: static "shared" arrays are safe
        blockIdx.x = r;
        std::vector<std::thread> threads;
        for (int t = 0; t < block; ++t)
            threads.emplace_back([=] { threadIdx.x = t; kernel(x, bias, scale, y, cols); });
        for (auto& th : threads) th.join();
    }
    FILE* f = std::fopen(argv[8], "wb");
    std::fwrite(y, sizeof(float), (size_t)rows * cols, f);
    std::fclose(f);
    std::free(x); std::free(bias); std::free(y);
    return 0;
}
"""


@pytest.fixture(scope="module")
def emulator(tmp_path_factory):
    def make(out):
        src = f"{out}/harness.cpp"
        with open(src, "w", encoding="utf-8") as fh:
            fh.write(HARNESS.replace("LADDER_CU", f'"{L.CU_SOURCE}"'))
        return build_cuda_emulator(src, str(out))
    return shared_once(tmp_path_factory, "ladder-emulator", make)


def _emulate(exe, tmp_path, x, scale, bias, aligned=True):
    rows, cols = x.shape
    name, block = L.cuda_c_config(cols, aligned)
    x.tofile(tmp_path / "x")
    bias.tofile(tmp_path / "b")
    proc = subprocess.run([str(a) for a in (exe, name, block, rows, cols, repr(float(scale)),
                                            tmp_path / "x", tmp_path / "b", tmp_path / "y")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]          # AddressSanitizer reports here
    y = np.fromfile(tmp_path / "y", np.float32).reshape(rows, cols)
    return name, L.check(y, x, scale, bias, what=f"{name}, emulated")


@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (2, 31), (2, 32), (4, 33), (3, 132), (2, 300), (2, 1000)],
                         ids=lambda s: f"{s[0]}x{s[1]}")
def test_cuda_c_kernels_in_cpu_emulator(emulator, shape, tmp_path):
    x, scale, bias = L.make_inputs(*shape, seed=sum(shape))
    name, _ = _emulate(emulator, tmp_path, x, scale, bias)
    assert ("regs" in name) == (shape[1] % 4 == 0)
    if shape[1] % 4 == 0 and shape[1] <= 300:                # the fallback on the same rows
        assert "loop" in _emulate(emulator, tmp_path, x, scale, bias, aligned=False)[0]


def test_cuda_c_kernels_emulated_with_large_values(emulator, tmp_path):
    for cols in (36, 37):                                   # registers kernel, then the loop one
        _emulate(emulator, tmp_path, *large_inputs(3, cols))


def test_cuda_c_compiles_with_nvrtc_for_hopper():
    pytest.importorskip("cuda.bindings", reason="cuda-python's NVRTC bindings are not installed")
    names = ["softmax_rows_regs<256, 4>", "softmax_rows_regs<1024, 8>", "softmax_rows_loop<256>"]
    code = r"""
import sys
from cuda.bindings import nvrtc
src = open(sys.argv[1], "rb").read()
err, prog = nvrtc.nvrtcCreateProgram(src, b"ladder.cu", 0, [], [])
for name in sys.argv[2:]:
    nvrtc.nvrtcAddNameExpression(prog, name.encode())
opts = [b"-std=c++17", b"--gpu-architecture=sm_90"]
(result,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
_, size = nvrtc.nvrtcGetProgramLogSize(prog)
log = b" " * (size + 1)
nvrtc.nvrtcGetProgramLog(prog, log)
print(log.decode(errors="replace"))
sys.exit(0 if result == nvrtc.nvrtcResult.NVRTC_SUCCESS else 1)
"""
    proc = subprocess.run([sys.executable, "-c", code, str(L.CU_SOURCE), *names], capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _c_params(params: str, typename) -> list[tuple[str, str]]:
    """CuPy's "float32 x, float32 scale" as [(C type, name), ...]."""
    out = []
    for item in params.split(","):
        dtype, name = item.split()
        out.append((typename(np.dtype(dtype)), name))
    return out


def _nvrtc_errors(source: str) -> str:
    """Compile CUDA C++ with NVRTC for sm_90 (no GPU needed); return the log if it fails."""
    from cuda.bindings import nvrtc
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), b"cupy_pieces.cu", 0, [], [])
    opts = [b"--gpu-architecture=sm_90"]
    (result,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    _, size = nvrtc.nvrtcGetProgramLogSize(prog)
    log = b" " * (size + 1)
    nvrtc.nvrtcGetProgramLog(prog, log)
    return "" if result == nvrtc.nvrtcResult.NVRTC_SUCCESS else log.decode(errors="replace")


def test_cupy_kernel_pieces_are_valid_cuda_c():
    """CuPy pastes reduce_type, the expressions and the C names of the parameter types into the
    kernel it generates: `typedef <reduce_type> _type_reduce;` and so on. A NumPy name such as
    "float32" there is not C++ ("identifier float32 is undefined") and fails only at the first
    call on a GPU. Check the pieces here, on a CPU: reduce_type must be one of the C type names
    CuPy itself uses, and the pieces, assembled the way CuPy assembles them, must compile."""
    pytest.importorskip("cupy", reason="CuPy is not installed")
    pytest.importorskip("cuda.bindings", reason="cuda-python's NVRTC bindings are not installed")
    from cupy._core._kernel import _get_typename as typename
    row_max, row_sum, write = L._cupy_kernels()     # building the kernel objects needs no GPU
    c_names = {typename(np.dtype(t)) for t in ("float16", "float32", "float64", "int32", "int64")}
    bodies = []
    for k in (row_max, row_sum):
        assert k.reduce_type in c_names, f"{k.name}: reduce_type {k.reduce_type!r} is not a C type"
        ins = _c_params(_params_str(k, "in"), typename)
        (out_type, out_name), = _c_params(_params_str(k, "out"), typename)
        decls = "".join(f"    const {t} {n} = ({t})p[{i}];\n" for i, (t, n) in enumerate(ins))
        bodies.append(f"""
namespace {k.name} {{
typedef {k.reduce_type} _type_reduce;
#define REDUCE(a, b) ({k.reduce_expr})
#define POST_MAP(a) ({k.post_map_expr})
__device__ float run(const float* p) {{
{decls}    {out_type} {out_name};
    _type_reduce _s = _type_reduce({k.identity});
    _type_reduce _m = static_cast<_type_reduce>({k.map_expr});
    {{ _type_reduce a = _s, b = _m; _s = REDUCE(a, b); }}
    {{ _type_reduce a = _s; POST_MAP(a); }}
    return {out_name};
}}
#undef REDUCE
#undef POST_MAP
}}""")
    ins = _c_params(_params_str(write, "in"), typename)
    (out_type, out_name), = _c_params(_params_str(write, "out"), typename)
    decls = "".join(f"    const {t} {n} = ({t})p[{i}];\n" for i, (t, n) in enumerate(ins))
    source = "\n".join(bodies) + f"""
__device__ float write_one(const float* p) {{
{decls}    {out_type} {out_name};
    {write.operation};
    return {out_name};
}}
extern "C" __global__ void pieces(const float* p, float* q) {{
    q[0] = {row_max.name}::run(p); q[1] = {row_sum.name}::run(p); q[2] = write_one(p);
}}
"""
    assert _nvrtc_errors(source) == "", source


def _params_str(kernel, which: str) -> str:
    """The "float32 x, ..." string a CuPy kernel was built with (its in_params or out_params)."""
    params = kernel.in_params if which == "in" else kernel.out_params
    return ", ".join(f"{p.dtype} {p.name}" for p in params)


# ------------------------------------------------------------------ the benchmark and its tables

@pytest.fixture(scope="module")
def quick_results(tmp_path_factory):
    """A quick in-process CPU run, with one failed and one skipped level added, saved to a file."""
    data = LM.run(n=2**12, repeat=2, fresh_process=False, levels=["torch-eager", "torch-softmax", "cuda-c"])
    root = tmp_path_factory.mktemp("results")
    part = data["gpu"] if "gpu" in data else data["cpu"]
    part["failed"].append({"level": "triton", "label": "Triton", "library": "Triton", "loc": 9,
                           "passes": 2, "error": "RuntimeError: made up for the test"})
    results.save(LM.NAME, data, root=root)
    return data, root


def test_quick_run_records_verified_rows_and_the_sweep(quick_results):
    data, _ = quick_results
    part = data["gpu"] if "gpu" in data else data["cpu"]
    assert [r["level"] for r in part["rows"]] == ["torch-eager", "torch-softmax"] + (["cuda-c"] if "gpu" in data else [])
    for r in part["rows"]:
        assert r["max_rel_err"] <= L.RTOL and r["median_s"] > 0 and r["loc"] == L.level_loc(r["level"])
        assert r["pct_of_copy"] > 0
    assert {r["cols"] for r in part["sweep"]} == {1024, 4096, 16384}
    if "cpu" in data:
        assert part["skipped"][0]["level"] == "cuda-c" and "GPU" in part["skipped"][0]["reason"]


def test_renderers_make_a_table_a_plot_and_a_summary(quick_results):
    _, root = quick_results
    text = pages.render(LM.NAME, "table", root=root)
    assert "PyTorch eager, torch.softmax" in text and "| level | GB/s (% of copy) | steady state | first call | lines |" in text
    # a failed level keeps its row (in the chapter's order) and its error is shown below the table
    lines = text.splitlines()
    failed_row = next(i for i, ln in enumerate(lines) if ln.startswith("| Triton |"))
    assert "**failed**" in lines[failed_row]
    assert "**Triton** failed in this run" in text and "RuntimeError: made up for the test" in text
    assert "Source: `results/" in text
    svg = pages.render(LM.NAME, "sweep", root=root)
    assert "<svg" in pages.render(LM.NAME, "bars", root=root)
    assert "<svg" in svg and "row length C" in svg
    block = svg[svg.index('<div class="gpukit-plot"'):svg.index("</svg>")]
    assert "\n\n" not in block, "a blank line inside the SVG makes Markdown break the plot"
    shapes = pages.render(LM.NAME, "sweeptable", root=root)      # % of the copy per shape
    assert "| level |" in shapes and " % |" in shapes, shapes
    summary = pages.render(LM.NAME, "summary", root=root)
    assert "fastest level" in summary and "Triton (failed)" in summary


def test_short_error_drops_the_temporary_path():
    err = '1 error detected in the compilation of "/tmp/tmpab12/20594e.cubin.cu".'
    assert LV._short_error(err) == "1 error detected in the compilation of 20594e.cubin.cu."


def test_pass_table_is_for_gpu_results_only(quick_results):
    data, root = quick_results
    if "gpu" in data:
        assert "array passes" in pages.render(LM.NAME, "passes", root=root)
    else:
        with pytest.raises(pages.MissingResults):
            pages.render(LM.NAME, "passes", root=root)


def test_one_level_in_a_fresh_process():
    res = run_without_gpu("gpukit.ladder.measure:one_level", "torch-eager", [[3, 7], [2, 300]], 2)
    assert res["level"] == "torch-eager" and res["process_s"] > 0
    assert [(s["rows"], s["cols"]) for s in res["shapes"]] == [(3, 7), (2, 300)]
    assert all(s["max_rel_err"] <= L.RTOL for s in res["shapes"])


def test_fresh_process_skips_a_level_that_cannot_run(monkeypatch, tmp_path):
    for var, value in LM.proc.NO_GPU.items():                # the child sees no GPU
        monkeypatch.setenv(var, value)
    res = LM._fresh({"level": "cuda-c", "shapes": [[2, 8]], "repeat": 2}, str(tmp_path))
    assert res["level"] == "cuda-c" and "GPU" in res["skipped"] and res["process_s"] > 0


def test_a_failing_child_becomes_a_failed_row(monkeypatch, tmp_path):
    calls = []

    def failing(target, *args, env=None, timeout=None):
        calls.append((target, args, env, timeout))
        return {"error": "RuntimeError: boom", "process_s": 0.5}

    monkeypatch.setattr(LM.proc, "run_fresh", failing)
    res = LM._fresh({"level": "triton", "shapes": [[2, 8]], "repeat": 3}, str(tmp_path))
    assert res == {"level": "triton", "error": "RuntimeError: boom", "process_s": 0.5}
    target, args, env, timeout = calls[0]
    assert target == "gpukit.ladder.measure:one_level" and args == ("triton", [[2, 8]], 3)
    assert timeout == LM.CHILD_TIMEOUT_S and env["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    assert {env[v] for v in ("NUMBA_CACHE_DIR", "CUPY_CACHE_DIR", "TRITON_CACHE_DIR",
                             "TORCHINDUCTOR_CACHE_DIR")} == {str(tmp_path / d) for d in
                                                            ("numba", "cupy", "triton", "inductor")}
    data = LM.run(n=2**10, repeat=2, levels=["torch-eager"], sweep=False)
    part = data["gpu"] if "gpu" in data else data["cpu"]
    assert part["rows"] == [] and part["fresh_process"]
    assert part["failed"] == [{"level": "torch-eager", "label": L.LEVELS["torch-eager"][0],
                               "library": "PyTorch", "loc": L.level_loc("torch-eager"),
                               "passes": 12, "error": "RuntimeError: boom"}]


def test_public_api_is_lazy_and_complete():
    import gpukit.ladder as ladder
    for name in ladder.__all__:
        assert getattr(ladder, name) is getattr(L, name)
    with pytest.raises(AttributeError):
        ladder.no_such_name
    code = ("import sys, gpukit.ladder as ladder; ladder.measure_level; "
            "print(sorted({'torch', 'numba', 'cupy', 'triton'} & set(sys.modules)))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          timeout=120, check=False)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stderr


# ------------------------------------------------------------------ the example

@pytest.mark.parametrize("args", [["--rows", "-1"], ["--cols", "0"], ["--repeat", "0"]])
def test_example_refuses_bad_sizes_in_one_line(args):
    proc = subprocess.run([sys.executable, str(ROOT / "examples/ladder.py"), *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=120, check=False)
    assert_one_line_error(proc)


def test_example_run_it_line_shows_its_defaults():
    """The example's "Run it" line gives the sizes it uses by default on a GPU (it once said
    32768 rows while the example ran 8192)."""
    import re
    src = (ROOT / "examples" / "ladder.py").read_text()
    run_it = next(line for line in src.splitlines() if line.startswith("# Run it:"))
    for option in ("rows", "cols"):
        shown = re.search(rf"--{option} (\d+)", run_it)
        default = re.search(rf'"--{option}", type=int, default=\d+ if SIMULATED else (\d+)\)', src)
        assert shown and default and shown.group(1) == default.group(1), (option, run_it)


# ------------------------------------------------------------------ on the GPU

GPU_LEVELS = ["torch-eager", "torch-softmax", "torch-compile", "cupy-array", "cupy-kernels",
              "numba-cuda", "cuda-c", "triton"]


@pytest.mark.gpu
@pytest.mark.parametrize("level", GPU_LEVELS)
def test_gpu_levels_at_awkward_shapes(level):
    L._libraries(level, gpu=True)
    for rows, cols in SHAPES + [(3, 4096), (2, 16384), (2, 20000)]:
        x, scale, bias = L.make_inputs(rows, cols, seed=rows + cols)
        call, result, _ = L.prepare(level, x, scale, bias, gpu=True)
        call()
        L.check(result(), x, scale, bias, what=f"{level} {rows}x{cols}")
    call, result, _ = L.prepare(level, *large_inputs(), gpu=True)
    call()
    L.check(result(), *large_inputs(), what=f"{level} large values")


@pytest.mark.gpu
def test_cuda_c_misaligned_rows_take_the_loop_kernel():
    import cupy
    x, scale, bias = L.make_inputs(5, 64, seed=2)
    buf = cupy.asarray(np.concatenate([[0.0], x.ravel()]).astype(np.float32))
    cx = buf[1:].reshape(5, 64)                      # 4 bytes past a 16-byte boundary
    out = cupy.full((5, 64), cupy.nan, dtype=cupy.float32)
    L.softmax_cuda_c(cx, scale, cupy.asarray(bias), out)
    L.check(out, x, scale, bias)
