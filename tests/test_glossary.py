"""The glossary page and the read-next page: the terms are there, every link into the glossary
lands on an entry, each entry points at a section that exists, and every measured number under
an entry renders from the committed results, once, for the reference machine."""

import json
import re

import pytest

from gpukit import pages, results
from tests.helpers import ROOT

DOCS = ROOT / "docs"
GLOSSARY = DOCS / "glossary.md"
#: the terms the glossary must define (entry ids)
REQUIRED = {
    "sm", "warp", "thread-block", "grid", "occupancy", "latency-hiding", "coalescing",
    "bank-conflict", "divergence", "roofline", "arithmetic-intensity", "tensor-core", "stream",
    "pinned-memory", "l2", "hbm", "kernel-launch", "jit", "ptx-and-sass", "cuda-event",
    "host-and-device", "grid-stride-loop", "littles-law", "fp32-peak", "memory-bound", "cublas",
    "kernel-cache",
}
ENTRY = re.compile(r"^## (.+?) \{#([\w-]+)\}\s*$", re.M)
LINK = re.compile(r"\]\(([\w-]+\.md)(?:#([\w-]+))?\)")
MARKER = re.compile(r"<!--\s*results:([\w-]+):([\w-]+)\s*-->")


def entries() -> dict[str, str]:
    """Entry id -> the entry's text (up to the next entry)."""
    text = GLOSSARY.read_text(encoding="utf-8")
    found = list(ENTRY.finditer(text))
    return {m.group(2): text[m.end():found[i + 1].start() if i + 1 < len(found) else len(text)]
            for i, m in enumerate(found)}


def anchors(page: str) -> set[str]:
    """The ids of a page's headings, as the site's Markdown gives them."""
    from markdown.extensions.toc import slugify
    text = (DOCS / page).read_text(encoding="utf-8")
    text = re.sub(r"^(```|~~~).*?^\1", "", text, flags=re.M | re.S)      # no headings in code
    ids = set()
    for m in re.finditer(r"^#{1,6} (.+?)\s*$", text, re.M):
        title = m.group(1)
        explicit = re.search(r"\{#([\w-]+)\}$", title)
        ids.add(explicit.group(1) if explicit else slugify(re.sub(r"[`*]", "", title), "-"))
    # an id set by attribute on a paragraph or a picture: ``{ #name }`` on a line of its own
    ids |= set(re.findall(r"^\{ ?#([\w-]+) ?\}\s*$", text, re.M))
    return ids


def test_glossary_defines_the_terms():
    missing = REQUIRED - set(entries())
    assert not missing, f"no glossary entry for {sorted(missing)}"


def test_entries_are_in_alphabetical_order():
    names = [m.group(1).lower() for m in ENTRY.finditer(GLOSSARY.read_text(encoding="utf-8"))]
    assert names == sorted(names)


def test_every_entry_points_at_a_section_that_exists():
    for entry, text in entries().items():
        shown = text[text.index("Shown in:"):] if "Shown in:" in text else ""
        targets = [(p, a) for p, a in LINK.findall(shown)]
        assert targets, f"entry {entry!r} links to no chapter section"
        for page, anchor in targets:
            assert (DOCS / page).exists(), (entry, page)
            if anchor:
                assert anchor in anchors(page), f"{entry}: {page}#{anchor} is not a heading there"


def test_links_inside_the_glossary_land_on_entries():
    text = GLOSSARY.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(#([\w-]+)\)", text):
        assert target in entries(), target


def test_every_glossary_link_from_a_page_lands_on_an_entry():
    ids = set(entries())
    for page in DOCS.glob("*.md"):
        for anchor in re.findall(r"glossary\.md#([\w-]+)", page.read_text(encoding="utf-8")):
            assert anchor in ids, f"{page.name} links to glossary.md#{anchor}, which is no entry"


def test_a_page_links_a_term_once():
    """Chapters link a term where they first use it, and only there."""
    for c in results.CHAPTERS:
        if c.slug == "glossary":
            continue
        text = (DOCS / c.page).read_text(encoding="utf-8")
        links = re.findall(r"glossary\.md#([\w-]+)", text)
        assert len(links) == len(set(links)), f"{c.page} links a glossary term twice"


def test_glossary_chapter_is_listed_and_in_the_nav():
    assert results.chapter("glossary").page == "glossary.md"
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert nav.index("glossary.md") < nav.index("read-next.md") < nav.index("compare.md")


# ------------------------------------------------------------------ the measured numbers

def glossary_markers():
    return MARKER.findall(GLOSSARY.read_text(encoding="utf-8"))


def test_glossary_numbers_are_rendered_not_typed():
    """Every number under an entry comes from a marker: the prose of the page has no digits
    outside the names of things (fp32, L2, PTX ...)."""
    text = MARKER.sub("", GLOSSARY.read_text(encoding="utf-8"))
    text = re.sub(r"`[^`]*`|\]\([^)]*\)|\{#[^}]*\}", "", text)
    numbers = re.findall(r"(?<![\w.])\d[\d,.]*(?![\w-])", text)
    allowed = {"32", "2", "12"}    # warp size and bank count; an FMA's 2 operations; vector add's 12 bytes
    assert set(numbers) <= allowed, sorted(set(numbers) - allowed)


@pytest.mark.parametrize("name, view", glossary_markers())
def test_glossary_number_renders_for_the_reference_machine_only(name, view):
    md = pages.render(name, view, root=ROOT / "results")
    ref = results.reference_machine()
    assert f"`results/{ref}/{name}.json`" in md
    assert md.count("Measured on") == 1 and "Also measured on" not in md


@pytest.mark.parametrize("name, view", glossary_markers())
def test_glossary_view_skips_other_machines(name, view):
    pages._load_modules()
    data = json.loads((ROOT / "results" / results.reference_machine() / f"{name}.json").read_text())
    with pytest.raises(pages.NotRecorded):
        pages.RENDERERS[(name, view)]("some-other-gpu", pages.Record(data))


def test_glossary_numbers_match_the_results():
    g = json.loads((ROOT / "results" / "nvidia-h200" / "gpu_anatomy.json").read_text())["machine"]["gpu"]
    md = pages.render("gpu_anatomy", "glossary-sm", root=ROOT / "results")
    assert f"{g['multiprocessors']} SMs" in md
    assert f"{g['max_threads_per_multiprocessor']:,} threads" in md
    va = json.loads((ROOT / "results" / "nvidia-h200" / "vector_add.json").read_text())["gpu"]
    pinned = next(c for c in va["copies"] if c["name"] == "host to device, pinned")
    assert f"{pinned['gbs']:,.1f} GB/s from pinned memory" in pages.render(
        "vector_add", "glossary-pinned-memory", root=ROOT / "results")


# ------------------------------------------------------------------ read next

def test_read_next_covers_every_chapter_with_a_few_annotated_links():
    text = (DOCS / "read-next.md").read_text(encoding="utf-8")
    sections = re.split(r"^## ", text, flags=re.M)[1:]
    pages_listed = {re.match(r"\[[^\]]+\]\(([\w-]+\.md)\)", s).group(1) for s in sections}
    for c in results.CHAPTERS:
        if c.slug != "glossary":
            assert c.page in pages_listed, f"no reading list for {c.page}"
    for s in sections:
        items = [line for line in s.splitlines() if line.startswith("- ")]
        assert 2 <= len(items) <= 4, s.splitlines()[0]
        for item in re.split(r"^- ", s, flags=re.M)[1:]:
            url = re.search(r"\]\((https://[^)]+)\)", item)
            assert url, item
            assert len(item.split(").", 1)[-1].split()) >= 8, f"no annotation: {item[:60]}"


def test_a_view_that_reads_another_file_reads_it_from_the_folder_it_renders(tmp_path):
    """``glossary-hbm`` of gpu_anatomy also reads vector_add's copy: from the same results
    folder as the record it renders, not from the project's."""
    ref = results.reference_machine()
    src = ROOT / "results" / ref
    (tmp_path / ref).mkdir()
    (tmp_path / ref / "gpu_anatomy.json").write_text((src / "gpu_anatomy.json").read_text())
    vadd = json.loads((src / "vector_add.json").read_text())
    vadd["gpu"]["ceiling_gbs"] = 1234.0
    (tmp_path / ref / "vector_add.json").write_text(json.dumps(vadd))
    assert "1,234 GB/s" in pages.render("gpu_anatomy", "glossary-hbm", root=tmp_path)
    (tmp_path / ref / "vector_add.json").unlink()
    with pytest.raises(pages.MissingResults):
        pages.render("gpu_anatomy", "glossary-hbm", root=tmp_path)
