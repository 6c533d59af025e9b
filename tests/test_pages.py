"""Tables in the docs come from results files, and every marker in docs/ renders."""

import re

import pytest

from gpukit import device, pages, results
from tests.helpers import ROOT

MARKER = re.compile(r"<!--\s*results:([\w-]+):([\w-]+)\s*-->")
DATA_MARKER = re.compile(r"<!--\s*data:([\w-]+):([\w-]+)\s*-->")


def test_table_format():
    md = pages.table(["a", "b"], [[1, 2]])
    assert md.splitlines() == ["| a | b |", "| :-- | --: |", "| 1 | 2 |"]


def test_missing_results_raise(tmp_path):
    with pytest.raises(pages.MissingResults):
        pages.render("vector_add", "gpu", root=tmp_path)
    with pytest.raises(pages.MissingResults):
        pages.render("vector_add", "no-such-view", root=tmp_path)


def test_cpu_table_from_a_recorded_file(tmp_path):
    from gpukit.vector_add.measure import vector_add_cpu
    data = {"cpu": vector_add_cpu(n=10_000, repeat=2)}
    results.save("vector_add", data, root=tmp_path)
    md = pages.render("vector_add", "cpu", root=tmp_path)
    assert "numba parallel" in md and "Measured on" in md
    assert device.machine_record()["cpu"]["model"] in md
    with pytest.raises(pages.MissingResults):  # no GPU part recorded in this file
        pages.render("vector_add", "gpu", root=tmp_path)


def docs_markers():
    for page in sorted((ROOT / "docs").glob("*.md")):
        for m in MARKER.finditer(page.read_text()):
            yield page.name, m.group(1), m.group(2)


@pytest.mark.parametrize("page, name, view", list(docs_markers()))
def test_every_docs_marker_renders_from_committed_results(page, name, view):
    md = pages.render(name, view, root=ROOT / "results")
    assert "Measured on" in md


def data_markers():
    for page in sorted((ROOT / "docs").glob("*.md")):
        for m in DATA_MARKER.finditer(page.read_text()):
            yield page.name, m.group(1), m.group(2)


@pytest.mark.parametrize("page, name, view", list(data_markers()))
def test_every_docs_data_marker_renders(page, name, view):
    md = pages.render_data(name, view)
    assert "|" in md or "<figure" in md or "```" in md  # a table, figures or a code block


def test_fmt_ratio_keeps_small_ratios_readable():
    from gpukit.pages import fmt_ratio
    assert fmt_ratio(5.123) == "5.1x" and fmt_ratio(1234.5, 0) == "1,234x"
    assert fmt_ratio(0.0487) == "0.049x" and fmt_ratio(0.2, 2) == "0.2x"


@pytest.mark.parametrize("page, name, view", list(docs_markers()))
def test_every_view_shows_the_reference_machine(page, name, view):
    """Where the reference machine recorded a results file, every view of it on a page shows
    that machine's block: a view may leave a machine out only for a part it did not record."""
    ref = results.reference_machine()
    if not (ROOT / "results" / ref / f"{name}.json").exists():
        pytest.skip(f"{ref} has no {name}.json")
    md = pages.render(name, view, root=ROOT / "results")
    assert f"`results/{ref}/{name}.json`" in md


def test_a_view_skips_only_parts_not_recorded(tmp_path):
    machine = {**device.machine_record(), "slug": "gpu-box"}
    results.save("demo_strict", {"gpu": {"rows": [1, 2]}}, root=tmp_path, machine=machine)
    results.save("demo_strict", {"cpu": {"rows": [3]}}, root=tmp_path,
                 machine={**machine, "slug": "cpu-box"})

    @pages.renderer("demo_strict", "ok")
    def ok(slug, data):
        return f"rows {len(data['gpu']['rows'])}"        # the CPU file has no "gpu": skipped

    @pages.renderer("demo_strict", "typo")
    def typo(slug, data):
        return f"rows {len(data['gpu']['rowz'])}"        # a typo deeper down: never skipped

    try:
        md = pages.render("demo_strict", "ok", root=tmp_path)
        assert "rows 2" in md and "results/gpu-box/" in md and "cpu-box" not in md
        with pytest.raises(KeyError, match="rowz"):
            pages.render("demo_strict", "typo", root=tmp_path)
    finally:
        pages.RENDERERS.pop(("demo_strict", "ok"))
        pages.RENDERERS.pop(("demo_strict", "typo"))


def test_results_files_carry_schema_and_code(tmp_path):
    path = results.save("demo_stamp", {"part": {"n": 1}}, root=tmp_path)
    saved = results.load("demo_stamp", root=tmp_path)[path.parent.name]
    assert saved["schema"] == results.SCHEMA_VERSION
    assert saved["code"]["gpukit"] and set(saved["code"]) == {"gpukit", "commit", "dirty"}
    if (ROOT / ".git").exists():
        assert re.fullmatch(r"[0-9a-f]{40}", saved["code"]["commit"])
        assert isinstance(saved["code"]["dirty"], bool)
    md_caption = pages.caption(saved, path.parent.name, "demo_stamp")
    assert (saved["code"]["commit"] or "")[:7] in md_caption


def test_remeasuring_one_part_keeps_the_others_stamps(tmp_path):
    old = {**device.machine_record(), "date": "2020-01-01T00:00:00+00:00"}
    old["cuda"] = {"driver": "1.0"}
    results.save("demo_part", {"a": {"n": 1}, "b": {"n": 2}}, root=tmp_path, machine=old)
    new = {**old, "date": "2026-11-30T00:00:00+00:00", "cuda": {"driver": "2.0"}}
    results.save_part("demo_part", "b", {"n": 3}, root=tmp_path, machine=new)
    saved = results.load("demo_part", root=tmp_path)[old["slug"]]
    assert saved["machine"]["date"].startswith("2020") and saved["machine"]["cuda"]["driver"] == "1.0"
    assert saved["a"] == {"n": 1} and saved["b"] == {"n": 3}
    assert saved["stamps"]["b"]["machine"]["cuda"]["driver"] == "2.0"
    text = pages.caption(saved, old["slug"], "demo_part")
    assert "2020-01-01" in text and "part `b` re-measured 2026-11-30" in text
