"""The chaos run's stock in several locations: the buyers' orders of the located goods (with
and without a location, partial), a 200 judged by what it said each line filled (H1), the
mover's answers against the transfers (LT), and L1-L5 read from hand-made stock and order
databases (migrated SQLite), a needless split planted among them."""

from __future__ import annotations

import json
import random
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from inventory.chaos import locations
from inventory.chaos.after_sale import order_body
from inventory.chaos.history import OK, Op
from inventory.chaos.history_checks import answered_ok_is_confirmed
from inventory.chaos.location_checks import location_verdicts, transfers_hold
from inventory.chaos.transfers import Move
from inventory.chaos.workload import make_goods
from inventory.check import Snapshot, read_snapshot

T0 = datetime(2026, 1, 1)


def test_located_orders_mix_every_kind_and_only_they_carry_fill_and_locations() -> None:
    goods = make_goods("cz1abcde-")
    assert set(goods.located) == {f"cz1abcde-loc{i}" for i in range(locations.LOCATED)}
    assert goods.levels["cz1abcde-loc0"] == sum(locations.SEEDS.values())
    rng = random.Random(5)
    drawn = [
        locations.located_order(rng, list(goods.located), list(goods.others)) for _ in range(400)
    ]
    kinds = Counter((fill, bool(named)) for _, fill, named in drawn)
    assert set(kinds) == {(None, False), (None, True), ("partial", False), ("partial", True)}
    for lines, _fill, named in drawn:
        located = [g for g in lines if g in goods.located]
        assert located and all(1 <= lines[g] <= 6 for g in located)
        assert set(named) <= set(located) and set(named.values()) <= set(locations.LOCATIONS)
    mixed = sum(any(g in goods.others for g in lines) for lines, _, _ in drawn)
    assert 0.15 < mixed / len(drawn) < 0.35  # orders that need two locations
    body = json.loads(order_body("p-b1-1", {"a": 2, "b": 1}, "pay", "partial", {"a": "chaos-mid"}))
    assert body["fill"] == "partial" and body["payWithinSeconds"] == 5
    assert body["items"] == [
        {"goodsId": "a", "num": 2, "location": "chaos-mid"},
        {"goodsId": "b", "num": 1},
    ]
    # an ordinary order's body is what it always was
    assert json.loads(order_body("p-b1-1", {"a": 2}, "none")) == {
        "userId": "b1",
        "items": [{"goodsId": "a", "num": 2}],
    }


def test_the_units_filled_are_read_from_a_placed_orders_answer() -> None:
    answer = {"items": [{"goodsId": "a", "num": 4, "filled": 3}, {"goodsId": "b", "num": 1}]}
    assert locations.filled_of(answer) is None  # b's filled missing: not guessed
    answer["items"][1]["filled"] = 0
    assert locations.filled_of(answer) == {"a": 3, "b": 0}
    assert locations.filled_of({"items": [{"goodsId": "a", "filled": None}]}) is None


def placed(extra: dict[str, Any]) -> Op:
    return Op("k1", 0, False, {"a": 4, "b": 1}, 0.0, 0.1, 200, "o1", "CONFIRMED", None, OK, extra)


def test_h1_judges_a_partial_200_by_what_it_said_each_line_filled() -> None:
    snap = Snapshot({}, {}, [], {"o1": {"a": 3}}, {"o1": "CONFIRMED"}, {"o1": {"a": 4, "b": 1}})
    told = {"fill": "partial", "filled": {"a": 3, "b": 0}}
    assert answered_ok_is_confirmed([placed(told)], snap).verdict == "valid"
    said_more = {"fill": "partial", "filled": {"a": 4, "b": 0}}
    assert answered_ok_is_confirmed([placed(said_more)], snap).verdict == "violated"
    # an ordinary 200 is still judged by its lines
    assert answered_ok_is_confirmed([placed({})], snap).verdict == "violated"


def move(ref: str, step: str, status: int, state: str | None = None, **kw: Any) -> Move:
    body = {"goodsId": "p-loc0", "from": "chaos-far", "to": "chaos-near", "units": 2}
    return Move(
        ref,
        step,
        "p-loc0",
        "t" + ref,
        body if step == "send" else None,
        0.0,
        0.1,
        status,
        state,
        **kw,
    )


ROWS = {
    "r1": ("tr1", "p-loc0", "chaos-far", "chaos-near", "2", "received"),
    "r2": ("tr2", "p-loc0", "chaos-far", "chaos-near", "2", "cancelled"),
}


def test_lt_every_transfers_answer_holds_and_a_contradiction_is_caught() -> None:
    moves = [
        move("r1", "send", 0),  # no answer ...
        move("r1", "send", 200, "in_transit", retry=1),  # ... it had been sent: 200
        move("r1", "receive", 200, "received"),
        move("r1", "receive", 200, "received", repeat=True),
        move("r1", "cancel", 409),  # received: the cancel refused
        move("r2", "send", 201, "in_transit"),
        move("r2", "cancel", 200, "cancelled"),
        move("r3", "send", 409),  # fewer units than that: nothing sent
    ]
    good = transfers_hold(moves, ROWS)
    assert good.verdict == "valid", good.counterexamples
    assert "2 transfers (cancelled 1, received 1)" in good.detail
    bad = transfers_hold(
        [*moves, move("r2", "send", 201, "in_transit", repeat=True)],
        {
            **ROWS,
            "r3": ("tr3", "p-loc0", "chaos-far", "chaos-near", "2", "in_transit"),
            "r9": ("tr9", "p-loc0", "chaos-far", "chaos-near", "1", "in_transit"),
        },
    )
    assert bad.verdict == "violated"
    assert set(bad.counterexamples) == {
        "r2: answered 201 twice",
        "r3: refused, yet the database has ('tr3', 'p-loc0', 'chaos-far', 'chaos-near', '2', "
        "'in_transit')",
        "r9: a transfer the mover never sent",
    }
    swapped = {**ROWS, "r1": (*ROWS["r1"][:5], "cancelled")}
    assert (
        "r1: receive answered received, ends cancelled"
        in transfers_hold(moves, swapped).counterexamples
    )


def databases(tmp_path: Path) -> tuple[sa.Engine, sa.Engine]:
    import migrations
    from shared.database.engines import make_engine

    engines = []
    for name in ("order", "stock"):
        url = f"sqlite:///{tmp_path / name}.db"
        migrations.upgrade(url, name)
        engines.append(make_engine(url))
    return engines[0], engines[1]


def shop(order_engine: sa.Engine, stock_engine: sa.Engine, split: dict[str, int]) -> None:
    """p-a seeded near 2, mid 1, far 4 (7); a transfer of 2 far -> near, received; then order
    o1 of 3 units, deducted as `split` says: near (4 since the transfer) could fill it alone."""
    from order_service.storage.tables import order_details, orders
    from stock_service.storage.tables import (
        location,
        stock,
        stock_adjustment,
        stock_allocation,
        stock_flow,
        stock_location,
        stock_transfer,
        stock_transfer_leg,
    )

    with stock_engine.begin() as c:
        for name, priority in locations.LOCATIONS.items():
            c.execute(
                location.insert().values(
                    location_id=name, priority=priority, active=True, updated_at=T0
                )
            )
        seeds = {"chaos-near": 2, "chaos-mid": 1, "chaos-far": 4}
        level = 0
        for seq, (name, num) in enumerate(seeds.items(), start=1):
            level += num
            c.execute(
                stock_adjustment.insert().values(
                    id=f"s{seq}",
                    goods_id="p-a",
                    seq=seq,
                    delta=num,
                    level_after=level,
                    reason="set",
                    created_at=T0,
                    location=name,
                )
            )
        c.execute(
            stock_transfer.insert().values(
                transfer_id="t1",
                reference="p-tr1",
                goods_id="p-a",
                from_location="chaos-far",
                to_location="chaos-near",
                units=2,
                state="received",
                created_at=T0,
                updated_at=T0,
            )
        )
        for seq, leg, where, delta in ((4, "out", "chaos-far", -2), (5, "in", "chaos-near", 2)):
            level += delta
            c.execute(
                stock_transfer_leg.insert().values(
                    transfer_id="t1",
                    leg=leg,
                    goods_id="p-a",
                    location_id=where,
                    delta=delta,
                    seq=seq,
                    level_after=level,
                    created_at=T0,
                )
            )
        c.execute(
            stock_flow.insert().values(
                id="f1",
                flag="o1",
                goods_id="p-a",
                num=3,
                seed_version=3,
                created_at=T0,
                seq=6,
                level_after=4,
            )
        )
        for where, num in split.items():
            c.execute(
                stock_allocation.insert().values(
                    flag="o1", goods_id="p-a", location_id=where, num=num
                )
            )
        after = {"chaos-near": 4, "chaos-mid": 1, "chaos-far": 2}
        for where, num in split.items():
            after[where] -= num
        for where, num in after.items():
            c.execute(stock_location.insert().values(goods_id="p-a", location_id=where, num=num))
        c.execute(
            stock.insert().values(
                goods_id="p-a",
                num=4,
                seeded_num=7,
                seed_version=3,
                fence=1,
                updated_at=T0,
                ledger_seq=6,
            )
        )
    with order_engine.begin() as c:
        c.execute(
            orders.insert().values(
                id="o1", user_id="u", status="CONFIRMED", created_at=T0, updated_at=T0
            )
        )
        c.execute(
            order_details.insert().values(id="d1", order_id="o1", goods_id="p-a", goods_num=3)
        )


def verdicts(tmp_path: Path, split: dict[str, int]) -> tuple[dict[str, Any], dict[str, Any]]:
    tmp_path.mkdir()
    order_engine, stock_engine = databases(tmp_path)
    shop(order_engine, stock_engine, split)
    snap = read_snapshot(order_engine, stock_engine, "p-")
    found, figures = location_verdicts(stock_engine, "p-", snap, locations.places())
    order_engine.dispose()
    stock_engine.dispose()
    return {v.check: v for v in found}, figures


def test_l1_to_l5_on_the_ledger_of_a_run_and_a_needless_split_caught(tmp_path: Path) -> None:
    good, figures = verdicts(tmp_path / "good", {"chaos-near": 3})
    assert [c for c, v in good.items() if v.verdict != "valid"] == [], good
    assert list(good) == ["L1", "L2", "L3", "L4", "L5"]
    assert figures["splits"] == 0
    assert good["L5"].detail.startswith("1 deduction lines replayed over 4 active locations")
    # near had 4 after the transfer came in: taking 3 as near 2 and mid 1 is a needless split
    bad, figures = verdicts(tmp_path / "split", {"chaos-near": 2, "chaos-mid": 1})
    assert [c for c, v in bad.items() if v.verdict != "valid"] == ["L5"]
    assert figures["splits"] == 1
    assert "o1/p-a: 3 split over" in bad["L5"].counterexamples[0]
    assert "chaos-near had 4" in bad["L5"].counterexamples[0]
