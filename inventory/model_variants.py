"""The variants of the protocol's model that inventory/model_check.py checks: each world intact
(no violation expected) and each guard removed (a counterexample expected), with the macros
that make it. Kept apart from the runner so that neither grows past a page."""

from __future__ import annotations

from dataclasses import dataclass

# The world with three reconciler passes, two of them deducting again before the void.
PASSES = ("NPASSES=3", "VOID_PASS=2")


@dataclass(frozen=True)
class Variant:
    name: str
    macros: tuple[str, ...]
    expect_violation: bool
    meaning: str  # what the variant removes, for the table
    # A counterexample searched on for the shortest (pan -i): its trace is then the few steps
    # that matter. False where that search costs minutes and any counterexample tells the story.
    shortest: bool = True
    # The model file in model/ (the locations' variants are in model_location_variants.py).
    model: str = "protocol.pml"
    # pan compiled with gcc -O2: worth its seconds for a search of millions of states; a small
    # model's search is over before -O2 has compiled it (-O0 then).
    optimize: bool = True


VARIANTS: tuple[Variant, ...] = (
    Variant("intact", (), False, "every guard in place"),
    Variant("NO_FENCE", ("NO_FENCE",), True, "the level written last-writer-wins"),
    Variant(
        "FENCE_LE_ONLY",
        ("FENCE_LE_ONLY",),
        True,
        "the fence checked as 'row fence <= my token' only, not also '= the fence read'",
    ),
    Variant("NO_UNIQUE_ROW", ("NO_UNIQUE_ROW",), True, "no unique key on decision and flow rows"),
    Variant("FLAG_ONLY", ("FLAG_ONLY",), True, "the Redis pre-filter trusted alone"),
    Variant(
        "NO_STATUS_CAS",
        ("NO_STATUS_CAS",),
        True,
        "a reconciler's order write not a compare-and-set from PENDING",
    ),
    # A refusal stays a refusal: a late attempt (past the pre-filter before the refusal deleted the
    # flag) deducts once a cancel has brought the stock back, for a buyer told FAILED.
    Variant(
        "REFUSAL_NOT_RECORDED",
        ("REFUSAL_NOT_RECORDED",),
        True,
        "a refusal for lack of stock writes no decision (the rule before refusals were recorded)",
        # pan -i: 27 million states, 5 minutes (the reconcilers' passes are in its world);
        # the first counterexample, 0.6 s, is the same story with the passes after it
        shortest=False,
    ),
    # No sale lost to an unknown outcome: the reconciler deducts an undecided order again under its
    # own flag; placing it again under a new flag, without asking about the old one, deducts twice
    # an order whose late attempt had deducted after its buyer gave up.
    Variant(
        "RECONCILER_NEW_FLAG",
        ("RECONCILER_NEW_FLAG",),
        True,
        "the reconciler places an order left PENDING again under a new flag",
        shortest=False,  # pan -i: 11 million states, 46 s; the first: 0.1 s, the same story
    ),
    # Stock as a ledger: the world with an admin's adjustment (-DRESTOCK: one unit restocked, under
    # the lock and the fence, interleaved with the orders, the refusals and the return; the
    # reconcilers and the Redis loss left out, model/protocol.pml says why), and with a count in its
    # place (-DCOUNT: a compare-and-swap on the level the admin read).
    Variant("restock", ("RESTOCK",), False, "every guard in place, with a restock"),
    Variant("count", ("RESTOCK", "COUNT"), False, "every guard in place, with a count"),
    # Found by the restock world: a hold that writes a row twice (a split batch) leaves its own
    # token on it both times, so a newer holder that read between the writes finds the fence it
    # read and writes over the second. The fenced write now matches the row's ledger seq too.
    Variant(
        "FENCE_WITHOUT_SEQ",
        ("RESTOCK", "FENCE_WITHOUT_SEQ"),
        True,
        "the fenced write matches the row's fence only, not also its ledger seq",
    ),
    Variant(
        "ADJUST_UNFENCED",
        ("RESTOCK", "ADJUST_UNFENCED"),
        True,
        "an adjustment's level written last-writer-wins (no fence)",
    ),
    Variant(
        "CAS_IGNORES_EXPECTED",
        ("RESTOCK", "COUNT", "CAS_IGNORES_EXPECTED"),
        True,
        "a count applied whatever the level, not only at the level it expected",
    ),
    # The reconcilers' passes: the orders world makes two (the first deducts an undecided order
    # again, the second, past RECONCILE_VOID_AFTER, voids it, meeting the first's deduction if
    # it lands late); this world makes three, two of them deducting, so that a second deduction
    # pass meets the first's late attempt. 2.4 times the orders world: its own world.
    Variant("passes", PASSES, False, "every guard in place, three reconciler passes"),
    Variant(
        "PASS_NEW_FLAG",
        (*PASSES, "PASS_NEW_FLAG"),
        True,
        "a later pass deducts an undecided order again under a new flag",
        shortest=False,  # pan -i: 2.5 minutes; the first counterexample: 2 seconds
    ),
    # Holds: A's buyer may pay or cancel it, and an expiry (a compare-and-set AWAITING ->
    # CANCELLING past its deadline, then the return under the lock and the fence) races both;
    # with a restock too (B left out to keep it checkable: model/protocol.pml says why).
    Variant("holds", ("HOLDS",), False, "every guard in place, a hold paid, cancelled, expired"),
    Variant(
        "holds restock",
        ("HOLDS", "RESTOCK"),
        False,
        "every guard in place, a hold's expiry with a restock",
    ),
    Variant(
        "EXPIRY_NO_STATUS_CAS",
        ("HOLDS", "EXPIRY_NO_STATUS_CAS"),
        True,
        "the expiry a plain write past the deadline, not a compare-and-set from AWAITING",
    ),
    Variant(
        "RETURN_NOT_ONCE",
        ("HOLDS", "RETURN_NOT_ONCE"),
        True,
        "a return served whatever its flag's decision under the lock (returned before)",
    ),
    # Not a counterexample, and expected not to be: the status compare-and-set covers a
    # deposed reconciler on its own (model/protocol.pml says why); kept to show it.
    Variant(
        "NO_RECONCILER_FENCE",
        ("NO_RECONCILER_FENCE",),
        False,
        "a reconciler's write not fenced by its leader token (the status CAS still there)",
    ),
)
