"""The site's diagrams: the hand-drawn SVG files, and the two drawn from results files.

An SVG under docs/assets/diagrams/ must be well-formed, accessible (a title and a description),
self-contained (no outside reference), readable on the dark theme (a light panel behind it) and
shown on some page. The memory hierarchy and the vector add timeline are views: they render
from the committed results and show nothing for a machine that did not record their parts.
"""

import json
import re
import xml.etree.ElementTree as ET

import pytest

from gpukit import device, pages, results
from gpukit.gpu_anatomy.diagrams import hierarchy
from gpukit.vector_add.diagrams import timeline
from tests.helpers import ROOT

SVG_NS = "{http://www.w3.org/2000/svg}"
DIAGRAMS = sorted((ROOT / "docs" / "assets" / "diagrams").glob("*.svg"))
REF = ROOT / "results" / "nvidia-h200"


def test_there_are_diagrams():
    names = {p.name for p in DIAGRAMS}
    assert {"grid-indexing.svg", "sm.svg", "coalescing.svg", "launch-timeline.svg"} <= names


@pytest.mark.parametrize("path", DIAGRAMS, ids=lambda p: p.name)
def test_diagram_is_well_formed_and_titled(path):
    root = ET.parse(path).getroot()
    assert root.tag == f"{SVG_NS}svg"
    assert root.get("viewBox"), "a viewBox lets the image scale to the column"
    title, desc = root.find(f"{SVG_NS}title"), root.find(f"{SVG_NS}desc")
    assert title is not None and title.text and title.text.strip()
    assert desc is not None and desc.text and len(desc.text.split()) >= 10


@pytest.mark.parametrize("path", DIAGRAMS, ids=lambda p: p.name)
def test_diagram_makes_no_outside_request(path):
    root = ET.parse(path).getroot()
    for el in root.iter():
        for name, value in el.attrib.items():
            if name.split("}")[-1] in ("href", "src"):
                assert not value.startswith(("http:", "https:", "//")), (el.tag, value)
                assert value.startswith("#"), f"{el.tag} refers to {value}: only in-file references"
        assert el.tag not in (f"{SVG_NS}image", f"{SVG_NS}foreignObject", f"{SVG_NS}script")
    text = path.read_text(encoding="utf-8")
    assert "@import" not in text and "@font-face" not in text
    assert not re.search(r"url\(\s*['\"]?(?!#)", text), "url() may only point inside the file"


@pytest.mark.parametrize("path", DIAGRAMS, ids=lambda p: p.name)
def test_diagram_has_a_light_panel_for_the_dark_theme(path):
    root = ET.parse(path).getroot()
    panel = next(el for el in root if el.tag == f"{SVG_NS}rect")
    _, _, width, height = (float(v) for v in root.get("viewBox").split())
    assert float(panel.get("width")) >= width - 4 and float(panel.get("height")) >= height - 4
    assert panel.get("fill", "").lower() in ("#fff", "#ffffff", "white")


@pytest.mark.parametrize("path", DIAGRAMS, ids=lambda p: p.name)
def test_diagram_is_shown_on_a_page(path):
    ref = f"assets/diagrams/{path.name}"
    assert any(ref in page.read_text(encoding="utf-8") for page in (ROOT / "docs").glob("*.md")), \
        f"no page under docs/ shows {ref}"


def test_sm_diagram_numbers_are_the_device_query():
    """The SM diagram types the H200's device query; it must say what the recorded query says."""
    g = json.loads((REF / "doctor.json").read_text())["machine"]["gpu"]
    text = (ROOT / "docs" / "assets" / "diagrams" / "sm.svg").read_text(encoding="utf-8")
    for value in (f"{g['multiprocessors']}", f"{g['registers_per_multiprocessor']:,}",
                  f"{g['max_threads_per_multiprocessor']:,}", f"{g['max_warps_per_multiprocessor']}",
                  f"{g['max_blocks_per_multiprocessor']}",
                  f"{g['shared_memory_per_multiprocessor_bytes'] // 1024} KiB",
                  f"{g['l2_cache_bytes'] // 2**20} MiB", f"{g['memory_bytes'] / 2**30:.0f} GiB"):
        assert f">{value}<" in text, value


# ------------------------------------------------------------------ the views drawn from results

def test_views_are_registered_under_their_results_files():
    assert pages.RENDERERS[("gpu_anatomy", "hierarchy")] is hierarchy
    assert pages.RENDERERS[("vector_add", "timeline")] is timeline


def test_hierarchy_renders_the_committed_numbers():
    md = pages.render("gpu_anatomy", "hierarchy", root=ROOT / "results")
    assert "<svg" in md and "`results/nvidia-h200/gpu_anatomy.json`" in md
    assert "vector_add.json" in md and "timing.json" in md        # where the bandwidths come from
    assert "cpu-amd-epyc" not in md                               # no GPU there: no hierarchy


def test_hierarchy_levels_come_from_the_results_files():
    from gpukit.gpu_anatomy.diagrams import NOT_MEASURED, levels
    data = json.loads((REF / "gpu_anatomy.json").read_text())
    rows = {r["name"]: r for r in levels("nvidia-h200", pages.Record(data))}
    l2 = next(r for r in data["latency"]["rows"] if "L2" in r["name"])
    memory = next(r for r in data["latency"]["rows"] if "device memory" in r["name"])
    assert rows["L2 cache"]["latency"].startswith(f"{l2['latency_ns']:,.0f} ns")
    assert rows["device memory"]["latency"].startswith(f"{memory['latency_ns']:,.0f} ns")
    assert rows["registers"]["latency"] == NOT_MEASURED          # nothing measured a register
    copy = json.loads((REF / "vector_add.json").read_text())["gpu"]["ceiling_gbs"]
    assert f"{copy:,.0f} GB/s device copy" in rows["device memory"]["bandwidth"]
    hot = json.loads((REF / "timing.json").read_text())["cache"]["hot_cold"][0]
    assert f"{hot['hot_gbs']:,.0f} GB/s" in rows["L2 cache"]["bandwidth"]


def test_hierarchy_says_not_measured_without_the_other_files(tmp_path, monkeypatch):
    """Only gpu_anatomy.json recorded on this machine: the L2 and PCIe bandwidths are not measured."""
    from gpukit.gpu_anatomy.diagrams import NOT_MEASURED, levels
    data = json.loads((REF / "gpu_anatomy.json").read_text())
    machine = {**data["machine"], "slug": "gpu-box"}
    results.save("gpu_anatomy", {k: data[k] for k in ("host", "latency", "occupancy")},
                 root=tmp_path, machine=machine)
    monkeypatch.setenv("GPUKIT_RESULTS_DIR", str(tmp_path))
    saved = results.load("gpu_anatomy", root=tmp_path)["gpu-box"]
    rows = {r["name"]: r for r in levels("gpu-box", pages.Record(saved))}
    assert rows["L2 cache"]["bandwidth"] == NOT_MEASURED
    assert "device copy" not in rows["device memory"]["bandwidth"]
    assert "best read" in rows["device memory"]["bandwidth"]     # the occupancy sweep is there
    md = pages.render("gpu_anatomy", "hierarchy", root=tmp_path)
    assert "<svg" in md and "Bandwidths also from" not in md


def test_hierarchy_shows_nothing_for_a_cpu_only_machine(tmp_path, monkeypatch):
    data = json.loads((ROOT / "results" / "nvidia-h200" / "gpu_anatomy.json").read_text())
    results.save("gpu_anatomy", {"host": data["host"]}, root=tmp_path,
                 machine={**device.machine_record(), "gpu": None, "slug": "cpu-box"})
    monkeypatch.setenv("GPUKIT_RESULTS_DIR", str(tmp_path))
    with pytest.raises(pages.MissingResults):
        pages.render("gpu_anatomy", "hierarchy", root=tmp_path)
    view = pages.RENDERERS[("gpu_anatomy", "hierarchy")]
    with pytest.raises(pages.NotRecorded):
        view("cpu-box", pages.Record(results.load("gpu_anatomy", root=tmp_path)["cpu-box"]))


def test_timeline_renders_the_committed_copies():
    md = pages.render("vector_add", "timeline", root=ROOT / "results")
    assert "<svg" in md and "`results/nvidia-h200/vector_add.json`" in md
    assert "cpu-amd-epyc" not in md


def test_timeline_steps_are_the_measured_medians():
    from gpukit.vector_add.diagrams import steps
    g = json.loads((REF / "vector_add.json").read_text())["gpu"]
    lanes = steps({"gpu": g})
    copies = {c["name"]: c["median_s"] for c in g["copies"]}
    kernel = min(r["median_s"] for r in g["rows"] if r.get("backend"))
    for memory, lane in lanes.items():
        assert [s for s, _, _ in lane] == ["copy in", "copy in", "add", "copy out"]
        assert [t for _, _, t in lane] == [copies[f"host to device, {memory}"]] * 2 + \
            [kernel, copies[f"device to host, {memory}"]]
    assert set(lanes) == {"pinned", "pageable"}


def test_timeline_shows_nothing_for_a_cpu_only_machine(tmp_path):
    from gpukit.vector_add.measure import vector_add_cpu
    results.save("vector_add", {"cpu": vector_add_cpu(n=10_000, repeat=2)}, root=tmp_path)
    with pytest.raises(pages.MissingResults):
        pages.render("vector_add", "timeline", root=tmp_path)


def test_timeline_needs_both_copies_of_a_kind():
    from gpukit.vector_add.diagrams import steps
    g = json.loads((REF / "vector_add.json").read_text())["gpu"]
    only_pinned = {**g, "copies": [c for c in g["copies"] if c["name"].endswith("pinned")]}
    assert set(steps({"gpu": only_pinned})) == {"pinned"}
    with pytest.raises(pages.NotRecorded):
        steps({"gpu": {**g, "copies": []}})


@pytest.mark.parametrize("name", ["sm.svg", "coalescing.svg", "grid-indexing.svg"])
def test_diagram_reads_on_a_phone(name):
    """At most 420 units wide and no text below 14 units: on a 390 px phone, 11 px or more."""
    root = ET.parse(ROOT / "docs" / "assets" / "diagrams" / name).getroot()
    _, _, width, _ = (float(v) for v in root.get("viewBox").split())
    assert width <= 420
    sizes = [float(el.get("font-size")) for el in root.iter(f"{SVG_NS}text")]
    assert sizes and all(el.get("font-size") for el in root.iter(f"{SVG_NS}text"))
    assert min(sizes) >= 14
