/* gpukit's pages: the install address from where the site is served, notebooks that install
   from it, figures that open full size, and a cue on tables that scroll sideways. */
(function () {
  "use strict";
  var PLACEHOLDER = "GPUKIT_WHEEL_URL";

  function wheelAddress() {
    var meta = document.querySelector('meta[name="gpukit-wheel"]');
    if (!meta) return null;
    var scope = typeof __md_scope !== "undefined" ? __md_scope : new URL(".", location.href);
    return new URL("dist/" + meta.content, scope).href;
  }

  /* Install commands: the wheel's address as this page is served (a local `make docs`,
     GitHub Pages or any static host). */
  function fillInstallCommands(root) {
    var address = wheelAddress();
    if (!address) return;
    var walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    var nodes = [];
    while (walker.nextNode()) {
      if (walker.currentNode.nodeValue.indexOf(PLACEHOLDER) >= 0) nodes.push(walker.currentNode);
    }
    nodes.forEach(function (n) { n.nodeValue = n.nodeValue.split(PLACEHOLDER).join(address); });
  }

  /* The notebook button: the notebook with the wheel's address written into its first cell. */
  function downloadNotebook(event) {
    var link = event.currentTarget;
    var address = wheelAddress();
    if (!address || !window.fetch || !window.Blob) return;   /* the plain file, as served */
    event.preventDefault();
    fetch(link.href).then(function (r) {
      if (!r.ok) throw new Error(r.status);
      return r.text();
    }).then(function (text) {
      var blob = new Blob([text.split(PLACEHOLDER).join(address)], {type: "application/x-ipynb+json"});
      var a = document.createElement("a");
      a.href = URL.createObjectURL(blob);
      a.download = link.getAttribute("download") || "example.ipynb";
      document.body.appendChild(a);
      a.click();
      setTimeout(function () { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
    }).catch(function () { location.href = link.href; });
  }

  /* Figures open full size: a tap or click shows the plot or picture over the page, as wide as
     the screen allows (and scrollable where it is wider); a tap, a click or Escape closes it. */
  function openFull(source) {
    var box = document.createElement("div");
    box.className = "gpukit-lightbox";
    box.setAttribute("role", "dialog");
    box.setAttribute("aria-label", "Figure, full size (tap or press Escape to close)");
    var inner = document.createElement("div");
    inner.className = "gpukit-lightbox__inner";
    inner.appendChild(source.cloneNode(true));
    box.appendChild(inner);
    function close() { box.remove(); document.removeEventListener("keydown", onKey); }
    function onKey(e) { if (e.key === "Escape") close(); }
    box.addEventListener("click", close);
    document.addEventListener("keydown", onKey);
    document.body.appendChild(box);
  }

  function setUpFigures(root) {
    root.querySelectorAll(".md-typeset .gpukit-plot, .md-typeset img").forEach(function (el) {
      if (el.closest("a, .gpukit-lightbox") || el.dataset.gpukitZoom) return;
      el.dataset.gpukitZoom = "1";
      el.classList.add("gpukit-zoomable");
      el.setAttribute("tabindex", "0");
      el.setAttribute("title", "Open full size");
      el.addEventListener("click", function () { openFull(el.querySelector("svg") || el); });
      el.addEventListener("keydown", function (e) {
        if (e.key === "Enter") openFull(el.querySelector("svg") || el);
      });
    });
  }

  /* A table wider than its column says so: a shadow at the edge that hides columns. */
  function markScrolling(root) {
    root.querySelectorAll(".md-typeset__scrollwrap").forEach(function (wrap) {
      var more = wrap.scrollWidth > wrap.clientWidth + 1;
      wrap.classList.toggle("gpukit-scrolls", more);
      var hint = wrap.previousElementSibling;
      var has = hint && hint.classList.contains("gpukit-scroll-hint");
      if (more && !has) {
        hint = document.createElement("div");
        hint.className = "gpukit-scroll-hint";
        hint.textContent = "wider than the page: scroll sideways for more columns \u2192";
        wrap.parentNode.insertBefore(hint, wrap);
      } else if (!more && has) {
        hint.remove();
      }
      wrap.classList.toggle("gpukit-scrolled-end",
        more && wrap.scrollLeft + wrap.clientWidth >= wrap.scrollWidth - 2);
      if (!wrap.dataset.gpukitScroll) {
        wrap.dataset.gpukitScroll = "1";
        wrap.addEventListener("scroll", function () { markScrolling(wrap.parentNode); }, {passive: true});
      }
    });
  }

  /* On a phone a chapter's card would fill the first screen: its two lists fold behind their
     headings, so the chapter's idea, picture and snippet come into view. */
  function foldCardOnPhone(root) {
    if (!window.matchMedia("(max-width: 44.9375em)").matches) return;
    root.querySelectorAll(".md-typeset .admonition.gpukit-card").forEach(function (card) {
      card.querySelectorAll(":scope > p").forEach(function (p) {
        var list = p.nextElementSibling;
        var strong = p.querySelector("strong");
        if (!strong || !list || !/^(UL|OL)$/.test(list.tagName)) return;
        if (!/^(You will learn|Takeaways)/.test(strong.textContent)) return;
        var box = document.createElement("details");
        box.className = "gpukit-card-fold";
        var summary = document.createElement("summary");
        summary.innerHTML = p.innerHTML;
        box.appendChild(summary);
        box.appendChild(list);
        p.replaceWith(box);
      });
    });
  }

  function setUp() {
    foldCardOnPhone(document);
    fillInstallCommands(document.body);
    document.querySelectorAll("a.gpukit-notebook").forEach(function (a) {
      if (!a.dataset.gpukitBound) { a.dataset.gpukitBound = "1"; a.addEventListener("click", downloadNotebook); }
    });
    setUpFigures(document);
    markScrolling(document);
  }

  if (typeof document$ !== "undefined") document$.subscribe(setUp);
  else document.addEventListener("DOMContentLoaded", setUp);
  window.addEventListener("resize", function () { markScrolling(document); });
})();
