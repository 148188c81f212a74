"""One pass of the product's reconciler over a scenario's own stack, for the stories whose
order is left PENDING on purpose.

An order whose deduction was not decided (the stale holder's write refused by the fence, say)
is not voided by its request, so that no sale is lost to a fault: it stays PENDING and the
elected reconciler deducts it again under the same flag. A scenario's stack runs no reconciler
(its timing would race the story), so the story runs the pass itself, at the point where it
tells it, with the product's own code: `order_service.settling.reconcile.reconcile`, the flag
written again, the same stock client policy as `python -m order_service.settling.reconciler`.
"""

from __future__ import annotations

from datetime import timedelta

from inventory.local import stack_state
from inventory.scenarios.rig import Story, scenario_settings
from order_service.settling.reconcile import ReconcileReport
from order_service.settling.reconciler import pass_once


def settle_pending(
    state: stack_state.StackState, story: Story, env: dict[str, str] | None = None
) -> ReconcileReport:
    """Settle every PENDING order of the scenario's stack now (its own stack: nothing else is
    in flight, so no age is waited for) and tell what the pass did."""
    report = pass_once(scenario_settings(state, env), timedelta(0))
    told = (
        f"the reconciler's pass: {len(report.confirmed)} confirmed, {len(report.failed)} "
        f"failed, {len(report.retried)} still undecided"
    )
    backorders, reservations = report.backorders, report.reservations
    if backorders.confirmed or backorders.progressed:
        told += (
            f"; backordered orders: {len(backorders.confirmed)} confirmed (every line filled), "
            f"{len(backorders.progressed)} handed units"
        )
    if reservations.expired or reservations.returned:
        told += (
            f"; reservations: {len(reservations.expired)} expired, "
            f"{len(reservations.returned)} with their units returned"
        )
    story.show(told)
    return report
