"""Tables in the docs come from results files, and every marker in docs/ renders."""

import re

import pytest

from gpukit import bench, device, report
from tests.helpers import ROOT

MARKER = re.compile(r"<!--\s*results:([\w-]+):([\w-]+)\s*-->")
DATA_MARKER = re.compile(r"<!--\s*data:([\w-]+):([\w-]+)\s*-->")


def test_table_format():
    md = report.table(["a", "b"], [[1, 2]])
    assert md.splitlines() == ["| a | b |", "| :-- | --: |", "| 1 | 2 |"]


def test_missing_results_raise(tmp_path):
    with pytest.raises(report.MissingResults):
        report.render("vector_add", "gpu", root=tmp_path)
    with pytest.raises(report.MissingResults):
        report.render("vector_add", "no-such-view", root=tmp_path)


def test_cpu_table_from_a_recorded_file(tmp_path):
    from gpukit.benchmarks import vector_add_cpu
    data = {"cpu": vector_add_cpu(n=10_000, repeat=2)}
    bench.save("vector_add", data, root=tmp_path)
    md = report.render("vector_add", "cpu", root=tmp_path)
    assert "numba parallel" in md and "Measured on" in md
    assert device.machine_record()["cpu"]["model"] in md
    with pytest.raises(report.MissingResults):  # no GPU part recorded in this file
        report.render("vector_add", "gpu", root=tmp_path)


def docs_markers():
    for page in sorted((ROOT / "docs").glob("*.md")):
        for m in MARKER.finditer(page.read_text()):
            yield page.name, m.group(1), m.group(2)


@pytest.mark.parametrize("page, name, view", list(docs_markers()))
def test_every_docs_marker_renders_from_committed_results(page, name, view):
    md = report.render(name, view, root=ROOT / "results")
    assert "Measured on" in md


def data_markers():
    for page in sorted((ROOT / "docs").glob("*.md")):
        for m in DATA_MARKER.finditer(page.read_text()):
            yield page.name, m.group(1), m.group(2)


@pytest.mark.parametrize("page, name, view", list(data_markers()))
def test_every_docs_data_marker_renders(page, name, view):
    md = report.render_data(name, view)
    assert "|" in md or "<figure" in md or "```" in md  # a table, figures or a code block


def test_fmt_ratio_keeps_small_ratios_readable():
    from gpukit.report import fmt_ratio
    assert fmt_ratio(5.123) == "5.1x" and fmt_ratio(1234.5, 0) == "1,234x"
    assert fmt_ratio(0.0487) == "0.049x" and fmt_ratio(0.2, 2) == "0.2x"
