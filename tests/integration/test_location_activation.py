"""A location made active again hands what it holds to the lines waiting for its units, in
the activation's answer, on each database: units at an inactive location are out of reach of
every allocation and every hand-over, and before this an activation served nobody, so a buyer
owed units stayed BACKORDERED with the units on a shelf until some other stock movement of
its goods id came by."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from shared.config.settings import Settings
from tests.conftest import ADMIN, unique
from tests.helpers import Services, running_services
from tests.integration.test_backorders import ledger_holds, limit, lines, order


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    with running_services(settings) as s:
        yield s


def place(s: Services, location: str, active: bool) -> None:
    made = s.stock.put(
        f"/locations/{location}", json={"priority": 1, "active": active}, headers=ADMIN
    )
    assert made.status_code in (200, 201), made.json


def test_activating_a_location_hands_its_units_to_the_lines_waiting(services: Services) -> None:
    s = services
    goods, shelf = unique(), unique("loc")
    place(s, shelf, True)
    seeded = s.stock.put(f"/stock/{goods}/locations/{shelf}", json={"num": 3}, headers=ADMIN)
    assert seeded.status_code == 200, seeded.json
    place(s, shelf, False)
    assert limit(s, goods, 5).status_code == 200
    first, second = order(s, goods, 2), order(s, goods, 2)
    assert [first.json["outcome"], second.json["outcome"]] == ["backordered", "backordered"]
    place(s, shelf, True)
    # Oldest first: the first line gets 2 and is filled, the second the last unit.
    assert [(w, f, state) for _, w, f, state in lines(s, goods)] == [
        (2, 2, "filled"),
        (2, 1, "waiting"),
    ], "the activation handed nothing to the waiting lines"
    view = s.stock.get(f"/stock/{goods}").json
    assert view["owed"] == 1
    ledger_holds(s, goods, 5)
    # Activated again, with nothing left there: nothing moves, nothing is written twice.
    place(s, shelf, True)
    assert [f for _, _, f, _ in lines(s, goods)] == [2, 1]
