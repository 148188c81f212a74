"""What `inventory demo locations` reads and shows: a goods id's level at each location (GET
/stock/{goodsId}: `locations` and `inTransit`), each step's levels before and after it as one
table (Shelf: the story's client, goods ids and steps), and the facts of an allocation held
against the rule (stock_service/core/allocation.py: the whole order from one location when one
can fill it, a line split only when none can)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich.table import Table

from inventory.local.client import StackClient
from inventory.scenarios.rig import Story


@dataclass(frozen=True)
class Levels:
    """The levels of some goods ids, as the stock service answers them."""

    at: dict[str, dict[str, int]]  # goods id -> location -> units there
    in_transit: dict[str, int]  # goods id -> units sent and not yet received
    total: dict[str, int]  # goods id -> its level, all locations (`num`)

    def of(self, goods_id: str, location: str) -> int:
        return self.at.get(goods_id, {}).get(location, 0)


def read_levels(client: StackClient, goods_ids: Sequence[str]) -> Levels:
    at: dict[str, dict[str, int]] = {}
    moving: dict[str, int] = {}
    total: dict[str, int] = {}
    for goods_id in goods_ids:
        answer = client.stock.get(f"/stock/{goods_id}")
        if answer.status_code == 404:  # not seeded yet: nowhere
            body: dict[str, Any] = {"locations": [], "inTransit": 0, "num": 0}
        else:
            answer.raise_for_status()
            body = answer.json()
        at[goods_id] = {p["location"]: int(p["num"]) for p in body["locations"]}
        moving[goods_id] = int(body["inTransit"])
        total[goods_id] = int(body["num"])
    return Levels(at, moving, total)


def short(goods_id: str) -> str:
    """A goods id without the run's prefix (sc-loc-1a2b3c-phone: phone)."""
    return goods_id.rsplit("-", 1)[-1]


def _cell(before: int, after: int) -> str:
    return str(after) if before == after else f"[bold]{before} -> {after}[/]"


def levels_table(places: Sequence[str], before: Levels, after: Levels | None = None) -> Table:
    """One row per goods id, one column per location, then in transit and the total; a cell
    that the step changed shows `before -> after`."""
    after = after or before
    table = Table()
    table.add_column("goods id")
    for place in places:
        table.add_column(place, justify="right")
    table.add_column("in transit", justify="right")
    table.add_column("total", justify="right")
    for goods_id in after.at:
        table.add_row(
            short(goods_id),
            *(_cell(before.of(goods_id, p), after.of(goods_id, p)) for p in places),
            _cell(before.in_transit.get(goods_id, 0), after.in_transit.get(goods_id, 0)),
            _cell(before.total.get(goods_id, 0), after.total.get(goods_id, 0)),
        )
    return table


def allocations_line(allocations: Sequence[Mapping[str, Any]]) -> str:
    return ", ".join(f"{short(a['goodsId'])} {a['num']} from {a['location']}" for a in allocations)


def history_table(entries: Sequence[Mapping[str, Any]]) -> Table:
    """A goods id's ledger, newest first: each entry with where it moved its units (a flag or
    a transfer id shown by its last 8 characters)."""
    table = Table()
    for column in ("seq", "kind", "delta", "level after", "where", "flag, reason or transfer"):
        table.add_column(column, overflow="fold")
    for e in entries:
        parts = e.get("allocations")
        where = ", ".join(f"{p['location']} {p['num']}" for p in parts) if parts else e["location"]
        what = e.get("reason") or "..." + (e.get("transferId") or e.get("flag") or "")[-8:]
        table.add_row(
            str(e["seq"]), e["kind"], f"{e['delta']:+d}", str(e["levelAfter"]), where, what
        )
    return table


def rule_facts(
    lines: Mapping[str, int],
    places: Sequence[str],
    before: Levels,
    allocations: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """What an order was allocated, beside what the levels before it allowed: the locations
    that could fill the whole order (`places` best first), those that could fill each line,
    and the lines taken from more than one location."""
    taken: dict[str, dict[str, int]] = defaultdict(dict)
    for a in allocations:
        taken[a["goodsId"]][a["location"]] = int(a["num"])
    return {
        "lines": dict(lines),
        "allocations": {g: dict(parts) for g, parts in taken.items()},
        "locations": sorted({place for parts in taken.values() for place in parts}),
        "one_for_all": [p for p in places if all(before.of(g, p) >= n for g, n in lines.items())],
        "fits": {g: [p for p in places if before.of(g, p) >= n] for g, n in lines.items()},
        "split": sorted(g for g, parts in taken.items() if len(parts) > 1),
    }


def rule_held(facts: Mapping[str, Any]) -> bool:
    """The rule, on one all-or-nothing order's facts: the whole order from the best location
    that could fill it, when one could; a line split exactly when no location could fill it."""
    whole = facts["one_for_all"]
    if whole and facts["locations"] != [whole[0]]:
        return False
    unfillable = sorted(g for g, fits in facts["fits"].items() if not fits)
    return bool(facts["split"] == unfillable)


class Shelf:
    """The scenario's client, its goods ids and its story: each step shown with its levels."""

    def __init__(
        self, client: StackClient, story: Story, prefix: str, places: Sequence[str]
    ) -> None:
        self.client, self.story, self.places = client, story, places
        self.phone, self.case = prefix + "phone", prefix + "case"

    def levels(self) -> Levels:
        return read_levels(self.client, [self.phone, self.case])

    def show(self, table: Any) -> None:
        if self.story.console:
            self.story.console.print(table)

    def around(self, title: str, act: Callable[[], Any]) -> tuple[Any, Levels, Levels]:
        """Run a step, and show the levels it left beside those it found."""
        before = self.levels()
        done = act()
        after = self.levels()
        self.story.show(title)
        self.show(levels_table(self.places, before, after))
        return done, before, after

    def order(self, user: str, lines: dict[str, int], fill: str | None = None) -> dict[str, Any]:
        items = [{"goodsId": g, "num": n} for g, n in lines.items()]
        body: dict[str, Any] = {"userId": user, "items": items, **({"fill": fill} if fill else {})}
        answer = self.client.gen_order(body)
        got = answer.json()
        said = ", ".join(f"{short(g)} x{n}" for g, n in lines.items())
        self.story.show(
            f"POST /genOrder {user}: {said}{' fill=partial' if fill else ''} -> HTTP "
            f"{answer.status_code} {got['status']}"
        )
        if got.get("allocations"):
            self.story.show(f"allocations: {allocations_line(got['allocations'])}")
        return {"code": answer.status_code, **got}
