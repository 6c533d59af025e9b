"""Stand-ins of the original photos: their size and weight, and the side-by-side timing."""


import pytest
from PIL import Image

pytest.importorskip("torch")

from gpukit import pages  # noqa: E402
from gpukit.cats_vs_dogs import originals  # noqa: E402
from tests.cats_vs_dogs_helpers import filtered_layout  # noqa: E402


def _render(data):
    import importlib
    importlib.import_module("gpukit.cats_vs_dogs.views")            # registers the renderers
    return pages.RENDERERS[(originals.NAME, "table")]("test", data)


def test_standins_have_the_long_side_and_the_mean_bytes_asked(tmp_path):
    src = filtered_layout(tmp_path / "small", n_train=4, n_val=2)       # 40 x 30 photos
    (src / "train" / "cats" / "broken.jpg").write_bytes(b"")            # unreadable: kept as is
    facts = originals.make_standins(src, tmp_path / "big", long_side=200, target_bytes=6000)
    big = sorted((tmp_path / "big").rglob("*.jpg"))
    assert [p.relative_to(tmp_path / "big") for p in big] == \
        [p.relative_to(src) for p in sorted(src.rglob("*.jpg"))]
    assert (tmp_path / "big" / "train" / "cats" / "broken.jpg").stat().st_size == 0
    sizes = {Image.open(p).size for p in big if p.stat().st_size}
    assert sizes == {(200, 150)} and facts["median_px"] == [200, 150]
    readable = [p for p in big if p.stat().st_size]
    mean = sum(p.stat().st_size for p in readable) / len(readable)
    assert abs(mean - 6000) < 0.15 * 6000, (facts["quality"], mean)
    # asked for exactly the mean size of quality 50, the bisection finds a quality of that
    # size (a neighbour can give the same bytes: the photos are random, seeded by hash())
    import io
    cats = [str(p) for p in sorted(src.rglob("cat.*.jpg"))]
    sizes = []
    for p in cats:
        buf = io.BytesIO()
        originals._enlarged(Image.open(p).convert("RGB"), 200).save(buf, format="JPEG", quality=50)
        sizes.append(buf.tell())
    target = sum(sizes) / len(sizes)
    q, got = originals.quality_for_bytes(cats, target, 200)
    assert abs(got - target) <= 0.01 * target and abs(q - 50) <= 3, (q, got, target)


def test_originals_benchmark_times_both_folders_and_the_page_shows_them(tmp_path):
    src = filtered_layout(tmp_path / "data")
    data = originals.run(1, data_dir=str(src), quick=True)
    o = data["originals"]
    shrunk, standins = o["rows"]
    assert shrunk["median_px"] == [40, 30] and standins["median_px"] == [500, 375]
    assert shrunk["photos"] == standins["photos"] == 36
    for r in (shrunk, standins):
        assert len(r["runs"]) == 1 and r["median_s"] == r["runs"][0]["time_to_model_s"] > 0
        assert r["decode"]["n"] == 36 and r["decode"]["images_per_s"] > 0
    md = _render({"machine": {"gpu": {"name": "NVIDIA Test GPU"}}, **data})
    assert "| their stand-ins | **" in md and "| 500 x 375 |" in md and "Quick run" in md


def _record(shrunk_s=(17.0, 18.0), big_s=(20.0, 21.0)):
    def row(folder, name, px, times):
        runs = [{"time_to_model_s": t, "phases": {"import torch": 2.9},
                 "decoding": {"how": "16 processes", "seconds": 3.0 + (folder == "standins") * 3,
                              "waited_s": 0.1}} for t in times]
        return {"name": name, "folder": folder, "median_px": px, "photos": 3000,
                "bytes": 3000 * (9000 if folder == "shrunk" else 22500), "median_s": sum(times) / 2,
                "decode": {"images_per_s": 1000.0 if folder == "shrunk" else 500.0}, "runs": runs}
    return {"machine": {"gpu": {"name": "NVIDIA Test GPU"}},
            "originals": {"long_side": 500, "quality": 77, "target_bytes": 22000, "quick": False,
                          "rows": [row("shrunk", "the photos as given", [203, 160], shrunk_s),
                                   row("standins", "their stand-ins", [500, 386], big_s)]}}


def test_originals_table_gives_the_gap_with_its_sign():
    md = _render(_record())
    assert "| their stand-ins | **20.00 s to 21.00 s** | 500 x 386 | 22.5 KB | 500 | 6.00 s | 2.90 s |" in md
    assert "takes 2.0x as long on the stand-ins" in md and "waited 100.00 ms for them" in md
    assert "20.50 s on the stand-ins against 17.50 s on the shrunk copy (+3.00 s, +17 %)" in md
    assert "do not overlap" in md
    faster = _render(_record(big_s=(16.0, 17.5)))
    assert "(-750.00 ms, -4 %)" in faster and "Quick run" not in faster
    assert "spread over 1.50 s: the ranges overlap, so 2 runs a folder measure no difference" in faster
