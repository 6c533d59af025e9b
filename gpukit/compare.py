"""Machines side by side: ``gpukit bench compare A B`` and the site's comparison page."""

from __future__ import annotations

from . import results


def _rate(row: dict) -> tuple[float | None, str]:
    """The row's headline figure: a rate where there is one (higher is better), else a time."""
    for key, unit in (("tflops", "TFLOP/s"), ("gbs", "GB/s"), ("mpixels_per_s", "Mpixel/s"),
                      ("images_per_s", "images/s")):
        if row.get(key):
            return float(row[key]), unit
    if row.get("median_s"):
        return float(row["median_s"]), "s"
    return None, ""


def compare(a: str, b: str) -> str:
    """Every benchmark both folders recorded, row by row, with the ratio B / A."""
    from pathlib import Path

    from .cli import UserError
    from .pages import table

    def folder(name: str) -> Path:
        path = Path(name)
        if not path.is_dir():
            path = results.results_dir() / name
        if not path.is_dir():
            raise UserError(f"no results folder {name!r} (look in {results.results_dir()})")
        return path

    fa, fb = folder(a), folder(b)
    common = sorted({p.name for p in fa.glob("*.json")} & {p.name for p in fb.glob("*.json")})
    if not common:
        raise UserError(f"{fa.name} and {fb.name} have no benchmark in common")
    import json
    out = []
    for file in common:
        da, db = (json.loads((f / file).read_text(encoding="utf-8")) for f in (fa, fb))
        rows = []
        for part in sorted(set(da) & set(db)):
            if not isinstance(da[part], dict) or "rows" not in da[part] or "rows" not in db[part]:
                continue
            rb = {r.get("name"): r for r in db[part]["rows"]}
            for r in da[part]["rows"]:
                other = rb.get(r.get("name"))
                if other is None:
                    continue
                va, unit = _rate(r)
                vb, _ = _rate(other)
                if va is None or vb is None:
                    continue
                ratio = (vb / va) if unit != "s" else (va / vb)  # > 1: B is faster
                rows.append([f"{part}: {r['name']}", f"{va:,.4g} {unit}", f"{vb:,.4g} {unit}",
                             f"{ratio:.2f}x"])
        if rows:
            out.append(f"{file[:-5]}: {fa.name} ({da['machine']['date'][:10]}) vs "
                       f"{fb.name} ({db['machine']['date'][:10]})\n"
                       + table(["row", fa.name, fb.name, "B faster by"], rows))
    if not out:
        raise UserError(f"{fa.name} and {fb.name} share no comparable rows")
    return "\n\n".join(out)


#: how a part of a results file is named on the comparison page
PART_LABELS = {"gpu": "GPU", "cpu": "CPU", "host": "host CPU", "first_call": "first call",
               "nosync": "timing without a sync", "one_run": "one run", "right_way": "the right way",
               "saxpy": "SAXPY", "poly": "polynomial", "training": "training",
               "throughput": "training throughput", "decode": "JPEG decoding",
               "cpu_vs_gpu": "CPU vs GPU epoch", "transfers": "host-device copies"}


def part_label(part: str) -> str:
    return PART_LABELS.get(part, part.replace("_", " "))


def file_title(name: str) -> str:
    """A results file's title on the comparison page: its chapter's title where it has one."""
    for c in results.CHAPTERS:
        if name == c.slug:
            return c.title
        if name in c.benchmarks:
            return f"{c.title} ({name.removeprefix(c.slug).strip('_').replace('_', ' ')})"
    return name.replace("_", " ").capitalize()


def compare_all(root=None) -> str:
    """Every machine's recorded results side by side: one table per benchmark, one column each.

    Rows are the headline figure of each row two or more machines recorded under the same
    name; a machine that did not record a row shows "-". The site's comparison page is this.
    """
    import json

    from .pages import table
    root = root or results.results_dir()
    machines = sorted(p for p in root.iterdir() if p.is_dir())
    files = sorted({f.name for m in machines for f in m.glob("*.json")})
    out = []
    for file in files:
        have = [(m, json.loads((m / file).read_text(encoding="utf-8"))) for m in machines if (m / file).exists()]
        if len(have) < 2:
            continue
        cells: dict[str, dict[str, str]] = {}
        for m, data in have:
            for part, block in data.items():
                if not isinstance(block, dict) or not isinstance(block.get("rows"), list):
                    continue
                for r in block["rows"]:
                    if not isinstance(r, dict) or "name" not in r or " @ " in str(r["name"]):
                        continue  # size sweeps (name @ size) are the chapters' plots
                    value, unit = _rate(r)
                    if value is None:
                        continue
                    text = f"{value * 1e3:,.3g} ms" if unit == "s" else f"{value:,.4g} {unit}"
                    cells.setdefault(f"{part_label(part)}: {r['name']}", {})[m.name] = text
        rows = [[name] + [per.get(m.name, "-") for m, _ in have]
                for name, per in cells.items() if len(per) >= 2]
        if rows:
            heads = [f"{m.name}<br><small>{d['machine']['date'][:10]}</small>" for m, d in have]
            out.append(f"### {file_title(file[:-5])}\n\n<small>`results/*/{file}`</small>\n\n"
                       + table(["row"] + heads, rows, "l" + "r" * len(have)))
    return "\n\n".join(out)
