"""The batch's read-check-write as pure logic: every answer is the one a serial run gives."""

from __future__ import annotations

import random

from stock_service.core.plan import Adjustment, Decision, Kind, Outcome, Request, Shortfall, plan


def test_requests_are_decided_in_arrival_order_against_the_running_levels() -> None:
    result = plan(
        [Request("f1", {"g": 3}), Request("f2", {"g": 3}), Request("f3", {"g": 2})],
        {"g": 5},
        {},
    )
    assert [d.outcome for d in result.decisions] == [
        Outcome.DEDUCTED,
        Outcome.INSUFFICIENT,
        Outcome.DEDUCTED,
    ]
    assert result.decisions[1].shortfalls == [Shortfall("g", 3, 2, seed_version=1)]
    assert result.levels == {"g": 0}
    assert result.changed == {"g"}


def test_a_request_that_does_not_fit_changes_nothing_and_fails_alone() -> None:
    result = plan(
        [Request("big", {"a": 1, "b": 99}), Request("small", {"a": 1, "b": 1})],
        {"a": 1, "b": 1},
        {},
    )
    assert [d.outcome for d in result.decisions] == [Outcome.INSUFFICIENT, Outcome.DEDUCTED]
    assert result.decisions[0].shortfalls == [
        Shortfall("b", 99, 1, seed_version=1)
    ]  # only the short line
    assert result.levels == {"a": 0, "b": 0}


def test_a_flag_deducted_before_or_earlier_in_the_batch_is_a_duplicate() -> None:
    result = plan(
        [Request("old", {"g": 1}), Request("new", {"g": 1}), Request("new", {"g": 1})],
        {"g": 10},
        {"old": "deducted"},
    )
    assert [d.outcome for d in result.decisions] == [
        Outcome.DUPLICATE,
        Outcome.DEDUCTED,
        Outcome.DUPLICATE,
    ]
    assert result.levels == {"g": 9}


def test_a_voided_flag_is_never_deducted_whatever_its_lines() -> None:
    result = plan(
        [Request("dead", {"g": 1}), Request("dead", {"h": 1})], {"g": 5, "h": 5}, {"dead": "voided"}
    )
    assert [d.outcome for d in result.decisions] == [Outcome.VOIDED, Outcome.VOIDED]
    assert result.changed == set()


def test_one_flag_is_one_operation_whatever_its_lines() -> None:
    result = plan([Request("f", {"g": 1}), Request("f", {"h": 2})], {"g": 5, "h": 5}, {})
    assert [d.outcome for d in result.decisions] == [Outcome.DEDUCTED, Outcome.DUPLICATE]
    assert result.levels == {"g": 4, "h": 5}


def test_a_refused_flag_stays_refused_even_when_stock_comes_back_in_the_batch() -> None:
    # Refused for lack of stock, the flag is decided: a later attempt of it is refused too,
    # even after a return made room (the buyer was told no, and no stays no).
    result = plan(
        [
            Request("f", {"g": 2}),
            Request("sold", {"g": 3}, Kind.RETURN),
            Request("f", {"g": 2}),
        ],
        {"g": 1},
        {"sold": "deducted"},
    )
    assert [d.outcome for d in result.decisions] == [
        Outcome.INSUFFICIENT,
        Outcome.RETURNED,
        Outcome.INSUFFICIENT,
    ]
    assert result.refused == {0} and result.levels == {"g": 4}
    assert result.decisions[2].shortfalls == []  # decided before: no new shortfall


def test_a_flag_refused_before_is_answered_insufficient_and_changes_nothing() -> None:
    result = plan([Request("no", {"g": 1})], {"g": 9}, {"no": "refused"})
    assert result.decisions[0].outcome is Outcome.INSUFFICIENT
    assert not result.writes


def test_unknown_goods_have_nothing_to_give() -> None:
    result = plan([Request("f", {"ghost": 1})], {}, {})
    assert result.decisions[0].shortfalls == [Shortfall("ghost", 1, 0)]
    assert result.changed == set()


def test_a_batch_answers_exactly_as_the_requests_one_at_a_time_would() -> None:
    rng = random.Random(7)
    goods = ["a", "b", "c"]
    for _ in range(300):
        levels = {g: rng.randint(0, 6) for g in goods}
        flags = [f"f{rng.randint(0, 8)}" for _ in range(rng.randint(1, 12))]
        requests = [
            Request(flag, {g: rng.randint(1, 4) for g in rng.sample(goods, rng.randint(1, 3))})
            for flag in flags
        ]
        seen = {f"f{rng.randint(0, 8)}": rng.choice(("deducted", "voided", "refused"))}
        seen = seen if rng.random() < 0.3 else {}
        batch = plan(requests, levels, seen)
        # The same requests one at a time, each a batch of its own on what the last one left.
        running, done, seqs = dict(levels), dict(seen), dict.fromkeys(goods, 0)
        for request, decision in zip(requests, batch.decisions, strict=True):
            alone = plan([request], running, done, seqs)
            assert same(alone.decisions[0], decision)
            running = alone.levels
            seqs.update(alone.seqs)
            if decision.outcome is Outcome.DEDUCTED:
                done[request.flag] = "deducted"
            elif alone.refused:
                done[request.flag] = "refused"
        assert batch.levels == running


def same(a: Decision, b: Decision) -> bool:
    """Two decisions alike, whatever the index of the request in its batch."""

    def lines(d: Decision) -> list[tuple[object, ...]]:
        return [(e.goods_id, e.kind, e.delta, e.level_after, e.seq) for e in d.entries]

    return (a.outcome, a.shortfalls, a.level, lines(a)) == (
        b.outcome,
        b.shortfalls,
        b.level,
        lines(b),
    )


def test_a_return_gives_back_exactly_its_lines_once() -> None:
    result = plan(
        [
            Request("sold", {"g": 2, "h": 1}, Kind.RETURN),
            Request("sold", {"g": 2, "h": 1}, Kind.RETURN),  # a repeated cancel
            Request("new", {"g": 3}),
        ],
        {"g": 1, "h": 0},
        {"sold": "deducted"},
    )
    assert [d.outcome for d in result.decisions] == [
        Outcome.RETURNED,
        Outcome.RETURNED,
        Outcome.DEDUCTED,  # it fits only because the return came first, in arrival order
    ]
    assert result.returned == {0}
    assert result.levels == {"g": 0, "h": 1}


def test_a_return_of_a_flag_never_deducted_or_returned_changes_nothing() -> None:
    result = plan(
        [Request("dead", {"g": 1}, Kind.RETURN), Request("back", {"g": 1}, Kind.RETURN)],
        {"g": 5},
        {"dead": "voided", "back": "returned"},
    )
    assert [d.outcome for d in result.decisions] == [Outcome.VOIDED, Outcome.RETURNED]
    assert result.changed == set() and result.returned == set()


def test_a_deduction_of_a_returned_flag_is_refused_as_cancelled() -> None:
    result = plan([Request("back", {"g": 1})], {"g": 5}, {"back": "returned"})
    assert result.decisions[0].outcome is Outcome.CANCELLED
    assert result.changed == set()


def test_a_set_starts_a_seed_that_the_members_after_it_carry() -> None:
    """A `set` in a hold with deductions: the seed keeps the level the set left (not the level
    at the end of the batch), and the flows and refusals after it carry the new seed version,
    so a checker reading refusals by version counts them against the right seed."""
    requests = [
        Request("before", {"g": 1}),
        Request("seed", {"g": 0}, Kind.ADJUST, adjust=Adjustment("g", "set", num=100)),
        Request("after", {"g": 3}),
        Request("too-many", {"g": 1000}),
    ]
    result = plan(requests, {"g": 5}, {}, {"g": 7}, seed_versions={"g": 4})
    assert result.seeded == {"g": (100, 5)}
    assert [(e.kind, e.level_after, e.seed_version) for e in result.entries] == [
        ("deducted", 4, 4),
        ("adjusted", 100, 5),
        ("deducted", 97, 5),
    ]
    assert result.decisions[3].shortfalls == [Shortfall("g", 1000, 97, seed_version=5)]


def test_a_set_of_a_new_goods_id_starts_at_version_one() -> None:
    requests = [
        Request("seed", {"n": 0}, Kind.ADJUST, adjust=Adjustment("n", "set", num=10)),
        Request("buy", {"n": 4}),
    ]
    result = plan(requests, {}, {})
    assert result.created == {"n"}
    assert result.seeded == {"n": (10, 1)}
    assert result.levels == {"n": 6}


def test_restocks_that_each_fit_are_refused_past_the_cap() -> None:
    restock = Adjustment("g", "restock", delta=6)
    requests = [Request(f"r{i}", {"g": 0}, Kind.ADJUST, adjust=restock) for i in range(2)]
    result = plan(requests, {"g": 5}, {}, max_level=12)
    assert [d.outcome for d in result.decisions] == [Outcome.ADJUSTED, Outcome.ABOVE_MAX]
    assert result.levels == {"g": 11}
