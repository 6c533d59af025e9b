"""gpukit.bench: first call apart, statistics, rates, results files."""

import json
import time

import numpy as np
import pytest

from gpukit import bench, device, pages, results


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


def test_launch_bound_needs_a_call_that_returned_before_the_gpu_finished():
    t = dict(name="t", timer="cuda-events:torch", first_call_s=0.1, samples_s=[1e-3] * 5,
             host_samples_s=[1e-3] * 5)
    gpu_bound = bench.Timing(**t, blocks=False, launch_samples_s=[1e-5] * 4)
    launch_bound = bench.Timing(**t, blocks=False, launch_samples_s=[0.6e-3] * 4)
    waits = bench.Timing(**t, blocks=True, launch_samples_s=[0.9e-3] * 4)
    unknown = bench.Timing(**t)
    # host time equal to event time (a full queue) is not a flag by itself
    assert gpu_bound.launch_bound is False and not gpu_bound.blocks
    assert launch_bound.launch_bound is True and "LAUNCH-BOUND" in str(launch_bound)
    assert waits.launch_bound is False and "BLOCKS" in str(waits)
    assert unknown.launch_bound is None and unknown.blocks is None
    d = launch_bound.to_dict()
    assert d["launch_bound"] is True and d["blocks"] is False
    assert d["launch_s"] == pytest.approx(0.6e-3) and d["host_median_s"] == pytest.approx(1e-3)
    assert "host_samples_s" not in d and "launch_samples_s" not in d
    assert launch_bound.flags() == {k: d[k] for k in ("host_median_s", "blocks", "launch_s",
                                                      "launch_bound")}
    wall = bench.bench(lambda: None, repeat=3)
    assert wall.host_samples_s is None and wall.blocks is None and wall.launch_bound is None


def test_page_flags_show_only_measured_flags():
    rows = [{"name": "a", "blocks": True, "launch_bound": False},
            {"name": "b", "blocks": False, "launch_bound": True},
            {"name": "c", "host_bound": True}]                # an older record's key
    assert [pages.marked(r) for r in rows] == ["a †", "b ‡", "c"]
    note = pages.flag_note(rows)
    assert "† The call waits" in note and "‡ Launch-bound" in note
    assert pages.flag_note(rows[2:]) == "" and "‡" not in pages.flag_note(rows[:1])


def test_batch_divides_the_time_by_the_launches():
    calls = []
    t = bench.bench(lambda: (calls.append(1), time.sleep(0.002)), warmup=0, repeat=3, batch=4)
    assert len(calls) == 1 + 3 * 4 and t.batch == 4
    assert 0.0015 < t.median_s < 0.02
    with pytest.raises(ValueError):
        bench.bench(lambda: None, batch=0)


@pytest.mark.parametrize("sms, slots, grid, block", [
    (132, 2048, 264, 1024),        # H100, H200
    (170, 1536, 340, 768),         # a GeForce card of 1,536 threads per multiprocessor
    (72, 1024, 72, 1024),          # Turing
    (10, 1280, 20, 640)])
def test_the_spin_takes_every_thread_slot(sms, slots, grid, block):
    g, b = bench.filling_grid(sms, slots)
    assert (g, b) == (grid, block) and g * b == sms * slots and b % 32 == 0 and b <= 1024


class _QueueModel:
    """A GPU queue in real time, for the probe's logic on a CPU: work runs in order, each item
    from when the one before it ends; at most ``depth`` items wait, and a launch into a full
    queue waits for room. After a synchronisation that waited, the GPU serves another process
    for ``lent`` seconds (time-slicing) before the next item starts."""

    def __init__(self, depth=64, lent=0.0):
        self.depth, self.lent, self.ends, self.pending = depth, lent, [], 0.0

    def now(self):
        return time.perf_counter()

    def launch(self, seconds):
        while sum(e > self.now() for e in self.ends) >= self.depth:
            time.sleep(1e-4)
        start = max([self.now()] + self.ends[-1:]) + self.pending
        self.pending = 0.0
        self.ends.append(start + seconds)
        return self.ends[-1]

    def synchronize(self):
        left = max(self.ends, default=0.0) - self.now()
        if left > 0:
            time.sleep(left)
            self.pending = self.lent

    # the event-timer interface _probe uses
    def event(self):
        gpu = self

        class Event:
            def record(self):
                self.t = gpu.launch(0.0)
        return Event()

    def done(self, event):
        return self.now() >= event.t


@pytest.mark.parametrize("lent", [0.0, 0.05])
def test_probe_tells_a_wait_from_a_full_queue_by_what_is_left(monkeypatch, lent):
    """Four kinds of call behind the spin, on a model queue; with ``lent`` the GPU serves
    another process for 50 ms after each wait, far longer than one call's work (a test of the
    work left by time would then miss the wait)."""
    gpu = _QueueModel(depth=64, lent=lent)
    monkeypatch.setattr(bench, "_spinner", lambda timer: gpu.launch)
    count = [0]
    kinds = {
        "launch_only": lambda: gpu.launch(2e-3),
        "wait_at_start": lambda: (gpu.synchronize(), gpu.launch(2e-3)),
        "wait_every_third": lambda: (count.__setitem__(0, count[0] + 1), gpu.launch(2e-3),
                                     count[0] % 3 == 0 and gpu.synchronize()),
        "long_queue": lambda: [gpu.launch(2e-3) for _ in range(40)],   # 80 ms of work a call
    }
    got = {}
    for name, fn in kinds.items():
        gpu.ends = []
        got[name] = bench._probe(fn, gpu, "model", 4, 5e-3)
        gpu.synchronize()
        gpu.pending = 0.0
    assert got["wait_at_start"] == (True, None) and got["wait_every_third"][0] is True
    assert got["launch_only"][0] is False and len(got["launch_only"][1]) == 4
    assert got["long_queue"][0] is False        # the third call fills the queue of 64


@pytest.mark.gpu
@pytest.mark.parametrize("timer", ["torch", "cupy", "numba"])
def test_a_call_that_waits_for_the_gpu_is_caught_behind_a_spin(timer):
    import torch
    x = torch.rand(2**26, device="cuda")
    y = torch.empty_like(x)
    count = [0]

    def launch_only():
        torch.mul(x, 2.0, out=y)

    def wait_at_start():            # the hidden synchronisation of a careless wrapper
        torch.cuda.synchronize()
        torch.mul(x, 2.0, out=y)

    def wait_every_third():         # hidden from a median of host times
        count[0] += 1
        torch.mul(x, 2.0, out=y)
        if count[0] % 3 == 0:
            torch.cuda.synchronize()

    xs, ys = x[:2**24], y[:2**24]

    def long_queue():               # hundreds of launches: back to back the queue fills
        for _ in range(400):
            torch.mul(xs, 2.0, out=ys)

    def tiny():                     # a launch costs more than the kernel
        torch.mul(x[:256], 2.0, out=y[:256])

    side = torch.cuda.Stream()      # PyTorch's own streams do not wait for the default one

    def side_stream_wait():         # work and its wait both on a non-blocking stream
        with torch.cuda.stream(side):
            torch.mul(x, 2.0, out=y)
        side.synchronize()

    def side_stream_only():         # the same work, not waited for
        with torch.cuda.stream(side):
            torch.mul(x, 2.0, out=y)

    t = {name: bench.bench(fn, timer=timer, repeat=10, name=name)
         for name, fn in [("launch_only", launch_only), ("wait_at_start", wait_at_start),
                          ("wait_every_third", wait_every_third), ("long_queue", long_queue),
                          ("tiny", tiny), ("side_stream_wait", side_stream_wait),
                          ("side_stream_only", side_stream_only)]}
    assert t["launch_only"].blocks is False and t["launch_only"].launch_bound is False
    assert t["wait_at_start"].blocks is True and t["wait_every_third"].blocks is True
    assert t["side_stream_wait"].blocks is True and t["side_stream_only"].blocks is False
    q = t["long_queue"]
    assert q.host_median_s > 0.5 * q.median_s, (q.host_median_s, q.median_s)  # the old flag's case
    assert q.blocks is False and q.launch_bound is False
    assert t["tiny"].blocks is False and t["tiny"].launch_bound is True
    b2b = bench.bench(launch_only, timer=timer, repeat=5, batch=10)
    assert b2b.batch == 10 and b2b.blocks is False and b2b.median_s > 0


def test_png_helpers_round_trip(tmp_path):
    import base64
    import io

    from PIL import Image

    from gpukit import files
    rgb = np.random.default_rng(0).integers(0, 256, (5, 7, 3), dtype=np.uint8)
    path = files.write_png(rgb, tmp_path / "sub" / "a.png")
    assert np.array_equal(np.asarray(Image.open(path)), rgb)
    uri = files.png_data_uri(rgb)
    assert uri.startswith("data:image/png;base64,")
    back = Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1])))
    assert np.array_equal(np.asarray(back), rgb)
    assert [p.name for p in (tmp_path / "sub").iterdir()] == ["a.png"]   # no temporary left


def test_files_beside_a_record_are_written_by_a_save_only(tmp_path):
    machine = {"slug": "box", "gpu": None, "date": "2026-12-01"}
    data = {"part": {"n": 1, "rows": []}, results.FILES: {"picture.png": b"\x89PNG..."}}
    path = results.save("thing", data, root=tmp_path, machine=machine)
    assert (path.parent / "picture.png").read_bytes() == b"\x89PNG..."
    assert results.FILES not in json.loads(path.read_text()) and results.FILES in data
    for bad in ("../up.png", "sub/x.png", ".hidden"):
        with pytest.raises(ValueError, match="plain name"):
            results.save("thing", {results.FILES: {bad: b""}}, root=tmp_path, machine=machine)


# ------------------------------------------------------------------ results rows

#: the fields of a row built from a Timing, before a chapter adds its own
TIMING_FIELDS = {"name", "timer", "first_call_s", "samples_s", "bytes", "flops", "batch",
                 "blocks", "median_s", "min_s", "max_s", "repeats", "gbs", "tflops",
                 "host_median_s", "launch_s", "launch_bound"}


def _timing(**kw):
    """Samples of 1, 2 and 4 ms: a median of 2 ms."""
    return bench.Timing("k", "cuda-events:cupy", 0.25, [0.004, 0.001, 0.002], **kw)


def test_row_carries_the_timing_rates_and_host_flags():
    t = _timing(bytes=6_000_000, flops=8e9, host_samples_s=[3e-4, 1e-4, 2e-4],
                blocks=False, launch_samples_s=[1.5e-3, 0.5e-3, 1e-3])
    r = bench.row(t)
    assert set(r) == TIMING_FIELDS
    assert r["name"] == "k" and r["timer"] == "cuda-events:cupy" and r["first_call_s"] == 0.25
    assert (r["median_s"], r["min_s"], r["max_s"], r["repeats"]) == (0.002, 0.001, 0.004, 3)
    assert r["gbs"] == pytest.approx(3.0) and r["tflops"] == pytest.approx(4.0)
    assert r["host_median_s"] == 2e-4 and r["launch_s"] == 1e-3 and r["blocks"] is False
    assert r["launch_bound"] is True                     # launching alone: half the event time
    assert {k: r[k] for k in bench.FLAGS} == t.flags()


def test_row_extra_fields_win_and_only_or_drop_select():
    t = _timing(bytes=6_000_000)
    r = bench.row(t, name="copy, stride 2", stride=2)
    assert r["name"] == "copy, stride 2" and r["stride"] == 2
    assert set(bench.row(t, drop=("samples_s", "first_call_s"))) == TIMING_FIELDS - {
        "samples_s", "first_call_s"}
    assert bench.row(t, only=("median_s", "gbs"), batch=8) == {
        "median_s": 0.002, "gbs": pytest.approx(3.0), "batch": 8}
    with pytest.raises(ValueError, match="tflop"):
        bench.row(t, only=("median_s", "tflop"))
    with pytest.raises(ValueError, match="sample_s"):
        bench.row(t, drop=("sample_s",))


def test_row_shares_of_its_roofs_in_percent_or_as_a_fraction():
    t = _timing(bytes=6_000_000, flops=8e9)
    roofs = {"pct_of_copy": bench.Roof("gbs", 4.0),
             "share_of_matmul": bench.Roof("tflops", 16.0, percent=False)}
    r = bench.row(t, roofs=roofs)
    assert r["pct_of_copy"] == pytest.approx(75.0)
    assert r["share_of_matmul"] == pytest.approx(0.25)
    # a rate given by the chapter replaces the timing's before the share is taken
    assert bench.row(t, roofs=roofs, gbs=2.0)["pct_of_copy"] == pytest.approx(50.0)


def test_items_per_second():
    r = bench.row(_timing(), per_s={"tokens_per_s": 8, "images_per_s": 1})
    assert r["tokens_per_s"] == pytest.approx(4000.0) and r["images_per_s"] == pytest.approx(500.0)
    r = bench.row(_timing(), per_s={"tokens_per_s": 8},
                  roofs={"pct_of_rate": bench.Roof("tokens_per_s", 8000.0)})
    assert r["pct_of_rate"] == pytest.approx(50.0)


def test_no_bytes_no_rate_no_share_and_an_unmeasured_roof_is_none():
    t = _timing(flops=8e9)                                 # FLOPs counted, bytes not
    r = bench.row(t, roofs={"pct_of_copy": bench.Roof("gbs", 4.0),
                            "pct_of_peak": bench.Roof("tflops", None)})
    assert r["gbs"] is None and "pct_of_copy" not in r
    assert "pct_of_peak" in r and r["pct_of_peak"] is None
    assert bench.Roof("gbs", 0.0).share(3.0) is None
    assert bench.shares({"gbs": 0.0}, {"pct_of_copy": bench.Roof("gbs", 4.0)}) == {
        "pct_of_copy": 0.0}
    assert bench.shares({"name": "x"}, {"pct_of_copy": bench.Roof("gbs", 4.0)}) == {}


def test_shares_after_the_rows_when_the_roof_is_measured_last():
    rows = [bench.row(_timing(bytes=b)) for b in (6_000_000, 3_000_000)]
    stride1 = {"fraction_of_stride1": bench.Roof("gbs", rows[0]["gbs"], percent=False)}
    for r in rows:
        r.update(bench.shares(r, stride1))
    assert [r["fraction_of_stride1"] for r in rows] == pytest.approx([1.0, 0.5])


def test_simulation_row_keeps_its_fields():
    from gpukit.simulation import measure
    t = _timing()
    r = measure._row("lbm", "box", "cpu", "8 x 8", 1000, t, roof_gbs=100.0, bytes_per=72,
                     flops_per=20, fp32_tflops=None)
    assert set(r) == TIMING_FIELDS | {
        "model", "backend", "size", "updates_per_call", "unit", "rate", "bytes_per_update",
        "roof_gbs", "pct_copy", "flops_per_update", "pct_fp32"}
    assert r["rate"] == pytest.approx(5e5) and r["gbs"] == pytest.approx(5e5 * 72 / 1e9)
    assert r["pct_copy"] == pytest.approx(100 * r["gbs"] / 100.0) and r["pct_fp32"] is None
    bare = measure._row("heat", "grid", "cpu", "8 x 8", 1000, t)
    assert set(bare) == TIMING_FIELDS | {"model", "backend", "size", "updates_per_call", "unit",
                                         "rate"}


def test_tensor_cores_row_is_one_call_of_a_replayed_graph():
    from gpukit.tensor_cores import measure
    t = _timing(flops=8e9, batch=10)
    r = measure._row(t, kernel="01-wmma", n=64)
    assert set(r) == {"kernel", "n", "median_s", "tflops", "first_call_s", *bench.FLAGS,
                      "timing"}
    assert r["median_s"] == pytest.approx(0.0002) and r["tflops"] == pytest.approx(4.0)
    assert r["timing"] == bench.row(t)


def test_llm_decode_shares_only_of_the_measured_ceilings():
    from gpukit.llm_inference import measure
    roofs = measure._roofs({"copy_gbs": 4.0})
    assert list(roofs) == ["share_of_copy"]
    r = bench.row(_timing(bytes=6_000_000, flops=8e9), only=measure.DECODE_FIELDS, roofs=roofs,
                  per_s={"tokens_per_s": 8})
    assert set(r) == {"median_s", "min_s", "max_s", "repeats", "gbs", "tflops", *bench.FLAGS,
                      "tokens_per_s", "share_of_copy"}
    assert r["share_of_copy"] == pytest.approx(0.75)


def test_vector_add_cpu_rows():
    from gpukit.vector_add import measure
    data = measure.vector_add_cpu(n=4096, repeat=2)
    ceiling, *rows = data["rows"]
    assert set(ceiling) == TIMING_FIELDS and ceiling["name"] == "host copy"
    for r in rows:
        assert set(r) == TIMING_FIELDS | {"backend", "max_rel_err", "pct_of_copy"}
        assert r["pct_of_copy"] == pytest.approx(100 * r["gbs"] / data["ceiling_gbs"])
