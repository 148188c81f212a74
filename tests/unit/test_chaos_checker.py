"""The chaos checker and report on hand-made histories: each violation is caught, and a
history without one passes."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from inventory.chaos import checker, report
from inventory.chaos.history import FAIL, OK, UNKNOWN, Op, classify
from inventory.check import Snapshot
from order_service.core.statuses import HOLD_EXPIRED


def op(
    key: str,
    outcome: str,
    order_id: str | None = "o1",
    lines: dict[str, int] | None = None,
    invoke: float = 0.0,
    complete: float = 0.1,
    attempt: int = 0,
    double: bool = False,
) -> Op:
    return Op(
        key,
        attempt,
        double,
        lines or {"g": 1},
        invoke,
        complete,
        200,
        order_id,
        None,
        None,
        outcome,
    )


def snapshot(orders: dict[str, str], flows: dict[str, dict[str, int]]) -> Snapshot:
    return Snapshot({}, {}, [], flows, orders, {o: {"g": 1} for o in orders})


def test_answers_are_classified_jepsen_style() -> None:
    assert classify(200, {"orderId": "o", "status": "CONFIRMED"})[0] == OK
    refused = {"orderId": "o", "status": "FAILED", "reason": "insufficient_stock"}
    assert classify(409, refused)[0] == FAIL
    # Not a refusal for lack of stock: the history records it as unknown to the buyer's
    # eyes; the answer's status is still checked against the end (H5).
    voided = {"orderId": "o", "status": "FAILED", "reason": "voided: ConnectError"}
    assert classify(503, voided)[0] == UNKNOWN
    assert classify(503, {"error": "zookeeper unavailable"})[0] == UNKNOWN
    assert classify(202, {"orderId": "o", "status": "PENDING"})[0] == UNKNOWN
    assert classify(0, {})[0] == UNKNOWN


def test_a_200_whose_order_is_not_confirmed_is_caught() -> None:
    ops = [op("k1", OK, "o1"), op("k2", OK, "o2")]
    snap = snapshot({"o1": "CONFIRMED", "o2": "FAILED"}, {"o1": {"g": 1}})
    verdict = checker.answered_ok_is_confirmed(ops, snap)
    assert verdict.verdict == checker.VIOLATED
    assert verdict.counterexamples == ["o2"]


def test_a_200_whose_flows_differ_from_its_lines_is_caught() -> None:
    ops = [op("k1", OK, "o1", lines={"g": 2})]
    snap = snapshot({"o1": "CONFIRMED"}, {"o1": {"g": 1}})
    assert checker.answered_ok_is_confirmed(ops, snap).verdict == checker.VIOLATED


def test_a_refusal_with_flows_is_caught() -> None:
    ops = [op("k1", FAIL, "o1"), op("k2", FAIL, "o2")]
    snap = snapshot({"o1": "FAILED", "o2": "FAILED"}, {"o2": {"g": 1}})
    verdict = checker.refused_is_failed(ops, snap)
    assert verdict.verdict == checker.VIOLATED
    assert verdict.counterexamples == ["o2"]


def test_two_orders_for_one_key_are_caught() -> None:
    ops = [op("k1", OK, "o1"), op("k1", UNKNOWN, "o9", attempt=1, double=True)]
    verdict = checker.one_order_per_key(ops)
    assert verdict.verdict == checker.VIOLATED
    assert verdict.counterexamples == ["k1"]


def test_ok_and_refused_for_one_key_are_caught() -> None:
    ops = [op("k1", OK, "o1"), op("k1", FAIL, "o1", attempt=2)]
    assert checker.one_order_per_key(ops).verdict == checker.VIOLATED


def test_a_clean_history_passes_every_history_check() -> None:
    ops = [
        op("k1", OK, "o1"),
        op("k1", OK, "o1", attempt=1, double=True),
        op("k2", FAIL, "o2"),
        op("k3", UNKNOWN, None),
    ]
    snap = snapshot({"o1": "CONFIRMED", "o2": "FAILED"}, {"o1": {"g": 1}})
    for verdict in (
        checker.answered_ok_is_confirmed(ops, snap),
        checker.refused_is_failed(ops, snap),
        checker.one_order_per_key(ops),
    ):
        assert verdict.verdict == checker.VALID, verdict


def test_liveness_needs_a_confirmation_within_the_bound() -> None:
    assert checker.liveness(3.0, 60).verdict == checker.VALID
    assert checker.liveness(75.0, 60).verdict == checker.VIOLATED
    assert checker.liveness(None, 60).verdict == checker.VIOLATED


def test_the_overall_verdict_and_exit_code() -> None:
    valid = checker.Verdict("A", "a", checker.VALID, "")
    unknown = checker.Verdict("B", "b", checker.UNKNOWN, "")
    violated = checker.Verdict("C", "c", checker.VIOLATED, "")
    assert checker.overall([valid]) == checker.VALID
    assert checker.overall([valid, unknown]) == checker.UNKNOWN
    assert checker.overall([unknown, violated]) == checker.VIOLATED
    assert [checker.EXIT_CODES[v] for v in ("valid", "violated", "unknown")] == [0, 1, 2]


def test_window_rows_count_final_outcomes_gaps_and_recovery() -> None:
    ops = [
        op("a", OK, "oa", invoke=1, complete=1.5),
        op("b", UNKNOWN, None, invoke=11, complete=12),  # in the fault, retried ...
        op("b", OK, "ob", invoke=13, complete=14, attempt=2),  # ... and confirmed
        op("c", UNKNOWN, None, invoke=12, complete=13),
        op("d", OK, "od", invoke=16, complete=16.5),  # the first confirmed after the heal
    ]
    windows = [report.Window("kill", "killed", 10.0, 15.0, 20.0)]
    baseline, fault = report.rows(ops, windows, baseline_end=10.0)
    assert (baseline.ok, baseline.unknown) == (1, 0)
    assert (fault.ok, fault.failed, fault.unknown) == (2, 0, 1)
    assert fault.recovery_s == 1.5
    assert fault.longest_gap_s == 4.0  # from 10.0 to the confirmation at 14.0
    assert fault.answered_vs_baseline == 0.67


def test_window_rows_carry_the_takeover_the_replication_and_the_lost_sales_of_each_fault() -> None:
    ops = [
        op("a", OK, "oa", invoke=1, complete=1.5),
        op("b", UNKNOWN, "ob", invoke=11, complete=12),  # lost in the fault's window
        op("b", UNKNOWN, "ob", invoke=14, complete=15, attempt=2),  # its retry: counted once
        op("c", UNKNOWN, None, invoke=19, complete=24),  # first sent in the fault's window ...
        op("c", UNKNOWN, "oc", invoke=26, complete=27, attempt=2),  # ... named by a retry
        op("d", OK, "od", invoke=16, complete=16.5),
    ]
    windows = [
        report.Window("kill-pg-primary", "killed", 10.0, 15.0, 20.0, 4.6, 21.3),
        report.Window("kill-lb", "killed", 20.0, 25.0, 30.0),
    ]
    lost = {"ob": "voided", "oc": "reconciled: voided", "ox": "voided"}  # ox: no answer named it
    baseline, pg, lb = report.rows(ops, windows, 10.0, lost)
    assert [r.lost_sales for r in (baseline, pg, lb)] == [0, 2, 0]
    assert report.unattributed_lost(ops, lost) == 1  # ox
    assert (pg.takeover_s, pg.replicated_s) == (4.6, 21.3)
    assert (lb.takeover_s, lb.replicated_s) == (None, None)
    table = report.markdown([baseline, pg, lb], [])
    assert "| kill-pg-primary | 10.0 | 5.0 | 1 | 0 | 2 |" in table
    assert table.splitlines()[3].endswith("| 4.6 | 21.3 | 2 |"), table


def test_a_fencing_token_that_goes_back_is_caught(tmp_path: Path) -> None:
    from datetime import datetime, timedelta

    import migrations
    from shared.database.engines import make_engine
    from stock_service.storage.tables import stock, stock_flow

    url = f"sqlite:///{tmp_path / 'stock.db'}"
    migrations.upgrade(url, "stock")
    engine = make_engine(url)
    t0 = datetime(2026, 1, 1)
    with engine.begin() as conn:
        for goods, fence in (("p-ok", 30), ("p-back", 30)):
            conn.execute(
                stock.insert().values(
                    goods_id=goods, num=0, seeded_num=3, seed_version=1, fence=fence, updated_at=t0
                )
            )
        for i, (goods, fence) in enumerate(
            [("p-ok", 10), ("p-ok", 10), ("p-ok", 20), ("p-back", 20), ("p-back", 10)]
        ):
            conn.execute(
                stock_flow.insert().values(
                    id=f"f{i}",
                    flag=f"o{i}",
                    goods_id=goods,
                    num=1,
                    seed_version=1,
                    fence=fence,
                    created_at=t0 + timedelta(seconds=i),
                )
            )
    verdict = checker.fences_never_go_back(engine, "p-")
    engine.dispose()
    assert verdict.verdict == checker.VIOLATED
    assert len(verdict.counterexamples) == 1
    assert verdict.counterexamples[0].startswith("p-back: flow f4 token 10 after 20")


def told(
    key: str,
    order_id: str,
    status: int,
    order_status: str,
    kind: str = "order",
    intent: str = "none",
) -> Op:
    answer = op(key, OK if status == 200 and kind == "order" else UNKNOWN, order_id)
    answer.status, answer.order_status = status, order_status
    answer.kind, answer.intent = kind, intent
    return answer


def test_a_refusal_whose_order_ends_confirmed_is_caught() -> None:
    """The settlement issue's fault 2, as a history: 409 FAILED, then reconciled CONFIRMED."""
    ops = [told("k1", "o1", 409, "FAILED"), told("k2", "o2", 200, "CONFIRMED")]
    snap = snapshot({"o1": "CONFIRMED", "o2": "CONFIRMED"}, {"o1": {"g": 1}, "o2": {"g": 1}})
    verdict = checker.answers_hold(ops, snap)
    assert verdict.verdict == checker.VIOLATED
    assert verdict.counterexamples == ["o1: order told 409 FAILED, ends CONFIRMED"]


def test_a_200_or_a_503_failed_contradicted_by_the_end_is_caught() -> None:
    ops = [told("k1", "o1", 200, "CONFIRMED"), told("k2", "o2", 503, "FAILED")]
    snap = snapshot({"o1": "FAILED", "o2": "CONFIRMED"}, {"o2": {"g": 1}})
    assert len(checker.answers_hold(ops, snap).counterexamples) == 2


def test_a_placed_status_moves_forward_only() -> None:
    """Held or owing may end CONFIRMED; CONFIRMED never ends held or owing again."""
    ops = [
        told("k1", "o1", 200, "AWAITING_PAYMENT"),
        told("k2", "o2", 200, "BACKORDERED"),
        told("k3", "o3", 200, "BACKORDERED"),
        told("k4", "o4", 200, "BACKORDERED", intent="cancel"),
        told("k5", "o5", 200, "CONFIRMED"),
        told("k6", "o6", 200, "CONFIRMED"),
    ]
    ends = ["CONFIRMED", "CONFIRMED", "BACKORDERED", "CANCELLED", "BACKORDERED", "AWAITING_PAYMENT"]
    orders = {f"o{i}": end for i, end in enumerate(ends, 1)}
    verdict = checker.answers_hold(ops, snapshot(orders, {}))
    assert verdict.counterexamples == [
        "o5: order told 200 CONFIRMED, ends BACKORDERED",
        "o6: order told 200 CONFIRMED, ends AWAITING_PAYMENT",
    ]


def test_pending_answers_may_end_either_way_and_held_answers_pass() -> None:
    ops = [
        told("k1", "o1", 503, "PENDING"),
        told("k2", "o2", 202, "PENDING"),
        told("k3", "o3", 409, "FAILED"),
        told("k4", "o4", 200, "CONFIRMED"),
    ]
    orders = {"o1": "CONFIRMED", "o2": "FAILED", "o3": "FAILED", "o4": "CONFIRMED"}
    verdict = checker.answers_hold(ops, snapshot(orders, {}))
    assert verdict.verdict == checker.VALID, verdict


def test_an_order_left_pending_past_the_bound_is_caught() -> None:
    late = checker.Settlement(pending_at_start=12, left=3, seconds=90.0, bound=90, reconciled=9)
    done = checker.Settlement(
        pending_at_start=12,
        left=0,
        seconds=41.5,
        bound=90,
        reconciled=12,
        slowest_s=38.2,
        median_s=33.0,
    )
    assert checker.settled_by_the_cluster(late).verdict == checker.VIOLATED
    verdict = checker.settled_by_the_cluster(done)
    assert verdict.verdict == checker.VALID
    assert "41.5 s after the load" in verdict.detail
    assert "the slowest 38.2 s" in verdict.detail


def test_lost_sales_are_counted_by_cause_and_refusals_are_not() -> None:
    snap = Snapshot(
        levels={"g": (4, 10, 1), "h": (0, 10, 1)},
        flow_sums={},
        duplicate_flows=[],
        flows_by_flag={},
        orders={
            "o1": "FAILED",
            "o2": "FAILED",
            "o3": "FAILED",
            "o4": "FAILED",
            "o5": "CONFIRMED",
            "o6": "FAILED",
            "o7": "FAILED",
        },
        lines={o: {"g": 1} for o in ("o1", "o4", "o5", "o6", "o7")}
        | {"o2": {"g": 2}, "o3": {"h": 1}},
        reasons={
            "o1": "voided: ConnectError calling the stock service",
            "o2": "redis_unavailable",
            "o3": "voided: HTTP 503",  # h sold out: not a lost sale
            "o4": "insufficient_stock",  # a refusal (I4 judges it), not counted here
            "o5": None,
            # Refusals a void or the reconciler found after an unknown outcome (a refusal is
            # recorded as the flag's decision): the stock came back after them, no sale was lost
            "o6": "insufficient_stock: ReadTimeout calling the stock service",
            "o7": "reconciled: insufficient_stock (outcome_unknown: HTTP 503)",
        },
    )
    verdict = checker.lost_sales(snap)
    assert checker.lost_orders(snap) == {"o1": "voided", "o2": "redis_unavailable"}
    assert verdict.verdict == checker.COUNTED
    assert verdict.detail.startswith("2 orders failed while their stock was there")
    assert "voided 1" in verdict.detail and "redis_unavailable 1" in verdict.detail
    assert checker.overall([verdict]) == checker.VALID  # a figure, not a verdict


def test_a_paid_hold_that_ends_cancelled_is_caught_paid_and_expired_both() -> None:
    ops = [
        told("k1", "o1", 200, "AWAITING_PAYMENT", intent="pay"),
        told("k1", "o1", 200, "CONFIRMED", kind="pay"),
    ]
    verdict = checker.answers_hold(ops, snapshot({"o1": "CANCELLED"}, {}))
    assert verdict.counterexamples == ["o1: pay told 200 CONFIRMED, ends CANCELLED"]


def test_a_cancel_answered_cancelled_whose_order_ends_otherwise_is_caught() -> None:
    ops = [told("k1", "o1", 200, "CANCELLED", kind="cancel", intent="cancel")]
    verdict = checker.answers_hold(ops, snapshot({"o1": "CONFIRMED"}, {"o1": {"g": 1}}))
    assert verdict.verdict == checker.VIOLATED


def test_an_order_nobody_cancelled_that_ends_cancelled_is_caught() -> None:
    ops = [told("k1", "o1", 200, "CONFIRMED")]  # no intent to cancel it
    snap = snapshot({"o1": "CANCELLED"}, {"o1": {"g": 1}})
    assert checker.answers_hold(ops, snap).verdict == checker.VIOLATED
    assert checker.answered_ok_is_confirmed(ops, snap).verdict == checker.VIOLATED


def test_cancels_pays_and_expiries_that_ended_as_answered_pass() -> None:
    ops = [
        told("k1", "o1", 200, "CONFIRMED", intent="cancel"),
        told("k1", "o1", 200, "CANCELLED", kind="cancel", intent="cancel"),
        told("k2", "o2", 200, "AWAITING_PAYMENT", intent="pay"),
        told("k2", "o2", 200, "CONFIRMED", kind="pay"),
        told("k3", "o3", 200, "AWAITING_PAYMENT", intent="expire"),
        told("k4", "o4", 409, "CANCELLED", intent="cancel-at-once"),  # cancelled meanwhile
        told("k4", "o4", 200, "CANCELLED", kind="cancel", intent="cancel-at-once"),
        told("k5", "o5", 200, "AWAITING_PAYMENT", intent="pay"),
        told("k5", "o5", 409, "CANCELLED", kind="pay"),  # the expiry won the race
    ]
    ends = {"o1": "CANCELLED", "o2": "CONFIRMED", "o3": "CANCELLED", "o4": "CANCELLED"}
    ends["o5"] = "CANCELLED"
    lines = {o: {"g": 1} for o in ("o1", "o2", "o3", "o5")}
    snap = snapshot(ends, lines)
    assert checker.answers_hold(ops, snap).verdict == checker.VALID
    assert checker.answered_ok_is_confirmed(ops, snap).verdict == checker.VALID


# --- the late first attempt after a refusal (H2, I3, I9) -------------------------------------


def late_attempt_story(late_flow: bool) -> tuple[list[Op], Snapshot]:
    """Goods g sold out (2 units, both to order B). Order O's first attempt passes the Redis
    check and is slow to the lock; the order service times out and retries; the retry is
    refused: O answered 409 insufficient_stock 4.3 s after its send. B is cancelled: its 2
    units come back. Then, with `late_flow`, O's first attempt reaches the lock, finds no
    decision (the rule before refusals were recorded left none) and stock on the shelf, and
    deducts."""
    from datetime import datetime, timedelta

    t0 = datetime(2026, 1, 1)
    b_placed = told("kb", "B", 200, "CONFIRMED", intent="cancel")
    b_placed.lines = {"g": 2}
    refused = op("ko", FAIL, "O", lines={"g": 1}, invoke=1.0, complete=5.3)
    refused.status, refused.order_status, refused.reason = 409, "FAILED", "insufficient_stock"
    b_cancel = told("kb", "B", 200, "CANCELLED", kind="cancel", intent="cancel")
    b_cancel.lines, b_cancel.invoke, b_cancel.complete = {"g": 2}, 6.0, 6.1
    ops = [b_placed, refused, b_cancel]
    flows: dict[str, dict[str, int]] = {"B": {"g": 2}}
    decisions = {"B": "returned"}
    final = 2  # seeded 2, B took 2, B's 2 came back
    if late_flow:
        flows["O"] = {"g": 1}  # O's late attempt, 9 s after its send, with B's units back
        decisions["O"] = "deducted"
        final = 1
    snap = Snapshot(
        levels={"g": (final, 2, 1)},
        flow_sums={("g", 1): sum(f.get("g", 0) for f in flows.values())},
        duplicate_flows=[],
        flows_by_flag=flows,
        orders={"B": "CANCELLED", "O": "FAILED"},
        lines={"B": {"g": 2}, "O": {"g": 1}},
        reasons={"B": "cancelled: by the buyer (stock returned)", "O": "insufficient_stock"},
        refused={"O": {"g": 1}},
        return_sums={("g", 1): 2},
        returns_by_flag={"B": {"g": 2}},
        decisions=decisions,
        return_times={"B": {"g": (t0, t0 + timedelta(seconds=6))}},
    )
    return ops, snap


def test_a_refused_order_deducted_after_a_return_is_caught_by_h2_i3_and_i9() -> None:
    from inventory.check import check_invariants

    ops, snap = late_attempt_story(late_flow=True)
    h2 = checker.refused_is_failed(ops, snap)
    assert h2.verdict == checker.VIOLATED and h2.counterexamples == ["O"]
    results = {r.invariant + " " + r.name: r for r in check_invariants(snap)}
    broken = sorted(name for name, r in results.items() if not r.ok)
    assert broken == ["I3 orders match flows", "I9 a refusal stays a refusal"]
    assert results["I3 orders match flows"].numbers["failed_with_flows"] == ["O"]
    assert results["I9 a refusal stays a refusal"].numbers["refused_with_flows"] == ["O"]
    # Conserved all the same (the late deduction is a real flow), so only these see it; and
    # no answer is contradicted: O told FAILED ends FAILED, B's cancel ends CANCELLED.
    for verdict in (
        checker.answered_ok_is_confirmed(ops, snap),
        checker.answers_hold(ops, snap),
        checker.one_order_per_key(ops),
    ):
        assert verdict.verdict == checker.VALID, verdict


def test_the_same_story_without_the_late_flow_passes() -> None:
    from inventory.check import check_invariants

    ops, snap = late_attempt_story(late_flow=False)
    assert [r.invariant for r in check_invariants(snap) if not r.ok] == []
    for verdict in (
        checker.answered_ok_is_confirmed(ops, snap),
        checker.refused_is_failed(ops, snap),
        checker.answers_hold(ops, snap),
        checker.one_order_per_key(ops),
    ):
        assert verdict.verdict == checker.VALID, verdict


def test_i9_catches_a_flow_on_a_flag_decided_refused() -> None:
    """A deduction that went past a recorded refusal (the decision says refused, a flow
    exists), whatever the order's row says."""
    from inventory.check.invariants import check_refusal_stays

    _, snap = late_attempt_story(late_flow=True)
    snap = replace(snap, orders={**snap.orders, "O": "PENDING"}, decisions={"O": "refused"})
    result = check_refusal_stays(snap)
    assert not result.ok and result.numbers["decided_refused_with_flows"] == ["O"]
    # A refusal the reconciler found after an unknown outcome is a refusal too.
    _, snap = late_attempt_story(late_flow=True)
    reason = "reconciled: insufficient_stock (outcome_unknown: HTTP 503)"
    result = check_refusal_stays(replace(snap, reasons={**snap.reasons, "O": reason}))
    assert not result.ok and result.numbers["refused_with_flows"] == ["O"]


def test_the_late_attempt_story_is_counted_from_the_history_and_the_databases(
    tmp_path: Path,
) -> None:
    """late_attempts.count_story on hand-made databases: O refused while its first attempt was
    held, a hold expired and a cancel on the scarce goods while it slept, and its late attempt
    arriving with the stock back on the shelf; P refused at once (not held); Q answered after
    the delay (no longer held)."""
    from datetime import datetime, timedelta

    import migrations
    from inventory.chaos import late_attempts
    from order_service.storage.tables import orders
    from shared.database.engines import make_engine
    from stock_service.storage.tables import flag_decision, stock_flow, stock_return

    t0 = datetime(2026, 1, 1)

    def at(seconds: float) -> datetime:
        return t0 + timedelta(seconds=seconds)

    engines = []
    for name in ("order", "stock"):
        url = f"sqlite:///{tmp_path / name}.db"
        migrations.upgrade(url, name)
        engines.append(make_engine(url))
    order_engine, stock_engine = engines
    refused_o = op("ko", FAIL, "O", lines={"s0": 1}, invoke=10.0, complete=14.3)
    refused_p = op("kp", FAIL, "P", lines={"s0": 1}, invoke=11.0, complete=11.1)
    late = 12.0 + late_attempts.DELAY + 0.5  # after its held attempt woke
    refused_q = op("kq", FAIL, "Q", lines={"s0": 1}, invoke=12.0, complete=late)
    cancel = told("kb", "B", 200, "CANCELLED", kind="cancel", intent="cancel")
    cancel.lines, cancel.invoke = {"s0": 1}, 15.0
    ops = [refused_o, refused_p, refused_q, cancel]
    with stock_engine.begin() as conn:
        for i, (flag, when) in enumerate((("B", 9.0), ("H", 9.5))):
            conn.execute(
                stock_flow.insert().values(
                    id=f"f{i}", flag=flag, goods_id="s0", num=1, seed_version=1, created_at=at(when)
                )
            )
            conn.execute(
                stock_return.insert().values(
                    id=f"r{i}",
                    flag=flag,
                    goods_id="s0",
                    num=1,
                    seed_version=1,
                    created_at=at(15.1 if flag == "B" else 16.0),
                )
            )
        conn.execute(
            flag_decision.insert().values(flag="O", outcome="refused", created_at=at(14.2))
        )
    with order_engine.begin() as conn:
        for order_id, reason in (("B", "cancelled: by the buyer"), ("H", HOLD_EXPIRED)):
            conn.execute(
                orders.insert().values(
                    id=order_id,
                    user_id="u",
                    status="CANCELLED",
                    reason=reason,
                    created_at=at(9),
                    updated_at=at(16),
                )
            )
    verdict, numbers = late_attempts.count_story(
        ops, 5.0, 25.0, t0, ["s0"], {"s0": 2}, stock_engine, order_engine
    )
    order_engine.dispose()
    stock_engine.dispose()
    assert verdict.verdict == checker.COUNTED
    assert numbers["refused_while_held"] == 1  # O: P was not held, Q's attempt woke first
    assert (numbers["returns"], numbers["returns_expired"], numbers["returns_cancelled"]) == (
        2,
        1,
        1,
    )
    assert numbers["cancels_told_200"] == 1
    assert numbers["returned_while_held"] == 1 and numbers["back_on_shelf"] == 1
    assert numbers["decided"] == {"refused": 1} and numbers["late_deducted"] == []


# --- a cancel by key before its order leaves a tombstone -------------------------------------


def tombstone_history(placed_anyway: bool = False) -> list[Op]:
    """Key kt: its cancel by key arrived first (200 CANCELLED, the tombstone T), then its
    genOrder and the double submit were answered 409 CANCELLED naming T, deducting nothing.
    Key k1: an ordinary order, confirmed. With `placed_anyway`, the genOrder under kt placed an
    order of its own (the bug a tombstone exists to prevent)."""
    cancel = told("kt", "T", 200, "CANCELLED", kind="cancel", intent="cancel-at-once")
    cancel.reason = "cancelled: by the buyer, before the order was placed"
    ordinary = told("k1", "o1", 200, "CONFIRMED")
    ordinary.lines = {"p-g": 1}
    ops = [cancel, ordinary]
    for attempt, double in ((0, False), (1, True)):
        answer = told("kt", "T", 409, "CANCELLED", intent="cancel-at-once")
        answer.attempt, answer.double, answer.reason = attempt, double, cancel.reason
        ops.append(answer)
    if placed_anyway:
        ops.append(told("kt", "o9", 200, "CONFIRMED", intent="cancel-at-once"))
    return ops


def _tombstone_databases(tmp_path: Path) -> tuple[Any, Any]:
    from datetime import datetime

    import migrations
    from order_service.storage.tables import order_details, orders
    from shared.database.engines import make_engine
    from stock_service.storage.tables import flag_decision, stock, stock_flow

    engines = []
    for name in ("order", "stock"):
        url = f"sqlite:///{tmp_path / name}.db"
        migrations.upgrade(url, name)
        engines.append(make_engine(url))
    order_engine, stock_engine = engines
    t0 = datetime(2026, 1, 1)
    with order_engine.begin() as conn:
        conn.execute(
            orders.insert().values(
                id="T",
                user_id="",
                status="CANCELLED",
                reason="cancelled: by the buyer, before the order was placed",
                idempotency_key="kt",
                request_hash=None,
                created_at=t0,
                updated_at=t0,
            )
        )
        conn.execute(
            orders.insert().values(
                id="o1",
                user_id="u",
                status="CONFIRMED",
                idempotency_key="k1",
                request_hash="h",
                created_at=t0,
                updated_at=t0,
            )
        )
        conn.execute(
            order_details.insert().values(id="d1", order_id="o1", goods_id="p-g", goods_num=1)
        )
    with stock_engine.begin() as conn:
        conn.execute(
            stock.insert().values(
                goods_id="p-g", num=4, seeded_num=5, seed_version=1, fence=1, updated_at=t0
            )
        )
        conn.execute(
            stock_flow.insert().values(
                id="f1", flag="o1", goods_id="p-g", num=1, seed_version=1, fence=1, created_at=t0
            )
        )
        conn.execute(flag_decision.insert().values(flag="o1", outcome="deducted", created_at=t0))
    return order_engine, stock_engine


def test_a_tombstone_is_judged_as_what_the_answers_said(tmp_path: Path) -> None:
    """The tombstone has no line, so the snapshot of the run's goods lacks it: read by its id
    (orders_named), it is CANCELLED, as both answers said; every check holds, it is no lost
    sale, and it is counted."""
    from inventory.check import check_invariants, read_snapshot

    order_engine, stock_engine = _tombstone_databases(tmp_path)
    ops = tombstone_history()
    bare = read_snapshot(order_engine, stock_engine, "p-")
    assert "T" not in bare.orders
    missing = checker.answers_hold(ops, bare)  # why the checker reads it by its id
    assert missing.verdict == checker.VIOLATED and "ends missing" in missing.counterexamples[0]
    verdicts = checker.check_run(
        ops, order_engine, stock_engine, "p-", {"p-g": 5}, checker.liveness(1.0, 60)
    )
    snap = checker.orders_named(bare, order_engine, ops)
    order_engine.dispose()
    stock_engine.dispose()
    assert snap.orders["T"] == "CANCELLED" and "T" not in snap.lines
    assert [v.check for v in verdicts if v.verdict == checker.VIOLATED] == []
    by_check = {v.check: v for v in verdicts}
    assert "1 keys cancelled before their order" in by_check["H5"].detail
    assert by_check["LS"].detail.startswith("0 orders failed")
    assert [r.invariant for r in check_invariants(snap, {"p-g": 5}) if not r.ok] == []


def test_a_tombstone_key_whose_genorder_placed_an_order_is_caught(tmp_path: Path) -> None:
    order_engine, stock_engine = _tombstone_databases(tmp_path)
    ops = tombstone_history(placed_anyway=True)
    verdicts = checker.check_run(
        ops, order_engine, stock_engine, "p-", {"p-g": 5}, checker.liveness(1.0, 60)
    )
    order_engine.dispose()
    stock_engine.dispose()
    h3 = next(v for v in verdicts if v.check == "H3")
    assert h3.verdict == checker.VIOLATED and h3.counterexamples == ["kt"]


def test_a_tombstone_is_no_confirmation_for_liveness() -> None:
    """After the last heal, only the tombstone's answers: nothing was confirmed (L needs the
    probe), and the window counts the key as unknown, not as refused for lack of stock."""
    ops = tombstone_history()
    for answer in ops:
        answer.invoke, answer.complete = 30.0, 30.1
    ops = [o for o in ops if o.key == "kt"]
    assert report.recovery(ops, heal=20.0) is None
    [row] = report.rows(ops, [], baseline_end=40.0)
    assert (row.ok, row.failed, row.unknown) == (0, 0, 1)


def test_the_stock_replicas_fault_injection_is_seen_in_the_state_file(tmp_path: Path) -> None:
    """What a chaos run compares to decide whether to restart the stock replicas: the settings
    they run with on top of the cluster's (FAULT_INJECTION for slow-first-attempts only)."""
    from inventory.chaos import nemesis
    from inventory.cluster import deploy, nodes, topology

    def state(added: dict[str, str]) -> deploy.ClusterState:
        procs = {
            h.name: nodes.service(h, tmp_path, {"FENCING": "false", **added}, 2, 8)
            for h in topology.HOSTS
            if h.role in ("stock", "order")
        }
        return deploy.ClusterState(str(tmp_path), procs, {"FENCING": "false"})

    assert deploy.stock_settings_added(state({})) == {}
    needed = dict(nemesis.FAULTS["slow-first-attempts"].stock_settings)
    assert needed == {"FAULT_INJECTION": "true"}
    assert deploy.stock_settings_added(state(needed)) == needed
    assert not any(
        f.stock_settings for n, f in nemesis.FAULTS.items() if n != "slow-first-attempts"
    )
