"""What a chaos run shows: a row per fault window, the verdicts, the history and a timeline.

A window runs from a fault's injection to the next fault's (its heal and recovery included).
Its numbers are over the first sends of the orders invoked in it: ok / failed / unknown, the
share answered definitely (ok or refused) against the same share in the baseline, the longest
time without a confirmation, the recovery: from the heal to the first order invoked after it
that was confirmed; for a replicated part's fault, the takeover (from the fault to another
host's taking over) and the time from the heal until it was replicated again; and the lost
sales of its orders (LS: failed for the infrastructure while their stock was there).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from inventory.chaos.checker import Verdict
from inventory.chaos.history import FAIL, OK, UNKNOWN, Op


@dataclass
class Window:
    name: str
    what: str  # what the nemesis did
    start: float
    heal: float
    end: float
    takeover_s: float | None = None  # a replicated part's: until another host took over
    replicated_s: float | None = None  # from the heal until the part was replicated again


@dataclass
class WindowRow:
    fault: str
    start_s: float
    held_s: float
    ok: int
    failed: int
    unknown: int
    answered_vs_baseline: float | None
    longest_gap_s: float
    recovery_s: float | None
    takeover_s: float | None = None
    replicated_s: float | None = None
    lost_sales: int = 0


def _firsts(ops: Sequence[Op], start: float, end: float) -> list[Op]:
    return [
        o
        for o in ops
        if o.kind == "order" and not o.double and o.attempt == 0 and start <= o.invoke < end
    ]


def longest_gap(ops: Sequence[Op], start: float, end: float) -> float:
    times = sorted(o.complete for o in ops if o.outcome == OK and start <= o.complete < end)
    edges = [start, *times, end]
    return max(b - a for a, b in itertools.pairwise(edges))


def recovery(ops: Sequence[Op], heal: float) -> float | None:
    after = [o.complete for o in ops if o.outcome == OK and o.invoke >= heal]
    return min(after) - heal if after else None


def answered(outcomes: Sequence[str]) -> float | None:
    return sum(1 for o in outcomes if o != UNKNOWN) / len(outcomes) if outcomes else None


def rows(
    ops: Sequence[Op],
    windows: Sequence[Window],
    baseline_end: float,
    lost: Iterable[str] = (),
) -> list[WindowRow]:
    """`lost`: the order ids of the lost sales (checker.lost_orders), each counted in the window
    of its Idempotency-Key's first send (an answer naming the order may come only with a
    retry); one that no answer named is in none (unattributed_lost says how many)."""
    final = final_outcomes(ops)
    base = answered([final[o.key] for o in _firsts(ops, 0.0, baseline_end)])
    sent = list(_first_sends(ops, lost).values())
    table = [_row("baseline", ops, 0.0, baseline_end, baseline_end, base, final)]
    table[0].lost_sales = sum(1 for t in sent if t < baseline_end)
    for w in windows:
        row = _row(w.name, ops, w.start, w.heal, w.end, base, final)
        row.takeover_s, row.replicated_s = w.takeover_s, w.replicated_s
        row.lost_sales = sum(1 for t in sent if w.start <= t < w.end)
        table.append(row)
    return table


def _first_sends(ops: Sequence[Op], orders: Iterable[str]) -> dict[str, float]:
    """Order id -> when its key was first sent, for the orders an answer named."""
    key_of: dict[str, str] = {}
    first: dict[str, float] = {}
    for o in ops:
        if o.kind != "order":
            continue
        first[o.key] = min(first.get(o.key, o.invoke), o.invoke)
        if o.order_id:
            key_of[o.order_id] = o.key
    return {order: first[key_of[order]] for order in orders if order in key_of}


def unattributed_lost(ops: Sequence[Op], lost: Iterable[str]) -> int:
    """Lost sales whose order no answer named: counted in no window."""
    lost = list(lost)
    return len(lost) - len(_first_sends(ops, lost))


def final_outcomes(ops: Sequence[Op]) -> dict[str, str]:
    """Each order's outcome: a definite answer to any of its sends, else unknown."""
    final: dict[str, str] = {}
    for o in ops:
        if o.kind != "order":
            continue
        if o.outcome != UNKNOWN or o.key not in final:
            final[o.key] = o.outcome if o.outcome != UNKNOWN else final.get(o.key, UNKNOWN)
    return final


def _row(
    name: str,
    ops: Sequence[Op],
    start: float,
    heal: float,
    end: float,
    base: float | None,
    final: dict[str, str],
) -> WindowRow:
    outcomes = [final.get(f.key, UNKNOWN) for f in _firsts(ops, start, end)]
    share = answered(outcomes)
    return WindowRow(
        name,
        round(start, 1),
        round(heal - start, 1),
        outcomes.count(OK),
        outcomes.count(FAIL),
        outcomes.count(UNKNOWN),
        round(share / base, 2) if share is not None and base else None,
        round(longest_gap(ops, start, end), 1),
        None if name == "baseline" else _round(recovery(ops, heal)),
    )


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def markdown(table: Sequence[WindowRow], verdicts: Sequence[Verdict]) -> str:
    lines = [
        "| window | start s | held s | ok | failed | unknown | answered vs baseline "
        "| longest gap s | recovery s | takeover s | replicated again s | lost sales |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in table:
        ratio = "" if r.answered_vs_baseline is None else f"{r.answered_vs_baseline:.2f}"
        rec, took, again = (
            "" if v is None else f"{v:.1f}" for v in (r.recovery_s, r.takeover_s, r.replicated_s)
        )
        lines.append(
            f"| {r.fault} | {r.start_s} | {r.held_s} | {r.ok} | {r.failed} "
            f"| {r.unknown} | {ratio} | {r.longest_gap_s} | {rec} | {took} | {again} "
            f"| {r.lost_sales} |"
        )
    lines += ["", "| check | | verdict | detail |", "|---|---|---|---|"]
    for v in verdicts:
        examples = f" e.g. {', '.join(v.counterexamples[:3])}" if v.counterexamples else ""
        lines.append(f"| {v.check} | {v.name} | {v.verdict} | {v.detail}{examples} |")
    return "\n".join(lines) + "\n"


def clocks_markdown(summary: dict[str, Any]) -> str:
    """Each host's clock in the run (inventory/chaos/clocks.py): the offset asked, what its
    answers' Date headers said, its processes under libfaketime; "" when all were true."""
    observed = summary.get("clocks")
    if not observed:
        return ""
    lines = ["", "| host | clock offset s | measured s | processes under libfaketime |"]
    lines.append("|---|---|---|---|")
    for name, row in observed["hosts"].items():
        offset = "true clock" if row["offset_s"] is None else f"{row['offset_s']:+.1f}"
        seen = row.get("measured_s")
        measured = f"{seen[0]:+.2f} .. {seen[1]:+.2f}" if seen else ""
        lines.append(f"| {name} | {offset} | {measured} | {row['under_faketime']} |")
    return "\n".join(lines) + "\n"


def write(
    folder: Path,
    summary: dict[str, Any],
    table: Sequence[WindowRow],
    verdicts: Sequence[Verdict],
    windows: Sequence[Window],
    ops: Sequence[Op],
) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    data = {
        **summary,
        "windows": [asdict(r) for r in table],
        "faults": [asdict(w) for w in windows],
        "verdicts": [asdict(v) for v in verdicts],
    }
    (folder / "report.json").write_text(json.dumps(data, indent=2))
    (folder / "report.md").write_text(markdown(table, verdicts) + clocks_markdown(summary))
    timeline(ops, windows, folder / "timeline.png")


def timeline(ops: Sequence[Op], windows: Sequence[Window], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    end = max((o.complete for o in ops), default=1.0)
    seconds = range(int(end) + 1)
    per: dict[str, list[int]] = {k: [0] * len(seconds) for k in (OK, FAIL, UNKNOWN)}
    latency: list[list[float]] = [[] for _ in seconds]
    ops = [o for o in ops if o.kind == "order"]  # the cancels and pays are not orders
    for o in ops:
        second = int(o.complete)
        per[o.outcome][second] += 1
        latency[second].append(o.latency * 1000)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(12, 6), sharex=True)
    for outcome, color in ((OK, "tab:green"), (FAIL, "tab:blue"), (UNKNOWN, "tab:red")):
        top.plot(list(seconds), per[outcome], color=color, lw=1, label=f"{outcome} answers/s")
    p50 = [_pct(v, 50) for v in latency]
    p99 = [_pct(v, 99) for v in latency]
    bottom.plot(list(seconds), p50, color="tab:gray", lw=1, label="latency p50")
    bottom.plot(list(seconds), p99, color="black", lw=1, label="latency p99")
    bottom.set_yscale("log")
    bottom.set_ylabel("ms")
    bottom.set_xlabel("seconds since start")
    top.set_ylabel("answers / s")
    for axis in (top, bottom):
        for w in windows:
            axis.axvspan(w.start, w.heal, color="orange", alpha=0.25)
    for w in windows:
        top.text(w.start, top.get_ylim()[1] * 0.97, w.name, rotation=90, va="top", fontsize=7)
    top.legend(loc="upper right", fontsize=8)
    bottom.legend(loc="upper right", fontsize=8)
    top.set_title("chaos run: answers and latency per second; fault windows shaded")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))]
