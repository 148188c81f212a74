"""What an order whose outcome was unknown becomes, once the stock database has decided its
flag (stock_client.void): the one rule the order flow and the reconciler share.

- refused or voided: nothing was deducted for the flag, and nothing ever will be: FAILED,
  for lack of stock (refused) or because its outcome was settled without one (voided);
- deducted, with flows for exactly the order's lines: CONFIRMED (a hold: AWAITING_PAYMENT);
  a partial order's flows carry what was filled, some of a line or none of it (no flow):
  CONFIRMED as well, whatever was left unfilled (order_service/core/fills.py, filled_from);
- deducted, for an order placed with fill=backorder: BACKORDERED while a line of it waits for
  units (GET /flags' `backorders`), CONFIRMED once none does (order_service/core/backorders.py);
  a void's answer tells no lines, so a backorder's decision is read from GET /flags
  (`with_lines`);
- returned: it was deducted and cancelled, its stock is back: CANCELLED;
- deducted with other lines: None. It cannot happen while the order service is the only caller
  of its flags (one flag, one operation, one body); if it ever does, a person looks at it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from order_service.core.backorders import settled
from order_service.core.fills import Fill, Filled, filled_from, filled_of
from order_service.core.model import CANCELLED, CONFIRMED, FAILED, INSUFFICIENT_STOCK, VOIDED
from order_service.placing.client import StockClient, StockDecision
from shared.contract import NOTHING_DEDUCTED, Decided


def decided_status(
    decision: StockDecision,
    lines: dict[str, int],
    partial: bool = False,
    backorder: bool = False,
) -> str | None:
    if decision.outcome in NOTHING_DEDUCTED:
        return FAILED
    if decision.outcome == Decided.RETURNED:
        return CANCELLED
    if decision.outcome == Decided.DEDUCTED and backorder:
        owing = settled(lines, decision.flows, decision.body)
        return owing.status if owing is not None else None
    if decision.outcome == Decided.DEDUCTED:
        return CONFIRMED if filled_from(lines, decision.flows, partial) is not None else None
    return None


def decided_fill(decision: StockDecision, lines: dict[str, int], fill: Fill) -> Filled | None:
    """What a deducted flag filled of each line so far, and where from (decided_status's
    reading of it): a backorder's units taken and handed to it, another's flows."""
    if fill.backorder:
        owing = settled(lines, decision.flows, decision.body)
        return owing.filled if owing is not None else None
    return filled_of(lines, fill, decision.flows, decision.body)


def with_lines(
    stock: StockClient, flag: str, fill: Fill, decision: StockDecision | None
) -> StockDecision | None:
    """A decision as GET /flags tells it, for a backorder decided `deducted` whose decision
    came from a void (whose answer carries no lines owed); None: no answer."""
    if decision is None or not fill.backorder or decision.outcome != Decided.DEDUCTED:
        return decision
    if isinstance(decision.body, dict) and "decision" in decision.body:
        return decision  # GET /flags' own answer
    return stock.decision(flag)


def decision_after_polls(
    stock: StockClient, flag: str, waits: Sequence[float], sleep: Callable[[float], None]
) -> StockDecision | None:
    """The stock database's decision, asked at once and again after each wait while it has
    none (an attempt that had no answer may still commit); None: it never answered."""
    decision = stock.decision(flag)
    for delay in waits:
        if decision is not None and decision.outcome is not None:
            break
        sleep(delay)
        decision = stock.decision(flag) or decision
    return decision


def failed_because(decision: StockDecision) -> str:
    """The reason code of a FAILED order, from the decision that failed it."""
    return INSUFFICIENT_STOCK if decision.outcome == Decided.REFUSED else VOIDED


def filled_after_polls(
    stock: StockClient,
    flag: str,
    lines: dict[str, int],
    fill: Fill,
    flows: list[dict[str, Any]],
) -> Filled | None:
    """What the polled flows of an order that asked for a fill or a location filled, and
    where from, as the stock database's decision (GET /flags) says; the flows alone when it
    does not answer. None: they are not a deduction of its lines (never guessed)."""
    decision = stock.decision(flag)
    if decision is not None and decision.outcome == Decided.DEDUCTED:
        return filled_of(lines, fill, decision.flows, decision.body)
    return filled_of(lines, fill, flows)
