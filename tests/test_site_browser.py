"""The built site in a real browser (headless Chromium through Playwright).

Every page is visited at a desktop (1400 x 900) and a phone (390 x 844) viewport, in the light
and the dark colour scheme. Each visit: no console error and no request to any host but
127.0.0.1 (the site works offline), every picture loads (images decode, inline SVGs have a
size), no page is wider than the viewport (tables and code scroll inside their own box),
code blocks have copy buttons, and no plot is blank. What a reader can read is checked too: on
the phone no text of a plot or diagram is smaller than 11 CSS px (its computed size times the
figure's scale), no two labels of one figure overlap, every table that scrolls sideways says so,
every chapter's first picture starts within the first two screens;
on the desktop no shown code (commands included, printed output not) is wider than 88 columns
or scrolls sideways; in the dark scheme the
figures are drawn for it. Each example's page offers its script for download (the very file). Figures open full size on a click, console blocks copy without their
prompts, install commands carry the address the site is served from, and search finds the
section that teaches each of a handful of words (stemmed: "coalescing" finds "coalesced").
With ``$GPUKIT_SCREENSHOTS`` set (to a folder, ``site-screenshots`` say), a screenshot of every
page at both sizes, in both schemes, is saved there as ``<page>-<desktop|phone>[-dark].png``;
unset, none is taken (nothing here reads them, and a full-page screenshot costs CPU time).
"""

import functools
import http.server
import os
import shutil
import threading
from pathlib import Path

import pytest

from tests.helpers import ROOT, shared_site

CHROMIUM = os.environ.get("GPUKIT_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
playwright_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
if not os.path.exists(CHROMIUM):
    pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium, or set GPUKIT_CHROMIUM)",
                allow_module_level=True)

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Build the site strictly and serve it on 127.0.0.1 for the module's tests."""
    out = shared_site(tmp_path_factory)
    handler = functools.partial(_QuietHandler, directory=str(out))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield out, f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def pages(site_dir: Path) -> list[str]:
    found = []
    for index in sorted(site_dir.rglob("index.html")):
        rel = index.parent.relative_to(site_dir).as_posix()
        if rel.startswith(("assets", "search")):
            continue
        found.append("" if rel == "." else rel + "/")
    return found


VIEWPORTS = {"desktop": (1400, 900), "phone": (390, 844)}
AHEAD = 3                                   # pages loading while one is checked
SCHEMES = ("light", "dark")


def start(browser, url: str, dark: bool = False, size: tuple[int, int] = (1280, 900)):
    """Start loading a page, its listeners attached first; return (console errors, outside
    requests, failed requests, page). The browser goes on loading it while the caller works
    on another page; :func:`visit` waits for it."""
    ctx = browser.new_context(viewport={"width": size[0], "height": size[1]},
                              color_scheme="dark" if dark else "light")
    page = ctx.new_page()
    errors, outside, failed = [], [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: outside.append(r.url)
            if not r.url.startswith(("http://127.0.0.1", "data:", "blob:", "about:")) else None)
    page.on("requestfailed", lambda r: failed.append(r.url))
    page.goto(url, wait_until="commit")
    return errors, outside, failed, page


def visit(browser, url: str, shot: Path | None = None, dark: bool = False,
          size: tuple[int, int] = (1280, 900), started=None):
    """Load a page (or finish loading one from :func:`start`) until the network is idle;
    return (console errors, outside requests, failed requests, page)."""
    errors, outside, failed, page = started or start(browser, url, dark, size)
    page.wait_for_load_state("networkidle")
    if shot is not None:
        page.screenshot(path=str(shot), full_page=True)
    return errors, outside, failed, page


#: Every picture of a page, collapsed boxes opened: images that do not decode (their alt text
#: or address) and shown inline SVGs with no size (their first characters).
BROKEN_PICTURES = """async () => {
    document.querySelectorAll('article details').forEach(d => d.open = true);
    const broken = [];
    for (const img of Array.from(document.images)) {
        img.loading = 'eager';
        try { await img.decode(); } catch (e) { }
        if (!img.complete || img.naturalWidth === 0) broken.push(img.alt || img.src.slice(0, 60));
    }
    for (const svg of document.querySelectorAll('article svg')) {
        if (!svg.checkVisibility({checkVisibilityCSS: true})) continue;   // an inactive tab
        const box = svg.getBoundingClientRect();
        if (box.width === 0 || box.height === 0) broken.push('svg ' + svg.outerHTML.slice(0, 60));
    }
    return broken;
}"""

#: The first elements that reach past the viewport's right edge outside any box that scrolls
#: (what makes a page scroll sideways as a whole).
TOO_WIDE = """(vw) => {
    const out = [];
    for (const el of document.querySelectorAll('body *')) {
        const r = el.getBoundingClientRect();
        if (r.width === 0 || r.right <= vw + 1) continue;
        let p = el.parentElement, boxed = false;
        for (; p && p !== document.body; p = p.parentElement) {
            const o = getComputedStyle(p).overflowX;
            if (o !== 'visible' && p.getBoundingClientRect().right <= vw + 1) { boxed = true; break; }
        }
        if (!boxed) out.push(el.tagName.toLowerCase() + '.' + el.className + ' ' + Math.round(r.right) + ' px');
    }
    return out.slice(0, 3);
}"""


#: What a reader can read on this page: the smallest text of any figure in CSS px (inline SVG
#: plots, and SVG pictures measured by drawing them at their shown width), labels of one figure
#: that overlap, tables that scroll sideways without the cue, code wider than 88 columns or
#: scrolling sideways, and figures not drawn for the dark scheme.
READABLE = r"""async (dark) => {
    document.querySelectorAll('article details').forEach(d => d.open = true);
    const out = {small: [], overlap: [], uncued: [], widecode: [], scrollcode: [], undark: []};
    const texts = (svg, scale, where) => {
        const boxes = [];
        for (const t of svg.querySelectorAll('text')) {
            const content = (t.textContent || '').trim();
            if (!content) continue;
            const b = t.getBoundingClientRect();
            if (!b.width) continue;
            const px = parseFloat(getComputedStyle(t).fontSize) * scale;
            if (px < 11) out.small.push(where + ' "' + content.slice(0, 25) + '" ' + px.toFixed(1) + ' px');
            boxes.push([content.slice(0, 25), b]);
        }
        for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
            const a = boxes[i][1], c = boxes[j][1];
            const w = Math.min(a.right, c.right) - Math.max(a.left, c.left);
            const h = Math.min(a.bottom, c.bottom) - Math.max(a.top, c.top);
            if (w > 1 && h > 1) out.overlap.push(where + ' "' + boxes[i][0] + '" / "' + boxes[j][0] + '"');
        }
    };
    for (const svg of document.querySelectorAll('article .gpukit-plot svg, article svg.gpukit-svg')) {
        const r = svg.getBoundingClientRect();
        if (!r.width || !svg.viewBox.baseVal || !svg.viewBox.baseVal.width) continue;
        texts(svg, r.width / svg.viewBox.baseVal.width, 'plot');
        if (dark && getComputedStyle(svg).filter === 'none') out.undark.push('plot');
    }
    for (const img of document.querySelectorAll('article img')) {
        if (!/\.svg($|\?)/.test(img.src) || !img.getBoundingClientRect().width) continue;
        if (dark && getComputedStyle(img).filter === 'none') out.undark.push(img.src.split('/').pop());
        const text = await (await fetch(img.src)).text();
        const holder = document.createElement('div');
        holder.style.cssText = 'position:absolute;left:0;top:0;visibility:hidden;width:' + img.getBoundingClientRect().width + 'px';
        holder.innerHTML = text;
        document.body.appendChild(holder);
        const svg = holder.querySelector('svg');
        if (svg && svg.viewBox.baseVal && svg.viewBox.baseVal.width) {
            svg.removeAttribute('height'); svg.style.width = '100%'; svg.style.height = 'auto';
            texts(svg, svg.getBoundingClientRect().width / svg.viewBox.baseVal.width, img.src.split('/').pop());
        }
        holder.remove();
    }
    for (const wrap of document.querySelectorAll('article .md-typeset__scrollwrap')) {
        if (wrap.scrollWidth > wrap.clientWidth + 1 && !(wrap.previousElementSibling || {classList: {contains: () => false}}).classList.contains('gpukit-scroll-hint'))
            out.uncued.push((wrap.querySelector('th') || {textContent: '?'}).textContent.slice(0, 30));
    }
    for (const code of document.querySelectorAll('article pre > code')) {
        // what a program printed (a text block, a console block's output lines) is shown as it
        // was printed; the code a reader reads or types is held to 88 columns
        const wrap = code.closest('.highlight');
        const lang = wrap ? [...wrap.classList].find(c => c.startsWith('language-')) : null;
        if (!lang || lang === 'language-text' || lang === 'language-pycon' || code.closest('.jp-OutputArea'))
            continue;
        const console = !!code.closest('.language-console');
        const lines = code.innerText.split('\n').filter(l => !console || l.startsWith('$ '));
        const longest = Math.max(0, ...lines.map(l => l.length));
        if (longest > 88) out.widecode.push(lines[0].slice(0, 40) + ' (' + longest + ' columns)');
        if (!console && code.scrollWidth > code.clientWidth + 1 && code.checkVisibility())
            out.scrollcode.push(lines[0].slice(0, 40));
    }
    return out;
}"""


#: Where a page's first picture starts (an image, inline SVG or figure at least 150 x 80 px in
#: the article), in px from the top of the page; None without one.
FIRST_PICTURE = """() => {
    const els = [...document.querySelectorAll('article img, article svg, article figure')]
        .filter(e => { const r = e.getBoundingClientRect(); return r.width > 150 && r.height > 80; });
    return els.length ? Math.round(els[0].getBoundingClientRect().top + window.scrollY) : null;
}"""


def _chapter_pages() -> list[str]:
    """The pages whose first picture must start within the first two screens: every chapter
    but the glossary, and the page on installing CUDA."""
    from gpukit.results import CHAPTERS
    return [c.page[:-3] + "/" for c in CHAPTERS if c.slug != "glossary"] + ["installing-cuda/"]


@pytest.mark.slow
@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("viewport", list(VIEWPORTS))
def test_every_page_loads_cleanly_offline(site, browser, viewport, scheme):
    site_dir, base = site
    shots = os.environ.get("GPUKIT_SCREENSHOTS")
    if shots:
        shots = Path(shots)
        shots.mkdir(parents=True, exist_ok=True)
    width, height = VIEWPORTS[viewport]
    dark = scheme == "dark"
    suffix = f"-{viewport}" + ("-dark" if dark else "")
    all_pages = pages(site_dir)
    assert len(all_pages) >= 8
    chapters = _chapter_pages()
    assert set(chapters) <= set(all_pages), set(chapters) - set(all_pages)
    examples = [p for p in all_pages if p.startswith(("examples/", "executed/"))]
    assert len(examples) == len(list((ROOT / "examples").glob("*.py")))
    problems = []
    # the next pages load while this one is checked (a load waits half a second for the
    # network to stay idle: most of its time)
    loading = [start(browser, base + p, dark, (width, height)) for p in all_pages[:AHEAD]]
    for i, path in enumerate(all_pages):
        name = (path.strip("/").replace("/", "_") or "home") + suffix
        this = loading.pop(0)
        if i + AHEAD < len(all_pages):
            loading.append(start(browser, base + all_pages[i + AHEAD], dark, (width, height)))
        this[3].wait_for_load_state("networkidle")
        if path in chapters:
            top = this[3].evaluate(FIRST_PICTURE)
            if top is None or top >= 2 * height:
                problems.append(f"{path}: first picture below the first two screens "
                                f"({2 * height} px): {top}")
        errors, outside, failed, page = visit(browser, base + path,
                                              shots / f"{name}.png" if shots else None,
                                              started=this)
        wide = page.evaluate("document.documentElement.scrollWidth")
        colours = page.evaluate("document.body.getAttribute('data-md-color-scheme')")
        blank = _blank_plots(page) if (viewport, scheme) == ("desktop", "light") else []
        broken = page.evaluate(BROKEN_PICTURES)
        code_blocks = page.locator("pre > code").count()
        copy_buttons = page.locator("button[data-md-type='copy'], .md-clipboard").count()
        h1 = page.locator("article h1").count()
        if errors:
            problems.append(f"{path}: console errors {errors[:3]}")
        if outside:
            problems.append(f"{path}: requests outside 127.0.0.1 {outside[:3]}")
        if failed:
            problems.append(f"{path}: failed requests {failed[:3]}")
        if broken:
            problems.append(f"{path}: pictures that did not load {broken[:3]}")
        if blank:
            problems.append(f"{path}: plots that draw nothing: {blank}")
        if wide > width:
            problems.append(f"{path}: {wide} px wide in a {width} px viewport: "
                            f"{page.evaluate(TOO_WIDE, width)}")
        if colours != ("slate" if dark else "default"):
            problems.append(f"{path}: colour scheme {colours!r}, not the {scheme} one")
        if code_blocks and not copy_buttons:
            problems.append(f"{path}: {code_blocks} code blocks but no copy button")
        if not h1:
            problems.append(f"{path}: no title")
        read = page.evaluate(READABLE, dark)
        if viewport == "phone" and read["small"]:
            problems.append(f"{path}: figure text below 11 px on a phone: {read['small'][:3]}")
        if read["overlap"]:
            problems.append(f"{path}: figure labels on top of each other: {read['overlap'][:3]}")
        if read["uncued"]:
            problems.append(f"{path}: tables that scroll sideways with no cue: {read['uncued'][:3]}")
        if viewport == "desktop" and (read["widecode"] or read["scrollcode"]):
            problems.append(f"{path}: code wider than 88 columns {read['widecode'][:3]} or scrolling "
                            f"sideways {read['scrollcode'][:3]}")
        if dark and read["undark"]:
            problems.append(f"{path}: figures not drawn for the dark scheme: {read['undark'][:3]}")
        if path in examples and (viewport, scheme) == ("desktop", "light"):
            _offers_its_script(page, path, site_dir)
        page.context.close()
    assert not problems, "\n".join(problems)
    if shots:
        assert len(list(shots.glob(f"*{suffix}.png"))) >= len(all_pages)


def _blank_plots(page) -> list[int]:
    """Indexes of the page's plots (inline SVG figures) whose pixels are all one colour."""
    import io

    from PIL import Image
    blank = []
    plots = page.locator("article svg")
    for i in range(plots.count()):
        plot = plots.nth(i)
        box = plot.bounding_box()
        if not box or box["width"] < 150 or box["height"] < 100:
            continue  # an icon, not a plot
        if not plot.is_visible():
            continue  # in a closed block or an inactive tab: BROKEN_PICTURES checks its size
        plot.scroll_into_view_if_needed()
        image = Image.open(io.BytesIO(plot.screenshot())).convert("L")
        low, high = image.getextrema()
        if high - low < 20:
            blank.append(i)
    return blank


#: a word a reader searches for -> a page (and section) that teaches it, which must be among the
#: first results; "coalescing" is written "coalesced" there, so only a stemmed index finds it
SEARCHES = {
    "coalescing": ("gpu-anatomy/",),
    "occupancy": ("gpu-anatomy/",),
    "tensor": ("glossary/", "tensor-cores/"),
    "warp": ("gpu-anatomy/", "glossary/#warp"),
    "bandwidth": ("gpu-anatomy/", "vector-add/"),
    "kernel": ("vector-add/",),
}


@pytest.mark.parametrize("word", sorted(SEARCHES))
def test_search_finds_the_section_that_teaches(site, browser, word):
    _, base = site
    errors, _, _, page = visit(browser, base)
    page.locator("input.md-search__input").click()
    page.keyboard.type(word, delay=20)  # real key presses: the search reacts to typing
    results = page.locator(".md-search-result__item")
    results.first.wait_for(timeout=15000)
    count = -1
    while count != results.count():            # the list grows as the index answers: let it settle
        count = results.count()
        page.wait_for_timeout(400)
    links = [a.get_attribute("href") for a in page.locator(".md-search-result__item a").all()]
    assert any(p in (href or "") for href in links for p in SEARCHES[word]), (word, links)
    assert not any("#other-machines" in (href or "") for href in links)   # the appendix is not indexed
    assert not errors
    page.context.close()


def test_figures_open_full_size(site, browser):
    _, base = site
    *_, page = visit(browser, base + "vector-add/", size=(390, 844))
    figure = page.locator("article .gpukit-zoomable").first
    figure.scroll_into_view_if_needed()
    figure.click()
    box = page.locator(".gpukit-lightbox")
    box.wait_for(timeout=5000)
    shown = box.locator("svg, img").first.bounding_box()
    assert shown["width"] > 390              # wider than the phone's screen: pan around it
    page.keyboard.press("Escape")
    assert page.locator(".gpukit-lightbox").count() == 0
    page.context.close()


def test_install_commands_carry_the_address_the_site_is_served_from(site, browser):
    _, base = site
    *_, page = visit(browser, base + "installing-cuda/")
    text = page.locator("article").inner_text()
    assert f'"gpukit[torch] @ {base}dist/gpukit-' in text and "$ pip install \\" in text
    assert "GPUKIT_WHEEL_URL" not in text
    page.context.close()


def test_console_blocks_copy_without_prompts(site, browser):
    _, base = site
    *_, page = visit(browser, base + "installing-cuda/")
    copied = page.evaluate("""() => {
        const code = [...document.querySelectorAll('article pre > code')].find(c => c.innerText.includes('$ pip install'));
        code.setAttribute('data-md-copying', '');
        const text = code.innerText;
        code.removeAttribute('data-md-copying');
        return [code.innerText, text];
    }""")
    shown, copied_text = copied
    assert "$ " in shown and "$ " not in copied_text and "pip install" in copied_text
    page.context.close()


def test_a_downloaded_notebook_installs_from_this_site(site, browser):
    _, base = site
    *_, page = visit(browser, base + "executed/vector_add/")
    with page.expect_download() as info:
        page.locator("a.gpukit-notebook").click()
    import json
    nb = json.loads(Path(info.value.path()).read_text(encoding="utf-8"))
    assert f'%pip install "gpukit[torch] @ {base}dist/gpukit-' in "".join(nb["cells"][0]["source"])
    page.context.close()


def test_dark_light_toggle(site, browser):
    _, base = site
    _, _, _, page = visit(browser, base)
    scheme = lambda: page.evaluate("document.body.getAttribute('data-md-color-scheme')")  # noqa: E731
    before = scheme()
    page.locator("label.md-header__button[for^='__palette']:visible").first.click()
    page.wait_for_function(f"document.body.getAttribute('data-md-color-scheme') !== '{before}'")
    assert {before, scheme()} == {"default", "slate"}
    page.context.close()


def _offers_its_script(page, path: str, site_dir: Path) -> None:
    """An example's page offers its script for download: the very file the tests run, with
    the snippet markers (for the chapters' includes) neither shown nor copied."""
    from urllib.parse import urljoin
    link = page.locator("a[download]:not(.gpukit-notebook)")
    assert link.count() == 1, path
    href = link.get_attribute("href")
    response = page.request.get(urljoin(page.url, href))
    assert response.ok, (path, href)
    script = (ROOT / "examples" / href.rsplit("/", 1)[-1]).read_text(encoding="utf-8")
    assert response.text() == script, path
    html = (site_dir / path / "index.html").read_text(encoding="utf-8")
    assert "--8<--" in script and "--8&lt;--" not in html, path
    assert "import" in page.locator("article").inner_text(), path


def test_a_chapter_s_idea_is_on_a_phone_s_first_screen(site, browser):
    """On a phone the card's lists fold, so the chapter's first paragraph after the card starts
    within the first screen."""
    _, base = site
    *_, page = visit(browser, base + "vector-add/", size=VIEWPORTS["phone"])
    assert page.locator(".gpukit-card details.gpukit-card-fold").count() == 2
    top = page.evaluate("""() => {
        const card = document.querySelector('article .gpukit-card');
        let el = card.nextElementSibling;
        while (el && el.tagName !== 'P') el = el.nextElementSibling;
        return el ? el.getBoundingClientRect().top : null;
    }""")
    assert top is not None and top < VIEWPORTS["phone"][1]
    page.context.close()
