"""Reservations: units held for a cart, released, or turned into an order with no second
deduction, and their rows; the reconciler's passes over them are settling/'s."""

from order_service.reservations.holds import (
    Reservations,
    Reserved,
    Settlement,
    UnknownReservation,
    learn,
)
from order_service.reservations.orders import (
    ReservationMismatch,
    ReservationOrders,
    ReservationRefused,
)
from order_service.reservations.store import (
    CONSUMED,
    EXPIRED,
    FAILED,
    HELD,
    OWING,
    PENDING,
    Reservation,
    ReservationStore,
)

__all__ = [
    "CONSUMED",
    "EXPIRED",
    "FAILED",
    "HELD",
    "OWING",
    "PENDING",
    "Reservation",
    "ReservationMismatch",
    "ReservationOrders",
    "ReservationRefused",
    "ReservationStore",
    "Reservations",
    "Reserved",
    "Settlement",
    "UnknownReservation",
    "learn",
]
