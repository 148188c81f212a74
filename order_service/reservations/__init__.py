"""Reservations: units held for a cart, released, or turned into an order with no second
deduction, and their rows; the reconciler's passes over them are settling/'s."""
