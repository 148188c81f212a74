"""The variants of the locations' model (model/locations.pml) that inventory/model_check.py
checks: an order's allocation across two locations decided under the lock and written under
the fence, and a transfer moved leg by leg. Each world intact (no violation expected) and each
guard removed (a counterexample expected). A model apart from the protocol's so that its check
takes seconds: its pan is compiled without -O2 (1 s rather than 5 s of gcc, for a search that
takes a second or two)."""

from __future__ import annotations

from inventory.model_variants import Variant

MODEL = "locations.pml"
# A second holder paused past its session too; the cancel sent once (with its retry and two
# pauses the search is 20 million states, 45 s and 1.1 GB: the one-pause world has the retry).
TWO_PAUSES = ("PAUSES=2", "CANCEL_ONCE")


def _variant(name: str, macros: tuple[str, ...], expect_violation: bool, meaning: str) -> Variant:
    return Variant(name, macros, expect_violation, meaning, model=MODEL, optimize=False)


LOCATION_VARIANTS: tuple[Variant, ...] = (
    _variant("locations", (), False, "every guard in place: orders, batches, a transfer"),
    _variant("locations two pauses", TWO_PAUSES, False, "every guard in place, two holders paused"),
    # The allocation rule: a line split only when no single location can fill it, the whole
    # order from one location when one can.
    _variant(
        "GREEDY_SPLIT",
        ("GREEDY_SPLIT",),
        True,
        "each line taken by priority until filled, no single location first",
    ),
    _variant(
        "PER_LINE",
        ("PER_LINE",),
        True,
        "each line from its own best location, not the whole order from one location",
    ),
    # A transfer's legs, each once.
    _variant(
        "LEG_NOT_ONCE",
        ("LEG_NOT_ONCE",),
        True,
        "a receive or cancel served whatever the transfer's state: no state read under the "
        "lock, no compare-and-set, no unique (transfer, leg)",
    ),
    _variant(
        "OUT_NOT_ONCE",
        ("OUT_NOT_ONCE",),
        True,
        "a POST /transfers served whatever its reference: no transfer read under the lock, "
        "no unique reference",
    ),
    _variant(
        "LOCATIONS_NO_FENCE",
        ("NO_FENCE",),
        True,
        "the locations' levels written last-writer-wins (no fence)",
    ),
    # Not a counterexample, and expected not to be: the state read under the lock and the
    # fence carry each leg once on their own; the compare-and-set and the key are the second
    # guard (model/locations.pml says why).
    _variant(
        "NO_LEG_CAS",
        ("NO_LEG_CAS",),
        False,
        "a leg's commit without the state compare-and-set and the unique (transfer, leg)",
    ),
)
