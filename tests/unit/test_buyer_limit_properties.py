"""The flash-sale rules' judge (order_service/core/buyer_limits.py) against a one-at-a-time
reference: a buyer's orders (in batches of any size), cancels and failures in any interleaving
never leave more units counted than the limit, and each order is refused exactly when the
reference, deciding one order at a time from the orders' statuses, refuses it. Plus the
refusal's stored reason read back, and which pairs are locked."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from order_service.core.buyer_limits import (
    HELD,
    PER_BUYER,
    LimitRefusal,
    Limits,
    Wanted,
    judge,
    limited_pairs,
)

GOODS = ("g1", "g2")
USERS = ("alice", "bob")


@dataclass
class World:
    """The orders' rows as the database would hold them: what the judge's counts come from."""

    limits: dict[str, Limits]
    held_default: int | None = None
    orders: dict[str, tuple[str, dict[str, int], bool, str]] = field(default_factory=dict)

    def had(self) -> dict[tuple[str, str], int]:
        counts: dict[tuple[str, str], int] = {}
        for user, lines, _, status in self.orders.values():
            if status in ("FAILED", "CANCELLED"):
                continue
            for goods, units in lines.items():
                counts[(user, goods)] = counts.get((user, goods), 0) + units
        return counts

    def held(self) -> dict[tuple[str, str], int]:
        counts: dict[tuple[str, str], int] = {}
        for user, lines, hold, status in self.orders.values():
            if not hold or status not in ("PENDING", "AWAITING_PAYMENT"):
                continue
            for goods, units in lines.items():
                counts[(user, goods)] = counts.get((user, goods), 0) + units
        return counts

    def reference(self, w: Wanted) -> str | None:
        """One order alone, as the rules read: its units and what is counted, against each
        limit; the reason refused, or None."""
        assert w.user_id is not None
        had, held = self.had(), self.held()
        for goods in sorted(w.lines):
            rules = self.limits.get(goods, Limits())
            pair = (w.user_id, goods)
            if rules.per_buyer is not None and had.get(pair, 0) + w.lines[goods] > rules.per_buyer:
                return PER_BUYER
            cap = rules.held_cap(self.held_default)
            if w.holds and cap is not None and held.get(pair, 0) + w.lines[goods] > cap:
                return HELD
        return None


lines_st = st.dictionaries(st.sampled_from(GOODS), st.integers(1, 3), min_size=1, max_size=2)
order_st = st.tuples(st.sampled_from(USERS), lines_st, st.booleans())
step_st = st.one_of(
    st.tuples(st.just("batch"), st.lists(order_st, min_size=1, max_size=5)),
    st.tuples(st.sampled_from(["cancel", "fail", "confirm", "pay"]), st.integers(0, 40)),
)
limits_st = st.fixed_dictionaries(
    {
        g: st.builds(Limits, st.none() | st.integers(0, 4), st.none() | st.integers(0, 3))
        for g in GOODS
    }
)


@settings(max_examples=300, deadline=None)
@given(limits_st, st.none() | st.integers(0, 3), st.lists(step_st, max_size=25))
def test_any_interleaving_matches_one_at_a_time_and_never_passes_the_limit(
    limits: dict[str, Limits], held_default: int | None, steps: list[tuple[str, object]]
) -> None:
    world = World(limits, held_default)
    for kind, what in steps:
        ids = list(world.orders)
        if kind == "batch":
            assert isinstance(what, list)
            wanted = [
                Wanted(f"o{len(ids) + i}", user, lines, holds=hold)
                for i, (user, lines, hold) in enumerate(what)
            ]
            refused = judge(wanted, limits, held_default, world.had(), world.held())
            for w in wanted:  # the reference: one at a time, in the batch's order
                expected = world.reference(w)
                got = refused.get(w.key)
                assert (got.reason if got else None) == expected, (w, got)
                status = "FAILED" if got else "PENDING"
                world.orders[w.key] = (w.user_id or "", dict(w.lines), w.holds, status)
        elif ids:
            assert isinstance(what, int)
            key = ids[what % len(ids)]
            user, lines, hold, status = world.orders[key]
            moves = {
                "cancel": (("PENDING", "CONFIRMED", "AWAITING_PAYMENT"), "CANCELLED"),
                "fail": (("PENDING",), "FAILED"),
                "confirm": (("PENDING",), "AWAITING_PAYMENT" if hold else "CONFIRMED"),
                "pay": (("AWAITING_PAYMENT",), "CONFIRMED"),
            }
            was, to = moves[kind]
            if status in was:
                world.orders[key] = (user, lines, hold, to)
        # The invariant: no buyer has more counted than a limit allows.
        for (user, goods), units in world.had().items():
            per_buyer = limits[goods].per_buyer
            assert per_buyer is None or units <= per_buyer, (user, goods, units)
        for (user, goods), units in world.held().items():
            cap = limits[goods].held_cap(held_default)
            assert cap is None or units <= cap, (user, goods, units)


@given(st.text(alphabet="abcXYZ019_.:-", min_size=1, max_size=64), st.integers(0, 10**9))
def test_a_refusal_reads_back_from_the_reason_it_stores(goods: str, limit: int) -> None:
    for reason in (PER_BUYER, HELD):
        refusal = LimitRefusal(reason, goods, limit, limit)
        assert len(refusal.text()) <= 200
        assert LimitRefusal.parse(refusal.text()) == refusal


@pytest.mark.parametrize(
    "reason", [None, "", "insufficient_stock", "voided: x", "limit_per_buyer", "limit_held: x"]
)
def test_other_reasons_are_no_refusal(reason: str | None) -> None:
    assert LimitRefusal.parse(reason) is None


def test_only_the_pairs_a_rule_applies_to_are_locked_and_in_order() -> None:
    limits = {"g1": Limits(per_buyer=1), "g2": Limits(max_held=2)}
    wanted = [
        Wanted("a", "bob", {"g1": 1, "g2": 1, "g3": 1}),
        Wanted("b", "alice", {"g2": 1}, holds=True),
        Wanted("c", None, {"g1": 1}),
    ]
    assert limited_pairs(wanted, limits, None) == [("alice", "g2"), ("bob", "g1")]
    assert limited_pairs(wanted, {}, None) == []
    assert limited_pairs(wanted, {}, 5) == [("alice", "g2")]


def test_a_refused_member_leaves_its_neighbours_as_one_at_a_time() -> None:
    limits = {"g1": Limits(per_buyer=2)}
    wanted = [
        Wanted("a", "bob", {"g1": 2}),
        Wanted("b", "bob", {"g1": 1}),  # refused: bob has 2
        Wanted("c", "alice", {"g1": 2}),  # alice's own count
        Wanted("d", "bob", {"g1": 3}),
    ]
    refused = judge(wanted, limits, None, {}, {})
    assert set(refused) == {"b", "d"}
    assert refused["b"] == LimitRefusal(PER_BUYER, "g1", 2, 2)
    assert judge(wanted[2:], limits, None, {}, {}) == {"d": LimitRefusal(PER_BUYER, "g1", 2, 0)}
