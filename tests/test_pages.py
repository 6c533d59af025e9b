"""Tables in the docs come from results files, and every marker in docs/ renders."""

import re
import types

import pytest
import yaml

from gpukit import device, pages, results
from tests.helpers import ROOT, page_source

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
    """Every marker renders from the committed results, and where the reference machine
    recorded a results file, the view shows that machine's block: a view may leave a machine
    out only for a part it did not record."""
    md = pages.render(name, view, root=ROOT / "results")
    assert "Measured on" in md
    ref = results.reference_machine()
    if (ROOT / "results" / ref / f"{name}.json").exists():
        assert f"`results/{ref}/{name}.json`" in md


def data_markers():
    for page in sorted((ROOT / "docs").glob("*.md")):
        for m in DATA_MARKER.finditer(page.read_text()):
            yield page.name, m.group(1), m.group(2)


@pytest.mark.parametrize("page, name, view", list(data_markers()))
def test_every_docs_data_marker_renders(page, name, view):
    md = pages.render_data(name, view)
    if view == "card":                       # the view's takeaways under the page's own lines
        md = pages.card(page_source(ROOT / "docs" / page)[0], md, page=page)
    # a table, figures, a code block, or a chapter's card
    assert ("|" in md or "<figure" in md or "```" in md or 'class="gpukit-plot"' in md
            or md.startswith("!!! abstract gpukit-card"))      # a table, figures, code, a plot or a card


def test_fmt_ratio_keeps_small_ratios_readable():
    from gpukit.pages import fmt_ratio
    assert fmt_ratio(5.123) == "5.1x" and fmt_ratio(1234.5, 0) == "1,234x"
    assert fmt_ratio(0.0487) == "0.049x" and fmt_ratio(0.2, 2) == "0.2x"


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


def test_the_reference_machine_comes_first_and_the_others_collapsed(tmp_path, monkeypatch):
    machine = {**device.machine_record(), "slug": "cpu-box"}
    results.save("demo_order", {"rows": [1]}, root=tmp_path, machine=machine)
    results.save("demo_order", {"rows": [1, 2]}, root=tmp_path, machine={**machine, "slug": "ref-box"})
    monkeypatch.setenv("GPUKIT_REFERENCE", "ref-box")

    @pages.renderer("demo_order", "rows")
    def rows(slug, data):
        return f"rows {len(data['rows'])}"

    try:
        md = pages.render("demo_order", "rows", root=tmp_path)
    finally:
        pages.RENDERERS.pop(("demo_order", "rows"))
    ref, other = md.index("rows 2"), md.index("rows 1")
    assert ref < md.index("`results/ref-box/") < other < md.index("`results/cpu-box/")
    assert "<details" not in md[:ref]                       # the reference machine's block is open
    box = md[md.index("<details"):]
    assert box.startswith('<details class="note" markdown="1">\n<summary>Also measured on ')
    assert pages.machine_title(results.load("demo_order", root=tmp_path)["cpu-box"]) in box
    assert "rows 1" in box and box.rstrip().endswith("</details>")


def test_a_card_shows_the_reference_machine_only(tmp_path, monkeypatch):
    machine = device.machine_record()
    for slug in ("ref-box", "other-box"):
        results.save("demo_card", {"n": 3}, root=tmp_path, machine={**machine, "slug": slug})
    monkeypatch.setenv("GPUKIT_REFERENCE", "ref-box")

    @pages.card_renderer("demo_card")
    def card(data):
        return pages.takeaways([f"{data['n']} takeaways"], source="measured here")

    meta = {"learn": ["one thing"], "needs": ["why_gpus", "[Installing CUDA](installing-cuda.md)"]}
    try:
        md = pages.card(meta, pages.render("demo_card", "card", root=tmp_path))
    finally:
        pages.RENDERERS.pop(("demo_card", "card"))
    assert md.startswith('!!! abstract gpukit-card "In this chapter"')
    assert "other-box" not in md and "<details" not in md
    assert "[Why CPUs alone are not enough](why-gpus.md), [Installing CUDA](installing-cuda.md)" in md
    assert pages.READING_TIME in md and "    1. 3 takeaways" in md
    caption = md.splitlines()[-1]                           # the caption sits inside the box
    assert caption.startswith("    <small>Measured on") and "`results/ref-box/demo_card.json`" in caption


def docs_cards():
    for page in sorted((ROOT / "docs").glob("*.md")):
        m = re.search(r"<!--\s*(results|data):([\w-]+):card\s*-->", page.read_text())
        if m:
            yield page.name, m.group(1), m.group(2)


@pytest.mark.parametrize("page", sorted(p.name for p in (ROOT / "docs").glob("*.md")))
def test_the_tests_read_a_page_as_mkdocs_does(page):
    """The page tests read front matter without MkDocs (the GPU machine has none); where MkDocs
    is installed, what they read must be what the build reads."""
    get_data = pytest.importorskip("mkdocs.utils.meta").get_data
    markdown, meta = get_data((ROOT / "docs" / page).read_text(encoding="utf-8"))
    assert page_source(ROOT / "docs" / page) == (meta, markdown)


def test_a_page_without_front_matter_reads_as_it_is(tmp_path):
    (tmp_path / "a.md").write_text("# A\n\ntext\n")
    (tmp_path / "b.md").write_text("---\nlearn: [one]\n---\n\n# B\n")
    (tmp_path / "c.md").write_text("---\n- a list, not a mapping\n---\n# C\n")
    assert page_source(tmp_path / "a.md") == ({}, "# A\n\ntext\n")
    assert page_source(tmp_path / "b.md") == ({"learn": ["one"]}, "# B\n")
    assert page_source(tmp_path / "c.md")[0] == {}


#: the chapters a reader goes through, each opening with a card
def test_every_chapter_has_a_card_under_its_title():
    import importlib.util
    with_card = {page for page, _, _ in docs_cards()}
    with_module = {c.page for c in results.CHAPTERS
                   if importlib.util.find_spec(c.package) and importlib.util.find_spec(f"{c.package}.card")}
    numbered = {c.page for c in results.CHAPTERS if c.numbered}
    assert numbered <= with_card and with_card == with_module, sorted(numbered - with_card)
    for page in with_card:
        lines = [line for line in page_source(ROOT / "docs" / page)[1].splitlines() if line.strip()]
        assert lines[0].startswith("# ") and re.fullmatch(r"<!-- (results|data):\w+:card -->", lines[1]), page


@pytest.mark.parametrize("page, kind, name", list(docs_cards()))
def test_every_card_says_what_to_learn_and_three_takeaways(page, kind, name):
    """The page's front matter (what to learn, what to read first, the level) and the card
    view's takeaways make the card."""
    meta = page_source(ROOT / "docs" / page)[0]
    md = pages.card(meta, pages.render_data(name, "card") if kind == "data"
                    else pages.render(name, "card", root=ROOT / "results"), page=page)
    body = md.split("**Takeaways**")
    assert len(body) == 2 and "**You will learn**" in body[0] and pages.READING_TIME in body[0]
    learn = [line for line in body[0].splitlines() if line.startswith("    - ")]
    takeaways = [line for line in body[1].splitlines() if line.startswith("    1. ")]
    assert 3 <= len(learn) <= 4 and len(takeaways) == 3, md
    assert all(re.search(r"\d", t) for t in takeaways)     # each takeaway carries a number
    for link in re.findall(r"\]\(([\w-]+\.md)\)", body[0]):
        assert (ROOT / "docs" / link).exists(), link


def _hook():
    """The site's build hook (docs/_hooks/results.py), imported as a module."""
    import importlib.util
    pytest.importorskip("mkdocs")
    spec = importlib.util.spec_from_file_location("gpukit_site_hook", ROOT / "docs" / "_hooks" / "results.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_build_puts_a_card_together_from_the_front_matter_and_the_takeaways(monkeypatch):
    hook = _hook()
    block = pages.Block("ref", "GPU R", pages.takeaways(["it ran 3x faster"], source="measured on R"),
                        "<small>Measured on R1. Source: `results/ref/a.json`.</small>",
                        "results/ref/a.json")
    monkeypatch.setattr(hook.pages, "render_blocks", lambda name, view: [block])
    meta = {"learn": ["one thing", "another"], "needs": ["timing"], "level": "advanced"}
    page = types.SimpleNamespace(file=types.SimpleNamespace(src_uri="demo.md"), meta=meta)
    out = hook.on_page_markdown("# Demo\n\n<!-- results:a:card -->\n\nText.\n", page,
                                {"extra": {"repo_url": None}}, None)
    card = out[out.index("!!! abstract gpukit-card"):out.index("Text.")]
    assert card.rstrip() == pages.card(meta, block.body).replace(
        pages.READING_TIME, f"about {hook.MINUTES['demo.md']} min").rstrip()
    assert "    - another\n" in card and "**Level:** advanced." in card
    assert "[Timing GPU code honestly](timing.md)" in card and "    1. it ran 3x faster" in card
    # a page's source read as it is (front matter included, no page.meta) gives the same page
    source = "---\n" + yaml.safe_dump(meta) + "---\n# Demo\n\n<!-- results:a:card -->\n\nText.\n"
    bare = types.SimpleNamespace(file=page.file)
    assert hook.on_page_markdown(source, bare, {"extra": {"repo_url": None}}, None) == out


@pytest.mark.parametrize("meta, marker, error", [
    ({}, True, "needs `learn:`"),
    ({"learn": ["one thing"]}, True, "needs `needs:`"),
    ({"learn": "one thing", "needs": ["timing"]}, True, "needs `learn:`, a list"),
    ({"learn": ["one thing"], "needs": ["timing"], "level": "expert"}, True, "level 'expert'"),
    ({"learn": ["one thing"], "needs": ["timng"]}, True, "names no chapter 'timng'"),
    ({"learn": ["one thing"], "needs": ["timing"]}, False, "no card marker"),
    ({"level": "advanced"}, False, "`level:` for a card, but the page has no card marker"),
])
def test_a_card_and_its_front_matter_come_together_or_the_build_fails(meta, marker, error):
    """A card marker without its lines in the front matter, or those lines without a marker,
    stop the build with one error that names the page, before any view is rendered."""
    hook = _hook()                                        # skips where MkDocs is not installed
    from mkdocs.exceptions import PluginError
    page = types.SimpleNamespace(file=types.SimpleNamespace(src_uri="demo.md"), meta=meta)
    md = "# Demo\n\n" + ("<!-- data:no_such_data:card -->\n" if marker else "Text.\n")
    with pytest.raises(PluginError, match=re.escape(error)) as caught:
        hook.on_page_markdown(md, page, {"extra": {"repo_url": None}}, None)
    assert str(caught.value).startswith("demo.md: ")


def test_markers_inside_a_block_get_their_text_indented():
    hook = _hook()
    md = "??? question \"Open questions\"\n\n    <!-- results:a:x -->\n\nafter\n<!-- results:b:y -->\n"
    out = hook.substitute_markers(md, lambda m: f"- {m.group(2)} one\n- {m.group(2)} two")
    assert "    - a one\n    - a two\n" in out                  # inside the admonition
    assert "\n- b one\n- b two\n" in out                        # at the margin, as it was


def test_a_page_gets_one_footer_and_one_appendix(tmp_path, monkeypatch):
    """The reference machine's block stands where its marker is; every caption goes into one
    footer linking the results files; other machines' blocks into one collapsed appendix."""
    hook = _hook()
    blocks = {
        ("a", "x"): [pages.Block("ref", "GPU R", "[a:x on R]", "<small>Measured on R1. Source: `results/ref/a.json`.</small>",
                                 "results/ref/a.json"),
                     pages.Block("cpu", "CPU C", "[a:x on C]", "<small>Measured on C1. Source: `results/cpu/a.json`.</small>",
                                 "results/cpu/a.json")],
        ("a", "y"): [pages.Block("ref", "GPU R", "[a:y on R]", "<small>Measured on R1. Source: `results/ref/a.json`.</small>",
                                 "results/ref/a.json")],
    }
    monkeypatch.setattr(hook.pages, "render_blocks", lambda name, view: blocks[(name, view)])
    page = types.SimpleNamespace(file=types.SimpleNamespace(src_uri="demo.md"))
    md = "# Demo\n\n## First\n\n<!-- results:a:x -->\n\n## Second\n\n<!-- results:a:y -->\n"
    out = hook.on_page_markdown(md, page, {"extra": {"repo_url": None}}, None)
    assert out.index("[a:x on R]") < out.index("## Second") < out.index("[a:y on R]")
    body = out[:out.index('class="gpukit-appendix"')]
    assert "Measured on" not in body and "<small>" not in out              # no caption in the text
    footer = out[out.index('class="gpukit-provenance"'):]
    assert footer.count("[`results/ref/a.json`](results/ref/a.json): R1") == 1  # said once
    assert "[`results/cpu/a.json`](results/cpu/a.json): C1" in footer and "scorecard.md" in footer
    appendix = out[out.index('class="gpukit-appendix"'):out.index('class="gpukit-provenance"')]
    assert "Measured on CPU C (1 result)" in appendix and "**First**" in appendix and "[a:x on C]" in appendix
    assert "[a:x on C]" not in out[:out.index('class="gpukit-appendix"')]


def test_reading_time_counts_what_is_shown_open():
    hook = _hook()
    prose = " ".join(["word"] * 400)
    assert hook.reading_minutes(prose) == 2 and hook.reading_minutes("one word") == 1
    code = "```python\n" + "x = 1\n" * 48 + "```\n"                    # 48 lines: 4 minutes
    assert hook.reading_minutes(prose + "\n\n" + code) == 6
    table = "| a | b |\n| -- | -- |\n" + "| word word word word | word word word word |\n" * 60
    assert hook.reading_minutes(prose + "\n\n" + table) == 6             # 480 words at 120 a minute
    folded = ('<details class="note" markdown="1">' + "other " * 3000 + "</details>\n"
              + "??? question \"Open\"\n\n    " + "hidden " * 2000 + "\n")
    assert hook.reading_minutes(prose + "\n\n" + folded) == 2            # collapsed: not counted


def test_long_logs_keep_their_first_and_last_lines():
    hook = _hook()
    log = "\n".join(f"epoch {i}" for i in range(1, 251)) + "\nsummary\n"
    out = hook.trim_log(log, "results/x/notebooks/y.ipynb")
    lines = out.splitlines()
    assert lines[:hook.LOG_HEAD] == log.splitlines()[:hook.LOG_HEAD]
    assert lines[-hook.LOG_TAIL:] == log.splitlines()[-hook.LOG_TAIL:] and lines[-1] == "summary"
    hidden = 251 - hook.LOG_HEAD - hook.LOG_TAIL
    assert f"... {hidden} lines not shown" in lines[hook.LOG_HEAD] and "y.ipynb" in lines[hook.LOG_HEAD]
    short = "\n".join(f"line {i}" for i in range(20))
    assert hook.trim_log(short, "x") == short                       # short outputs stay whole
    colored = log.replace("epoch 5", '<span class="ansi-red-fg">epoch 5</span>')
    assert hook.trim_log(colored, "x") == colored                   # markup is never cut


def test_a_plot_a_phone_cannot_read_is_refused():
    fig, ax = pages.figure()
    ax.plot([1, 2], [1, 2])
    assert pages.svg(fig).startswith('<div class="gpukit-plot"')           # a plain plot passes
    fig, ax = pages.figure()
    ax.text(0.5, 0.5, "tiny", fontsize=8)
    with pytest.raises(pages.FigureError, match="pt"):
        pages.svg(fig)
    fig, ax = pages.figure()
    ax.text(0.5, 0.5, "one label")
    ax.text(0.5, 0.5, "another")
    with pytest.raises(pages.FigureError, match="overlap"):
        pages.svg(fig)
    fig, ax = pages.figure()
    ax.set_ylabel("a label far outside the axes", labelpad=200)
    with pytest.raises(pages.FigureError, match="wide"):
        pages.svg(fig)
    import matplotlib.pyplot as plt
    wide = plt.figure(figsize=(8, 3))
    wide.add_subplot().plot([1, 2])
    with pytest.raises(pages.FigureError, match="8.0 in wide"):
        pages.svg(wide)


def test_a_long_command_is_wrapped_within_88_columns():
    words = ["gpukit", "train"] + [f"--option-{i} value-{i}" for i in range(20)]
    block = pages.command_block(words)
    lines = block.splitlines()[1:-1]
    assert lines[0].startswith("$ gpukit train") and all(len(line) <= 88 for line in lines)
    assert all(line.endswith(" \\") for line in lines[:-1]) and len(lines) > 2
    assert " ".join(line.rstrip(" \\").strip() for line in lines).lstrip("$ ") == " ".join(words)
