"""Stock in several locations in a chaos run (docs/locations.md): three locations of their own
priorities, a few goods ids kept in them (LOCATED below), and the buyers' orders of them.

The three locations are made (or set again: a PUT of the same body) before the load, all
active, and nothing flips them during the run: the allocation rule's check (L5,
inventory/check/allocation_rule.py) judges every decision against these priorities. The
`default` location (priority 0, no row) is there too, best of all: the located goods have
nothing in it, the run's other goods everything.

The located goods' orders, a small share of the buyers' (workload.py), are of four kinds:
- `any`: lines naming no location, all or nothing: from one location for the whole order if
  one can fill it, else each line from one, a line split only when no one location can fill it;
- `named`: a line names its location: from there or not at all;
- `partial`: fill=partial, lines naming no location: what can be filled, the rest refused;
- `partial-named`: fill=partial with a line naming its location.
Their lines take 1-6 units, against levels kept low (the mover restocks a goods id only when
its total falls below a few lines' worth: transfers.py), so lines often find no location that
can fill them alone (splits) and orders find less than they want (partial fills). One order
in four adds a line of one of the run's other goods (all in `default`): an order that needs
two locations.
"""

from __future__ import annotations

import random
from typing import Any

import httpx

# location -> priority (lower first; `default`, priority 0, is better than all three)
LOCATIONS = {"chaos-near": 1, "chaos-mid": 2, "chaos-far": 3}
LOCATED = 4  # goods ids kept in the three locations
SEEDS = {"chaos-near": 3, "chaos-mid": 5, "chaos-far": 8}  # each located goods id's start
LINE_UNITS = (1, 6)
KINDS = (("any", 0.35), ("named", 0.25), ("partial", 0.25), ("partial-named", 0.15))


def located_goods(prefix: str, count: int = LOCATED) -> dict[str, dict[str, int]]:
    """goods id -> location -> its seeded level."""
    return {f"{prefix}loc{i}": dict(SEEDS) for i in range(count)}


def set_up(client: httpx.Client, located: dict[str, dict[str, int]]) -> None:
    """The locations (active, their priorities), then each located goods id seeded at each
    (an adjustment of reason `set` there: the first brings the goods id into being)."""
    for name, priority in LOCATIONS.items():
        answer = client.put(f"/locations/{name}", json={"priority": priority, "active": True})
        answer.raise_for_status()
    for goods_id, levels in located.items():
        for name, num in levels.items():
            answer = client.put(f"/stock/{goods_id}/locations/{name}", json={"num": num})
            answer.raise_for_status()


def places() -> dict[str, tuple[int, bool]]:
    """What the run set: location -> (priority, active), the default one's included."""
    return {"default": (0, True), **{n: (p, True) for n, p in LOCATIONS.items()}}


def located_order(
    rng: random.Random, located: list[str], others: list[str]
) -> tuple[dict[str, int], str | None, dict[str, str]]:
    """(lines, fill, the locations lines name) of one order of the located goods; fill None:
    all or nothing (the default, not sent)."""
    kind = rng.choices([k for k, _ in KINDS], [w for _, w in KINDS])[0]
    count = 1 if rng.random() < 0.6 else 2
    lines = {g: rng.randint(*LINE_UNITS) for g in rng.sample(located, min(count, len(located)))}
    named: dict[str, str] = {}
    if kind.endswith("named"):
        named[rng.choice(list(lines))] = rng.choice(list(LOCATIONS))
    if others and rng.random() < 0.25:
        lines[rng.choice(others)] = 1
    return lines, "partial" if kind.startswith("partial") else None, named


def items(lines: dict[str, int], named: dict[str, str]) -> list[dict[str, Any]]:
    """genOrder's items: a line's location only where it names one."""
    return [
        {"goodsId": g, "num": n, **({"location": named[g]} if g in named else {})}
        for g, n in lines.items()
    ]


def filled_of(answer: Any) -> dict[str, int] | None:
    """The units each line filled, from a placed order's answer (an order that asked for a
    fill or a location has them); None when it has none, or one is still unknown."""
    found = answer.get("items") if isinstance(answer, dict) else None
    if not isinstance(found, list):
        return None
    try:
        filled = {str(i["goodsId"]): i["filled"] for i in found}
    except (KeyError, TypeError):
        return None
    if any(not isinstance(n, int) for n in filled.values()):
        return None
    return filled
