"""I8's held units (inventory/check/held.py) on hand-made snapshots: the row's held count must
be the units of the flags still held, never below zero."""

from __future__ import annotations

from inventory.check import Snapshot, check_invariants


def snapshot(held: dict[str, tuple[int, int]]) -> Snapshot:
    return Snapshot({g: (10, 10, 1) for g in held}, {}, [], {}, {}, {}, held=held)


def held_check(snap: Snapshot) -> tuple[bool, dict[str, object]]:
    [found] = [c for c in check_invariants(snap) if c.name == "held units counted once"]
    return found.ok, found.numbers["differ"]


def test_held_units_that_match_their_flags_pass() -> None:
    assert held_check(snapshot({"a": (3, 3), "b": (0, 0)})) == (True, {})


def test_units_released_twice_are_caught() -> None:
    """A release and a return that both subtracted a hold's 2 units: held -2, flags 0."""
    ok, differ = held_check(snapshot({"a": (-2, 0), "b": (1, 1)}))
    assert not ok and differ == {"a": {"held": -2, "by_flags": 0}}


def test_units_never_released_are_caught() -> None:
    ok, differ = held_check(snapshot({"a": (2, 0)}))
    assert not ok and differ == {"a": {"held": 2, "by_flags": 0}}
