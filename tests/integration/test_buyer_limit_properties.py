"""The flash-sale rules on the real order database (each of the three), driven through the
storage's own units of work: a buyer's orders written in batches (transitions.
create_pending_many with the rules), and moved by the writes every path uses (a cancel to
CANCELLING then CANCELLED, a refusal for lack of stock to FAILED, a deduction to CONFIRMED or
AWAITING_PAYMENT, a pay, an expiry), in any interleaving hypothesis draws, against a
one-at-a-time reference: each order refused exactly when the reference refuses it, and what the
database counts never above the limit. The concurrent side is test_buyer_limits.py's 50 orders."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from order_service.core.buyer_limits import HELD, PER_BUYER, Limits
from order_service.core.statuses import (
    AWAITING_PAYMENT,
    CANCELLED,
    CANCELLING,
    CONFIRMED,
    FAILED,
    PENDING,
)
from order_service.storage import transitions
from order_service.storage.buyer_limits import BuyerRules, units_had, units_held
from order_service.storage.store import OrderStore
from order_service.storage.transitions import Finish, NewOrder
from shared.database.engines import make_engine
from tests.conftest import unique

COUNTED = (PENDING, CONFIRMED, AWAITING_PAYMENT, CANCELLING)


@pytest.fixture(scope="module")
def store(database_url: str) -> Iterator[OrderStore]:
    engine = make_engine(database_url, application="order")
    yield OrderStore(engine)
    engine.dispose()


# (units, hold) per order of a batch; moves name an order by its index among those placed.
batch_st = st.lists(st.tuples(st.integers(1, 3), st.booleans()), min_size=1, max_size=4)
step_st = st.one_of(
    st.tuples(st.just("batch"), batch_st),
    st.tuples(
        st.sampled_from(["cancel", "returned", "fail", "deduct", "pay", "expire"]),
        st.integers(0, 30),
    ),
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    st.none() | st.integers(0, 4),
    st.none() | st.integers(0, 3),
    st.lists(step_st, min_size=1, max_size=12),
)
def test_orders_and_moves_in_any_order_match_one_at_a_time(
    store: OrderStore,
    per_buyer: int | None,
    max_held: int | None,
    steps: list[tuple[str, object]],
) -> None:
    goods, user = unique(), unique("u")
    rules = BuyerRules()
    rules.put(store, goods, Limits(per_buyer, max_held))
    model: dict[str, tuple[int, bool, str]] = {}  # order id: units, hold, status

    def counted() -> int:
        return sum(u for u, _, s in model.values() if s in COUNTED)

    def held() -> int:
        return sum(u for u, h, s in model.values() if h and s in (PENDING, AWAITING_PAYMENT))

    for kind, what in steps:
        if kind == "batch":
            assert isinstance(what, list)
            new = [
                NewOrder(unique("o"), user, {goods: units}, pay_within=600 if hold else None)
                for units, hold in what
            ]
            refused = transitions.create_pending_many(store, new, rules)
            for order, (units, hold) in zip(new, what, strict=True):
                expected = None
                if per_buyer is not None and counted() + units > per_buyer:
                    expected = PER_BUYER
                elif hold and max_held is not None and held() + units > max_held:
                    expected = HELD
                got = refused.get(order.order_id)
                assert (got.reason if got else None) == expected, (order, got, model)
                if got is not None:
                    assert got.had == (counted() if expected == PER_BUYER else held())
                model[order.order_id] = (units, hold, FAILED if got else PENDING)
            continue
        if not model:
            continue
        assert isinstance(what, int)
        order_id = list(model)[what % len(model)]
        units, hold, status = model[order_id]
        to = _moved(store, order_id, kind, hold, status)
        model[order_id] = (units, hold, to)
        # What the database counts is the reference's, and within the limits.
    with store.engine.connect() as conn:
        had = units_had(conn, [(user, goods)])[(user, goods)]
        holding = units_held(conn, [(user, goods)])[(user, goods)]
    assert (had, holding) == (counted(), held())
    assert per_buyer is None or had <= per_buyer
    assert max_held is None or holding <= max_held


def _moved(store: OrderStore, order_id: str, kind: str, hold: bool, status: str) -> str:
    """One move by the write its path uses; the status after (unchanged if it may not move)."""
    if kind in ("fail", "deduct"):
        to = FAILED if kind == "fail" else (AWAITING_PAYMENT if hold else CONFIRMED)
        reason = "insufficient_stock" if kind == "fail" else None
        state = transitions.finish(store, Finish(order_id, to, reason, hold_for=600))
        return state.status
    was, to, why = {
        "cancel": ((PENDING, CONFIRMED, AWAITING_PAYMENT), CANCELLING, "cancelled: by the buyer"),
        "returned": ((CANCELLING,), CANCELLED, "cancelled: by the buyer"),
        "pay": ((AWAITING_PAYMENT,), CONFIRMED, "paid"),
        "expire": ((AWAITING_PAYMENT,), CANCELLING, "cancelled: the hold expired unpaid"),
    }[kind]
    moved, state = transitions.move(store, order_id, was, to, why)
    assert moved == (status in was)
    return state.status
