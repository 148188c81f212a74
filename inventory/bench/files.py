"""What `inventory bench --report DIR` writes: bench.json and bench.png. Apart from report.py so
that the chart (which reads a report) and the report do not import each other."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from inventory.bench.report import BenchReport


def write_report(report: BenchReport, folder: Path) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "bench.json"
    targets = [{**asdict(t), "met": t.met} for t in report.targets()]
    data.write_text(
        json.dumps({**asdict(report), "ratios": report.ratios(), "targets": targets}, indent=2)
    )
    from inventory.bench.chart import draw_chart  # matplotlib only when a chart is asked for

    chart = folder / "bench.png"
    draw_chart(report, chart)
    return data, chart
