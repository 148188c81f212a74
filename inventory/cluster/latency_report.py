"""What `inventory cluster bench-latency` prints and writes: each load's figures, each side's
rate where it saturates, the flow/peer ratio, the bounds from the measured parts, the crossover,
and (with --report) bench-latency.json and a chart."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

SIDES = ("flow", "peer")
GOAL, MOONSHOT = 2.0, 4.0  # the flow's rate over the peer's, on the hot goods id


def saturated(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Per (delay, goods): each side's best median rate over the caller counts (where it
    saturates), with that row's figures, and the ratio of the two."""
    out = []
    rows = report["summary"]
    for delay, goods in sorted({(r["delay_ms"], r["goods"]) for r in rows}):
        mine = [r for r in rows if (r["delay_ms"], r["goods"]) == (delay, goods)]
        best = {
            side: max(_clean(mine, side), key=lambda r: float(r[side]["per_second"]))
            for side in SIDES
        }
        flow, peer = best["flow"]["flow"], best["peer"]["peer"]
        out.append(
            {
                "delay_ms": delay,
                "goods": goods,
                "flow": flow | {"callers": best["flow"]["callers"]},
                "peer": peer | {"callers": best["peer"]["callers"]},
                "ratio": flow["per_second"] / max(peer["per_second"], 1e-9),
                # On one goods id the holds take turns (one row, one lock): at most this many
                # a second. On many, holds of other goods ids overlap: no such bound.
                "flow_bound": bound(flow.get("batch"), flow.get("lock_hold_ms"), goods),
                "peer_bound": bound(1.0, peer.get("row_hold_ms"), goods),
            }
        )
    return out


def _clean(rows: list[dict[str, Any]], side: str) -> list[dict[str, Any]]:
    """The loads a side answered (at most 1% errors): past that, more callers only found its
    replicas marked down by the balancers, not a higher rate."""
    clean = [r for r in rows if r[side]["errors"] <= 0.01 * max(r[side]["answers"], 1)]
    return clean or rows


def round_trips(report: dict[str, Any]) -> dict[str, Any]:
    """Each side's hold against the round trip the proxy adds (measured, at each delay), with
    one caller on the hot goods id (each hold on its own): the slope is the round trips a hold
    waits for, the intercept what it costs without added latency (CPU, fsyncs, the machine's
    own links)."""
    added = {p["delay_ms"]: p["added_rtt_ms"]["p50"] for p in report["proxy"]}
    rows = report.get("alone") or []
    fits: dict[str, Any] = {}
    for side, key in (("flow", "lock_hold_ms"), ("peer", "row_hold_ms")):
        points = [(added[r["delay_ms"]], r[side][key]) for r in rows if key in r[side]]
        if len({x for x, _ in points}) < 2:
            continue
        xs, ys = zip(*points, strict=True)
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        slope = sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x in xs)
        fits[side] = {"round_trips_per_hold": slope, "hold_ms_without_added": my - slope * mx}
    return fits


def bound(per_hold: float | None, hold_ms: float | None, goods: int) -> float | None:
    return per_hold * 1000 / hold_ms if per_hold and hold_ms and goods == 1 else None


def crossover(points: list[tuple[float, float]]) -> float | None:
    """Where the ratio (y) crosses 1 along x, by linear interpolation; None when it does not
    cross within the points."""
    for (x0, y0), (x1, y1) in itertools.pairwise(points):
        if (y0 - 1) * (y1 - 1) <= 0 and y0 != y1:
            return x0 + (1 - y0) * (x1 - x0) / (y1 - y0)
    return None


def crossovers(report: dict[str, Any]) -> dict[str, Any]:
    best = saturated(report)
    found: dict[str, Any] = {}
    for goods in sorted({b["goods"] for b in best}):
        points = [(b["delay_ms"], b["ratio"]) for b in best if b["goods"] == goods]
        found[f"delay_ms, {goods} goods"] = crossover(points)
    for r in {r["delay_ms"] for r in report["summary"]}:
        points = [
            (x["callers"], x["ratio"])
            for x in report["summary"]
            if x["delay_ms"] == r and x["goods"] == 1
        ]
        found[f"callers, 1 goods, {r} ms"] = crossover(sorted(points))
    return found


def show(report: dict[str, Any], console: Console | None = None) -> None:
    console = console or Console(width=140)
    for p in report["proxy"]:
        console.print(
            f"proxy at {p['delay_ms']} ms each way: adds {p['added_rtt_ms']['p50']:.3f} ms "
            f"(p50) / {p['added_rtt_ms']['p99']:.3f} ms (p99) to a round trip "
            f"(ideal {2 * p['delay_ms']:.1f}), {p['cpu_us_per_chunk']:.0f} µs CPU per chunk"
        )
    for r in report.get("alone", []):
        f, p = r["flow"], r["peer"]
        console.print(
            f"one caller, {r['delay_ms']} ms: flow {f['per_second']:.0f}/s p50 {f['p50_ms']:.1f} "
            f"ms, lock hold {f.get('lock_hold_ms', 0):.1f} ms; peer {p['per_second']:.0f}/s "
            f"p50 {p['p50_ms']:.1f} ms, row hold {p.get('row_hold_ms', 0):.1f} ms"
        )
    table = Table(
        "ms", "goods", "callers", "flow /s", "p50/p99", "peer /s", "p50/p99", "ratio",
        "flow hold ms", "batch", "order batch", "peer row hold ms", "peer UPDATE ms",
        title="every load (rates: median of rounds; latencies pooled)",
    )  # fmt: skip
    for r in report["summary"]:
        f, p = r["flow"], r["peer"]
        table.add_row(
            f"{r['delay_ms']}", str(r["goods"]), str(r["callers"]),
            f"{f['per_second']:.0f}", f"{f['p50_ms']:.1f}/{f['p99_ms']:.1f}",
            f"{p['per_second']:.0f}", f"{p['p50_ms']:.1f}/{p['p99_ms']:.1f}",
            f"{r['ratio']:.2f}", f"{f.get('lock_hold_ms', 0):.2f}", f"{f.get('batch', 0):.1f}",
            f"{f.get('order_batch', 0):.1f}", f"{p.get('row_hold_ms', 0):.2f}",
            f"{p.get('update_ms', 0):.2f}",
        )  # fmt: skip
    console.print(table)
    best = Table(
        "ms", "goods", "flow /s (callers)", "flow bound: batch/hold", "peer /s (callers)",
        "peer bound: 1/row hold", "flow / peer", "goal",
        title="where each saturates",
    )  # fmt: skip
    for b in saturated(report):
        goal = ""
        if b["goods"] == 1:
            goal = "moonshot met" if b["ratio"] >= MOONSHOT else (
                "met" if b["ratio"] >= GOAL else "missed")  # fmt: skip
        best.add_row(
            f"{b['delay_ms']}", str(b["goods"]),
            f"{b['flow']['per_second']:.0f} ({b['flow']['callers']})", _num(b["flow_bound"]),
            f"{b['peer']['per_second']:.0f} ({b['peer']['callers']})", _num(b["peer_bound"]),
            f"{b['ratio']:.2f}", goal,
        )  # fmt: skip
    console.print(best)
    for side, fit in round_trips(report).items():
        console.print(
            f"{side}: a hold waits for {fit['round_trips_per_hold']:.1f} round trips "
            f"(its hold against the round trip the proxy adds), "
            f"{fit['hold_ms_without_added']:.1f} ms without added latency"
        )
    for b in saturated(report):
        console.print(
            f"flow / peer with {b['delay_ms']} ms added each way, {b['goods']} goods: "
            f"{b['ratio']:.2f}"
        )
    for name, value in crossovers(report).items():
        said = f"{value:.2f}" if value is not None else "not within the points measured"
        console.print(f"crossover (flow = peer) along {name}: {said}")


def _num(value: float | None) -> str:
    return f"{value:.0f}/s" if value else "-"


def write(report: dict[str, Any], folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    report = report | {
        "saturated": saturated(report),
        "crossovers": crossovers(report),
        "round_trips": round_trips(report),
    }
    path = folder / "bench-latency.json"
    path.write_text(json.dumps(report, indent=2))
    chart = folder / "bench-latency.png"
    draw(report, chart)
    return [path, chart]


def draw(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    best = report["saturated"]
    regimes = sorted({b["goods"] for b in best})
    fig, axes = plt.subplots(1, len(regimes) + 1, figsize=(5.5 * (len(regimes) + 1), 4))
    for ax, goods in zip(axes, regimes, strict=False):
        mine = [b for b in best if b["goods"] == goods]
        delays = [b["delay_ms"] for b in mine]
        for side, colour in (("flow", "tab:green"), ("peer", "tab:olive")):
            ax.plot(delays, [b[side]["per_second"] for b in mine], "o-", color=colour, label=side)
        for side, colour, label in (
            ("flow", "tab:green", "flow bound: batch / lock hold"),
            ("peer", "tab:olive", "peer bound: 1 / row hold"),
        ):
            bounds = [b[f"{side}_bound"] for b in mine]
            if goods == 1 and all(bounds):
                ax.plot(delays, bounds, ":", color=colour, label=label)
        for b in mine:
            ax.annotate(
                f"{b['ratio']:.2f}x",
                (b["delay_ms"], b["flow"]["per_second"]),
                textcoords="offset points", xytext=(0, 6), ha="center", fontsize=8,
            )  # fmt: skip
        ax.set_title(f"{goods} goods id{'s' if goods > 1 else ''}: saturated orders/s")
        ax.set_xlabel("added latency each way, ms (app-db and primary-standby links)")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=8)
    ax = axes[-1]  # the buyers of one goods id: the ratio against the callers, each delay
    for delay in sorted({r["delay_ms"] for r in report["summary"]}):
        rows = sorted(
            (r for r in report["summary"] if r["goods"] == 1 and r["delay_ms"] == delay),
            key=lambda r: int(r["callers"]),
        )
        ax.plot([r["callers"] for r in rows], [r["ratio"] for r in rows], "o-", label=f"{delay} ms")
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.axhline(GOAL, color="grey", lw=0.8, ls="--")
    ax.set_xscale("log", base=2)
    ax.set_title("1 goods id: flow / peer against the buyers")
    ax.set_xlabel("callers (concurrent buyers of the one goods id)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8, title="added each way")
    fig.suptitle("POST /genOrder: the flow vs one PostgreSQL transaction per order (cluster)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
