"""Timelines of copy in, kernel and copy out per stream: a model drawn when the site is built,
and the measured events of one serial and one pipelined run."""

from __future__ import annotations

from ..pages import data_renderer, svg

#: the colour of each step (the vector-add chapter's)
COLOURS = {"copy in": "#f2a33a", "kernel": "#1e63b5", "copy out": "#2e9d4f"}


def draw(panels: list[tuple[str, list[dict]]], unit: str, scale: float = 1.0):
    """One Gantt panel per (title, bars): a row per stream, bars coloured by step, a shared
    x axis, drawn through :func:`gpukit.pages.figure`."""
    from matplotlib.patches import Patch

    from .. import pages
    rows = [max(b["stream"] for b in bars) + 1 for _, bars in panels]
    fig, axes = pages.figure(len(panels), 1, height=1.3 + sum(0.4 * r + 0.7 for r in rows),
                             sharex=True, gridspec_kw={"height_ratios": [r + 1.2 for r in rows]})
    axes = list(axes) if len(panels) > 1 else [axes]
    for ax, (title, bars), n in zip(axes, panels, rows):
        for b in bars:
            ax.broken_barh([(b["start"] * scale, (b["stop"] - b["start"]) * scale)],
                           (b["stream"] - 0.38, 0.76), facecolor=COLOURS[b["kind"]],
                           edgecolor="white", lw=0.6)
        ax.set_yticks(range(n), [f"stream {s}" for s in range(n)])
        ax.set_ylim(n - 0.5, -0.5)
        ax.set_title(title, loc="left")
        ax.grid(axis="x", alpha=0.3)
        end = max(b["stop"] for b in bars) * scale
        ax.axvline(end, color="black", lw=0.8, ls=":")
    axes[-1].set_xlabel(unit)
    axes[0].legend(handles=[Patch(color=c, label=k) for k, c in COLOURS.items()],
                   ncol=3, loc="lower left", bbox_to_anchor=(0.0, 1.25), frameon=False)
    return fig


# --8<-- [start:model]
@data_renderer("profiling", "concept")
def concept() -> str:
    """Serial against pipelined, for four chunks whose three steps each take one time unit
    for the whole array: the schedule of :func:`.pipeline.model_timeline`, not a measurement."""
    from .pipeline import makespan, model_timeline
    count, stage = 4, 1.0
    serial = model_timeline(count, stage, stage, stage, pipelined=False)
    piped = model_timeline(count, stage, stage, stage, pipelined=True, streams=3)
    fig = draw([(f"one stream: ends at {makespan(serial):g}", serial),
                (f"three streams: ends at {makespan(piped):g}", piped)],
               "time, in whole-array steps (a model)")
    return svg(fig)
# --8<-- [end:model]
