"""The order side of partial fill and named locations, pure (order_service/core/fills.py) and at the
edge of the stock calls: what genOrder's `fill` and `items[].location` become, what the stock
service is sent (an ordinary order's request byte for byte what it always was), and how a
deducted flag's flows confirm an order. httpx.MockTransport stands in for the stock service."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

import httpx
import pytest

from order_service.core.fills import (
    ALL,
    POLICIES,
    BadFill,
    Fill,
    Filled,
    Partial,
    allocations_from,
    fill_of,
)
from order_service.core.model import OrderRequest, OrderRow
from order_service.core.statuses import CONFIRMED, FAILED, PENDING
from order_service.placing.answers import REJECTED, StockAnswer, StockDecision, take_result
from order_service.placing.batch_call import entry, reduce_many
from order_service.placing.client import StockClient
from order_service.placing.retry import CallPolicy

PARTIAL = Fill.of("partial")
NORTH = Fill(locations={"a": "north"})


def flows(**units: int) -> list[dict[str, object]]:
    return [{"goodsId": g, "num": n, "flag": "f1"} for g, n in units.items()]


# --- genOrder's fill and locations ----------------------------------------------------------


def test_fill_defaults_to_all_or_nothing_and_a_plain_order_stays_plain() -> None:
    assert fill_of("all", [("a", None), ("b", None)]) == ALL
    assert ALL.plain and ALL.asked is None and ALL.mode == "all"
    assert fill_of("partial", [("a", None)]) == PARTIAL and not PARTIAL.plain


@pytest.mark.parametrize("bad", ["ALL", "Partial", "", "some", None, 1, True, ["partial"], {}])
def test_a_fill_other_than_all_or_partial_is_refused(bad: object) -> None:
    with pytest.raises(BadFill, match='fill: must be "all" or "partial"') as refused:
        fill_of(bad, [("a", None)])
    assert refused.value.field == "fill"


def test_a_goods_id_s_lines_may_repeat_a_location_but_not_name_two() -> None:
    same = fill_of("all", [("a", "north"), ("b", None), ("a", "north")])
    assert same.locations == {"a": "north"} and not same.plain
    for lines in ([("a", "north"), ("a", "south")], [("a", "north"), ("a", None)]):
        with pytest.raises(BadFill, match="name different locations") as refused:
            fill_of("all", lines)
        assert refused.value.goods_ids == ["a"] and refused.value.field == "items"


def test_a_plain_order_s_fingerprint_is_the_one_it_always_had() -> None:
    """An Idempotency-Key repeated across the upgrade still finds its order."""
    request = OrderRequest("u1", {"a": 2}, 60)
    before = json.dumps({"userId": "u1", "lines": {"a": 2}, "payWithin": 60}, sort_keys=True)
    assert request.fingerprint == hashlib.sha256(before.encode()).hexdigest()
    partial = OrderRequest("u1", {"a": 2}, 60, PARTIAL)
    located = OrderRequest("u1", {"a": 2}, 60, NORTH)
    assert len({request.fingerprint, partial.fingerprint, located.fingerprint}) == 3


# --- what a deducted flag's flows filled ------------------------------------------------------


def test_all_or_nothing_is_confirmed_by_exactly_its_lines() -> None:
    lines = {"a": 2, "b": 1}
    assert POLICIES["all"].filled(lines, flows(a=2, b=1)) == lines
    assert POLICIES["all"].filled(lines, flows(a=1, b=1)) is None
    assert POLICIES["all"].filled(lines, flows(a=2)) is None
    assert POLICIES["all"].filled(lines, []) is None
    assert POLICIES["all"].filled(lines, None) is None


def test_a_partial_order_s_flows_fill_some_of_a_line_and_none_of_another() -> None:
    lines = {"a": 5, "b": 2, "c": 1}
    assert POLICIES["partial"].filled(lines, flows(a=3, c=1)) == {"a": 3, "b": 0, "c": 1}
    assert POLICIES["partial"].filled(lines, flows(a=5, b=2, c=1)) == lines
    # Never guessed: no flow at all, other goods, more than ordered, a zero flow.
    for wrong in ([], flows(d=1), flows(a=6), flows(a=0), [{"goodsId": "a"}], "x"):
        assert POLICIES["partial"].filled(lines, wrong) is None


def test_shortfalls_are_the_lines_not_filled_whole() -> None:
    filled = Filled({"a": 3, "b": 0, "c": 1})
    assert filled.shortfalls({"a": 5, "b": 2, "c": 1}) == [
        {"goodsId": "a", "requested": 5, "available": 3},
        {"goodsId": "b", "requested": 2, "available": 0},
    ]
    assert Filled({"a": 5}).shortfalls({"a": 5}) == []


def test_allocations_are_kept_when_they_name_a_location_other_than_default() -> None:
    named = {
        "allocations": [
            {"goodsId": "a", "location": "north", "num": 2},
            {"goodsId": "a", "location": "default", "num": 1},
        ]
    }
    assert allocations_from(named) == (("a", "north", 2), ("a", "default", 1))
    only_default = {"allocations": [{"goodsId": "a", "location": "default", "num": 3}]}
    assert allocations_from(only_default) == ()
    for nothing in ({}, None, {"allocations": None}, {"allocations": [{"goodsId": "a"}]}):
        assert allocations_from(nothing) == ()


def decided_status(decision: StockDecision, lines: dict[str, int], fill: Fill = ALL) -> str | None:
    """What the order's fill policy makes of the stock database's decision: its status."""
    settled = fill.policy.decided(lines, decision.outcome, decision.flows, decision.body)
    return settled.status if settled is not None else None


def test_a_decided_deduction_confirms_a_partial_order_with_fewer_units() -> None:
    deducted = StockDecision("deducted", flows(a=1))
    assert decided_status(deducted, {"a": 3, "b": 1}, PARTIAL) == CONFIRMED
    # All or nothing: flows other than its lines are for a person to look at.
    assert decided_status(deducted, {"a": 3, "b": 1}) is None
    assert decided_status(StockDecision("refused", []), {"a": 3}, PARTIAL) == FAILED


# --- the order's answers ------------------------------------------------------------------------


def row(status: str, fill: Fill, filled: dict[str, int | None]) -> OrderRow:
    at = datetime(2026, 11, 28)
    return OrderRow(
        "o1", "u1", status, None, "h", {"a": 5, "b": 2}, at, at, fill=fill, filled=filled
    )


def test_a_plain_order_s_lines_are_what_they_always_were() -> None:
    body = row(CONFIRMED, ALL, {"a": None, "b": None}).as_json()
    assert body["items"] == [{"goodsId": "a", "num": 5}, {"goodsId": "b", "num": 2}]
    assert "fill" not in body and "allocations" not in body


def test_a_partial_order_gives_each_line_its_filled() -> None:
    located = Fill.of("partial", {"a": "north"})
    body = row(CONFIRMED, located, {"a": 3, "b": 0}).as_json()
    assert body["fill"] == "partial"
    assert body["items"] == [
        {"goodsId": "a", "num": 5, "filled": 3, "location": "north"},
        {"goodsId": "b", "num": 2, "filled": 0},
    ]
    failed = row(FAILED, PARTIAL, {"a": None, "b": None}).as_json()["items"]
    assert [i["filled"] for i in failed] == [0, 0]
    pending = row(PENDING, PARTIAL, {"a": None, "b": None}).as_json()["items"]
    assert [i["filled"] for i in pending] == [None, None]


def test_the_answer_adds_nothing_for_a_plain_order() -> None:
    request = OrderRequest("u1", {"a": 1})
    assert request.fill.answer_fields(request.lines, CONFIRMED, Filled({"a": 1})) == {}
    fields = PARTIAL.answer_fields({"a": 5}, CONFIRMED, Filled({"a": 2}, (("a", "north", 2),)))
    assert fields == {
        "fill": "partial",
        "items": [{"goodsId": "a", "num": 5, "filled": 2}],
        "allocations": [{"goodsId": "a", "location": "north", "num": 2}],
    }


# --- what the stock service is sent -------------------------------------------------------------


def test_an_ordinary_order_s_batch_entry_is_byte_for_byte_what_it_was() -> None:
    lines = {"b": 2, "a": 1}
    was = b'{"flag":"f1","lines":[{"goodsId":"a","goodsNum":1},{"goodsId":"b","goodsNum":2}]}'
    assert entry("f1", lines, False) == was == entry("f1", lines, False, ALL)
    held = entry("f1", lines, True)
    assert held == was[:-1] + b',"hold":true}'
    asked = json.loads(entry("f1", lines, True, Fill.of("partial", {"b": "north"})))
    assert asked["fill"] == "partial" and asked["hold"] is True
    assert asked["lines"] == [
        {"goodsId": "a", "goodsNum": 1},
        {"goodsId": "b", "goodsNum": 2, "location": "north"},
    ]


def client_for(handler: Callable[[httpx.Request], httpx.Response]) -> StockClient:
    return StockClient(
        "http://stock",
        CallPolicy(timeout=1, retries=1, budget_seconds=60, backoff=0.1),
        transport=httpx.MockTransport(handler),
        sleep=lambda _s: None,
    )


def test_the_single_route_sends_fill_and_location_only_when_asked() -> None:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        request.read()
        return httpx.Response(200, json={"flag": "f1", "outcome": "deducted"})

    client = client_for(handler)
    client.reduce_stock("f1", {"a": 1})
    client.reduce_stock("f1", {"a": 1}, hold=True)
    client.reduce_stock("f1", {"a": 1, "b": 2}, fill=Fill.of("partial", {"a": "north"}))
    plain, held, asked = sent
    assert str(plain.url) == "http://stock/reduceStock/f1"
    was = httpx.Request("PUT", "http://stock/x", json=[{"goodsId": "a", "goodsNum": 1}])
    assert plain.content == was.content and not plain.url.params
    assert held.url.params == httpx.QueryParams({"hold": "true"})
    assert asked.url.params == httpx.QueryParams({"fill": "partial"})
    assert json.loads(asked.content) == [
        {"goodsId": "a", "goodsNum": 1, "location": "north"},
        {"goodsId": "b", "goodsNum": 2},
    ]


def test_an_unknown_location_rejects_the_order_as_unknown_goods_do() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        body = {"error": "unknown location", "locations": ["default", "north"]}
        return httpx.Response(404, json=body)

    answer = client_for(handler).reduce_stock("f1", {"a": 1}, fill=NORTH)
    assert answer.outcome == REJECTED and answer.body["locations"] == ["default", "north"]
    # A 404 naming neither goods nor locations is the call's, not the order's.
    route = client_for(lambda _r: httpx.Response(404, json={"error": "not found"}))
    assert route.reduce_stock("f1", {"a": 1}).outcome != REJECTED


@pytest.mark.parametrize("outcome", ["unknown_location", "unknown_goods"])
def test_a_batch_s_unknown_location_rejects_that_order(outcome: str) -> None:
    answer = StockAnswer("unknown")
    take_result(answer, {"flag": "f1", "outcome": outcome, "locations": ["default"]})
    assert answer.outcome == REJECTED and answer.body["locations"] == ["default"]


def test_the_batched_call_carries_each_flag_s_fill() -> None:
    sent: list[dict[str, object]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.extend(json.loads(request.read())["flags"])
        results = [{"flag": f["flag"], "outcome": "deducted"} for f in sent]
        return httpx.Response(200, json={"results": results})

    wanted = {"f1": {"a": 1}, "f2": {"a": 2}}
    reduce_many(client_for(handler), wanted, fills={"f2": Fill.of("partial", {"a": "north"})})
    assert sent == [
        {"flag": "f1", "lines": [{"goodsId": "a", "goodsNum": 1}]},
        {
            "flag": "f2",
            "lines": [{"goodsId": "a", "goodsNum": 2, "location": "north"}],
            "fill": "partial",
        },
    ]


def test_a_fourth_fill_mode_is_one_class() -> None:
    """The order's path asks its fill policy what an answer means, never the mode: a new mode
    is a subclass, and every reading (a batch's answer, a decision) and answer follows it."""

    class AtMostOne(Partial):
        mode = asked = "one"

        def filled(self, lines: Mapping[str, int], flows: Any) -> dict[str, int] | None:
            found = super().filled(lines, flows)
            return found if found is not None and max(found.values()) <= 1 else None

    fill = Fill(AtMostOne())
    settled = fill.policy.answered({"a": 3}, "deducted", {"flows": flows(a=1)})
    assert settled is not None and settled.status == CONFIRMED
    assert settled.shortfalls == ({"goodsId": "a", "requested": 3, "available": 1},)
    assert fill.policy.answered({"a": 3}, "deducted", {"flows": flows(a=2)}) is None
    decided = fill.policy.decided({"a": 3}, "deducted", flows(a=1))
    assert decided is not None and decided.filled.lines == {"a": 1}
    assert fill.asked == "one" and not fill.plain
    assert fill.answer_fields({"a": 3}, CONFIRMED, settled.filled)["fill"] == "one"
