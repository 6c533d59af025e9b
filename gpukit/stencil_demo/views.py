"""The page's table of the 3-point average (registered views; no heavy imports)."""

from gpukit import pages

from .meta import NAME


@pages.renderer(NAME, "table")
def table(slug: str, data: dict) -> str:
    rows = [r for part in ("gpu", "cpu") if part in data for r in data[part]["rows"]]
    if not rows:
        raise pages.NotRecorded(slug)
    return pages.table(["version", "median time", "GB/s"],
                       [[r["name"], pages.fmt_time(r["median_s"]), pages.fmt_num(r["gbs"], 1)]
                        for r in rows])
