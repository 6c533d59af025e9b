"""Small SVG pictures of each puzzle's data: the arrays, the blocks, what one thread touches.

The panels are packed left to right into rows at most :data:`WIDTH` wide, and the type is
:data:`FONT` px: a phone about 390 px wide shows the picture at most ~340 px wide, so its
text stays at 11 CSS px or more.
"""

from __future__ import annotations

#: the picture's widest viewBox, px
WIDTH = 440
#: the type size, px of the viewBox
FONT = 16
#: a cell's side (smaller for a row too long to fit :data:`WIDTH`), the gap between panels
CELL, GAP = 22, 28
#: the height a panel's label takes above its cells
LABEL_H = 24
COLOURS = {"read": "#90caf9", "write": "#ffb74d", "shared": "#a5d6a7", None: "#ffffff"}
LEGEND = {"read": "read by the thread shown", "write": "written by it",
          "shared": "shared memory it uses"}


def _text(x, y, text) -> str:
    return (f'<text x="{x}" y="{y}" font-size="{FONT}" '
            f'font-family="sans-serif">{text}</text>')


def _panel(x0, y0, label, shape, marks, block=None, cell=CELL) -> str:
    """One array's cells with its label above, its top-left corner at (x0, y0 + LABEL_H)."""
    rows, cols = shape
    y0 += LABEL_H
    out = [_text(x0, y0 - 7, label)]
    for r in range(rows):
        for c in range(cols):
            fill = COLOURS[marks.get((r, c))]
            out.append(f'<rect x="{x0 + c * cell}" y="{y0 + r * cell}" width="{cell}" '
                       f'height="{cell}" fill="{fill}" stroke="#555" stroke-width="1"/>')
    if block:
        bc, br = block
        for c in range(0, cols + 1, bc):
            out.append(f'<line x1="{x0 + c * cell}" y1="{y0 - 2}" x2="{x0 + c * cell}" '
                       f'y2="{y0 + rows * cell + 2}" stroke="#c62828" stroke-width="3"/>')
        for r in range(0, rows + 1, br):
            if rows > 1:
                out.append(f'<line x1="{x0 - 2}" y1="{y0 + r * cell}" '
                           f'x2="{x0 + cols * cell + 2}" y2="{y0 + r * cell}" '
                           f'stroke="#c62828" stroke-width="3"/>')
    return "\n".join(out)


def _row(cells, kind):
    return {(0, c): kind for c in cells}


def layout(num: int) -> list[tuple]:
    """(label, shape, marks, block) panels for puzzle ``num``: thread 5 (or (1, 2)) highlighted."""
    n = 12
    one = lambda k: _row([k], "read")  # noqa: E731
    if num in (1, 3):
        return [("a", (1, 9 if num == 1 else 7), one(5), None), ("out", (1, 9 if num == 1 else 7), _row([5], "write"), None)]
    if num == 2:
        return [("a", (1, 9), one(5), None), ("b", (1, 9), one(5), None), ("out", (1, 9), _row([5], "write"), None)]
    if num in (4, 5):
        reads = {(1, 2): "read"}
        panels = [("a", (4, 5), reads, None)] if num == 4 else [("col", (4, 1), {(1, 0): "read"}, None),
                                                                ("row", (1, 5), {(0, 2): "read"}, None)]
        return panels + [("out", (4, 5), {(1, 2): "write"}, None)]
    if num in (6, 10, 11, 12, 13, 20):
        block = (32, 1) if num == 20 else (4, 1)
        reads = {10: list(range(8, 11)), 12: list(range(8, 11)), 20: [5]}.get(num, [5])
        if num == 20:
            return [("a", (1, 2 * n), _row(range(0, 24), "read"), (n, 1)), ("out", (1, 2), _row([0], "write"), None)]
        outs = {10: ("out", (1, 3), _row([2], "write"))}.get(num, ("out", (1, n - 1), _row([10 if num == 12 else 5], "write")))
        if num == 11:
            outs = ("out", (1, 1), _row([0], "write"))
        if num == 13:
            outs = ("hist", (1, 4), _row([2], "write"))
        return [("a" if num != 13 else "values", (1, n - 1), _row(reads, "read"), block), (*outs, None)]
    if num in (7, 8, 9):
        reads = {7: [5], 8: [5, 3], 9: [1, 5, 9]}[num]
        shared = {7: [0, 1], 8: [1, 2, 3], 9: [1]}[num]
        out = {7: [5], 8: [5], 9: [0]}[num]
        return [("a", (1, n - 1), _row(reads, "read"), (4, 1)),
                ("shared (block 1)", (1, 6 if num == 8 else 4), _row(shared, "shared"), None),
                ("out", (1, 1 if num == 9 else n - 1), _row(out if num != 9 else [0], "write"), None)]
    if num == 14:
        return [("a", (5, 7), {(1, 2): "read"}, (4, 4)), ("tile (padded)", (4, 5), {(1, 2): "shared", (2, 1): "shared"}, None),
                ("out", (7, 5), {(2, 1): "write"}, (4, 4))]
    if num == 15:
        return [("a", (5, 6), {(1, c): "read" for c in range(6)}, (4, 4)),
                ("b", (6, 5), {(r, 2): "read" for r in range(6)}, (4, 4)), ("c", (5, 5), {(1, 2): "write"}, (4, 4))]
    if num == 16:
        return [("a", (3, 11), {(1, c): "read" for c in range(11)}, (4, 1)), ("out", (3, 11), {(1, c): "write" for c in (1, 5, 9)}, None)]
    if num == 17:
        return [("a", (6, 7), {(2, 2): "read", (1, 2): "read", (3, 2): "read", (2, 1): "read", (2, 3): "read"}, (4, 4)),
                ("out", (6, 7), {(2, 2): "write"}, (4, 4))]
    if num == 18:
        return [("a", (4, 6), {(1, 2): "read"}, (4, 4)), ("bias", (1, 6), {(0, 2): "read"}, None),
                ("out", (4, 6), {(1, 2): "write"}, (4, 4))]
    if num == 19:
        return [("x, y", (1, n + 2), _row([1, 7, 13], "read"), (3, 1)), ("out", (1, n + 2), _row([1, 7, 13], "write"), None)]
    raise KeyError(num)


def svg(num: int) -> str:
    """The picture of puzzle ``num`` as an inline SVG block, at most :data:`WIDTH` wide."""
    panels = layout(num)
    parts, x, y, row_h, right = [], 10, 0, 0, 0
    used, blocks = set(), False
    for label, shape, marks, block in panels:
        rows, cols = shape
        cell = min(CELL, (WIDTH - 20) // cols)
        w = max(cols * cell, int(len(label) * FONT * 0.6))
        if x > 10 and x + w > WIDTH - 10:
            x, y, row_h = 10, y + row_h + 14, 0
        parts.append(_panel(x, y, label, shape, marks, block, cell))
        right = max(right, x + cols * cell)
        row_h = max(row_h, LABEL_H + rows * cell)
        x += w + GAP
        used |= set(marks.values())
        blocks = blocks or block is not None
    y += row_h + 16
    for kind in ("read", "write", "shared"):
        if kind in used:
            y += 24
            parts.append(f'<rect x="10" y="{y - 14}" width="16" height="16" '
                         f'fill="{COLOURS[kind]}" stroke="#555"/>' + _text(34, y, LEGEND[kind]))
    if blocks:
        y += 24
        parts.append(f'<line x1="10" y1="{y - 6}" x2="26" y2="{y - 6}" stroke="#c62828" '
                     f'stroke-width="3"/>' + _text(34, y, "block edges"))
    width, height = int(max(right + 10, 260)), int(y + 10)
    return (f'<div class="gpukit-plot" markdown="0">\n<svg xmlns="http://www.w3.org/2000/svg" '
            f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
            f'style="max-width: min(100%, {width}px); height: auto; '
            f'background: white" role="img" '
            f'aria-label="data layout of puzzle {num}">\n' + "\n".join(parts)
            + "\n</svg>\n</div>")
