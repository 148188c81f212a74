"""Settling: the elected reconciler and its passes, which settle from the stock database's
decisions what a request could not; it calls placing/ and reservations/, never the routes."""

# Nothing of the product imports it: it is run (`python -m order_service.settling.reconciler`,
# `inventory reconcile`), and its modules are named whole, so the face hands on no name that
# would hide a module of the same name (reconcile.reconcile).
__all__: list[str] = []
