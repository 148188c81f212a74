"""bench.png: each configuration's rate against the ceiling its own CPU cost allows, with the
targets under the axes."""

from __future__ import annotations

import os
from pathlib import Path

from inventory.bench.measures import NO_LOCK, PEER
from inventory.bench.report import BenchReport


def draw_chart(report: BenchReport, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    measures = report.reduce + report.gen_order + report.peer
    fig, ax = plt.subplots(figsize=(11, 0.42 * len(measures) + 2))
    names = [m.name.removeprefix("reduceStock ") for m in measures]
    colours = [
        "tab:green"
        if "combining" in m.config
        else "tab:gray"
        if m.config == NO_LOCK
        else "tab:olive"
        if m.config == PEER
        else "tab:blue"
        for m in measures
    ]
    ax.barh(names, [m.per_second for m in measures], color=colours)
    for y, m in enumerate(measures):
        text = f" {m.per_second:.0f}/s"
        if m.batch_mean is not None and m.batch_mean > 1.05:
            text += f", batch {m.batch_mean:.1f}"
        ax.text(m.per_second, y, text, va="center", fontsize=7)
    ceilings = [(n, m.cpu_ceiling) for n, m in zip(names, measures, strict=True) if m.cpu_ceiling]
    if ceilings:
        ax.scatter(
            [c for _, c in ceilings],
            [n for n, _ in ceilings],
            marker="|",
            s=300,
            color="black",
            label="CPU ceiling at its cost per request",
            zorder=3,
        )
    right = 1.2 * max([m.per_second for m in measures] + [c for _, c in ceilings] + [1.0])
    limit_colours = ("tab:red", "tab:orange", "tab:purple", "tab:brown")
    for limit, colour in zip(report.limits, limit_colours, strict=False):
        text = f"{limit.name}: {limit.per_second:.0f}/s"
        if limit.per_second <= right:
            ax.axvline(limit.per_second, color=colour, linestyle="--", label=text)
        else:  # far off to the right: named, not drawn
            ax.plot([], [], color=colour, linestyle="--", label=text + " (off the chart)")
    ax.set_xlim(0, right)
    ax.invert_yaxis()
    ax.set_xlabel(
        "requests per second (median of rounds)\n"
        "green: combining, blue: one lock hold each, olive: the one-database peer"
    )
    ax.set_title(
        f"PUT /reduceStock and POST /genOrder, {report.concurrency} callers "
        f"({report.database}, {os.cpu_count()} cores)"
    )
    ax.legend(loc="best", fontsize=7)
    fig.tight_layout()
    verdicts = "\n".join(
        f"{t.name}: {t.value:.2f} ({'<=' if t.at_most else '>='} {t.goal}: "
        f"{'met' if t.met else 'missed'})"
        for t in report.targets()
    )
    if verdicts:
        fig.subplots_adjust(bottom=fig.subplotpars.bottom + 0.025 * (verdicts.count("\n") + 2))
        fig.text(
            0.01,
            0.01,
            "targets: " + verdicts.replace("\n", "\n             "),
            fontsize=8,
            family="monospace",
            va="bottom",
        )
    fig.savefig(path, dpi=100)
    plt.close(fig)
