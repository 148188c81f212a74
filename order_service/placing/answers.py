"""What the order service makes of the stock service's answers: one call's outcome
(StockAnswer), a flag's settled decision (StockDecision), and one flag's result in a batched
reduceStock read as the single route's answer would be."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from order_service.core.fills import Fill
from shared.contract import Outcome

# What the client makes of a call beyond the stock service's own outcomes (shared/contract.py):
UNKNOWN = "unknown"  # no answer that says what happened
REJECTED = "rejected"  # the order's own goods are unknown (404, unknown_goods): nothing done
# A batched reduceStock's result for a flag whose lines name a location the stock service has
# not (the single route's 404 {"error": "unknown location", "locations": [...]}).
UNKNOWN_LOCATION = "unknown_location"
RETRYABLE_STATUS = frozenset({500, 502, 503, 504})
# The outcomes the single route answers 200: deducted (a backorder: what was on hand, the rest
# owed), or deducted before.
DEDUCTED = frozenset({Outcome.DEDUCTED, Outcome.BACKORDERED, Outcome.DUPLICATE})


@dataclass
class StockAnswer:
    outcome: str  # a shared.contract.Outcome, REJECTED or UNKNOWN
    status: int | None = None
    body: Any = None
    attempts: int = 0
    error: str | None = None  # the last failure, for the order's reason and the log
    # An attempt had no answer (a timeout, a connection error, a 5xx, `unavailable`): it may
    # have deducted, so no later refusal of the request makes the order "rejected"; its
    # outcome is asked of the stock database instead.
    uncertain: bool = False
    # A batched call's `not_attempted`: its lock was not had within the call's budget, or its
    # queue was full. Nothing was written and the flag is live: to be sent again under the
    # same flag (alone, or in a later batch), never by holding its batch's other orders.
    not_attempted: bool = False

    def no_answer(self, error: str) -> None:
        self.error, self.uncertain = error, True

    def not_tried(self, error: str, body: Any) -> None:
        """Answered, with nothing done: the outcome still unknown, but not uncertain (this
        attempt wrote nothing), so no flow is waited for on its account."""
        self.outcome, self.status, self.body = UNKNOWN, 503, body
        self.error, self.not_attempted = error, True

    def refused_whole(self, status: int, body: Any) -> None:
        """A 4xx about the call itself (413, 400, 422, 401...), or a refusal after an attempt
        that may have deducted: not a decision on this order. Its outcome stays unknown, to be
        asked of the stock database (GET /flags), never taken for a rejection of it."""
        self.outcome, self.status, self.body = UNKNOWN, status, body
        self.error = error_text(body, status) + (
            " after an attempt with no answer" if self.uncertain else ""
        )

    def own_goods_unknown(self, status: int, body: Any) -> None:
        """The stock service knows none of some of the order's own goods ids: nothing could be
        deducted, unless an earlier attempt, unanswered, got further (then: unknown)."""
        if self.uncertain:
            self.refused_whole(status, body)
        else:
            self.outcome, self.status, self.body = REJECTED, status, body


@dataclass(frozen=True)
class StockDecision:
    """What the stock database decided for a flag, as `void` or `return_stock` learned it."""

    # void and decision: a shared.contract.Decided (decision: None while undecided);
    # return_stock: returned or voided
    outcome: str | None
    flows: list[dict[str, Any]]  # the flows (void), or the return rows (return_stock)
    body: Any = None  # the whole answer (its `allocations`, when deducted)

    def deducted_lines(self) -> dict[str, int]:
        return {f["goodsId"]: f["num"] for f in self.flows}


def take_result(answer: StockAnswer, result: dict[str, Any]) -> None:
    """One flag's result of a batched call, as the single route's answer would have it."""
    outcome = result["outcome"]
    if outcome == Outcome.UNAVAILABLE:  # its 503: unknown, asked again
        answer.no_answer(f"HTTP 503: {result.get('error')}")
        return
    if outcome == Outcome.NOT_ATTEMPTED:  # nothing written: sent again, not in this call
        answer.not_tried(f"{Outcome.NOT_ATTEMPTED}: {result.get('error')}", result)
        return
    answer.not_attempted = False
    answer.error = None
    answer.body = result
    if outcome == Outcome.UNKNOWN_GOODS and "locations" not in result:  # its 404
        body = {"error": "unknown goods", "goodsIds": result.get("goodsIds", [])}
        answer.own_goods_unknown(404, body)
        return
    if outcome in (UNKNOWN_LOCATION, Outcome.UNKNOWN_GOODS):  # its 404 naming locations
        body = {"error": "unknown location", "locations": result.get("locations", [])}
        answer.own_goods_unknown(404, body)
        return
    answer.outcome = str(outcome)
    answer.status = 200 if outcome in DEDUCTED else 409


def own_unknown(body: Any) -> bool:
    """A 404 of reduceStock that is the order's own: goods ids, or locations its lines name,
    that the stock service has not (never a 404 of the route itself)."""
    return isinstance(body, dict) and ("goodsIds" in body or "locations" in body)


def line_json(goods_id: str, units: int, fill: Fill) -> dict[str, Any]:
    """A line of reduceStock, with its location only when it names one."""
    line: dict[str, Any] = {"goodsId": goods_id, "goodsNum": units}
    if goods_id in fill.locations:
        line["location"] = fill.locations[goods_id]
    return line


def json_or_text(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return response.text[:200]


def error_text(body: Any, status: int) -> str:
    if isinstance(body, dict) and "error" in body:
        return f"HTTP {status}: {body['error']}"
    return f"HTTP {status}"
