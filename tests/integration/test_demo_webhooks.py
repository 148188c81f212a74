"""`inventory demo webhooks`, run for real (a stack of its own with one deliverer, a receiver in
a thread of the test): its outcome asserted from the facts it returns, not from its printout."""

from __future__ import annotations

from inventory import scenarios
from inventory.scenarios.webhooks import FAIL_FIRST


def test_the_webhooks_story_retries_keeps_order_dead_letters_replays_and_loses_nothing() -> None:
    run = scenarios.named("webhooks").load()  # the function (the import above set the module)
    result = run()
    assert result.ok, result
    facts = result.facts
    # The receiver's first deliveries answered 503 were each sent again until accepted.
    retries = facts["retries"]
    assert retries["answered_503"] == FAIL_FIRST
    assert retries["retried_events"] and retries["then_accepted"] == retries["retried_events"]
    # Per goods id (both moved: seeded, ordered; the phone restocked), the first receipts in
    # seq order; the dead-lettered event is not among them.
    order = facts["order"]
    assert len(order) == 2 and all(len(seqs) >= 2 for seqs in order.values()), order
    assert all(seqs == sorted(seqs) for seqs in order.values()), order
    # The event answered 400 was dead at once, listed by GET .../failed, replayed and delivered.
    dead, replay = facts["dead"], facts["replay"]
    assert dead["attempts"] == 1 and dead["kind"] == "deducted" and dead["seq"] == 2, dead
    assert dead["seq"] not in order[dead["goodsId"]]
    assert replay == {
        "event": dead["eventId"],
        "code": 202,
        "replayed": 1,
        "delivered": True,
        "failed_after": [],
    }
    # Nothing lost: every outbox event of the run's goods ids received, signed, repeats counted.
    lost = facts["lost"]
    assert lost["events"] >= 7 and lost["received"] == lost["events"], lost
    assert lost["violations"] == [] and lost["repeats"] >= 0
    assert result.violations == [] and facts["violated"] == []
    # Retries a tenth of a second apart (WEBHOOK_BACKOFF_SECONDS): the story, from the
    # subscription to the last check, takes seconds (0.7 s here), the stack's start aside.
    assert facts["seconds"] < 20, facts["seconds"]
