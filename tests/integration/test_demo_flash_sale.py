"""`inventory demo flash-sale`: 500 buyers, 50 of them clicking five times at once, for 100
units with a limit of 1 per buyer, on a stack of its own over PostgreSQL (its gunicorn services
and the test session's ZooKeeper and Redis); its facts asserted from the scenario's result, not
its printout. And the facts' pure reading (inventory/scenarios/clicks.py) on hand-made answers,
each fact it holds planted broken once."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from inventory import scenarios
from inventory.check.buyers import BuyerOrder
from inventory.local.servers import ServerProcess
from inventory.scenarios import clicks
from inventory.scenarios.clicks import LIMITED, OTHER, PLACED, SOLD_OUT, Click, facts, sale_ok

G = "sc-fs-test-console"


# --- the facts, on hand-made answers ---------------------------------------------------------


def answered(
    click: Click, status: int, order_id: str, order_status: str, reason: str = ""
) -> Click:
    click.status, click.order_id, click.order_status = status, order_id, order_status
    click.reason = reason or None
    click.had = 1 if reason == "limit_per_buyer" else None
    return click


def small_sale() -> tuple[list[list[Click]], dict[str, BuyerOrder]]:
    """Two units, five buyers: ann clicks three times under one key (placed), bob three times
    under three keys (one placed, two refused by the limit), cat and dan once (both sold
    out), eve three times under three keys after the sale (each sold out)."""
    ann = [Click("ann", "k-ann", 3) for _ in range(3)]
    bob = [Click("bob", f"k-bob{i}", 3) for i in range(3)]
    cat, dan = [Click("cat", "k-cat", 1)], [Click("dan", "k-dan", 1)]
    eve = [Click("eve", f"k-eve{i}", 3) for i in range(3)]
    for c in ann:
        answered(c, 200, "o-ann", "CONFIRMED")
    answered(bob[0], 409, "o-bob1", "FAILED", "limit_per_buyer")
    answered(bob[1], 200, "o-bob0", "CONFIRMED")
    answered(bob[2], 409, "o-bob2", "FAILED", "limit_per_buyer")
    answered(cat[0], 409, "o-cat", "FAILED", "insufficient_stock")
    answered(dan[0], 409, "o-dan", "FAILED", "insufficient_stock")
    for i, c in enumerate(eve):
        answered(c, 409, f"o-eve{i}", "FAILED", "insufficient_stock")
    rows = [
        BuyerOrder("o-ann", "ann", "CONFIRMED", None, {G: 1}),
        BuyerOrder("o-bob0", "bob", "CONFIRMED", None, {G: 1}),
        BuyerOrder("o-bob1", "bob", "FAILED", "limit_per_buyer", {G: 1}),
        BuyerOrder("o-bob2", "bob", "FAILED", "limit_per_buyer: had 1", {G: 1}),
        BuyerOrder("o-cat", "cat", "FAILED", "insufficient_stock", {G: 1}),
        BuyerOrder("o-dan", "dan", "FAILED", "insufficient_stock", {G: 1}),
        *(BuyerOrder(f"o-eve{i}", "eve", "FAILED", "insufficient_stock", {G: 1}) for i in range(3)),
    ]
    return [ann, bob, cat, dan, eve], {r.order_id: r for r in rows}


def test_a_sale_kept_to_its_limit_holds_every_fact() -> None:
    buyers, rows = small_sale()
    said = facts(buyers, rows, G, 1, level=0, lowest=0)
    assert sale_ok(said, 2), said
    assert (said["confirmed"], said["confirmed_buyers"], said["units_confirmed"]) == (2, 2, 2)
    assert said["answers"] == {PLACED: 4, LIMITED: 2, SOLD_OUT: 5}
    assert said["repeat_answers"] == {PLACED: 4, LIMITED: 2, SOLD_OUT: 3}
    assert said["refused_by_the_limit"] == 2 and said["clickers"] == 3


def broken(change: Any) -> dict[str, Any]:
    buyers, rows = small_sale()
    level = change(buyers, rows)
    said = facts(buyers, rows, G, 1, level=level, lowest=min(level, 0))
    assert not sale_ok(said, 2), said
    return said


def test_each_fact_planted_broken_is_caught() -> None:
    def third(buyers: list[list[Click]], rows: dict[str, BuyerOrder]) -> int:
        rows["o-cat"] = BuyerOrder("o-cat", "cat", "CONFIRMED", None, {G: 1})  # sold 3 of 2
        return -1

    said = broken(third)
    assert said["confirmed"] == 3 and said["lowest"] == -1

    def twice(buyers: list[list[Click]], rows: dict[str, BuyerOrder]) -> int:
        rows["o-bob1"] = BuyerOrder("o-bob1", "bob", "CONFIRMED", None, {G: 1})
        rows["o-ann"] = BuyerOrder("o-ann", "ann", "FAILED", "insufficient_stock", {G: 1})
        return 0

    said = broken(twice)  # two for bob (and a refusal that did not hold), none for ann
    assert said["over_limit"] == {f"{G}/bob": 2} and said["refusals_not_held"] == ["o-bob1"]
    assert said["confirmed_buyers"] == 1

    def two_orders_for_a_key(buyers: list[list[Click]], rows: dict[str, BuyerOrder]) -> int:
        answered(buyers[0][2], 200, "o-ann2", "CONFIRMED")
        return 0

    said = broken(two_orders_for_a_key)
    assert said["keys_with_two_orders"] == ["k-ann"] and said["answers"][OTHER] == 1

    def unanswered(buyers: list[list[Click]], rows: dict[str, BuyerOrder]) -> int:
        answered(buyers[3][0], 202, "o-dan", "PENDING")
        return 0

    assert broken(unanswered)["others"] == ["dan k-dan: 202 PENDING None"]

    def refusal_not_recorded(buyers: list[list[Click]], rows: dict[str, BuyerOrder]) -> int:
        del rows["o-bob2"]
        return 0

    assert broken(refusal_not_recorded)["refusals_not_held"] == ["o-bob2"]

    def refused_with_room(buyers: list[list[Click]], rows: dict[str, BuyerOrder]) -> int:
        buyers[1][2].had = 0  # bob refused while he had nothing, the service said
        return 0

    assert broken(refused_with_room)["refused_with_room"] == ["k-bob2"]

    def left_on_the_shelf(buyers: list[list[Click]], rows: dict[str, BuyerOrder]) -> int:
        return 1

    assert broken(left_on_the_shelf)["level"] == 1


def test_the_plan_puts_the_clickers_early_with_one_key_or_several() -> None:
    buyers = clicks.plan("p-", 500, 50, 5)
    assert len(buyers) == 500 and len({b[0].buyer for b in buyers}) == 500
    many = [i for i, b in enumerate(buyers) if len(b) > 1]
    assert len(many) == 50 and max(many) < 150  # while there is stock to take
    shapes = Counter(tuple(sorted(Counter(c.key for c in buyers[i]).values())) for i in many)
    assert set(shapes) == {(5,), (1, 1, 1, 2)} and min(shapes.values()) >= 15, shapes
    assert sum(len(b) for b in buyers) == 450 + 250
    assert all(c.key.startswith(f"p-{c.buyer}-") for b in buyers for c in b)


# --- the scenario, for real ------------------------------------------------------------------


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
def test_the_flash_sale_serves_one_unit_to_each_of_100_buyers(
    database_url: str, zk_server: ServerProcess, redis_server: ServerProcess
) -> None:
    env = {
        "ORDER_DATABASE_URL": database_url,
        "STOCK_DATABASE_URL": database_url,
        "ZK_HOSTS": zk_server.address,
        "REDIS_URL": f"redis://{redis_server.address}/0",
    }
    result = scenarios.flash_sale(env=env)
    said = result.facts
    assert result.ok, (result.verdict, {k: v for k, v in said.items() if k != "others"})
    # Exactly 100 CONFIRMED, to 100 distinct buyers, one unit each.
    assert said["confirmed"] == said["confirmed_buyers"] == said["units_confirmed"] == 100
    assert said["buyers"] == 500 and said["clickers"] == 50 and said["clicks"] == 700
    assert said["over_limit"] == {} and said["keys_with_two_orders"] == []
    # Every click: its buyer's one order, a refusal by the limit (recorded so), or sold out.
    assert said["others"] == [] and said["refusals_not_held"] == []
    assert said["refused_with_room"] == []  # each refusal said the buyer had 1 already
    assert set(said["answers"]) <= {PLACED, LIMITED, SOLD_OUT}
    assert said["answers"].get(PLACED, 0) >= 100
    # The clickers came while there was stock: the limit refused some of their clicks.
    assert said["repeat_answers"].get(LIMITED, 0) > 0 and said["refused_by_the_limit"] > 0
    # Stock 0 at the end and never below, and the load test's checker valid on the run.
    assert said["level"] == 0 and said["lowest"] == 0
    assert result.violations == [] and {c.invariant for c in result.checks} >= {"I1", "I3", "I4"}
    assert said["seconds"] < 30, said["seconds"]
