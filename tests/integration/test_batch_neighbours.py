"""A batch never decides a member's answer, against real ZooKeeper, Redis and each SQL
database: bad input is refused at the edge while its neighbours are served; a member whose
write a database refuses fails alone; a hold's release racing its return frees the held units
once; restocks cannot take a level past MAX_STOCK_LEVEL; a `set` served among deductions starts
the seed the members after it carry."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest
import sqlalchemy as sa

from shared.config.settings import Settings
from stock_service.core.plan import Adjustment
from stock_service.deduction.steps import LANE
from stock_service.storage.tables import stock_flow
from tests.conftest import ADMIN, unique
from tests.helpers import PauseAt, Services, held_by_another_thread, running_services
from tests.integration.test_combining import queued, reduce, set_flags


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    # A long patience: a batch waits for its whole lock, as `in_one_hold` needs.
    with running_services(settings.with_(deduct_batch_patience=30.0)) as s:
        yield s


def place(s: Services, lines: dict[str, int], **extra: Any) -> Any:
    items = [{"goodsId": g, "num": n} for g, n in lines.items()]
    body = {"userId": unique("u"), "items": items, **extra}
    return s.order_app.test_client().post("/genOrder", json=body)


def in_one_hold(s: Services, goods: str, calls: list[Callable[[], Any]]) -> list[Future[Any]]:
    """Runs `calls` (each one request of the stock service for `goods`) so that they are
    served in one lock hold: the lock is held elsewhere while a pilot leads the lane and they
    queue behind it, in this order. Returns their futures, done."""
    deps = s.stock_app.extensions["stock"]
    pilot_goods, pilot = unique("pilot"), unique("flag")
    s.seed(pilot_goods, 1)
    set_flags(s, pilot)
    with ThreadPoolExecutor(len(calls) + 1) as pool:
        with held_by_another_thread(deps.locks, [goods, pilot_goods]):
            first = pool.submit(reduce, s, pilot, {pilot_goods: 1})
            queued(deps, 0)
            futures = []
            for i, call in enumerate(calls):
                futures.append(pool.submit(call))
                queued(deps, i + 1)
        first.result(30)
        for future in futures:
            future.exception(30)
    assert deps.deduction.combiner.backlog(LANE) == (False, 0)
    return futures


def test_a_member_whose_write_the_database_refuses_fails_alone(services: Services) -> None:
    """An adjustment whose reference no database driver can write (a lone surrogate; on
    PostgreSQL a NUL too), served in one hold with ten buyers of the same goods id and
    bypassing the edge's validation: it fails, the ten are deducted as if it were absent."""
    s = services
    deps = s.stock_app.extensions["stock"]
    goods = unique()
    s.seed(goods, 100)
    flags = [unique("flag") for _ in range(10)]
    set_flags(s, *flags)
    bad = "\ud800" if s.settings.stock_database_url.startswith(("sqlite", "mysql")) else "a\x00b"

    def poisoned() -> Any:
        return deps.deduction.adjust(Adjustment(goods, "restock", delta=5, reference=bad))

    buyers: list[Callable[[], Any]] = [
        lambda flag=flag: reduce(s, flag, {goods: 2}) for flag in flags
    ]
    futures = in_one_hold(s, goods, [*buyers[:5], poisoned, *buyers[5:]])
    assert futures[5].exception() is not None  # the poisoned one alone
    answers = [f.result() for i, f in enumerate(futures) if i != 5]
    assert [(code, body["outcome"]) for code, body in answers] == [(200, "deducted")] * 10
    assert s.level(goods) == 80
    assert sum(row["num"] for row in s.flows(goods_id=goods)) == 20
    history = s.stock.get(f"/stock/{goods}/history").json["entries"]
    assert [e["kind"] for e in history].count("adjusted") == 1  # the seed only


def test_bad_text_is_refused_at_the_edge_while_forty_buyers_beside_it_are_confirmed(
    services: Services,
) -> None:
    """The same answer on every database: 400 naming `reference`, nothing written; the buyers
    of the same goods id placed meanwhile are all CONFIRMED."""
    s = services
    goods = unique()
    s.seed(goods, 100)
    refs = ["nul \x00 here", "tab\there", "line\nbreak", "\x7f", "lone \ud800 surrogate"]
    with ThreadPoolExecutor(8) as pool:
        orders = [pool.submit(place, s, {goods: 1}) for _ in range(40)]
        refused = [
            pool.submit(
                lambda ref: s.stock_app.test_client().post(
                    f"/stock/{goods}/adjustments",
                    json={"reason": "restock", "delta": 1, "reference": ref},
                    headers=ADMIN,
                ),
                ref,
            )
            for ref in refs
        ]
        statuses = [o.result(60).json["status"] for o in orders]
        answers = [r.result(60) for r in refused]
    assert statuses == ["CONFIRMED"] * 40
    for ref, answer in zip(refs, answers, strict=True):
        assert (answer.status_code, answer.json.get("field")) == (400, "reference"), (
            ref,
            answer.json,
        )
    assert s.level(goods) == 60
    fine = s.stock.post(
        f"/stock/{goods}/adjustments",
        json={"reason": "restock", "delta": 1, "reference": "note 😀 ß ü"},
        headers=ADMIN,
    )
    assert fine.status_code == 201 and fine.json["entry"]["reference"] == "note 😀 ß ü"


def test_a_release_racing_a_return_frees_the_held_units_once(services: Services) -> None:
    """The return of an unpaid hold reads its units as held; the payment's release commits
    before the return does. Before, both subtracted them (held -2); the return's
    compare-and-set on the held flag it read sees the release and plans again."""
    s = services
    deps = s.stock_app.extensions["stock"]
    goods = unique()
    s.seed(goods, 10)
    order = place(s, {goods: 2}, payWithinSeconds=600).json
    flag = order["orderId"]
    assert s.stock.get(f"/stock/{goods}").json["held"] == 2
    released: list[Any] = []
    deps.deduction.faults = PauseAt(
        "stop_after_read", lambda: released.append(s.stock.put(f"/holds/{flag}/release").json)
    )
    returned = s.stock.put(f"/returnStock/{flag}")
    assert returned.status_code == 200 and returned.json["outcome"] == "returned"
    assert released == [{"flag": flag, "released": True}]
    level = s.stock.get(f"/stock/{goods}").json
    assert (level["num"], level["held"]) == (10, 0)


def test_a_return_committed_first_leaves_the_release_nothing(services: Services) -> None:
    s = services
    goods = unique()
    s.seed(goods, 10)
    flag = place(s, {goods: 3}, payWithinSeconds=600).json["orderId"]
    assert s.stock.put(f"/returnStock/{flag}").json["outcome"] == "returned"
    assert s.stock.put(f"/holds/{flag}/release").json == {"flag": flag, "released": False}
    level = s.stock.get(f"/stock/{goods}").json
    assert (level["num"], level["held"]) == (10, 0)


def test_restocks_cannot_take_a_level_past_max_stock_level(settings: Settings) -> None:
    with running_services(settings.with_(max_stock_level=1000)) as s:
        goods = unique()
        s.seed(goods, 100)
        body = {"reason": "restock", "delta": 600}
        first = s.stock.post(f"/stock/{goods}/adjustments", json=body, headers=ADMIN)
        second = s.stock.post(f"/stock/{goods}/adjustments", json=body, headers=ADMIN)
        assert first.status_code == 201 and first.json["num"] == 700
        assert (second.status_code, second.json["num"]) == (409, 700), second.json
        assert "above 1000" in second.json["error"]
        # The level can still be named: a compare-and-swap count against it is taken.
        count = {"reason": "count", "num": 650, "expected": 700}
        assert s.stock.post(f"/stock/{goods}/adjustments", json=count, headers=ADMIN).json[
            "num"
        ] == (650)


def test_a_set_among_deductions_starts_the_seed_the_members_after_it_carry(
    services: Services,
) -> None:
    """Set 100 between a deduction and three more, in one hold, and a refusal after it: the
    seed records 100 (not 94, the level after the batch) and the new version, which the flows
    and the refusal after the set carry, so I4 counts that refusal against this seed."""
    s = services
    deps = s.stock_app.extensions["stock"]
    goods = unique()
    s.seed(goods, 10)
    version = s.stock.get(f"/stock/{goods}").json["seedVersion"]
    flags = [unique("flag") for _ in range(5)]
    set_flags(s, *flags)

    def buyer(flag: str, num: int) -> Callable[[], Any]:
        return lambda: reduce(s, flag, {goods: num})

    def set_100() -> Any:
        return deps.deduction.adjust(Adjustment(goods, "set", num=100, reference="count"))

    calls = [buyer(flags[0], 1), set_100, *(buyer(f, 2) for f in flags[1:4]), buyer(flags[4], 99)]
    futures = in_one_hold(s, goods, calls)
    answers = [f.result() for f in futures]
    assert [a[1]["outcome"] for i, a in enumerate(answers) if i != 1] == [
        "deducted",
        "deducted",
        "deducted",
        "deducted",
        "insufficient",
    ]
    level = s.stock.get(f"/stock/{goods}").json
    assert (level["num"], level["seededNum"], level["seedVersion"]) == (94, 100, version + 1)
    with s.engine.connect() as conn:
        versions = dict(
            conn.execute(
                sa.select(stock_flow.c.flag, stock_flow.c.seed_version).where(
                    stock_flow.c.goods_id == goods
                )
            ).all()
        )
    assert versions == {flags[0]: version, **{f: version + 1 for f in flags[1:4]}}
    [shortfall] = answers[5][1]["shortfalls"]
    assert (shortfall["available"], shortfall["seedVersion"]) == (94, version + 1)
