"""The order side of backorders, pure (order_service/core/fills.py, its Backorder policy) and
at the edge of the stock calls: what genOrder's `fill: backorder` becomes, what the stock
service is sent, and what its answers (reduceStock's `backordered`, GET /flags'
`backorders`) make of an order."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime

import httpx
import pytest

from order_service.core.fills import ALL, BadFill, Fill, Filled, Settled, fill_of
from order_service.core.model import OrderRequest, OrderRow
from order_service.core.statuses import BACKORDERED, CONFIRMED, FAILED
from order_service.placing.answers import StockAnswer, StockDecision, take_result
from order_service.placing.batch_call import entry
from order_service.placing.client import StockClient
from order_service.placing.retry import CallPolicy

BACKORDER = Fill.of("backorder")


def backordered_of(lines: dict[str, int], answer: object) -> Filled | None:
    """What the Backorder policy reads of reduceStock's `backordered` answer: each line taken."""
    settled = BACKORDER.policy.backordered(lines, answer)
    return settled.filled if settled is not None else None


def settled(lines: dict[str, int], flows: object, answer: object) -> Settled | None:
    """What the Backorder policy reads of a flag decided `deducted`, as GET /flags tells it."""
    return BACKORDER.policy.deducted(lines, flows, answer)


def decided(decision: StockDecision, lines: dict[str, int], fill: Fill = ALL) -> Settled | None:
    return fill.policy.decided(lines, decision.outcome, decision.flows, decision.body)


def decided_status(decision: StockDecision, lines: dict[str, int], fill: Fill = ALL) -> str | None:
    found = decided(decision, lines, fill)
    return found.status if found is not None else None


def flows(**units: int) -> list[dict[str, object]]:
    return [{"goodsId": g, "num": n, "flag": "f1"} for g, n in units.items()]


def line(goods: str, wanted: int, filled: int, state: str) -> dict[str, object]:
    return {"goodsId": goods, "wanted": wanted, "filled": filled, "state": state}


def test_fill_backorder_is_taken_and_asked_of_the_stock_service() -> None:
    assert fill_of("backorder", [("a", None)]) == BACKORDER
    assert BACKORDER.mode == "backorder" == BACKORDER.asked and not BACKORDER.plain
    assert ALL.asked is None and Fill.of("partial").asked == "partial"
    fingerprints = {OrderRequest("u", {"a": 1}, None, f).fingerprint for f in (ALL, BACKORDER)}
    assert len(fingerprints) == 2


@pytest.mark.parametrize("lines", [[("a", None)], [("a", "north")]])
def test_a_backorder_takes_no_hold(lines: list[tuple[str, str | None]]) -> None:
    with pytest.raises(BadFill, match="payWithinSeconds") as refused:
        fill_of("backorder", lines, True)
    assert refused.value.field == "payWithinSeconds"
    assert fill_of("all", lines, True).mode == "all"  # others as they were


def test_a_backorder_may_name_a_location_and_sends_it() -> None:
    fill = fill_of("backorder", [("a", "north"), ("b", None)])
    assert fill.mode == "backorder" and dict(fill.locations) == {"a": "north"}


def test_a_backordered_answer_takes_what_was_on_hand_and_owes_the_rest() -> None:
    lines = {"a": 3, "b": 2, "c": 1}
    answer = {
        "flows": flows(a=1, c=1),
        "backordered": [{"goodsId": "a", "num": 2}, {"goodsId": "b", "num": 2}],
    }
    taken = backordered_of(lines, answer)
    assert taken is not None and dict(taken.lines) == {"a": 1, "b": 0, "c": 1}
    nothing_on_hand = {"flows": [], "backordered": [{"goodsId": "a", "num": 3}]}
    assert backordered_of({"a": 3}, nothing_on_hand).lines == {"a": 0}  # type: ignore[union-attr]
    # Never guessed: owed other than the rest, owing nothing, owed goods not ordered.
    for wrong in (
        {"flows": flows(a=1), "backordered": [{"goodsId": "a", "num": 1}]},
        {"flows": flows(a=3), "backordered": []},
        {"flows": [], "backordered": [{"goodsId": "a", "num": 3}, {"goodsId": "z", "num": 1}]},
        {"flows": flows(a=1)},
        "x",
    ):
        assert backordered_of({"a": 3}, wrong) is None, wrong


def test_the_flags_lines_say_backordered_until_every_one_is_filled() -> None:
    lines = {"a": 3, "b": 2}
    waiting = {"backorders": [line("a", 2, 1, "waiting"), line("b", 2, 2, "filled")]}
    owing = settled(lines, flows(a=1), waiting)
    assert owing is not None and owing.status == BACKORDERED
    assert dict(owing.filled.lines) == {"a": 2, "b": 2}
    done = {"backorders": [line("a", 2, 2, "filled"), line("b", 2, 2, "filled")]}
    whole = settled(lines, flows(a=1), done)
    assert whole is not None and whole.status == CONFIRMED and dict(whole.filled.lines) == lines
    # Nothing owed: all or nothing, its flows exactly its lines.
    assert settled(lines, flows(a=3, b=2), {}).status == CONFIRMED  # type: ignore[union-attr]
    assert settled(lines, flows(a=1), {}) is None
    for bad in (
        {"backorders": [line("a", 1, 0, "waiting")]},  # taken and owed are not the line
        {"backorders": [line("a", 2, 0, "cancelled"), line("b", 2, 0, "waiting")]},
        {"backorders": [line("a", 2, 2, "waiting"), line("b", 2, 0, "waiting")]},
        {"backorders": [line("a", 2, 3, "filled"), line("b", 2, 2, "filled")]},
        {"backorders": [{"goodsId": "a"}]},
    ):
        assert settled(lines, flows(a=1), bad) is None, bad


def test_a_decision_makes_a_backorder_backordered_or_confirmed() -> None:
    lines = {"a": 3}
    owing = StockDecision(
        "deducted", flows(a=1), {"decision": "deducted", "backorders": [line("a", 2, 0, "waiting")]}
    )
    assert decided_status(owing, lines, BACKORDER) == BACKORDERED
    assert decided(owing, lines, BACKORDER).filled.lines == {"a": 1}  # type: ignore[union-attr]
    # Read as a plain order's, the same flows are not its lines.
    assert decided_status(owing, lines) is None
    filled = StockDecision("deducted", flows(a=1), {"backorders": [line("a", 2, 2, "filled")]})
    assert decided_status(filled, lines, BACKORDER) == CONFIRMED
    assert decided_status(StockDecision("refused", []), lines, BACKORDER) == FAILED


def test_a_batch_s_backordered_result_is_a_200() -> None:
    answer = StockAnswer("unknown")
    take_result(answer, {"flag": "f1", "outcome": "backordered", "flows": []})
    assert (answer.outcome, answer.status) == ("backordered", 200)


def test_fill_backorder_is_sent_only_when_asked() -> None:
    asked = json.loads(entry("f1", {"a": 2}, False, BACKORDER))
    assert asked == {"flag": "f1", "lines": [{"goodsId": "a", "goodsNum": 2}], "fill": "backorder"}
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json={"flag": "f1", "outcome": "backordered"})

    policy = CallPolicy(timeout=1, retries=0, budget_seconds=5, backoff=0.1)
    client = StockClient("http://stock", policy, transport=httpx.MockTransport(handler))
    assert client.reduce_stock("f1", {"a": 1}, fill=BACKORDER).outcome == "backordered"
    assert sent[0].url.params == httpx.QueryParams({"fill": "backorder"})


def test_a_backordered_order_answers_its_units_owed() -> None:
    at = datetime(2026, 11, 30)
    owing = OrderRow(
        "o1", "u1", BACKORDERED, None, "h", {"a": 3, "b": 1}, at, at,
        fill=BACKORDER, filled={"a": 1, "b": 1},
    )  # fmt: skip
    body = owing.as_json()
    assert body["fill"] == "backorder" and body["backordered"] == [{"goodsId": "a", "num": 2}]
    assert owing.answer_fields()["backordered"] == body["backordered"]
    assert "backordered" not in replace(owing, status=CONFIRMED).as_json()
    answer = {"flows": flows(a=1), "backordered": [{"goodsId": "a", "num": 2}]}
    request = OrderRequest("u1", {"a": 3}, None, BACKORDER)
    fields = request.fill.answer_fields(
        request.lines, BACKORDERED, backordered_of({"a": 3}, answer)
    )
    assert fields["backordered"] == [{"goodsId": "a", "num": 2}]
    assert fields["items"] == [{"goodsId": "a", "num": 3, "filled": 1}]
