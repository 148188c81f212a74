"""GET /stock answers from one snapshot, on SQLite, PostgreSQL and MariaDB: its total, each
location's level and the units in transit agree, whatever commits while it reads. Before, the
total and the named levels were read in two transactions, and a restock at a named location
committed between them showed the default location at -5.

The interleaving is forced: before every statement the answer runs, the stock service's own
adjustment commits a restock of 5 at the named location (from another thread, through the
lock and the fenced write, as an admin's would)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event

from shared.config.settings import Settings
from stock_service.core.plan import Adjustment, Outcome
from tests.conftest import ADMIN, unique
from tests.helpers import Services, running_services
from tests.integration.test_locations import deduct, stock_at


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    with running_services(settings) as s:
        yield s


@pytest.fixture
def north(services: Services) -> str:
    name = unique("north")
    made = services.stock.put(f"/locations/{name}", json={"priority": 1}, headers=ADMIN)
    assert made.status_code == 201, made.json
    return name


def test_a_restock_committed_between_the_answers_reads_never_shows_a_negative_default(
    services: Services, north: str
) -> None:
    s = services
    deps = s.stock_app.extensions["stock"]
    goods = unique()
    stock_at(s, goods, {north: 20})  # the default location holds nothing
    reader = threading.get_ident()
    armed = False
    restocks: list[Any] = []

    def restock_first(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        if (
            not armed
            or threading.get_ident() != reader
            or not statement.lstrip().startswith("SELECT")
        ):
            return
        restock = Adjustment(goods, "restock", delta=5, location=north)
        done = threading.Thread(target=lambda: restocks.append(deps.deduction.adjust(restock)))
        done.start()
        done.join(30)
        assert not done.is_alive(), "the restock never committed"

    engines = {id(e): e for e in (deps.store.engine, deps.locations.engine)}.values()
    for engine in engines:
        event.listen(engine, "before_cursor_execute", restock_first)
    try:
        armed = True
        answer = s.stock.get(f"/stock/{goods}")
        armed = False
    finally:
        for engine in engines:
            event.remove(engine, "before_cursor_execute", restock_first)
    assert restocks and all(d.outcome is Outcome.ADJUSTED for d in restocks), restocks
    assert answer.status_code == 200, answer.json
    view = answer.json
    parts = {p["location"]: (p["num"], p["held"]) for p in view["locations"]}
    # One snapshot: the default still holds nothing, the named level is the whole total.
    assert parts == {"default": (0, 0), north: (view["num"], 0)}, view
    assert view["num"] in {20 + 5 * n for n in range(1, len(restocks) + 1)}, view
    assert view["inTransit"] == 0
    final = s.stock.get(f"/stock/{goods}").json
    assert final["num"] == 20 + 5 * len(restocks)


def test_deductions_at_a_named_location_never_show_a_default_that_is_not_there(
    services: Services, north: str
) -> None:
    """The same, unforced: a hundred deductions from the named location commit while GET /stock
    is read over and over; every answer has the default at 0 and the parts adding up."""
    s = services
    goods = unique()
    stock_at(s, goods, {north: 100})
    done = threading.Event()

    def sell() -> None:
        try:
            for _ in range(100):
                line = {"goodsId": goods, "goodsNum": 1, "location": north}
                assert deduct(s, [line]).status_code == 200
        finally:
            done.set()

    seller = threading.Thread(target=sell)
    seller.start()
    reads = 0
    try:
        while not done.is_set() or reads == 0:
            view = s.stock.get(f"/stock/{goods}").json
            parts = {p["location"]: (p["num"], p["held"]) for p in view["locations"]}
            assert parts == {"default": (0, 0), north: (view["num"], 0)}, view
            reads += 1
    finally:
        seller.join(60)
    assert s.stock.get(f"/stock/{goods}").json["num"] == 0
    assert reads > 1
