"""The tables' charts: grouped bar charts as PNG, byte-identical for the same input."""

from __future__ import annotations

import logging
import math
from pathlib import Path

log = logging.getLogger(__name__)

def write_chart(path: Path, title: str, chart: tuple[str, list[str], dict[str, list[float]]]) -> None:
    """Draw a grouped bar chart as PNG, byte-identical for the same input.

    Written without the ``Software`` text chunk (matplotlib writes no time); every value is printed on
    its bar, and a NaN value draws no bar.

    Args:
        path: The PNG file written.
        title: The chart's title.
        chart: ``(y label, x labels, series name -> values)``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ylabel, labels, series = chart
    fig, ax = plt.subplots(figsize=(max(6.0, 0.6 * len(labels) * max(1, len(series)) ** 0.5 + 2), 4.5))
    width = 0.8 / max(1, len(series))
    for k, (name, values) in enumerate(series.items()):
        bars = ax.bar([i + k * width - 0.4 + width / 2 for i in range(len(labels))], values, width, label=name)
        # every value printed on its bar, so a small count stays readable beside a large one
        ax.bar_label(bars, labels=["" if math.isnan(v) else (f"{v:.1f}" if ylabel.endswith("(%)") or ylabel == "%"
                                                               else f"{v:,.0f}") for v in values],
                     fontsize=6, padding=1, rotation=90 if len(labels) * len(series) > 24 else 0)
    ax.set_xticks(list(range(len(labels))))
    ax.set_xticklabels(labels, rotation=30, ha="right")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.margins(y=0.15)
    if len(series) > 1:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)
