"""Placing an order: one order's way from its request to its outcome (batched, sent to the stock
service, confirmed), its cancel and pay; the stock service's client and what its answers mean."""
