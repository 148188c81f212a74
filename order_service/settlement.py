"""What an order whose outcome was unknown becomes, once the stock database has decided its
flag (stock_client.void): the one rule the order flow and the reconciler share.

- refused or voided: nothing was deducted for the flag, and nothing ever will be: FAILED,
  for lack of stock (refused) or because its outcome was settled without one (voided);
- deducted, with flows for exactly the order's lines: CONFIRMED (a hold: AWAITING_PAYMENT);
- returned: it was deducted and cancelled, its stock is back: CANCELLED;
- deducted with other lines: None. It cannot happen while the order service is the only caller
  of its flags (one flag, one operation, one body); if it ever does, a person looks at it.
"""

from __future__ import annotations

from order_service.model import CANCELLED, CONFIRMED, FAILED, INSUFFICIENT_STOCK, VOIDED
from order_service.stock_client import StockDecision
from shared.contract import NOTHING_DEDUCTED, Decided


def decided_status(decision: StockDecision, lines: dict[str, int]) -> str | None:
    if decision.outcome in NOTHING_DEDUCTED:
        return FAILED
    if decision.outcome == Decided.RETURNED:
        return CANCELLED
    if decision.outcome == Decided.DEDUCTED and decision.deducted_lines() == lines:
        return CONFIRMED
    return None


def failed_because(decision: StockDecision) -> str:
    """The reason code of a FAILED order, from the decision that failed it."""
    return INSUFFICIENT_STOCK if decision.outcome == Decided.REFUSED else VOIDED
