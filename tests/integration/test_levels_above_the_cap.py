"""MAX_STOCK_LEVEL bounds what an adjustment may raise a level to, never what units that come
back may leave, on SQLite, PostgreSQL and MariaDB, at the default cap itself: a return and a
transfer's in-leg lift a level past it (their units are real: never refused); such a level
still takes every adjustment that lowers it, and a compare-and-swap naming it; a restock is
refused with a 409 naming the cap until the level is back under it. Before, a level past the
cap refused every adjustment but one that brought it under at once, and no compare-and-swap
could name it (`expected` was validated against the cap: 400)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from shared.config.settings import Settings
from tests.conftest import ADMIN, unique
from tests.helpers import Services, running_services
from tests.integration.test_locations import deduct, ledger_ok, levels, stock_at


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    with running_services(settings) as s:
        yield s


def adjust(s: Services, goods: str, **body: Any) -> Any:
    return s.stock.post(f"/stock/{goods}/adjustments", json=body, headers=ADMIN)


def total(s: Services, goods: str) -> int:
    return int(s.stock.get(f"/stock/{goods}").json["num"])


def test_a_return_lifts_a_level_past_the_cap_and_the_level_stays_adjustable(
    services: Services,
) -> None:
    s = services
    cap = s.settings.max_stock_level
    goods = unique()
    s.seed(goods, cap)  # at the cap: PUT /stock takes it
    sold = deduct(s, [{"goodsId": goods, "goodsNum": 5}])
    assert sold.status_code == 200, sold.json
    assert adjust(s, goods, reason="restock", delta=5).json["num"] == cap
    at_cap = adjust(s, goods, reason="restock", delta=1)
    assert (at_cap.status_code, at_cap.json["num"]) == (409, cap), at_cap.json
    # The sold units come back: never refused, so the level goes past the cap.
    back = s.stock.put(f"/returnStock/{sold.json['flag']}")
    assert back.json["outcome"] == "returned", back.json
    assert total(s, goods) == cap + 5
    refused = adjust(s, goods, reason="restock", delta=1)
    assert (refused.status_code, refused.json["num"]) == (409, cap + 5), refused.json
    assert f"above {cap}" in refused.json["error"]
    # Downward changes are taken while the level is still past the cap.
    loss = adjust(s, goods, reason="damaged", delta=-2)
    assert (loss.status_code, loss.json["num"]) == (201, cap + 3), loss.json
    # A compare-and-swap can name the level, and count it down (still past the cap).
    count = adjust(s, goods, reason="count", num=cap + 1, expected=cap + 3)
    assert (count.status_code, count.json["num"]) == (201, cap + 1), count.json
    stale = adjust(s, goods, reason="count", num=cap, expected=cap + 3)
    assert (stale.status_code, stale.json["num"]) == (409, cap + 1), stale.json
    up = adjust(s, goods, reason="count", num=cap + 2, expected=cap + 1)
    assert (up.status_code, up.json["num"]) == (409, cap + 1), up.json
    # Back under the cap, a restock up to it is taken, and one past it refused.
    assert adjust(s, goods, reason="count", num=cap - 10, expected=cap + 1).status_code == 201
    assert adjust(s, goods, reason="restock", delta=10).json["num"] == cap
    assert adjust(s, goods, reason="restock", delta=1).status_code == 409
    assert total(s, goods) == cap
    ledger_ok(s, goods)


def test_a_transfer_received_lifts_a_level_past_the_cap_and_a_raising_set_is_refused(
    services: Services,
) -> None:
    s = services
    cap = s.settings.max_stock_level
    north, south = unique("north"), unique("south")
    for priority, name in enumerate((north, south), start=1):
        made = s.stock.put(f"/locations/{name}", json={"priority": priority}, headers=ADMIN)
        assert made.status_code == 201, made.json
    goods = unique()
    stock_at(s, goods, {north: 10})
    s.seed(goods, cap - 10)  # the default location: the total is at the cap
    assert total(s, goods) == cap
    body = {"goodsId": goods, "from": north, "to": south, "units": 4, "reference": unique("T")}
    sent = s.stock.post("/transfers", json=body, headers=ADMIN)
    assert sent.status_code == 201, sent.json
    assert adjust(s, goods, reason="restock", delta=4).json["num"] == cap  # 4 in transit
    received = s.stock.post(f"/transfers/{sent.json['transferId']}/receive", headers=ADMIN)
    assert received.status_code == 200, received.json
    assert total(s, goods) == cap + 4
    assert levels(s, goods) == {"default": cap - 6, north: 6, south: 4}
    assert adjust(s, goods, reason="restock", delta=1, location=south).status_code == 409
    # A set of the default location that would raise the total: 409, not a silent 200.
    raised = s.stock.put(f"/stock/{goods}", json={"num": cap - 5}, headers=ADMIN)
    assert raised.status_code == 409, raised.json
    assert f"above {cap}" in raised.json["error"]
    # Lowering one location while the total stays past the cap is taken.
    loss = adjust(s, goods, reason="damaged", delta=-1, location=south)
    assert (loss.status_code, loss.json["num"]) == (201, cap + 3), loss.json
    lowered = s.stock.put(f"/stock/{goods}", json={"num": cap - 8}, headers=ADMIN)
    assert lowered.status_code == 200 and lowered.json["num"] == cap + 1, lowered.json
    ledger_ok(s, goods)
