"""Settling: the elected reconciler and its passes, which settle from the stock database's
decisions what a request could not; it calls placing/ and reservations/, never the routes."""

from order_service.settling.reconcile import ReconcileReport, reconcile

__all__ = [
    "ReconcileReport",
    "reconcile",
]
