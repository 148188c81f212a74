"""The chaos checker and report on hand-made histories: each violation is caught, and a
history without one passes."""

from __future__ import annotations

from pathlib import Path

from inventory.chaos import checker, report
from inventory.chaos.history import FAIL, OK, UNKNOWN, Op, classify
from inventory.check import Snapshot


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


def test_a_fencing_token_that_goes_back_is_caught(tmp_path: Path) -> None:
    from datetime import datetime, timedelta

    import migrations
    from shared.db import make_engine
    from stock_service.tables import stock, stock_flow

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
        orders={"o1": "FAILED", "o2": "FAILED", "o3": "FAILED", "o4": "FAILED", "o5": "CONFIRMED"},
        lines={"o1": {"g": 1}, "o2": {"g": 2}, "o3": {"h": 1}, "o4": {"g": 1}, "o5": {"g": 1}},
        reasons={
            "o1": "voided: ConnectError calling the stock service",
            "o2": "redis_unavailable",
            "o3": "voided: HTTP 503",  # h sold out: not a lost sale
            "o4": "insufficient_stock",  # a refusal (I4 judges it), not counted here
            "o5": None,
        },
    )
    verdict = checker.lost_sales(snap)
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
