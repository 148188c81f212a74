"""What `inventory demo backorders` reads and shows: a goods id's level, the units its holds
and reservations hold, the units it owes and its backorder limit (GET /stock/{goodsId}), each
step's figures before and after it as one table, and the lines in line for a goods id as the
stock database keeps them (its `backorder` table: the place in line, the units wanted, filled
since, and the state), read through the scenario's own engine as the locations' checks are."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from rich.table import Table

from inventory.local import stack_state
from inventory.local.client import StackClient
from inventory.scenarios.rig import Story
from inventory.scenarios.shelves import short
from shared.database.engines import make_engine
from stock_service.storage.tables import backorder

FIGURES = ("num", "held", "owed", "backorderLimit")  # GET /stock/{goodsId}'s, as shown
HEADINGS = ("on hand", "held", "owed", "limit")


@dataclass(frozen=True)
class Figures:
    """Some goods ids' figures as the stock service answers them: goods id -> figure -> n."""

    of: dict[str, dict[str, int]]

    def get(self, goods_id: str, figure: str) -> int:
        return self.of.get(goods_id, {}).get(figure, 0)


def read_figures(client: StackClient, goods_ids: Sequence[str]) -> Figures:
    found: dict[str, dict[str, int]] = {}
    for goods_id in goods_ids:
        answer = client.stock.get(f"/stock/{goods_id}")
        if answer.status_code == 404:  # not seeded yet: nothing anywhere
            found[goods_id] = dict.fromkeys(FIGURES, 0)
            continue
        answer.raise_for_status()
        body = answer.json()
        found[goods_id] = {f: int(body[f]) for f in FIGURES}
    return Figures(found)


def _cell(before: int, after: int) -> str:
    return str(after) if before == after else f"[bold]{before} -> {after}[/]"


def figures_table(before: Figures, after: Figures) -> Table:
    """One row per goods id; a cell the step changed shows `before -> after`."""
    table = Table()
    table.add_column("goods id")
    for heading in HEADINGS:
        table.add_column(heading, justify="right")
    for goods_id in after.of:
        table.add_row(
            short(goods_id),
            *(_cell(before.get(goods_id, f), after.get(goods_id, f)) for f in FIGURES),
        )
    return table


@dataclass(frozen=True)
class Line:
    """A backordered line, as the stock database's `backorder` row has it."""

    flag: str
    position: int  # its `backordered` ledger entry's seq: its place in line
    wanted: int
    filled: int
    state: str  # waiting, filled, cancelled


def read_lines(state: stack_state.StackState, goods_id: str) -> list[Line]:
    """The goods id's lines, first in line first."""
    engine = make_engine(state.stock_database_url)
    query = (
        sa.select(backorder).where(backorder.c.goods_id == goods_id).order_by(backorder.c.position)
    )
    try:
        with engine.connect() as conn:
            rows = list(conn.execute(query))
    finally:
        engine.dispose()
    return [Line(r.flag, int(r.position), int(r.wanted), int(r.filled), r.state) for r in rows]


def lines_table(
    lines: Sequence[Line], buyers: Mapping[str, str], statuses: Mapping[str, str]
) -> Table:
    """The lines in line, with whose order each is and what that order says now."""
    table = Table()
    for column in ("place", "buyer", "seq", "wanted", "filled", "state", "order"):
        table.add_column(column)
    for place, line in enumerate(lines, 1):
        table.add_row(
            str(place),
            buyers.get(line.flag, "..." + line.flag[-8:]),
            str(line.position),
            str(line.wanted),
            str(line.filled),
            line.state,
            statuses.get(line.flag, ""),
        )
    return table


class Counter:
    """The scenario's client, stack, goods ids and story: each step shown with its figures."""

    def __init__(
        self,
        client: StackClient,
        state: stack_state.StackState,
        story: Story,
        goods_ids: Sequence[str],
    ) -> None:
        self.client, self.state, self.story, self.goods_ids = client, state, story, goods_ids

    def figures(self) -> Figures:
        return read_figures(self.client, self.goods_ids)

    def show(self, table: Any) -> None:
        if self.story.console:
            self.story.console.print(table)

    def around(self, title: str, act: Callable[[], Any]) -> tuple[Any, Figures, Figures]:
        """Run a step, and show the figures it left beside those it found."""
        before = self.figures()
        done = act()
        after = self.figures()
        self.story.show(title)
        self.show(figures_table(before, after))
        return done, before, after

    def status(self, order_id: str) -> str:
        return str(self.client.order_row(order_id).get("status"))

    def lines(self, goods_id: str, buyers: Mapping[str, str]) -> list[Line]:
        """Read the goods id's lines and show them with their orders' statuses."""
        found = read_lines(self.state, goods_id)
        statuses = {line.flag: self.status(line.flag) for line in found}
        self.story.show(f"the lines of {short(goods_id)} (the stock database's backorder table):")
        self.show(lines_table(found, buyers, statuses))
        return found
