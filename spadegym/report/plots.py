"""Report plots as inline PNG data URIs (matplotlib's Agg canvas; no pyplot global state)."""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .data import BAND, Correlation, Series

SIZE = (6.4, 3.3)
DPI = 110


def _figure() -> tuple[Figure, object]:
    fig = Figure(figsize=SIZE, dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.grid(alpha=0.3)
    ax.spines[["top", "right"]].set_visible(False)
    return fig, ax


def _png(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def lines(series: Sequence[Series], ylabel: str, unit_range: bool = False, band: bool = False) -> str:
    """Per-round lines; ``unit_range`` fixes y to [0, 1], ``band`` shades the learnable band."""
    fig, ax = _figure()
    for s in series:
        ax.plot(s.rounds, s.values, marker="o" if len(s.rounds) <= 30 else None, markersize=3, label=s.label)
    if band:
        ax.axhspan(*BAND, color="tab:green", alpha=0.08, label=f"band {BAND[0]}-{BAND[1]}")
    if unit_range:
        ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("round")
    ax.set_ylabel(ylabel)
    ax.xaxis.get_major_locator().set_params(integer=True)
    if len(series) > 1 or band:
        ax.legend(fontsize=8, loc="best")
    return _png(fig)


def histogram(values: Sequence[float], xlabel: str, color: str = "tab:blue") -> str:
    fig, ax = _figure()
    ax.hist(values, bins=min(30, max(5, len(values) // 4)), color=color, alpha=0.85)
    mean = sum(values) / len(values)
    ax.axvline(mean, color="black", linestyle="--", linewidth=1, label=f"mean {mean:.3f}")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("environment-rounds")
    ax.legend(fontsize=8)
    return _png(fig)


def stacked_bars(rounds: Sequence[int], parts: dict[str, list[float]], ylabel: str) -> str:
    fig, ax = _figure()
    bottom = [0.0] * len(rounds)
    for name, heights in parts.items():
        ax.bar(rounds, heights, bottom=bottom, label=name, width=0.8)
        bottom = [b + h for b, h in zip(bottom, heights)]
    ax.set_xlabel("round")
    ax.set_ylabel(ylabel)
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _png(fig)


def horizontal_bars(counts: dict[str, int], xlabel: str) -> str:
    items = sorted(counts.items(), key=lambda kv: kv[1])
    fig, ax = _figure()
    ax.barh([k for k, _ in items], [v for _, v in items], color="tab:red", alpha=0.8)
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel(xlabel)
    return _png(fig)


def scatter(corr: Correlation) -> str:
    fig, ax = _figure()
    ax.scatter(corr.oracle, corr.regret, s=14, alpha=0.6)
    lo = min([*corr.oracle, *corr.regret, 0.0])
    hi = max([*corr.oracle, *corr.regret, 1.0])
    ax.plot([lo, hi], [lo, hi], color="grey", linewidth=0.8, linestyle=":")
    ax.set_xlabel("oracle regret")
    ax.set_ylabel("hint regret")
    if corr.pearson is not None:
        ax.set_title(f"Pearson r = {corr.pearson:.3f} (n = {len(corr.regret)})", fontsize=9)
    return _png(fig)
