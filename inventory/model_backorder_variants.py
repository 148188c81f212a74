"""The variants of the backorders' and reservations' model (model/backorders.pml) that
inventory/model_check.py checks: units owed beyond on hand, within a cap, filled oldest first by
the units that arrive (a restock, a cancelled line's units), the same per location (a location's
limit, arrivals at a location serving the lines naming it or none), and a cart reservation
ended once by its genOrder, its DELETE or its expiry. Each world intact (no violation expected)
and each guard removed (a counterexample expected). A model of its own so that its check takes
seconds: its pan is compiled without -O2, like the locations' model."""

from __future__ import annotations

from inventory.model_variants import Variant

MODEL = "backorders.pml"
# The reservations' world: one reservation raced by its genOrder, its DELETE (and the DELETE's
# retry) and the elected reconciler's expiry.
RESERVATIONS = ("RESERVATIONS",)
# The locations' world: backorder limits per location, arrivals at a location serving the lines
# naming it or none, oldest first.
LOCATED = ("LOCATED",)


def _variant(name: str, macros: tuple[str, ...], expect_violation: bool, meaning: str) -> Variant:
    return Variant(name, macros, expect_violation, meaning, model=MODEL, optimize=False)


BACKORDER_VARIANTS: tuple[Variant, ...] = (
    # Backorders: three buyers beyond on hand, two restocks, a cancel, one holder paused. (Two
    # paused, -DPAUSES=2: 1.57 million states and no violation, 7 to 17 s of pan on a shared
    # machine, more than the rest of this model's check together: run by hand.)
    _variant("backorders", (), False, "every guard in place: backorders, restocks, a cancel"),
    _variant(
        "FILL_NEWEST",
        ("FILL_NEWEST",),
        True,
        "the arriving units go to the newest waiting line first",
    ),
    _variant(
        "FILL_NOT_IN_COMMIT",
        ("FILL_NOT_IN_COMMIT",),
        True,
        "the arriving units put on hand, the waiting lines served at the next deduction",
    ),
    _variant(
        "NEWCOMER_FIRST",
        ("FILL_NOT_IN_COMMIT", "NO_HANDOVER"),
        True,
        "the arriving units put on hand, and a deduction takes them without handing them to "
        "the waiting lines first",
    ),
    _variant(
        "CANCEL_READ_BEFORE_HOLD",
        ("CANCEL_READ_BEFORE_HOLD",),
        True,
        "a cancel gives back what its line had when it read before the lock, not again under it",
    ),
    # The code before every hold met the gate: a hold whose plan writes no ledger line (a
    # cancel whose line gives back nothing, a refusal) met no fence, so a stale holder's
    # give-up committed after a newer holder handed that line units (units lost, owed below
    # zero).
    _variant(
        "GATE_ONLY_CHANGED_LEVELS",
        ("GATE_ONLY_CHANGED_LEVELS",),
        True,
        "only a hold whose plan moves a level meets the fence; a give-up of nothing or a "
        "refusal commits unfenced",
    ),
    _variant(
        "BACKORDERS_NO_FENCE",
        ("NO_FENCE",),
        True,
        "the backorders' commits written last-writer-wins on their read (no fence)",
    ),
    # Not a counterexample, and expected not to be: arrivals served in their commit leave
    # nothing on hand while a line waits, so the hand-over before a deduction is the second
    # guard (model/backorders.pml says why).
    _variant(
        "NO_HANDOVER",
        ("NO_HANDOVER",),
        False,
        "a deduction takes what is on hand without handing it to the waiting lines first",
    ),
    # Locations: three buyers, two naming N (its limit 1) and one naming none, and a restock
    # at each of N and S.
    _variant("locations", LOCATED, False, "every guard in place: limits and arrivals per location"),
    _variant(
        "NO_LOCATION_LIMIT",
        (*LOCATED, "NO_LOCATION_LIMIT"),
        True,
        "a line naming a location owes within the goods id's limit alone, not the location's",
    ),
    _variant(
        "SERVE_ANYWHERE",
        (*LOCATED, "SERVE_ANYWHERE"),
        True,
        "a line naming a location is handed units that arrive at any location",
    ),
    _variant(
        "STRICT_FIFO",
        (*LOCATED, "STRICT_FIFO"),
        True,
        "arriving units go to the oldest waiting line or stay on hand, even when it cannot "
        "take units there",
    ),
    _variant(
        "LOCATED_NEWEST",
        (*LOCATED, "LOCATED_NEWEST"),
        True,
        "each location's arriving units go to the newest waiting line that may take them",
    ),
    # Reservations: exactly one terminal transition, the units back once.
    _variant("reservations", RESERVATIONS, False, "every guard in place: consume, release, expire"),
    _variant(
        "STATE_NO_CAS",
        (*RESERVATIONS, "NO_STATE_CAS"),
        True,
        "each move from held made on the state its route read before, no compare-and-set in "
        "its commit",
    ),
    _variant(
        "EXPIRY_NO_CAS",
        (*RESERVATIONS, "EXPIRY_NO_CAS"),
        True,
        "the expiry written on its page's read, no compare-and-set from held",
    ),
    _variant(
        "RETURN_NO_CAS",
        (*RESERVATIONS, "RETURN_NO_CAS"),
        True,
        "the return served whatever the flag's decision (no compare-and-set deducted -> returned)",
    ),
)
