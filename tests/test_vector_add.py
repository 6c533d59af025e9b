"""gpukit.kernels.vector_add: every backend, awkward sizes, every element, bad input."""

import numpy as np
import pytest

from gpukit.kernels import vector_add
from gpukit.verify import Mismatch, check_close

# sizes around the block size (256) and the float4 width, plus 0 and 1
SIZES = [0, 1, 3, 5, 255, 257, 1000]


def inputs(n, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n).astype(dtype)
    y = rng.standard_normal(n).astype(dtype)
    return x, y, x.astype(np.float64) + y.astype(np.float64)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("backend", ["numpy", "numba-cpu"])
def test_host_backends(backend, n):
    x, y, ref = inputs(n)
    out = np.full_like(x, np.nan)
    assert vector_add(x, y, backend=backend, out=out) is out
    check_close(out, ref)


@pytest.mark.parametrize("impl", ["grid-stride", "grid-stride-x4", "vec16"])
@pytest.mark.parametrize("n", [0, 1, 3, 257, 1000, 4 * 256 + 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numba_cuda(n, dtype, impl):
    from numba import cuda
    x, y, ref = inputs(n, dtype)
    out = cuda.to_device(np.full_like(x, np.nan))
    vector_add(cuda.to_device(x), cuda.to_device(y), out=out, impl=impl)
    check_close(out, ref, dtype=np.dtype(dtype).name)
    fresh = vector_add(cuda.to_device(x), cuda.to_device(y))  # allocates its own output
    check_close(fresh, ref, dtype=np.dtype(dtype).name)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_vec16_on_misaligned_views_falls_back_and_is_right(dtype):
    from numba import cuda

    from gpukit.vector_add import kernels as k
    x, y, ref = inputs(1001, dtype)
    dx, dy = cuda.to_device(x), cuda.to_device(y)
    out = cuda.to_device(np.full_like(x, np.nan))
    assert k._vec16_fits((dx, dy, out))
    # a view that starts one element in is not on a 16-byte boundary
    assert not k._vec16_fits((dx[1:], dy[1:], out[1:]))
    vector_add(dx[1:], dy[1:], out=out[1:])
    check_close(out.copy_to_host()[1:], ref[1:], dtype=np.dtype(dtype).name)
    assert np.isnan(out.copy_to_host()[0])


def test_vec16_leaves_other_dtypes_to_the_loop():
    from numba import cuda

    from gpukit.vector_add import kernels as k
    a = cuda.to_device(np.arange(10, dtype=np.int32))
    assert not k._vec16_fits((a, a, a))
    assert (vector_add(a, a).copy_to_host() == np.arange(10) * 2).all()


def test_numba_out_must_be_contiguous():
    from numba import cuda
    x = cuda.to_device(np.ones(8, np.float32))
    strided = cuda.to_device(np.zeros(16, np.float32))[::2]
    with pytest.raises(ValueError, match="contiguous out"):
        vector_add(x, x, backend="numba-cuda", out=strided)


def test_numba_cuda_two_dimensional():
    from numba import cuda
    x, y, ref = inputs(6 * 7)
    got = vector_add(cuda.to_device(x.reshape(6, 7)), cuda.to_device(y.reshape(6, 7)))
    check_close(got, ref.reshape(6, 7))


@pytest.mark.parametrize("n", [0, 1, 1000])
def test_torch(n):
    torch = pytest.importorskip("torch")
    x, y, ref = inputs(n)
    out = torch.full((n,), float("nan"))
    vector_add(torch.from_numpy(x), torch.from_numpy(y), out=out)
    check_close(out, ref)


def test_poisoned_output_is_caught():
    x, y, ref = inputs(10)
    out = np.full_like(x, np.nan)
    vector_add(x[:9], y[:9], out=out[:9])  # leaves the last element unwritten
    with pytest.raises(Mismatch, match="NaN"):
        check_close(out, ref)


def test_wrong_result_is_caught():
    x, y, ref = inputs(10)
    with pytest.raises(Mismatch, match="relative error"):
        check_close(x - y, ref)


def test_mismatched_shapes():
    with pytest.raises(ValueError, match="shape mismatch"):
        vector_add(np.ones(3, np.float32), np.ones(4, np.float32))


def test_mismatched_dtypes():
    with pytest.raises(TypeError, match="dtype mismatch"):
        vector_add(np.ones(3, np.float32), np.ones(3, np.float64))


def test_unknown_numba_impl():
    from numba import cuda
    x = cuda.to_device(np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="unknown numba impl"):
        vector_add(x, x, backend="numba-cuda", impl="raw-vec4")


def test_unknown_backend():
    with pytest.raises(ValueError, match="unknown backend"):
        vector_add(np.ones(3), np.ones(3), backend="opencl")


def test_bad_out():
    with pytest.raises(ValueError, match="out must have"):
        vector_add(np.ones(3), np.ones(3), out=np.empty(4))


def test_host_arrays_refused_by_gpu_backends():
    x = np.ones(8, np.float32)
    for backend in ("numba-cuda", "cupy"):
        with pytest.raises(TypeError, match="host"):
            vector_add(x, x, backend=backend)


def test_device_arrays_refused_by_numpy():
    from numba import cuda
    d = cuda.to_device(np.ones(8, np.float32))
    with pytest.raises(TypeError, match="GPU memory"):
        vector_add(np.ones(8, np.float32), d, backend="numpy")


def test_lists_refused():
    with pytest.raises(TypeError):
        vector_add([1.0, 2.0], [3.0, 4.0])


# ------------------------------------------------------------------ real GPU

@pytest.mark.gpu
@pytest.mark.parametrize("impl", ["elementwise", "raw", "raw-vec4"])
@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 255, 257, 1023, 2**20 + 3])
def test_cupy_impls(impl, n):
    import cupy
    x, y, ref = inputs(n)
    out = cupy.full(n, cupy.nan, dtype=cupy.float32)
    vector_add(cupy.asarray(x), cupy.asarray(y), out=out, impl=impl)
    check_close(out, ref)


@pytest.mark.gpu
def test_cupy_misaligned_and_strided():
    import cupy
    x, y, ref = inputs(1001)
    cx, cy = cupy.asarray(x), cupy.asarray(y)
    # a view that starts 4 bytes in: float4 loads would be misaligned, so a scalar kernel runs
    check_close(vector_add(cx[1:], cy[1:]), ref[1:])
    # a strided view: CuPy's elementwise kernel handles the strides
    check_close(vector_add(cx[::3], cy[::3]), ref[::3])


@pytest.mark.gpu
def test_cupy_float64_and_int():
    import cupy
    x, y, ref = inputs(333, np.float64)
    check_close(vector_add(cupy.asarray(x), cupy.asarray(y)), ref, dtype="float64")
    a = cupy.arange(10, dtype=cupy.int32)
    assert (vector_add(a, a).get() == np.arange(10) * 2).all()


@pytest.mark.gpu
@pytest.mark.parametrize("impl", ["grid-stride", "grid-stride-x4", "vec16"])
@pytest.mark.parametrize("n", [1, 3, 4, 5, 1023, 2**20 + 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numba_gpu_impls_take_the_resolved_launch(impl, n, dtype):
    from numba import cuda

    from gpukit.vector_add import kernels as k
    x, y, ref = inputs(n, dtype)
    out = cuda.to_device(np.full_like(x, np.nan))
    vector_add(cuda.to_device(x), cuda.to_device(y), out=out, impl=impl)
    check_close(out, ref, dtype=np.dtype(dtype).name)
    kernel = {"grid-stride": k.add_kernel, "grid-stride-x4": k.add_kernel_x4,
              "vec16": k.add_kernel_vec16}[impl]
    # the compiled kernel was found for the named types, without numba typing the arguments
    assert k._launcher(kernel, np.dtype(dtype)).compiled is not None


@pytest.mark.gpu
def test_numba_vec16_on_a_misaligned_cupy_view():
    import cupy
    x, y, ref = inputs(4099)
    cx, cy = cupy.asarray(x), cupy.asarray(y)
    check_close(vector_add(cx[1:], cy[1:], backend="numba-cuda"), ref[1:])


@pytest.mark.gpu
def test_numba_on_cupy_and_torch_arrays():
    import cupy
    import torch
    x, y, ref = inputs(4097)
    check_close(vector_add(cupy.asarray(x), cupy.asarray(y), backend="numba-cuda"), ref)
    tx, ty = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
    check_close(vector_add(tx, ty, backend="numba-cuda"), ref)


@pytest.mark.gpu
def test_torch_cuda_and_device_mismatch():
    import torch
    x, y, ref = inputs(1000)
    tx, ty = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
    check_close(vector_add(tx, ty), ref)
    with pytest.raises(ValueError, match="is on"):
        vector_add(tx, torch.from_numpy(y))


def test_bandwidth_plot_has_a_bar_per_implementation_and_the_copy_line():
    import json

    from gpukit.pages import Record
    from gpukit.vector_add import views
    from tests.helpers import ROOT
    data = json.loads((ROOT / "results" / "nvidia-h200" / "vector_add.json").read_text())
    svg = views._vector_add_gpu_plot("nvidia-h200", Record(data))
    for r in data["gpu"]["rows"]:
        if r["name"] != "device copy" and not r.get("direct"):   # a second launch of one kernel
            assert r["name"] in svg and f"{r['gbs']:,.0f}" in svg
        elif r.get("direct"):
            assert r["name"] not in svg
    copy = next(r["gbs"] for r in data["gpu"]["rows"] if r["name"] == "device copy")
    assert f"device copy {copy:,.0f}" in svg


def test_numba_api_view_with_and_without_the_allocating_row():
    import copy
    import json

    from gpukit.pages import Record, fmt_time
    from gpukit.vector_add import views
    from gpukit.vector_add.meta import NO_OUT, NO_POOL
    from tests.helpers import ROOT
    data = json.loads((ROOT / "results" / "nvidia-h200" / "vector_add.json").read_text())
    data["gpu"]["rows"] = [r for r in data["gpu"]["rows"] if r["name"] not in (NO_OUT, NO_POOL)]
    numba = [r for r in data["gpu"]["rows"] if r.get("backend") == "numba-cuda"]
    text = views._vector_add_numba_api("nvidia-h200", Record(data))
    low = min(r["pct_of_torch_add"] for r in numba)
    assert f"{low:.0f} to " in text and "no row for it yet" in text
    more = copy.deepcopy(data)
    more["gpu"]["rows"].append({**numba[0], "name": NO_OUT, "pct_of_torch_add": 46.4,
                                "host_median_s": 1.5e-3})
    text = views._vector_add_numba_api("nvidia-h200", Record(more))
    assert "reaches 46 % of" in text and "1.50 ms of host time" in text
    assert "no row for it yet" not in text and "pool" not in text
    pooled = copy.deepcopy(data)
    pooled["gpu"]["rows"] += [
        {**numba[0], "name": NO_OUT, "allocates": True, "pooled": True, "pct_of_torch_add": 99.4,
         "host_median_s": 6.1e-5},
        {**numba[0], "name": NO_POOL, "allocates": True, "pooled": False, "pct_of_torch_add": 88.2,
         "host_median_s": 2.3e-4}]
    text = views._vector_add_numba_api("nvidia-h200", Record(pooled))
    assert "pool of device buffers" in text and "99 % of `torch.add`" in text
    assert f"88 % and {fmt_time(2.3e-4)} of host time" in text


_PTX = """
import json
from numba import cuda
from gpukit.vector_add import kernels as k
out = {}
for dtype in ("float32", "float64"):
    sig = f"void({dtype}[::1], {dtype}[::1], {dtype}[::1])"
    out[dtype] = cuda.compile_ptx(k.add_kernel_vec16.py_func, sig, cc=(9, 0))[0]
print(json.dumps(out))
"""


def test_vec16_compiles_to_16_byte_loads_and_stores():
    # Compiling to PTX needs numba's NVVM but no GPU; the simulator is off in the child.
    import json
    import os
    import re
    import subprocess
    import sys

    from tests.helpers import ROOT
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "0"}
    done = subprocess.run([sys.executable, "-c", _PTX], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=300)
    if done.returncode and re.search(r"NVVM|libnvvm|CUDA_HOME|cuda_paths", done.stderr):
        pytest.skip("numba cannot find NVVM here: " + done.stderr.strip().splitlines()[-1])
    assert done.returncode == 0, done.stderr[-2000:]
    ptx = json.loads(done.stdout)
    for dtype, vec in (("float32", "v4.f32"), ("float64", "v2.f64")):
        assert re.search(rf"ld\.global\.{re.escape(vec)}\s", ptx[dtype])
        assert re.search(rf"st\.global\.{re.escape(vec)}\s", ptx[dtype])


def test_device_empty_on_the_simulator_is_a_plain_device_array():
    from gpukit.arrays import device_empty
    from gpukit.device import simulator_enabled
    if not simulator_enabled():
        pytest.skip("the simulator's fallback path (a GPU is present)")
    a = device_empty((3, 5), np.float32)
    assert a.shape == (3, 5) and a.dtype == np.float32
    a.copy_to_device(np.arange(15, dtype=np.float32).reshape(3, 5))
    assert a.copy_to_host()[2, 4] == 14


@pytest.mark.gpu
def test_device_pool_reuses_a_buffer_only_when_no_view_of_it_lives():
    import gc

    from numba import cuda

    from gpukit.arrays import DevicePool
    pool = DevicePool(keep=2)
    a = pool.empty((4, 250), np.float32)
    assert a.shape == (4, 250) and a.strides == (1000, 4) and a.is_c_contiguous()
    ptr = a.device_ctypes_pointer.value
    view = a[1:]                              # a view keeps the buffer out of the pool
    del a
    gc.collect()
    b = pool.empty(1000, np.float32)
    assert b.device_ctypes_pointer.value != ptr and pool.misses == 2
    view.copy_to_device(np.full((3, 250), 7, np.float32))
    b.copy_to_device(np.zeros(1000, np.float32))
    assert (view.copy_to_host() == 7).all()   # b did not land on the view's memory
    freed = {ptr, b.device_ctypes_pointer.value}
    del view, b
    gc.collect()
    c = pool.empty(500, np.float64)           # same byte size: a pooled buffer, no allocation
    assert pool.hits == 1 and pool.misses == 2
    assert c.device_ctypes_pointer.value in freed
    x = np.random.default_rng(0).random(1000).astype(np.float32)
    d_x = cuda.to_device(x)
    for _ in range(5):                        # the public API's output comes from the pool
        out = vector_add(d_x, d_x, backend="numba-cuda")
        np.testing.assert_array_equal(out.copy_to_host(), x + x)
        del out
