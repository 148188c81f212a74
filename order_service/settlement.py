"""What an order whose outcome was unknown becomes, once the stock database has decided its
flag (stock_client.void): the one rule the order flow and the reconciler share.

- refused or voided: nothing was deducted for the flag, and nothing ever will be: FAILED,
  for lack of stock (refused) or because its outcome was settled without one (voided);
- deducted, with flows for exactly the order's lines: CONFIRMED (a hold: AWAITING_PAYMENT);
  a partial order's flows carry what was filled, some of a line or none of it (no flow):
  CONFIRMED as well, whatever was left unfilled (order_service/fills.py, filled_from);
- returned: it was deducted and cancelled, its stock is back: CANCELLED;
- deducted with other lines: None. It cannot happen while the order service is the only caller
  of its flags (one flag, one operation, one body); if it ever does, a person looks at it.
"""

from __future__ import annotations

from typing import Any

from order_service.fills import Fill, Filled, filled_from, filled_of
from order_service.model import CANCELLED, CONFIRMED, FAILED, INSUFFICIENT_STOCK, VOIDED
from order_service.stock_client import StockClient, StockDecision
from shared.contract import NOTHING_DEDUCTED, Decided


def decided_status(
    decision: StockDecision, lines: dict[str, int], partial: bool = False
) -> str | None:
    if decision.outcome in NOTHING_DEDUCTED:
        return FAILED
    if decision.outcome == Decided.RETURNED:
        return CANCELLED
    if decision.outcome == Decided.DEDUCTED:
        return CONFIRMED if filled_from(lines, decision.flows, partial) is not None else None
    return None


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
