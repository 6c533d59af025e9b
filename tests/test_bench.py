"""gpukit.bench: first call apart, statistics, rates, results files."""

import json
import time

import numpy as np
import pytest

from gpukit import bench, device, results


def test_first_call_reported_apart_from_steady_state():
    calls = []

    def fn():
        calls.append(1)
        time.sleep(0.05 if len(calls) == 1 else 0.001)  # a slow first call, like a JIT compile

    t = bench.bench(fn, warmup=2, repeat=5)
    assert len(calls) == 1 + 2 + 5
    assert t.first_call_s >= 0.05
    assert t.median_s < 0.02
    assert t.min_s <= t.median_s <= t.max_s
    assert len(t.samples_s) == 5
    assert t.timer == "wall-clock"


def test_rates():
    t = bench.Timing("x", "wall-clock", 1.0, [0.5, 1.0, 2.0], bytes=2_000_000_000, flops=4e12)
    assert t.median_s == 1.0
    assert t.gbs == pytest.approx(2.0)
    assert t.tflops == pytest.approx(4.0)
    d = t.to_dict()
    assert d["repeats"] == 3 and d["gbs"] == pytest.approx(2.0)


def test_min_time_adds_repeats():
    t = bench.bench(lambda: time.sleep(0.002), warmup=0, repeat=2, min_time_s=0.02)
    assert len(t.samples_s) >= 8


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown timer"):
        bench.bench(lambda: None, timer="opencl")
    with pytest.raises(ValueError):
        bench.bench(lambda: None, repeat=0)


def test_numba_timer_on_simulator_falls_back_to_wall_clock():
    if not device.simulator_enabled():
        pytest.skip("only meaningful on the simulator")
    t = bench.bench(lambda: None, timer="numba", repeat=2)
    assert t.timer == "wall-clock"


def test_host_copy_ceiling_is_plausible():
    t = bench.copy_ceiling("cpu", nbytes=64 * 2**20)
    assert t.bytes == 2 * 64 * 2**20
    assert 0.1 < t.gbs < 10_000


def test_save_and_load_roundtrip(tmp_path):
    machine = device.machine_record()
    t = bench.bench(lambda: None, repeat=3, name="noop")
    path = results.save("demo", {"rows": [t]}, root=tmp_path, machine=machine)
    assert path == tmp_path / machine["slug"] / "demo.json"
    data = json.loads(path.read_text())
    assert data["machine"]["cpu"]["model"] == machine["cpu"]["model"]
    assert data["rows"][0]["name"] == "noop"
    assert not list(tmp_path.rglob("*.tmp"))
    loaded = results.load("demo", root=tmp_path)
    assert list(loaded) == [machine["slug"]]


def test_machine_record_names_the_hardware():
    m = device.machine_record()
    for key in ("date", "slug", "cpu", "python", "packages", "gpu"):
        assert key in m
    assert m["cpu"]["usable_cpus"] >= 1
    assert "numpy" in m["packages"]
    assert device.describe(m)


@pytest.mark.gpu
def test_cuda_event_timers_agree_with_work_size():
    """Events of CuPy, torch and numba all time the same device work."""
    import cupy
    a = cupy.random.random(2**26, dtype=cupy.float32)
    times = {}
    for timer in ("cupy", "torch", "numba"):
        t = bench.bench(lambda: a * 2, timer=timer, repeat=10, bytes=2 * a.nbytes)
        assert t.timer == "cuda-events:" + timer
        times[timer] = t.median_s
    assert max(times.values()) < 3 * min(times.values())


@pytest.mark.gpu
def test_device_copy_ceiling():
    t = bench.copy_ceiling("cupy", nbytes=256 * 2**20)
    assert 100 < t.gbs < 20_000
    assert t.first_call_s > 0


@pytest.mark.gpu
def test_gpu_machine_record():
    m = device.machine_record()
    assert m["gpu"]["multiprocessors"] > 0
    assert m["gpu"]["warp_size"] == 32
    assert m["cuda"]["driver"]
    assert not m["slug"].startswith("cpu-")


def test_atomic_write_keeps_the_old_file_on_failure(tmp_path):
    from gpukit.files import atomic_write
    target = tmp_path / "out.txt"
    atomic_write(target, lambda fh: fh.write("first"))

    def broken(fh):
        fh.write("half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        atomic_write(target, broken)
    assert target.read_text() == "first"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


@pytest.mark.parametrize("shape", [(3 * 1000 + 7,), (40, 77)])
def test_check_close_scans_in_chunks_and_misses_nothing(monkeypatch, shape):
    """The chunked scan finds a NaN or a bad value in the last chunk and counts every NaN."""
    from gpukit import verify
    monkeypatch.setattr(verify, "CHUNK", 1000)      # several chunks, the last one partial
    rng = np.random.default_rng(0)
    ref = rng.random(shape) + 0.5
    got = ref.astype(np.float32)
    assert 0 < verify.check_close(got, ref) < 1e-7
    flat = got.reshape(-1)
    bad = got.copy()
    bad.reshape(-1)[[5, 1500, flat.size - 1]] = np.nan     # first, middle and last chunk
    with pytest.raises(verify.Mismatch, match=f"3 of {flat.size} elements are NaN"):
        verify.check_close(bad, ref)
    assert np.isnan(verify.max_rel_err(bad, ref))
    off = got.copy()
    off.reshape(-1)[-1] *= 1.001                           # one wrong value, in the last chunk
    with pytest.raises(verify.Mismatch, match="max relative error 0.001 exceeds 1e-06"):
        verify.check_close(off, ref)
    assert verify.max_rel_err(off, ref) == pytest.approx(1e-3, rel=1e-3)
    with pytest.raises(verify.Mismatch, match="shape"):
        verify.check_close(got[..., :-1], ref)


def test_host_bound_flags_a_row_whose_host_time_matches_its_event_time():
    asynchronous = bench.Timing("async", "cuda-events:torch", 0.1, [1e-3] * 5, host_samples_s=[1e-5] * 5)
    blocked = bench.Timing("blocked", "cuda-events:torch", 0.1, [1e-3] * 5, host_samples_s=[0.6e-3] * 5)
    assert not asynchronous.host_bound and blocked.host_bound
    d = blocked.to_dict()
    assert d["host_bound"] is True and d["host_median_s"] == pytest.approx(0.6e-3)
    assert "host_samples_s" not in d and "HOST-BOUND" in str(blocked)
    wall = bench.bench(lambda: None, repeat=3)
    assert wall.host_samples_s is None and not wall.host_bound


def test_batch_divides_the_time_by_the_launches():
    calls = []
    t = bench.bench(lambda: (calls.append(1), time.sleep(0.002)), warmup=0, repeat=3, batch=4)
    assert len(calls) == 1 + 3 * 4 and t.batch == 4
    assert 0.0015 < t.median_s < 0.02
    with pytest.raises(ValueError):
        bench.bench(lambda: None, batch=0)


@pytest.mark.gpu
def test_a_blocking_call_inside_the_timed_region_is_flagged():
    import torch
    x = torch.rand(2**26, device="cuda")
    y = torch.empty_like(x)

    def launch_only():
        torch.mul(x, 2.0, out=y)

    def launch_and_wait():          # the hidden synchronisation of a careless wrapper
        torch.mul(x, 2.0, out=y)
        torch.cuda.synchronize()

    ok = bench.bench(launch_only, timer="torch", repeat=10)
    bad = bench.bench(launch_and_wait, timer="torch", repeat=10)
    assert not ok.host_bound, (ok.host_median_s, ok.median_s)
    assert bad.host_bound, (bad.host_median_s, bad.median_s)
    b2b = bench.bench(launch_only, timer="torch", repeat=5, batch=10)
    assert b2b.median_s == pytest.approx(ok.median_s, rel=0.3)
