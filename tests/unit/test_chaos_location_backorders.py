"""B1 and B2 restated per location, on hand-made data (inventory/check/backorders.py): the units
owed by the lines naming a location never above its limit at any backordered entry; a hand-over
of units at a location passes no earlier line that may take units there, and a line naming a
location is handed units there only. Each violation planted is caught; the chaos workload's
backorder lines name locations (inventory/chaos/backorders.py)."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from inventory.chaos import backorders as chaos_backorders
from inventory.check.backorders import Backorders, Handed, Waited, check_cap, check_fill_order

T0 = datetime(2026, 12, 6, 12)


def line(flag: str, position: int, wanted: int, location: str | None = None) -> Waited:
    moment = T0 + timedelta(seconds=position)
    return Waited(flag, position, wanted, "waiting", moment, moment, location=location)


def fill(flag: str, seq: int, num: int, *at: str) -> Handed:
    return Handed(flag, seq, num, T0 + timedelta(seconds=seq), tuple(at))


def book(lines: list[Waited], fills: list[Handed], limit: int = 10, **capped: int) -> Backorders:
    return Backorders({"g": limit}, {"g": lines}, {"g": fills}, {"g": dict(capped)})


# --- B1 per location --------------------------------------------------------------------------


def test_the_lines_naming_a_location_within_its_limit_pass() -> None:
    # n1 owes 2 at north (seq 2), s1 2 at south (seq 3), any 3 (seq 4), n2 1 at north after
    # n1 was handed 2 (seq 5, 6): north owes 1, its limit 2
    lines = [line("n1", 2, 2, "north"), line("s1", 3, 2, "south"), line("any", 4, 3)]
    lines.append(line("n2", 6, 1, "north"))
    data = book(lines, [fill("n1", 5, 2, "north")], north=2)
    result = check_cap(data)
    assert result.ok, result.numbers


def test_owing_past_a_location_s_limit_is_caught_within_the_goods_id_s() -> None:
    data = book([line("n1", 2, 2, "north"), line("n2", 3, 1, "north")], [], limit=10, north=2)
    result = check_cap(data)
    assert not result.ok
    assert result.numbers["over"] == ["g seq 3: owes 3 at north, its limit 2"]
    # lines naming another location, or none, do not count against north's limit
    other = book(
        [line("n1", 2, 2, "north"), line("x", 3, 5), line("s", 4, 3, "south")], [], north=2
    )
    assert check_cap(other).ok


def test_the_goods_id_s_limit_still_binds_lines_naming_a_location() -> None:
    data = book([line("n1", 2, 2, "north"), line("s1", 3, 2, "south")], [], limit=3, north=5)
    assert check_cap(data).numbers["over"] == ["g seq 3: owes 4, limit 3"]


# --- B2 per location --------------------------------------------------------------------------


def test_a_unit_at_a_location_passing_an_older_line_that_waits_elsewhere_is_fair() -> None:
    # n waits for north's units; south's unit goes to the later line naming none
    data = book([line("n", 2, 1, "north"), line("any", 3, 1)], [fill("any", 4, 1, "south")])
    result = check_fill_order(data)
    assert result.ok, result.numbers


def test_a_unit_passing_an_older_line_that_may_take_it_is_caught() -> None:
    # older lines naming none, or naming that location, may take it: both are caught
    for older in (line("any", 2, 1), line("s", 2, 1, "south")):
        data = book([older, line("late", 3, 1, "south")], [fill("late", 4, 1, "south")])
        result = check_fill_order(data)
        assert not result.ok
        assert "1 to late (place 3) while" in result.numbers["unfair"][0]


def test_a_line_naming_a_location_handed_units_elsewhere_is_caught() -> None:
    data = book([line("n", 2, 2, "north")], [fill("n", 3, 2, "north", "south")])
    result = check_fill_order(data)
    assert not result.ok
    assert result.numbers["unfair"] == ["g seq 3: n, naming north, handed units at north,south"]


def test_a_hand_over_of_unknown_locations_is_judged_as_anywhere() -> None:
    data = book([line("n", 2, 1, "north"), line("any", 3, 1)], [fill("any", 4, 1)])
    assert not check_fill_order(data).ok


# --- the workload -----------------------------------------------------------------------------


def test_the_workload_s_backorder_lines_name_a_location_or_none() -> None:
    rng = random.Random(7)
    goods = list(chaos_backorders.owed_goods("p-"))
    named = [chaos_backorders.order(rng, goods)[1] for _ in range(400)]
    where = [next(iter(n.values()), None) for n in named]
    near = where.count(chaos_backorders.NEAR)
    assert 60 < near < 140 and 30 < where.count("default") < 90 and where.count(None) > 150
